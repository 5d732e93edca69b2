//! `deskpilot`: read and operate desktop applications through the accessibility tree.
//!
//! Every command prints human text by default and one JSON document with `--json`.
//! A failure prints `error[COMPUTER_…]: what happened and what to do` on stderr (or
//! `{"ok":false,"error":{code,message,detail}}` on stdout with `--json`) and exits 1;
//! bad command-line usage exits 2. Logs go to stderr (`RUST_LOG=debug`).

#![forbid(unsafe_code)]

mod cmd;
mod output;
mod usage;

use clap::{Args, Parser, Subcommand};

/// Let an AI agent (or you) read and operate desktop apps through the accessibility
/// tree, in the background, without screenshots.
#[derive(Debug, Parser)]
#[command(
    name = "deskpilot",
    version,
    after_help = "Examples:
  deskpilot demo                               # sandbox + mousepad: type, Save As, verify
  deskpilot sandbox start                      # an isolated desktop (Xvfb + AT-SPI)
  deskpilot sandbox run -- mousepad            # launch an app inside it
  deskpilot launch mousepad                    # start an app, wait until it can be read
  deskpilot observe --app mousepad             # the window as text, with refs
  deskpilot act e12 set_value 'Hello'          # act by ref; prints what changed
  deskpilot keys ctrl+s --app mousepad         # keyboard fallback (declared)
  deskpilot stop                               # revoke every grant, abort running hosts
  deskpilot audit --tail 20                    # what was granted, done and refused
  deskpilot sandbox stop"
)]
struct Cli {
    /// Print one JSON document instead of human text.
    #[arg(long, global = true)]
    json: bool,
    /// Work inside the sandbox on this display (`:N` or `N`, as `deskpilot sandbox list`
    /// prints it; `sandbox start --sandbox N` starts one there).
    /// Without it, deskpilot uses $DISPLAY and $DBUS_SESSION_BUS_ADDRESS, or the only
    /// running sandbox when those are unset. `deskpilot mcp --sandbox` (no number)
    /// starts a new sandbox for the server and stops it on exit.
    #[arg(
        long,
        global = true,
        env = "DESKPILOT_SANDBOX",
        value_name = "N",
        num_args = 0..=1,
        default_missing_value = "new",
        value_parser = usage::sandbox
    )]
    sandbox: Option<String>,
    /// Keep refs and the grant under this session name (two agents on one desktop
    /// each use their own; one grant is active per desktop at a time).
    #[arg(
        long,
        global = true,
        env = "DESKPILOT_SESSION",
        default_value = "cli",
        value_name = "NAME",
        value_parser = usage::session_name
    )]
    session: String,
    /// The device to drive: `local` (this machine), `ssh:[user@]host[:port]` (a Linux
    /// machine with `deskpilot` installed, through `ssh -T`), or `adb[:serial]` (an
    /// Android device). The policy, refs, approvals and audit stay on this machine.
    #[arg(
        long,
        global = true,
        env = "DESKPILOT_DEVICE",
        default_value = "local",
        value_name = "DEVICE"
    )]
    device: String,
    #[command(subcommand)]
    command: Command,
}

/// `deskpilot clipboard` subcommands.
#[derive(Debug, Subcommand)]
enum ClipboardCmd {
    /// Print the clipboard's text (secrets masked).
    Read,
    /// Put TEXT on the clipboard (`-` reads it from stdin), then read it back.
    Write { text: String },
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check the display, session bus, accessibility bus and input; --fix turns
    /// accessibility on.
    Doctor {
        /// Turn org.a11y.Status.IsEnabled on.
        #[arg(long)]
        fix: bool,
    },
    /// Start, use and stop isolated sandbox desktops.
    #[command(subcommand)]
    Sandbox(SandboxCmd),
    /// List applications and their windows (with window refs).
    Apps,
    /// Show a window as indented text with element refs.
    Observe {
        #[command(flatten)]
        target: TargetArgs,
        /// Only the subtree of this ref (e.g. a long list).
        #[arg(long, value_name = "REF")]
        scope: Option<String>,
        /// With --scope: start at this child of the scope (the next page of a long
        /// container, as its "… K more items, use observe scope=eN from=K" line says).
        #[arg(long, value_name = "K", requires = "scope")]
        from: Option<u32>,
        /// Only elements whose text contains this (with their ancestors).
        #[arg(long, value_name = "TEXT")]
        query: Option<String>,
        /// Token budget of the snapshot (hard ceiling).
        #[arg(long, default_value_t = 2000, value_name = "N", value_parser = usage::max_tokens)]
        max_tokens: usize,
    },
    /// Find elements whose name, value or description contains TEXT.
    Find {
        /// Text to look for in names, values and descriptions (case-insensitive;
        /// "" matches every element, useful with --role).
        text: String,
        /// Only elements of this role (button, textbox, menuitem, …).
        #[arg(long, value_parser = usage::role)]
        role: Option<deskpilot_core::Role>,
        #[command(flatten)]
        target: TargetArgs,
        /// At most this many results.
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Print the whole text of an element (a text field, a document), or a part of
    /// it by character offsets: exact text, never cut inside a character.
    ///
    /// Examples: `deskpilot read e19`, `deskpilot read e19 --tail 200`,
    /// `deskpilot read e19 --from 1000 --to 2000`.
    Read {
        /// Element ref from the last observe (e.g. e19).
        #[arg(value_name = "REF")]
        ref_: String,
        /// First character (Unicode scalar values, from 0).
        #[arg(long)]
        from: Option<u64>,
        /// One past the last character.
        #[arg(long)]
        to: Option<u64>,
        /// Only the last N characters.
        #[arg(long, conflicts_with_all = ["from", "to"])]
        tail: Option<u64>,
    },
    /// Act on an element by ref: click, set_value, type, toggle, select, focus, …
    /// Prints what changed.
    Act {
        /// Element ref from the last observe (e.g. e12).
        #[arg(value_name = "REF")]
        ref_: String,
        /// click, double_click, right_click, focus, set_value, type, clear, toggle,
        /// select, expand, collapse, scroll.
        #[arg(value_parser = usage::op)]
        op: deskpilot_core::Op,
        /// Text for set_value/type; direction for scroll (up, down, left, right, into_view).
        value: Option<String>,
    },
    /// Launch an installed application (no shell, under the policy, audited) and
    /// wait until its first window can be read through the accessibility tree;
    /// prints the app name `observe --app` takes.
    #[command(after_help = "Examples:
  deskpilot launch gnome-calculator
  deskpilot observe --app gnome-calculator
  deskpilot launch --wait-ms 30000 mousepad /tmp/notes.txt")]
    Launch {
        /// How long the first window may take to become readable, ms; past it the
        /// launch fails COMPUTER_TIMEOUT naming the remedy for the app's toolkit.
        #[arg(long, default_value_t = 15_000, value_name = "MS")]
        wait_ms: u64,
        /// Program and arguments (files or URLs, never options).
        #[arg(trailing_var_arg = true, required = true, value_name = "APP ARGS")]
        command: Vec<String>,
    },
    /// Send keys to a window through the keyboard fallback (moves no pointer, but is
    /// synthetic input: prefer `act`).
    Keys {
        /// Chords like `ctrl+s`, `shift+Tab Return`; with --text, literal text.
        keys: String,
        /// Type KEYS as literal text instead of chords.
        #[arg(long)]
        text: bool,
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Click at window-relative pixels, checked against the basis an observe printed
    /// (synthetic pointer input: moves the pointer; prefer `act`).
    #[command(name = "click-at")]
    ClickAt {
        /// Pixels from the window's left edge (in the basis's capture pixels).
        x: f64,
        /// Pixels from the window's top edge.
        y: f64,
        /// The `basis` printed by the observe the coordinates came from
        /// (rREV:X,Y,WxH@SCALE).
        #[arg(long, value_parser = usage::basis)]
        basis: String,
        /// left, right or double.
        #[arg(long, default_value = "left", value_parser = ["left", "right", "double"])]
        button: String,
    },
    /// Capture the bound (or named) window as a PNG: plain, with numbered marks on
    /// its interactive elements (--marks), or with the text read by local OCR as
    /// elements o1, o2… to act on (--ocr). Needs the user's permission for pixels:
    /// `deskpilot config set capture a11y-and-pixels`.
    ///
    /// Examples:
    ///   deskpilot screenshot --app gnome-calculator --marks --out calc.png
    ///   deskpilot screenshot --ocr --json
    ///   deskpilot click-at 412 80 --basis r3:0,0,1280x720@1
    #[command(verbatim_doc_comment)]
    Screenshot {
        #[command(flatten)]
        target: TargetArgs,
        /// Write the PNG here (nothing is written without it).
        #[arg(long, value_name = "FILE")]
        out: Option<std::path::PathBuf>,
        /// Draw a numbered box on each interactive element, labelled with its ref.
        #[arg(long, conflicts_with = "ocr")]
        marks: bool,
        /// Read the window's text by local OCR (tesseract) as elements o1, o2….
        #[arg(long)]
        ocr: bool,
        /// Longest side of the image, pixels (downscaled above it).
        #[arg(long, value_name = "N", default_value_t = 1280)]
        max_side: u32,
    },
    /// Wait until an element or text appears (or disappears).
    Wait {
        #[command(flatten)]
        target: TargetArgs,
        /// Some element contains this text.
        #[arg(long, group = "cond")]
        text: Option<String>,
        /// No element contains this text any more.
        #[arg(long, group = "cond")]
        gone: Option<String>,
        /// An element of this role (with --name).
        #[arg(long, requires = "name", group = "cond", value_parser = usage::role)]
        role: Option<deskpilot_core::Role>,
        /// Name the --role element must contain.
        #[arg(long, requires = "role")]
        name: Option<String>,
        /// A window whose title contains this.
        #[arg(long = "window-title", group = "cond")]
        window_title: Option<String>,
        /// Give up after this many milliseconds.
        #[arg(long, default_value_t = 10_000)]
        timeout_ms: u64,
    },
    /// Show the grant; `--user` issues one yourself (needs a terminal; lifts a stop).
    #[command(after_help = "Examples:
  deskpilot grant                                  # what is granted now
  deskpilot grant --user                           # grant this desktop yourself
  deskpilot grant --user --scope window --app mousepad   # pin the grant to one window")]
    Grant {
        /// Issue a user grant (asks you on the terminal first).
        #[arg(long)]
        user: bool,
        /// `desktop` (rebindable to any permitted window) or `window` (pinned).
        #[arg(long, default_value = "desktop", value_parser = ["desktop", "window"])]
        scope: String,
        #[command(flatten)]
        target: TargetArgs,
    },
    /// Revoke this session's grant.
    Revoke,
    /// Stop: revoke every grant, abort running deskpilot hosts (waits, MCP servers,
    /// runs), and refuse agent-issued grants for 30 s.
    Stop,
    /// Approve one pending action by the id an error gave (needs a terminal).
    Approve {
        /// The approval id from COMPUTER_CONFIRMATION_REQUIRED.
        id: String,
    },
    /// Show or edit the config file (feature switch, mode, allow/deny lists, budget).
    Config {
        #[command(subcommand)]
        cmd: Option<cmd::config::ConfigCmd>,
    },
    /// Read the audit log: grants, rebinds, actions and refusals.
    Audit {
        /// The last N records.
        #[arg(long, default_value_t = 20, value_name = "N")]
        tail: usize,
    },
    /// Hand one instruction to the model bound in the config (`[model]`): a bounded
    /// loop of observe → decide → act on the host's policy; prints what was done.
    #[command(after_help = "Examples:
  deskpilot config set model.provider openai
  deskpilot config set model.model gpt-4.1-mini
  deskpilot config set model.api_key_env OPENAI_API_KEY
  deskpilot run \"type Hello into the editor\" --max-steps 10
  deskpilot run \"what can you reach?\" --observe-only")]
    Run {
        /// What to do, in plain words.
        #[arg(value_parser = usage::instruction)]
        instruction: String,
        /// At most this many steps (also capped by the grant's actions left).
        #[arg(long, default_value_t = 20, value_name = "N", value_parser = usage::at_least_one)]
        max_steps: usize,
        /// Describe what is in scope (windows, refusals, the bound window) without
        /// calling a model or acting.
        #[arg(long)]
        observe_only: bool,
    },
    /// Serve deskpilot's tools over MCP on stdio (or streamable HTTP on loopback),
    /// every call through the host's policy.
    #[command(after_help = "Examples:
  claude mcp add deskpilot -- deskpilot mcp              # Claude Code, your desktop
  claude mcp add deskpilot -- deskpilot mcp --sandbox    # in a fresh sandbox desktop
  deskpilot mcp --http 127.0.0.1:8765                    # streamable HTTP, loopback only, bearer token
  deskpilot mcp --socket /run/user/1000/deskpilot.sock   # streamable HTTP on a Unix socket, this user only

Over --http every request must carry `Authorization: Bearer TOKEN`: the token is
printed at start and kept in the token file (mode 0600; remove it to rotate).")]
    Mcp {
        /// Serve streamable HTTP on this loopback address instead of stdio.
        #[arg(long, value_name = "ADDR", conflicts_with = "socket")]
        http: Option<std::net::SocketAddr>,
        /// Serve streamable HTTP on this Unix socket instead of stdio (mode 0600;
        /// connections from other users are closed).
        #[arg(long, value_name = "PATH")]
        socket: Option<std::path::PathBuf>,
        /// Where the bearer token of --http is kept [default: mcp-http.token in the
        /// runtime directory].
        #[arg(long, value_name = "PATH", requires = "http")]
        token_file: Option<std::path::PathBuf>,
        /// Teach mode: also serve computer_teach_step and computer_teach_batch, which
        /// explain each step in a bubble on the desktop and run it when you press Next.
        #[arg(long)]
        teach: bool,
    },
    /// Read or write the clipboard's text (a grant of its own: `deskpilot config set
    /// clipboard true` allows it).
    #[command(after_help = "Examples:
  deskpilot clipboard read
  deskpilot clipboard write 'text to paste'
  deskpilot keys ctrl+v --app mousepad   # paste it into the window you work in")]
    Clipboard {
        #[command(subcommand)]
        cmd: ClipboardCmd,
    },
    /// Holds the clipboard of DISPLAY with the text on stdin until another program
    /// takes it (started by `clipboard write`).
    #[command(name = "clipboard-hold", hide = true)]
    ClipboardHold { display: String },
    /// The main job: a sandbox with mousepad; types mixed-script text, saves it
    /// through File ▸ Save As…, verifies the file's bytes. No screenshots.
    Demo {
        /// Leave the sandbox running afterwards (prints how to join it).
        #[arg(long)]
        keep: bool,
        /// Save the text here and keep the file (default: a temporary file, removed
        /// once its bytes are verified).
        #[arg(long, value_name = "PATH")]
        out: Option<std::path::PathBuf>,
    },
    /// Serve the driver over JSON-RPC 2.0 on stdin/stdout (one message per line).
    Driver,
    /// Print a shell completion script for bash, zsh, fish, elvish or powershell.
    #[command(after_help = "Examples:
  deskpilot completions bash > ~/.local/share/bash-completion/completions/deskpilot
  deskpilot completions zsh > ~/.zfunc/_deskpilot
  deskpilot completions fish > ~/.config/fish/completions/deskpilot.fish")]
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff), made from this help.
    #[command(after_help = "Examples:
  deskpilot man > deskpilot.1 && man ./deskpilot.1
  deskpilot man | sudo tee /usr/local/share/man/man1/deskpilot.1 >/dev/null")]
    Man,
    /// Measure observe, tokens, act, find, whole CLI processes and the MCP server's
    /// memory on real apps in a sandbox of its own, against a pyatspi walk,
    /// screenshots, OSWorld's flat tree and, with --peers, xa11y and cua-driver
    /// (median / p95; targets reported as met or missed, never asserted).
    #[command(after_help = "Examples:
  deskpilot bench                                  # every app, 20 runs per figure
  deskpilot bench --peers                          # also xa11y and cua-driver, installed pinned into target/peers
  deskpilot bench --apps mousepad,calculator --runs 5 --json > bench.json")]
    Bench {
        /// Counted runs per figure (after one warm-up run).
        #[arg(long, default_value_t = 20, value_name = "N", value_parser = usage::at_least_one)]
        runs: usize,
        /// Only these apps, comma-separated: mousepad, widget-factory, calculator,
        /// libreoffice, chromium (default: all).
        #[arg(long, value_delimiter = ',', value_name = "APPS", value_parser = cmd::app_key)]
        apps: Vec<String>,
        /// Also measure the peer drivers, xa11y's CLI and cua-driver, on the same
        /// apps, whole process and warm through MCP (installs them with
        /// scripts/bench-peers into target/peers/ first: crates.io and PyPI).
        #[arg(long)]
        peers: bool,
    },
    /// Run the evaluation suite: real tasks on real apps, each attempt in a fresh
    /// sandbox, decided by checkers that read state deskpilot did not write.
    #[command(after_help = "Examples:
  deskpilot eval --jobs 2                          # the oracle over the whole suite (the gate)
  deskpilot eval --tasks 'mousepad-*,calc-*'       # some tasks
  deskpilot eval --policy model --runs 3           # the bound model, tree observation
  deskpilot eval --policy model --observation pixels   # the same model as a screenshot agent
  deskpilot eval --shard 2/3 --out r2              # one shard; then: deskpilot eval merge r1 r2 r3 --out all
  deskpilot eval report eval-results               # rewrite report.html")]
    Eval(EvalArgs),
}

/// `deskpilot eval …`: run the suite (no subcommand), or work on result directories.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
struct EvalArgs {
    #[command(subcommand)]
    cmd: Option<EvalCmd>,
    #[command(flatten)]
    run: EvalRunArgs,
}

#[derive(Debug, Args)]
struct EvalRunArgs {
    /// The suite: a directory with tasks/*.toml and checkers/ [default:
    /// $DESKPILOT_EVAL_SUITE, else ./eval].
    #[arg(long, value_name = "DIR")]
    suite: Option<std::path::PathBuf>,
    /// Only tasks whose id matches (wildcards * and ?, comma-separated).
    #[arg(long, value_name = "GLOB")]
    tasks: Option<String>,
    /// oracle (each task's own solution: the reliability gate) or model (the model
    /// bound in the config, through the same loop as `deskpilot run`).
    #[arg(long, default_value = "oracle", value_parser = ["oracle", "model"])]
    policy: String,
    /// What a model is shown each step: tree (the accessibility tree as text),
    /// pixels (a marked screenshot only: a screenshot agent's view) or hybrid (both).
    #[arg(long, default_value = "tree", value_parser = ["tree", "pixels", "hybrid"])]
    observation: String,
    /// Attempts run at once, each in its own sandbox desktop.
    #[arg(long, default_value_t = 2, value_name = "N", value_parser = usage::at_least_one)]
    jobs: usize,
    /// Attempts per task.
    #[arg(long, default_value_t = 1, value_name = "K", value_parser = usage::at_least_one)]
    runs: usize,
    /// Result directory (results.jsonl, summary.json, report.html, attempts/).
    #[arg(long, default_value = "eval-results", value_name = "DIR")]
    out: std::path::PathBuf,
    /// Run only shard I of N (tasks in id order, every Nth from the Ith).
    #[arg(long, value_name = "I/N", value_parser = cmd::eval::parse_shard)]
    shard: Option<(usize, usize)>,
}

#[derive(Debug, Subcommand)]
enum EvalCmd {
    /// Write summary.json and report.html of a result directory again.
    Report {
        /// A directory `deskpilot eval --out DIR` wrote.
        dir: std::path::PathBuf,
    },
    /// Combine result directories (the shards of one run) into one.
    Merge {
        /// Result directories.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<std::path::PathBuf>,
        /// Where the merged results go.
        #[arg(long, value_name = "DIR")]
        out: std::path::PathBuf,
    },
    /// One attempt in a process of its own (started by `deskpilot eval`).
    #[command(hide = true)]
    Attempt {
        #[arg(long)]
        task: std::path::PathBuf,
        #[arg(long)]
        suite: std::path::PathBuf,
        #[arg(long)]
        policy: String,
        #[arg(long)]
        observation: String,
        #[arg(long)]
        run: usize,
        #[arg(long)]
        dir: std::path::PathBuf,
    },
}

#[derive(Debug, Subcommand)]
enum SandboxCmd {
    /// Start a sandbox desktop (Xvfb, session D-Bus, accessibility bus, openbox), on
    /// the display `--sandbox N` names (`:N` or `N`), else the first free one from :90.
    Start {
        /// The same as `--sandbox N`, kept for scripts that say it this way.
        #[arg(long, hide = true, value_name = "N", value_parser = usage::display_number)]
        display: Option<u32>,
        /// Do not start a window manager.
        #[arg(long)]
        no_wm: bool,
        /// Screen size in pixels, WxH (e.g. 3840x2160 for a HiDPI desktop).
        #[arg(long, value_name = "WxH", default_value = "1280x800", value_parser = usage::screen_size)]
        size: (u32, u32),
    },
    /// Launch an app inside a sandbox (with accessibility switched on).
    Run {
        /// Program and arguments, after `--`.
        #[arg(trailing_var_arg = true, required = true, value_name = "APP ARGS")]
        command: Vec<String>,
    },
    /// Print `export` lines to join a sandbox from a shell: eval "$(deskpilot sandbox env)".
    Env,
    /// Stop a sandbox and every process in it.
    Stop {
        /// Stop every sandbox.
        #[arg(long)]
        all: bool,
    },
    /// List sandboxes.
    List,
    /// Stops the sandbox once process PID has ended (started by `deskpilot mcp
    /// --sandbox` so that its sandbox goes with it however it ends, SIGKILL included).
    #[command(hide = true)]
    Watch {
        /// The process whose end stops the sandbox.
        #[arg(long)]
        pid: u32,
        /// Its start time (`/proc/PID/stat` field 22), so a reused pid is not it.
        #[arg(long)]
        start: Option<u64>,
    },
}

/// Which window a command targets.
#[derive(Debug, Args, Clone, Default)]
pub struct TargetArgs {
    /// A window of this application (name as `deskpilot apps` shows it).
    #[arg(long, value_name = "NAME")]
    pub app: Option<String>,
    /// A window ref (w2) or part of a window title.
    #[arg(long, value_name = "ID", conflicts_with = "app")]
    pub window: Option<String>,
}

fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let cli = match Cli::try_parse().and_then(usage::check) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            let wants_json = std::env::args().any(|a| a == "--json");
            let is_help = matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            );
            if wants_json && !is_help {
                // Scripts asked for JSON: bad usage is one JSON document too (exit 2,
                // as `e.exit()` below exits for humans).
                let err = deskpilot_protocol::ComputerError::new(
                    deskpilot_protocol::ErrorCode::InvalidArgument,
                    e.render().to_string().trim().to_string(),
                );
                output::print_error(true, &err);
                std::process::exit(2);
            }
            if !is_help {
                // For humans too, bad usage names its code, as every other error does.
                let text = e.render().to_string();
                let text = match text.strip_prefix("error:") {
                    Some(rest) => format!("error[COMPUTER_INVALID_ARGUMENT]:{rest}"),
                    None => text,
                };
                eprint!("{text}");
                std::process::exit(2);
            }
            e.exit()
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error[COMPUTER_INTERNAL]: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let json = cli.json;
    let code = rt.block_on(cmd::run(cli));
    let code = match code {
        Ok(()) => 0,
        Err(e) => {
            output::print_error(json, &e);
            // Bad usage is 2 whoever found it (clap or the command); every other
            // failure is 1.
            if e.code == deskpilot_protocol::ErrorCode::InvalidArgument {
                2
            } else {
                1
            }
        }
    };
    // Leave no stray tasks holding D-Bus connections open.
    rt.shutdown_timeout(std::time::Duration::from_millis(200));
    std::process::exit(code);
}
