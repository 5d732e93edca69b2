//! The cost of reaching a desktop through a device link (docs/ARCHITECTURE.md §15):
//! the same sandbox read in this process, through `deskpilot driver` on a pipe (the
//! JSON-RPC protocol and a second process), and through a real OpenSSH link to
//! `deskpilot driver` (a loopback `sshd` the bench starts,
//! [`deskpilot_driver_linux::loopback_sshd`]). Runs are interleaved (in-process,
//! pipe, ssh, …) and the figure of each link is its per-call overhead: the paired
//! difference link − in-process, run by run.

use std::ffi::OsString;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use deskpilot_driver_linux::loopback_sshd::LoopbackSshd;
use deskpilot_host::remote::LinkDriver;
use deskpilot_host::{ObserveOptions, Session, StateStore, Target};
use deskpilot_protocol::rpc::RpcOptions;
use deskpilot_protocol::{ComputerError, Driver};

use super::report::Figure;
use super::{ms, say, summary};
use deskpilot_host::device::Device;
use deskpilot_protocol::Result;

/// One way to the desktop: its driver and a session of its own.
struct Way {
    driver: Arc<dyn Driver>,
    session: Session,
}

/// Measures the links on the window `app` of the bench's sandbox `display`: the
/// far drivers get `env` (the bench's runtime directory and sandbox), a config
/// (serving on) and audit of their own under `dir`.
///
/// Errors: those of the sshd start (`COMPUTER_PLATFORM_UNSUPPORTED` without
/// openssh-server), of the links' `hello`, and of the reads.
pub async fn measure(
    key: &str,
    app: &str,
    display: u32,
    runs: usize,
    local: Arc<dyn Driver>,
    dir: &Path,
) -> Result<Vec<Figure>> {
    let exe = std::env::current_exe()
        .map_err(|e| ComputerError::internal(format!("this executable's path: {e}")))?;
    let far = dir.join("far");
    // The far side's own config lets its driver serve the bench's sandbox (off by
    // default: docs/ARCHITECTURE.md §7.16).
    std::fs::create_dir_all(&far)
        .and_then(|()| std::fs::write(far.join("config.toml"), "serve = true\n"))
        .map_err(|e| ComputerError::internal(format!("the far side's config: {e}")))?;
    let path = |p: &Path| p.display().to_string();
    let env: Vec<(String, String)> = [
        (
            "DESKPILOT_RUNTIME_DIR",
            path(&deskpilot_os::paths::runtime_dir()),
        ),
        ("DESKPILOT_SANDBOX", display.to_string()),
        ("DESKPILOT_CONFIG", path(&far.join("config.toml"))),
        ("XDG_STATE_HOME", path(&far.join("state"))),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();

    // The pipe: `env K=V… deskpilot driver` as a child.
    let mut pipe_args: Vec<OsString> = env.iter().map(|(k, v)| format!("{k}={v}").into()).collect();
    pipe_args.push(exe.clone().into());
    pipe_args.push("driver".into());
    let pipe: Arc<dyn Driver> = Arc::new(LinkDriver::new(
        "pipe",
        "env".into(),
        pipe_args,
        RpcOptions::default(),
    ));

    say(&format!(
        "{key}: starting a loopback sshd for the ssh link…"
    ));
    let sshd = LoopbackSshd::start(&dir.join("sshd"), &env)?;
    let device = Device::parse(&sshd.device())?;
    let (program, args) = device
        .ssh_command_with(
            None,
            Some(&sshd.ssh_options()),
            Some(&exe.display().to_string()),
        )
        .ok_or_else(|| ComputerError::internal("the loopback device is not an ssh: device"))?;
    let ssh: Arc<dyn Driver> = Arc::new(LinkDriver::new(
        &sshd.device(),
        program,
        args,
        RpcOptions::default(),
    ));

    let mut ways = Vec::new();
    for (name, driver) in [("in_process", local), ("pipe", pipe), ("ssh", ssh)] {
        let store = StateStore::open_in(dir, &format!("bench-link-{name}"))?;
        ways.push(Way {
            driver: driver.clone(),
            session: Session::new(driver, store),
        });
    }
    let target = Target::App(app.to_owned());
    let opts = ObserveOptions::default();
    // Warm-up: the links open (hello), the far side reads the tree once.
    for w in &mut ways {
        w.driver.windows().await?;
        w.session.observe(&target, &opts).await?;
    }
    say(&format!(
        "{key}: {runs} windows.list and observe runs in process, over a pipe and over ssh…"
    ));
    let mut call = vec![Vec::new(); ways.len()];
    let mut observe = vec![Vec::new(); ways.len()];
    for _ in 0..runs {
        for (i, w) in ways.iter_mut().enumerate() {
            let t = Instant::now();
            w.driver.windows().await?;
            call[i].push(ms(t));
            let t = Instant::now();
            w.session.observe(&target, &opts).await?;
            observe[i].push(ms(t));
        }
    }
    drop(ways);
    drop(sshd);
    let median = |s: &[f64]| summary(s, "link").map(|x| x.median);
    let mut figures = Vec::new();
    for (i, link, how) in [
        (
            1,
            "pipe",
            "`deskpilot driver` as a child on a pipe (JSON-RPC, a second process)",
        ),
        (
            2,
            "ssh",
            "`ssh -T` to a loopback OpenSSH sshd running `deskpilot driver` (ed25519 keys, default ciphers)",
        ),
    ] {
        for (what, samples) in [("windows.list", &call), ("observe", &observe)] {
            let diff: Vec<f64> = samples[i]
                .iter()
                .zip(&samples[0])
                .map(|(l, h)| l - h)
                .collect();
            let f = Figure::new(key, "link_overhead_ms", "ms", summary(&diff, "link overhead")?)
                .subject(format!("{what} over {link}"))
                .detail(format!(
                    "{how}; paired runs link − in process: median {:.1} ms through the link vs {:.1} ms in process",
                    median(&samples[i])?,
                    median(&samples[0])?
                ));
            figures.push(f);
        }
    }
    if let [pipe_call, pipe_obs, ssh_call, ssh_obs] = &figures[..] {
        say(&format!(
            "{key}: link overhead per call (medians) — pipe {:.1} ms (windows.list), {:.1} ms (observe); ssh {:.1} ms, {:.1} ms",
            pipe_call.summary.median,
            pipe_obs.summary.median,
            ssh_call.summary.median,
            ssh_obs.summary.median
        ));
    }
    Ok(figures)
}
