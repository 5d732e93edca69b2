//! Unit tests of the control files, the grant lock rules and the control socket.

use std::path::Path;
use std::sync::Arc;

use super::dirs::{choose_hosts_dir, choose_scan_dirs};
use super::socket::{MAX_LINE, socket_name, stop_hosts_in};
use super::stop::STOP_FILE;
use super::*;

/// A fresh directory, removed when dropped. Short: socket paths must fit in
/// `sun_path` (108 bytes).
fn temp_dir(tag: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("dpc-{tag}-"))
        .tempdir()
        .unwrap()
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[cfg(unix)]
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[test]
fn stop_record_round_trip_and_clear() {
    let d = temp_dir("stop");
    assert_eq!(read_stop_in(d.path()), None);
    let rec = write_stop_in(d.path(), 1_000).unwrap();
    assert_eq!(
        rec,
        StopRecord {
            at_ms: 1_000,
            until_ms: 31_000
        }
    );
    assert_eq!(read_stop_in(d.path()), Some(rec));
    #[cfg(unix)]
    assert_eq!(mode(&d.path().join(STOP_FILE)), 0o600);
    // No temp file left behind.
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    clear_stop_in(d.path()).unwrap();
    assert_eq!(read_stop_in(d.path()), None);
    clear_stop_in(d.path()).unwrap();
    // A damaged record means stopped: a stop issued now.
    std::fs::write(d.path().join(STOP_FILE), b"{not json").unwrap();
    let before = now_ms();
    let damaged = read_stop_in(d.path()).expect("a damaged record is a stop");
    assert!(damaged.at_ms >= before, "{damaged:?}");
    assert_eq!(damaged.until_ms, damaged.at_ms + 30_000);
}

#[cfg(unix)]
#[test]
fn grant_lock_rules() {
    let d = temp_dir("lock");
    let me = std::process::id();
    let key = "99-0a1b2c3d";
    assert_eq!(read_grant_lock_in(d.path(), key), None);

    let out = acquire_grant_lock_in(d.path(), key, "s1", "g1", me, 10).unwrap();
    assert_eq!(out, LockOutcome::Acquired { previous: None });
    let first = Holder {
        pid: me,
        session: "s1".into(),
        grant_id: Some("g1".into()),
        since_ms: 10,
        start: process_start(me),
        user_until_ms: None,
    };
    assert!(first.start.is_some(), "our own start time is readable");
    assert_eq!(read_grant_lock_in(d.path(), key), Some(first.clone()));
    #[cfg(unix)]
    assert_eq!(mode(&d.path().join(format!("grant-{key}.lock"))), 0o600);

    // Same session re-acquires and sees its own record.
    let out = acquire_grant_lock_in(d.path(), key, "s1", "g2", me, 20).unwrap();
    assert_eq!(
        out,
        LockOutcome::Acquired {
            previous: Some(first)
        }
    );

    // Another session while the holder (our own, live pid) is alive.
    let held = read_grant_lock_in(d.path(), key).unwrap();
    let out = acquire_grant_lock_in(d.path(), key, "s2", "g3", me, 30).unwrap();
    assert_eq!(out, LockOutcome::HeldBy(held.clone()));
    assert_eq!(read_grant_lock_in(d.path(), key), Some(held.clone()));

    // Release by another session is a no-op; by the holder keeps session and grant.
    release_grant_lock_in(d.path(), key, "s2").unwrap();
    assert_eq!(read_grant_lock_in(d.path(), key), Some(held.clone()));
    release_grant_lock_in(d.path(), key, "s1").unwrap();
    let released = Holder {
        pid: 0,
        ..held.clone()
    };
    assert_eq!(read_grant_lock_in(d.path(), key), Some(released.clone()));

    // A released lock is taken by another session, which sees who held it.
    let out = acquire_grant_lock_in(d.path(), key, "s2", "g3", me, 40).unwrap();
    assert_eq!(
        out,
        LockOutcome::Acquired {
            previous: Some(released)
        }
    );
}

#[cfg(unix)]
#[test]
fn grant_lock_recovered_from_dead_holder() {
    let d = temp_dir("dead");
    let key = "dead";
    let gone = dead_pid();
    assert!(!pid_alive(gone));
    let stale = Holder {
        pid: gone,
        session: "old".into(),
        grant_id: Some("g0".into()),
        since_ms: 5,
        start: None,
        user_until_ms: None,
    };
    std::fs::write(
        d.path().join(format!("grant-{key}.lock")),
        serde_json::to_vec(&stale).unwrap(),
    )
    .unwrap();
    let out = acquire_grant_lock_in(d.path(), key, "new", "g1", std::process::id(), 50).unwrap();
    assert_eq!(
        out,
        LockOutcome::Acquired {
            previous: Some(stale)
        }
    );
    assert_eq!(read_grant_lock_in(d.path(), key).unwrap().session, "new");
}

#[cfg(target_os = "linux")]
#[test]
fn a_reused_pid_or_a_record_without_start_time_does_not_hold_the_lock() {
    let d = temp_dir("reused");
    let me = std::process::id();
    let real = process_start(me).expect("our start time");
    for start in [Some(real + 1), None] {
        let key = format!("reused-{}", start.is_some());
        let forged = Holder {
            pid: me,
            session: "other".into(),
            grant_id: Some("g0".into()),
            since_ms: 1,
            start,
            user_until_ms: None,
        };
        std::fs::write(
            d.path().join(format!("grant-{key}.lock")),
            serde_json::to_vec(&forged).unwrap(),
        )
        .unwrap();
        let out = acquire_grant_lock_in(d.path(), &key, "mine", "g1", me, 2).unwrap();
        assert_eq!(
            out,
            LockOutcome::Acquired {
                previous: Some(forged)
            }
        );
    }
    assert_eq!(clear_grant_locks_in(d.path()), 2);
    assert_eq!(clear_grant_locks_in(d.path()), 0);
    assert!(process_exe(me).is_some());
}

#[cfg(unix)]
#[test]
fn a_user_grant_lease_keeps_the_desktop_after_its_process_ends() {
    let d = temp_dir("lease");
    let key = "lease";
    let gone = dead_pid();
    acquire_grant_lock_in(d.path(), key, "cli", "u-1", gone, 10).unwrap();
    set_user_lease_in(d.path(), key, "cli", Some(1_000)).unwrap();
    // The holder's process is dead, but the user's grant is leased until 1,000.
    let out =
        acquire_grant_lock_in(d.path(), key, "run-7", "g-2", std::process::id(), 500).unwrap();
    assert!(
        matches!(out, LockOutcome::HeldBy(ref h) if h.session == "cli"),
        "{out:?}"
    );
    // The same session keeps its lease when it comes back.
    acquire_grant_lock_in(d.path(), key, "cli", "u-1", gone, 600).unwrap();
    assert_eq!(
        read_grant_lock_in(d.path(), key).unwrap().user_until_ms,
        Some(1_000)
    );
    // After the lease, or once released, another session may take it.
    let out =
        acquire_grant_lock_in(d.path(), key, "run-7", "g-2", std::process::id(), 1_001).unwrap();
    assert!(matches!(out, LockOutcome::Acquired { .. }), "{out:?}");
    set_user_lease_in(d.path(), key, "run-7", Some(5_000)).unwrap();
    release_grant_lock_in(d.path(), key, "run-7").unwrap();
    let out = acquire_grant_lock_in(d.path(), key, "cli", "u-3", gone, 1_002).unwrap();
    assert!(matches!(out, LockOutcome::Acquired { .. }), "{out:?}");
}

#[test]
fn grant_lock_rejects_path_like_keys() {
    let d = temp_dir("key");
    for bad in ["", "../x", "a/b", ".hidden"] {
        assert!(
            acquire_grant_lock_in(d.path(), bad, "s", "g", 1, 0).is_err(),
            "{bad:?}"
        );
        assert_eq!(read_grant_lock_in(d.path(), bad), None);
    }
}

#[test]
fn socket_directory_choice() {
    let state = Path::new("/tmp/deskpilot-1000");
    let xdg = Path::new("/run/user/1000");
    let sandbox_xdg = Path::new("/tmp/deskpilot-1000/sb1/runtime");
    let hosts = state.join("hosts");
    // DESKPILOT_RUNTIME_DIR set → state hosts, whatever else.
    assert_eq!(choose_hosts_dir(true, Some(xdg), false, state), hosts);
    // Normal shell → XDG.
    assert_eq!(
        choose_hosts_dir(false, Some(xdg), false, state),
        xdg.join("deskpilot")
    );
    // Inside a sandbox → state hosts.
    assert_eq!(
        choose_hosts_dir(false, Some(sandbox_xdg), true, state),
        hosts
    );
    assert_eq!(choose_hosts_dir(false, None, false, state), hosts);

    // A normal shell's stop scans both places, once each.
    assert_eq!(
        choose_scan_dirs(
            xdg.join("deskpilot"),
            false,
            Some(xdg),
            state,
            Some(xdg.to_path_buf())
        ),
        vec![xdg.join("deskpilot"), hosts.clone()]
    );
    // A sandbox shell's stop still reaches the login runtime dir.
    assert_eq!(
        choose_scan_dirs(
            hosts.clone(),
            false,
            Some(sandbox_xdg),
            state,
            Some(xdg.to_path_buf())
        ),
        vec![
            hosts.clone(),
            sandbox_xdg.join("deskpilot"),
            xdg.join("deskpilot")
        ]
    );
    // An explicit runtime dir confines everything to it.
    assert_eq!(
        choose_scan_dirs(hosts.clone(), true, Some(xdg), state, Some(xdg.into())),
        vec![hosts]
    );
}

#[tokio::test]
async fn stop_signal_wakes_waiters() {
    let s = StopSignal::new();
    assert!(!s.is_stopped());
    let waiter = tokio::spawn({
        let s = s.clone();
        async move { s.stopped().await }
    });
    tokio::task::yield_now().await;
    s.trigger();
    tokio::time::timeout(std::time::Duration::from_secs(2), waiter)
        .await
        .unwrap()
        .unwrap();
    assert!(s.is_stopped());
    // Already triggered → resolves at once.
    tokio::time::timeout(std::time::Duration::from_millis(100), s.stopped())
        .await
        .unwrap();
}

#[cfg(unix)]
fn info() -> Arc<std::sync::Mutex<HostInfo>> {
    Arc::new(std::sync::Mutex::new(HostInfo {
        pid: std::process::id(),
        session: "sess-1".into(),
        desktop: "99-0a1b2c3d".into(),
        grant_id: None,
        kind: "mcp".into(),
    }))
}

#[cfg(unix)]
async fn ask(path: &Path, lines: &[&[u8]]) -> Vec<serde_json::Value> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let s = tokio::net::UnixStream::connect(path).await.unwrap();
    let (rd, mut wr) = s.into_split();
    let mut rd = BufReader::new(rd);
    let mut out = Vec::new();
    for l in lines {
        let mut msg = l.to_vec();
        msg.push(b'\n');
        wr.write_all(&msg).await.unwrap();
        let mut reply = String::new();
        rd.read_line(&mut reply).await.unwrap();
        out.push(serde_json::from_str(&reply).unwrap());
    }
    out
}

#[cfg(unix)]
#[tokio::test]
async fn control_socket_describe_stop_and_garbage() {
    let d = temp_dir("sock");
    let info = info();
    let signal = StopSignal::new();
    let server = ControlServer::listen_in(d.path(), info.clone(), signal.clone()).unwrap();
    let path = server.path().to_path_buf();
    assert_eq!(path, d.path().join(socket_name(std::process::id())));
    assert_eq!(mode(&path), 0o600);

    info.lock().unwrap().grant_id = Some("g7".into());
    let r = ask(&path, &[br#"{"method":"describe"}"#]).await;
    assert_eq!(r[0]["ok"], true);
    assert_eq!(r[0]["host"]["grant_id"], "g7");
    assert_eq!(r[0]["host"]["kind"], "mcp");
    assert!(!signal.is_stopped());

    // Garbage and unknown methods are answered, and the connection lives on.
    let r = ask(
        &path,
        &[
            b"\x00\xffnot json",
            br#"{"method":"dance"}"#,
            br#"{"method":"describe"}"#,
        ],
    )
    .await;
    assert_eq!(r[0]["ok"], false);
    assert!(r[0]["error"].as_str().unwrap().contains("bad request"));
    assert_eq!(r[1]["ok"], false);
    assert!(r[1]["error"].as_str().unwrap().contains("dance"));
    assert_eq!(r[2]["ok"], true);

    // An over-long line gets an error; the server keeps serving others.
    let long = vec![b'x'; MAX_LINE + 10];
    let r = ask(&path, &[&long]).await;
    assert_eq!(r[0]["ok"], false);
    assert!(r[0]["error"].as_str().unwrap().contains("64 KiB"));

    let r = ask(&path, &[br#"{"method":"stop"}"#]).await;
    assert_eq!(r[0]["ok"], true);
    assert_eq!(r[0]["host"]["session"], "sess-1");
    assert!(signal.is_stopped());

    drop(server);
    assert!(!path.exists());
}

#[cfg(unix)]
#[tokio::test]
async fn stop_hosts_reaches_live_and_clears_stale() {
    let d = temp_dir("stop");
    // A live host: served under a foreign pid's name, since our own is skipped.
    let signal = StopSignal::new();
    let server = ControlServer::listen_in(d.path(), info(), signal.clone()).unwrap();
    let live = d.path().join("host-4000001.sock");
    std::fs::rename(server.path(), &live).unwrap();
    // A stale host: bound and dropped, leaving the file.
    let stale = d.path().join("host-4000002.sock");
    drop(std::os::unix::net::UnixListener::bind(&stale).unwrap());
    assert!(stale.exists());
    // An unrelated file is left alone.
    std::fs::write(d.path().join("notes.txt"), b"x").unwrap();

    let replies = stop_hosts_in(&[d.path().to_path_buf()]).await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert_eq!(replies[0].socket, live);
    assert_eq!(replies[0].error, None);
    assert_eq!(replies[0].host.as_ref().unwrap().session, "sess-1");
    assert!(signal.is_stopped());
    assert!(!stale.exists());
    assert!(live.exists());
    assert!(d.path().join("notes.txt").exists());
    drop(server);
}

#[cfg(unix)]
#[tokio::test]
async fn stop_hosts_skips_own_socket() {
    let d = temp_dir("own");
    let signal = StopSignal::new();
    let server = ControlServer::listen_in(d.path(), info(), signal.clone()).unwrap();
    let replies = stop_hosts_in(&[d.path().to_path_buf()]).await;
    assert!(replies.is_empty(), "{replies:?}");
    assert!(!signal.is_stopped());
    assert!(server.path().exists());
}
