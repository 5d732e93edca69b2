//! Unit tests of reading, resolving and editing the config file.

use deskpilot_policy::grant::{DEFAULT_ACTION_BUDGET, DEFAULT_IDLE_EXPIRY_MS};

use super::edit::parse_list;
use super::*;
use deskpilot_protocol::ErrorCode;
use deskpilot_protocol::Result;

/// A fresh directory under the system temp dir, removed on drop.
fn temp_dir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("deskpilot-config-test-{tag}-"))
        .tempdir()
        .unwrap()
}

fn cfg(text: &str) -> Result<Config> {
    let d = temp_dir("cfg");
    let p = d.path().join("config.toml");
    std::fs::write(&p, text).unwrap();
    Config::load_from(&p)
}

#[test]
fn a_missing_file_gives_the_defaults_of_each_context() {
    let d = temp_dir("missing");
    let c = Config::load_from(&d.path().join("nope.toml")).unwrap();
    assert_eq!(c.top, Settings::default());

    let own = c.effective(false);
    assert!(!own.enabled);
    assert_eq!(own.mode, Mode::Default);
    assert!(!own.allow_all_apps);
    assert!(own.allow_apps.is_empty() && own.deny_apps.is_empty());
    assert_eq!(own.action_budget, DEFAULT_ACTION_BUDGET);
    assert_eq!(own.idle_expiry_ms, DEFAULT_IDLE_EXPIRY_MS);
    assert_eq!(own.capture, Capture::A11yOnly);
    assert!(!own.system_keys);
    assert!(own.sources.values().all(|s| s == "default"));
    assert_eq!(own.sources.len(), KEYS.len());

    let sb = c.effective(true);
    assert!(sb.enabled);
    assert_eq!(sb.mode, Mode::AcceptEdits);
    assert!(sb.allow_all_apps);
    assert_eq!(sb.sources["mode"], "sandbox default");
    assert_eq!(sb.sources["enabled"], "sandbox default");
    assert_eq!(sb.sources["allow_apps"], "sandbox default");
    assert_eq!(sb.sources["action_budget"], "default");
}

#[test]
fn the_sandbox_table_wins_inside_a_sandbox_only() {
    let c = cfg(r#"
mode = "unattended"
allow_apps = ["mousepad"]
action_budget = 50
idle_expiry_minutes = 2
capture = "a11y-and-pixels"

[sandbox]
mode = "bypass"
system_keys = true
"#)
    .unwrap();
    let own = c.effective(false);
    assert_eq!(own.mode, Mode::Unattended);
    assert_eq!(own.sources["mode"], "file");
    assert_eq!(own.action_budget, 50);
    assert_eq!(own.idle_expiry_ms, 120_000);
    assert_eq!(own.capture, Capture::A11yAndPixels);
    assert!(!own.enabled);

    let sb = c.effective(true);
    assert_eq!(sb.mode, Mode::Bypass);
    assert_eq!(sb.sources["mode"], "sandbox table");
    assert_eq!(sb.allow_apps, vec!["mousepad".to_string()]);
    assert!(!sb.allow_all_apps, "a set allow_apps replaces 'every app'");
    assert_eq!(sb.sources["allow_apps"], "file");
    assert_eq!(sb.action_budget, 50);
    assert!(sb.enabled);
    assert!(sb.system_keys && !own.system_keys);
    assert_eq!(sb.sources["system_keys"], "sandbox table");
}

#[test]
fn errors_name_the_file_the_key_and_the_valid_values() {
    let e = cfg("mdoe = \"plan\"\n").unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("unknown key `mdoe`"), "{}", e.message);
    assert!(e.message.contains("config.toml"), "{}", e.message);
    assert!(
        e.message.contains("valid keys: enabled, mode"),
        "{}",
        e.message
    );

    let e = cfg("[sandbox]\nfoo = 1\n").unwrap_err();
    assert!(e.message.contains("`sandbox.foo`"), "{}", e.message);

    let e = cfg("mode = \"yolo\"\n").unwrap_err();
    assert!(
        e.message.contains("key `mode`: unknown mode \"yolo\""),
        "{}",
        e.message
    );
    assert!(e.message.contains("accept-edits"), "{}", e.message);
    assert!(
        e.message.contains("deskpilot config set mode VALUE"),
        "{}",
        e.message
    );

    let e = cfg("action_budget = 0\n").unwrap_err();
    assert!(
        e.message.contains("key `action_budget`: 0 is out of range"),
        "{}",
        e.message
    );
    let e = cfg("enabled = \"yes\"\n").unwrap_err();
    assert!(
        e.message.contains("is a string but must be true or false"),
        "{}",
        e.message
    );
    let e = cfg("deny_apps = [\"a\", 2]\n").unwrap_err();
    assert!(
        e.message.contains("every element must be a string"),
        "{}",
        e.message
    );
    let e = cfg("mode = \n").unwrap_err();
    assert!(e.message.contains("not valid TOML"), "{}", e.message);
}

#[test]
fn set_and_unset_keep_comments_and_other_keys() {
    let d = temp_dir("set");
    let p = d.path().join("sub").join("config.toml");
    set_key(&p, "mode", "plan").unwrap();
    assert_eq!(Config::load_from(&p).unwrap().top.mode, Some(Mode::Plan));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let m = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(m, 0o600);
    }

    std::fs::write(
        &p,
        "# my settings\nmode = \"plan\" # read-only for now\nenabled = true\n",
    )
    .unwrap();
    set_key(&p, "mode", "accept-edits").unwrap();
    set_key(&p, "sandbox.mode", "bypass").unwrap();
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.starts_with("# my settings\n"), "{text}");
    assert!(
        text.contains("mode = \"accept-edits\" # read-only for now"),
        "{text}"
    );
    assert!(text.contains("[sandbox]\nmode = \"bypass\""), "{text}");
    let c = Config::load_from(&p).unwrap();
    assert_eq!(c.top.enabled, Some(true));
    assert_eq!(c.sandbox.mode, Some(Mode::Bypass));

    assert!(unset_key(&p, "mode").unwrap());
    assert!(!unset_key(&p, "mode").unwrap());
    assert!(unset_key(&p, "sandbox.mode").unwrap());
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.starts_with("# my settings\n"), "{text}");
    assert!(text.contains("enabled = true"), "{text}");

    std::fs::write(
        &p,
        "enabled = true\n\n[sandbox]\n# sandbox only\nmode = \"plan\"\n",
    )
    .unwrap();
    assert!(unset_key(&p, "sandbox.mode").unwrap());
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains("# sandbox only"), "{text}");
    assert_eq!(Config::load_from(&p).unwrap().sandbox, Settings::default());
    let c = Config::load_from(&p).unwrap();
    assert_eq!(c.top.mode, None);
    assert_eq!(c.sandbox.mode, None);
    assert_eq!(c.top.enabled, Some(true));
}

#[test]
fn lists_integers_and_captures_parse_from_the_command_line() {
    let d = temp_dir("list");
    let p = d.path().join("config.toml");
    set_key(&p, "deny_apps", "thunderbird, signal,,").unwrap();
    set_key(&p, "sandbox.allow_apps", "").unwrap();
    set_key(&p, "action_budget", "25").unwrap();
    set_key(&p, "idle_expiry_minutes", "3").unwrap();
    set_key(&p, "capture", "a11y-and-pixels").unwrap();
    set_key(&p, "enabled", "true").unwrap();
    set_key(&p, "system_keys", "true").unwrap();
    assert!(set_key(&p, "system_keys", "yes").is_err());
    let c = Config::load_from(&p).unwrap();
    assert_eq!(c.top.system_keys, Some(true));
    assert_eq!(
        c.top.deny_apps,
        Some(vec!["thunderbird".to_string(), "signal".to_string()])
    );
    assert_eq!(c.sandbox.allow_apps, Some(vec![]));
    let sb = c.effective(true);
    assert!(!sb.allow_all_apps, "an explicit empty list allows no app");
    assert_eq!(sb.sources["allow_apps"], "sandbox table");
    assert_eq!(sb.action_budget, 25);
    assert_eq!(sb.idle_expiry_ms, 180_000);
    assert_eq!(sb.capture, Capture::A11yAndPixels);
    assert_eq!(parse_list(" a ,b"), vec!["a", "b"]);
}

#[test]
fn the_model_table_binds_a_model_and_defaults_the_rest() {
    let c = cfg("[model]\nprovider = \"openai\"\nmodel = \"qwen2.5:7b\"\nendpoint = \"http://127.0.0.1:11434/v1/\"\n").unwrap();
    let b = c.model.clone().expect("bound");
    assert_eq!(b.provider, Provider::OpenAi);
    assert_eq!(b.model, "qwen2.5:7b");
    assert_eq!(b.endpoint, "http://127.0.0.1:11434/v1");
    assert_eq!(b.api_key_env, None);
    assert_eq!(b.timeout_ms, DEFAULT_MODEL_TIMEOUT_MS);
    assert_eq!(b.max_retries, DEFAULT_MODEL_MAX_RETRIES);
    // The layers are untouched by the model table.
    assert_eq!(c.top, Settings::default());

    let c = cfg("[model]\nprovider = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\napi_key_env = \"ANTHROPIC_API_KEY\"\ntimeout_ms = 300\nmax_retries = 0\n").unwrap();
    let b = c.model.unwrap();
    assert_eq!(b.provider, Provider::Anthropic);
    assert_eq!(b.endpoint, ANTHROPIC_ENDPOINT);
    assert_eq!(b.api_key_env.as_deref(), Some("ANTHROPIC_API_KEY"));
    assert_eq!((b.timeout_ms, b.max_retries), (300, 0));

    // Incomplete: no binding, and what is missing is known.
    let c = cfg("[model]\nprovider = \"openai\"\n").unwrap();
    assert_eq!(c.model, None);
    assert_eq!(c.model_settings.missing(), vec!["model"]);
    assert_eq!(
        Config::default().model_settings.missing(),
        vec!["provider", "model"]
    );

    for (text, needle) in [
        (
            "[model]\nprovider = \"gemini\"\n",
            "unknown provider \"gemini\"",
        ),
        ("[model]\nmodle = \"x\"\n", "unknown key `model.modle`"),
        (
            "[model]\nendpoint = \"localhost:8080\"\n",
            "is not an http:// or https:// URL",
        ),
        (
            "[model]\napi_key_env = \"sk-abc-123\"\n",
            "not an environment variable name",
        ),
        ("[model]\nmax_retries = 11\n", "11 is out of range"),
        ("[model]\ntimeout_ms = 0\n", "0 is out of range"),
        (
            "model = \"gpt\"\n",
            "key `model`: is a string but must be a table",
        ),
        (
            "[sandbox]\n[sandbox.model]\nprovider = \"openai\"\n",
            "unknown key `sandbox.model`",
        ),
    ] {
        let e = cfg(text).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{text}");
        assert!(e.message.contains(needle), "{text}: {}", e.message);
        assert!(!e.message.contains("sk-abc-123"), "{}", e.message);
    }
}

#[test]
fn model_keys_are_set_and_unset_one_at_a_time() {
    let d = temp_dir("model");
    let p = d.path().join("config.toml");
    set_key(&p, "mode", "plan").unwrap();
    set_key(&p, "model.provider", "openai").unwrap();
    // An incomplete table is a valid file: the binding is filled in key by key.
    assert_eq!(Config::load_from(&p).unwrap().model, None);
    set_key(&p, "model.model", "gpt-4.1-mini").unwrap();
    set_key(&p, "model.endpoint", "http://127.0.0.1:8080/v1/").unwrap();
    set_key(&p, "model.api_key_env", "LOCAL_KEY").unwrap();
    set_key(&p, "model.timeout_ms", "1500").unwrap();
    set_key(&p, "model.max_retries", "3").unwrap();
    set_key(&p, "sandbox.mode", "bypass").unwrap();
    let c = Config::load_from(&p).unwrap();
    let b = c.model.clone().unwrap();
    assert_eq!(b.model, "gpt-4.1-mini");
    assert_eq!(b.endpoint, "http://127.0.0.1:8080/v1");
    assert_eq!(b.api_key_env.as_deref(), Some("LOCAL_KEY"));
    assert_eq!((b.timeout_ms, b.max_retries), (1500, 3));
    assert_eq!(c.top.mode, Some(Mode::Plan));
    assert_eq!(c.sandbox.mode, Some(Mode::Bypass));
    let text = std::fs::read_to_string(&p).unwrap();
    assert!(text.contains("[model]\nprovider = \"openai\""), "{text}");

    let before = text.clone();
    for (k, v) in [
        ("model.provider", "gemini"),
        ("model.api_key_env", "sk-live-secret"),
        ("model.max_retries", "99"),
        ("model.timeout_ms", "0"),
        ("model.endpoint", "ftp://x"),
        ("model.temperature", "0"),
    ] {
        let e = set_key(&p, k, v).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{k}={v}");
        assert!(!e.message.contains("sk-live-secret"), "{}", e.message);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), before);
    }

    assert!(unset_key(&p, "model.api_key_env").unwrap());
    assert_eq!(
        Config::load_from(&p).unwrap().model.unwrap().api_key_env,
        None
    );
    assert!(unset_key(&p, "model").unwrap());
    let c = Config::load_from(&p).unwrap();
    assert_eq!(c.model, None);
    assert_eq!(c.model_settings, ModelSettings::default());
    assert_eq!(c.sandbox.mode, Some(Mode::Bypass));
    assert!(unset_key(&p, "model.nonsense").is_err());
}

#[test]
fn invalid_values_leave_the_file_untouched() {
    let d = temp_dir("bad");
    let p = d.path().join("config.toml");
    let before = "# keep me\nmode = \"plan\"\n";
    std::fs::write(&p, before).unwrap();
    for (k, v) in [
        ("mode", "yolo"),
        ("action_budget", "0"),
        ("action_budget", "-3"),
        ("enabled", "yes"),
        ("capture", "pixels"),
        ("nonsense", "1"),
        ("sandbox.nonsense", "1"),
    ] {
        let e = set_key(&p, k, v).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{k}={v}");
        assert!(e.message.contains(&format!("`{k}`")), "{}", e.message);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), before);
    }
    // A file with several mistakes is repaired one key at a time, as the load
    // errors suggest; an invalid value is still refused there.
    std::fs::write(&p, "mode = \"yolo\"\nmdoe = 1\n").unwrap();
    assert!(set_key(&p, "mode", "nope").is_err());
    set_key(&p, "mode", "plan").unwrap();
    let e = Config::load_from(&p).unwrap_err();
    assert!(e.message.contains("unknown key `mdoe`"), "{}", e.message);
    assert!(unset_key(&p, "mdoe").unwrap());
    assert_eq!(Config::load_from(&p).unwrap().top.mode, Some(Mode::Plan));
    assert!(unset_key(&p, "nonsense").is_err());
    // A file that is not TOML at all is never rewritten.
    std::fs::write(&p, "mode = \n").unwrap();
    assert!(set_key(&p, "mode", "plan").is_err());
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "mode = \n");
}

#[test]
fn allowed_folders_are_absolute_or_under_home_and_never_come_from_a_changed_file() {
    let c = cfg("allow_files = [\"~/Projects\", \"/srv/shared\"]\n").unwrap();
    let own = c.effective(false);
    assert_eq!(own.allow_files, ["~/Projects", "/srv/shared"]);
    assert_eq!(own.sources["allow_files"], "file");
    for bad in [
        "allow_files = [\"Projects\"]",
        "allow_files = [\"~user/x\"]",
    ] {
        let e = cfg(bad).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidArgument, "{bad}");
        assert!(e.message.contains("allow_files"), "{}", e.message);
    }
    let mut changed = c.clone();
    changed.changed_outside = true;
    assert!(changed.effective(false).allow_files.is_empty());
    // `deskpilot config set allow_files ~/Projects,/srv/shared`.
    let d = temp_dir("allow-files");
    let p = d.path().join("config.toml");
    set_key(&p, "allow_files", "~/Projects,/srv/shared").unwrap();
    let c = Config::load_from(&p).unwrap();
    assert_eq!(
        c.effective(false).allow_files,
        ["~/Projects", "/srv/shared"]
    );
    assert!(set_key(&p, "allow_files", "Projects").is_err());
}

/// `serve`: off by default on the user's desktop and in a sandbox, on only where
/// the file says so, and never from a file changed outside deskpilot.
#[test]
fn serving_is_off_unless_the_user_turns_it_on() {
    let none = cfg("").unwrap();
    assert!(!none.effective(false).serve && !none.effective(true).serve);
    let on = cfg("serve = true\n").unwrap();
    assert!(on.effective(false).serve && on.effective(true).serve);
    assert_eq!(on.effective(false).sources["serve"], "file");
    let mut changed = on.clone();
    changed.changed_outside = true;
    assert!(!changed.effective(false).serve);
    assert!(cfg("serve = \"yes\"\n").is_err());
}
