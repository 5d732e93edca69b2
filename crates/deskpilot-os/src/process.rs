//! Process facts (alive, uid, executable, command name, start time, ancestors), this
//! boot's id, this process's uids, and signals to and reaping of processes.
//!
//! Facts are read from `/proc` and are Linux-only: elsewhere they are `None` (or
//! empty), which every caller treats as "unknown". Pids are `u32` as
//! `std::process::id` gives them; a pid that does not fit a positive `pid_t` names no
//! process.

use std::path::Path;

/// Converts a pid to a positive `pid_t`; 0 and values beyond `i32::MAX` give `None`.
#[cfg(unix)]
fn positive(pid: u32) -> Option<libc::pid_t> {
    libc::pid_t::try_from(pid).ok().filter(|&p| p > 0)
}

/// Whether process `pid` is alive: it exists — `kill(pid, 0)` succeeds, or fails with
/// `EPERM` because it belongs to another user — and, on Linux, is not a zombie (state
/// `Z`: it has exited and only waits for its parent to reap it) nor dead (`X`). A
/// zombie is not alive: it runs no code and holds nothing but its pid.
///
/// pid 0 and pids beyond `i32::MAX` → false; always false off Unix. When the state
/// cannot be read (the process is hidden by `hidepid`, or exited in between) the
/// answer of `kill` stands.
pub fn pid_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Some(p) = positive(pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks for existence and permission; nothing is sent
        // and no memory is touched.
        let exists = unsafe { libc::kill(p, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        exists
            && !proc_read(pid, "stat")
                .is_some_and(|s| matches!(parse_stat_state(&s), Some('Z' | 'X')))
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

/// Reads `/proc/PID/<file>`; `None` for pid 0, when unreadable, or off Linux.
fn proc_read(pid: u32, file: &str) -> Option<String> {
    if !cfg!(target_os = "linux") || pid == 0 {
        return None;
    }
    std::fs::read_to_string(format!("/proc/{pid}/{file}")).ok()
}

/// The fields of `/proc/PID/stat` after the command name (field 2, which may itself
/// contain spaces and parentheses): field 3 (state) first.
fn stat_tail(stat: &str) -> Option<&str> {
    Some(&stat[stat.rfind(')')? + 1..])
}

/// Process state letter (field 3 of `/proc/PID/stat`: `R`, `S`, `Z`…).
#[cfg(any(unix, test))]
fn parse_stat_state(stat: &str) -> Option<char> {
    stat_tail(stat)?.split_whitespace().next()?.chars().next()
}

/// Parent pid from the text of `/proc/PID/stat` (field 4).
fn parse_stat_ppid(stat: &str) -> Option<u32> {
    stat_tail(stat)?.split_whitespace().nth(1)?.parse().ok()
}

/// Start time from the text of `/proc/PID/stat` (field 22).
fn parse_stat_start(stat: &str) -> Option<u64> {
    // Fields after the name start at 3 (state); 22 is the 20th of them.
    stat_tail(stat)?.split_whitespace().nth(19)?.parse().ok()
}

/// The real uid: the first number of the `Uid:` line of `/proc/PID/status`.
fn parse_status_uid(status: &str) -> Option<u32> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Real uid of `pid`, from the first number of the `Uid:` line of
/// `/proc/PID/status`; `None` when unreadable or not on Linux.
pub fn process_uid(pid: u32) -> Option<u32> {
    parse_status_uid(&proc_read(pid, "status")?)
}

/// Command name of `pid` (`/proc/PID/comm`, trimmed, at most 15 bytes as the kernel
/// keeps it); `None` when unreadable or not on Linux.
pub fn process_comm(pid: u32) -> Option<String> {
    Some(proc_read(pid, "comm")?.trim().to_string())
}

/// The program name a process was started as: the file name of `argv[0]` in
/// `/proc/PID/cmdline` (`gnome-calculator`, where `comm` keeps the kernel's 15
/// bytes, `gnome-calculato`), else its `comm`. `None` when both are unreadable
/// (a process that ended, another user's) or not on Linux.
pub fn process_name(pid: u32) -> Option<String> {
    if cfg!(target_os = "linux") && pid != 0 {
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok();
        if let Some(name) = cmdline.as_deref().and_then(program_name) {
            return Some(name);
        }
    }
    process_comm(pid).filter(|c| !c.is_empty())
}

/// The file name of `argv[0]` in a `/proc/PID/cmdline` image (NUL-separated
/// arguments), pure. A process that rewrote its title into one string
/// (`setproctitle`: `name: worker --flag`) gives the part before the first space.
/// `None` for an empty image or an empty name (a kernel thread, a zombie).
pub fn program_name(cmdline: &[u8]) -> Option<String> {
    let argv0 = cmdline.split(|&b| b == 0).next()?;
    let argv0 = String::from_utf8_lossy(argv0);
    let first = argv0.split(' ').next().unwrap_or_default();
    let name = first.rsplit('/').next().unwrap_or_default().trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// Start time of `pid` in clock ticks since boot (`/proc/PID/stat` field 22): with
/// the pid, it names one process even after the pid is reused. `None` when
/// unreadable or not on Linux.
pub fn process_start(pid: u32) -> Option<u64> {
    parse_stat_start(&proc_read(pid, "stat")?)
}

/// File name of the executable `pid` runs, with symlinks resolved
/// (`/proc/PID/exe`): unlike the app name or `comm`, a renamed link to a binary
/// does not change it; a replaced binary's ` (deleted)` suffix is dropped. `None`
/// when unreadable (another user's process) or not on Linux.
pub fn process_exe(pid: u32) -> Option<String> {
    if !cfg!(target_os = "linux") || pid == 0 {
        return None;
    }
    let path = std::fs::read_link(format!("/proc/{pid}/exe")).ok()?;
    let name = path.file_name()?.to_string_lossy().to_string();
    Some(name.trim_end_matches(" (deleted)").to_string())
}

/// Whether `pid`, or one of its descendants, holds a pseudo-terminal's master end
/// open (an fd on the pty multiplexer, [`is_ptmx`]): the process is a terminal
/// emulator — xterm, a VTE or konsole widget, an IDE's terminal pane — whatever
/// its name, because whatever is typed into it reaches a shell. Descendants count
/// because some terminals keep the master in a helper process; they are read from
/// `/proc/PID/task/*/children`, breadth first, at most [`PTY_SCAN_MAX`] processes.
///
/// `None` when the answer is unknown: the fds of `pid` or of a live descendant are
/// unreadable (another user's process, a non-dumpable one), the scan reached its
/// bound, or not on Linux. Callers judge unknown as a terminal where it matters
/// (docs/ARCHITECTURE.md §7.22).
pub fn holds_pty_master(pid: u32) -> Option<bool> {
    if !cfg!(target_os = "linux") || pid == 0 {
        return None;
    }
    let mut queue = std::collections::VecDeque::from([pid]);
    let mut read = 0usize;
    let mut unknown = false;
    while let Some(p) = queue.pop_front() {
        read += 1;
        if read > PTY_SCAN_MAX {
            return None;
        }
        match fds_hold_ptmx(p) {
            Some(true) => return Some(true),
            Some(false) => {}
            // A process that ended meanwhile holds nothing; any other might.
            None => unknown |= Path::new(&format!("/proc/{p}")).exists(),
        }
        queue.extend(children(p));
    }
    (!unknown).then_some(false)
}

/// The children of process `pid`, from `/proc/PID/task/*/children` (Linux 3.5
/// and later; empty when unreadable, when `pid` ended, or not on Linux).
pub fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .flat_map(|task| {
            std::fs::read_to_string(task.path().join("children"))
                .unwrap_or_default()
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The most processes [`holds_pty_master`] reads (the app and its descendants)
/// before it answers "unknown".
pub const PTY_SCAN_MAX: usize = 256;

/// Whether one of `pid`'s open fds links to a pty multiplexer; `None` when the fd
/// directory is unreadable.
fn fds_hold_ptmx(pid: u32) -> Option<bool> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    Some(
        fds.flatten()
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|target| is_ptmx(&target))),
    )
}

/// Whether an fd's link target is the pty multiplexer (`/dev/ptmx`, or
/// `/dev/pts/ptmx` of a devpts mount), pure.
pub fn is_ptmx(target: &Path) -> bool {
    target == Path::new("/dev/ptmx") || target == Path::new("/dev/pts/ptmx")
}

/// `pid`, its parent, grandparent… up to but excluding pid 1 (and pid 0), from
/// `/proc/PID/stat`. Empty when `pid` is 0 or 1, its stat is unreadable, or not on
/// Linux; the chain stops early where a stat becomes unreadable. At most 1 024
/// entries (a guard against a cycle seen across racing reads).
pub fn ancestors(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut cur = pid;
    while cur > 1 && out.len() < 1_024 && !out.contains(&cur) {
        let Some(stat) = proc_read(cur, "stat") else {
            break;
        };
        out.push(cur);
        match parse_stat_ppid(&stat) {
            Some(p) => cur = p,
            None => break,
        }
    }
    out
}

/// True when `pid` is `ancestor` or one of its descendants ([`ancestors`]; `false`
/// for pid 0 and 1, and off Linux).
pub fn descends_from(pid: u32, ancestor: u32) -> bool {
    ancestors(pid).contains(&ancestor)
}

/// This boot's id (`/proc/sys/kernel/random/boot_id`, trimmed: a 36-character
/// UUID); `None` when unreadable or not on Linux.
pub fn boot_id() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let s = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let s = s.trim();
    (!s.is_empty()).then(|| s.to_string())
}

/// Every pid listed in `/proc`, in directory order; empty when unreadable or not on
/// Linux.
pub fn process_ids() -> Vec<u32> {
    if !cfg!(target_os = "linux") {
        return Vec::new();
    }
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .collect()
}

/// Whether the environment `pid` started with (`/proc/PID/environ`) holds exactly
/// `name=value`. False when unreadable (another user's process, or gone) or not on
/// Linux.
pub fn process_env_contains(pid: u32, name: &str, value: &str) -> bool {
    if !cfg!(target_os = "linux") || pid == 0 {
        return false;
    }
    let needle = format!("{name}={value}");
    std::fs::read(Path::new("/proc").join(pid.to_string()).join("environ"))
        .is_ok_and(|env| env.split(|&b| b == 0).any(|kv| kv == needle.as_bytes()))
}

/// Whether the environment `pid` started with holds `name` with a value that
/// begins with `value_prefix` (`""`: whatever its value). False when unreadable
/// (another user's process, or gone) or not on Linux.
pub fn process_env_has(pid: u32, name: &str, value_prefix: &str) -> bool {
    if !cfg!(target_os = "linux") || pid == 0 {
        return false;
    }
    let prefix = format!("{name}={value_prefix}");
    std::fs::read(Path::new("/proc").join(pid.to_string()).join("environ")).is_ok_and(|env| {
        env.split(|&b| b == 0)
            .any(|kv| kv.starts_with(prefix.as_bytes()))
    })
}

/// The real uid of this process (`getuid`); 0 off Unix.
pub fn current_uid() -> u32 {
    #[cfg(unix)]
    {
        // SAFETY: getuid has no preconditions, touches no memory and cannot fail.
        unsafe { libc::getuid() }
    }
    #[cfg(not(unix))]
    {
        0
    }
}

/// The effective uid of this process (`geteuid`; 0 means root privileges); 0 off
/// Unix.
pub fn effective_uid() -> u32 {
    #[cfg(unix)]
    {
        // SAFETY: geteuid has no preconditions, touches no memory and cannot fail.
        unsafe { libc::geteuid() }
    }
    #[cfg(not(unix))]
    {
        0
    }
}

/// A signal [`signal_group_or_pid`] sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// `SIGTERM`: asks the process to end.
    Term,
    /// `SIGKILL`: ends it at once.
    Kill,
}

/// Makes the process `cmd` will start lead a process group of its own, so
/// [`signal_group_or_pid`] ends it with everything it started. A no-op off Unix,
/// where process groups do not exist (the child alone is ended there).
pub fn own_process_group(cmd: &mut std::process::Command) -> &mut std::process::Command {
    #[cfg(unix)]
    {
        std::os::unix::process::CommandExt::process_group(cmd, 0)
    }
    #[cfg(not(unix))]
    {
        cmd
    }
}

/// Sends `sig` to the process group led by `pid`, or, when there is no such group
/// (or it may not be signalled), to the process `pid` alone. Returns whether one of
/// the two was delivered. pids 0 and 1 and pids beyond `i32::MAX` are refused
/// (false): negated they would name our own group or every process. Always false off
/// Unix.
pub fn signal_group_or_pid(pid: u32, sig: Signal) -> bool {
    #[cfg(unix)]
    {
        let Some(p) = positive(pid).filter(|&p| p > 1) else {
            return false;
        };
        let sig = match sig {
            Signal::Term => libc::SIGTERM,
            Signal::Kill => libc::SIGKILL,
        };
        // SAFETY: kill with a pid > 1 (or its negated process group) only sends a
        // signal; it has no memory-safety preconditions.
        unsafe { libc::kill(-p, sig) == 0 || libc::kill(p, sig) == 0 }
    }
    #[cfg(not(unix))]
    {
        let _ = (pid, sig);
        false
    }
}

/// Reaps `pid` if it is an exited child of this process (`waitpid` with `WNOHANG`),
/// so it does not linger as a zombie; returns whether it was reaped. Never blocks;
/// false for a child still running, a pid that is not our child, pid 0 or one beyond
/// `i32::MAX`, and off Unix. A `std::process::Child` of a reaped pid can no longer
/// be waited for.
pub fn reap_if_exited(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Some(p) = positive(pid) else {
            return false;
        };
        let mut status = 0;
        // SAFETY: waitpid writes the exit status into `status`, a live local; with a
        // positive pid and WNOHANG it only reaps that one child, if it has exited.
        unsafe { libc::waitpid(p, &mut status, libc::WNOHANG) == p }
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        false
    }
}

/// Uid of the process at the other end of the connected Unix socket `fd`
/// (`SO_PEERCRED`, as it was when the peer connected); `None` when the query fails.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub fn peer_uid(fd: std::os::fd::BorrowedFd<'_>) -> Option<u32> {
    use std::os::fd::AsRawFd;
    let mut cred = libc::ucred {
        pid: 0,
        uid: u32::MAX,
        gid: u32::MAX,
    };
    let size = size_of::<libc::ucred>();
    let mut len = libc::socklen_t::try_from(size).ok()?;
    // SAFETY: getsockopt writes at most `len` bytes into `cred`, a live local of
    // exactly that size, and the new length into `len`; the descriptor stays open for
    // the call because `fd` borrows it.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut cred).cast(),
            &mut len,
        )
    };
    (rc == 0 && usize::try_from(len).ok() == Some(size)).then_some(cred.uid)
}

#[cfg(test)]
mod tests {

    /// Starts `sh -c SCRIPT` and waits until it wrote `ready` to its stdout.
    #[cfg(target_os = "linux")]
    fn started(script: &str) -> std::process::Child {
        use std::io::Read;
        let hold = "import os, sys, time; m, s = os.openpty(); sys.stdout.write('ready'); sys.stdout.flush(); time.sleep(30)";
        let mut child = std::process::Command::new("sh")
            .args(["-c", script])
            .env("HOLD", hold)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh starts");
        let mut buf = [0u8; 5];
        child
            .stdout
            .as_mut()
            .unwrap()
            .read_exact(&mut buf)
            .expect("ready");
        child
    }

    /// A pty master held by the process, or by a grandchild, is found; a process
    /// holding none is not a terminal.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_pty_master_is_found_in_the_process_or_its_descendants() {
        let mut direct = started("exec python3 -c \"$HOLD\"");
        assert_eq!(holds_pty_master(direct.id()), Some(true));
        // sh → sh → python3: the master is two generations down.
        let mut deep = started("sh -c 'python3 -c \"$HOLD\"' & wait");
        assert_eq!(holds_pty_master(deep.id()), Some(true));
        let mut none = started("echo -n ready; exec sleep 30");
        assert_eq!(holds_pty_master(none.id()), Some(false));
        for c in [&mut direct, &mut deep, &mut none] {
            let _ = c.kill();
            let _ = c.wait();
        }
        assert!(is_ptmx(Path::new("/dev/pts/ptmx")) && !is_ptmx(Path::new("/dev/pts/3")));
    }

    use super::*;

    #[cfg(unix)]
    fn dead_pid() -> u32 {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        pid
    }

    #[test]
    fn process_facts_of_self() {
        let me = std::process::id();
        assert!(pid_alive(me));
        assert!(!pid_alive(0));
        assert!(!pid_alive(u32::MAX));
        if cfg!(target_os = "linux") {
            let chain = ancestors(me);
            assert_eq!(chain.first(), Some(&me));
            #[cfg(unix)]
            {
                let parent = std::os::unix::process::parent_id();
                if parent > 1 {
                    assert_eq!(chain.get(1), Some(&parent));
                }
                assert_eq!(process_uid(me), Some(current_uid()));
            }
            assert!(!chain.contains(&1));
            assert!(process_comm(me).is_some_and(|c| !c.is_empty() && c.len() <= 15));
            let exe = std::env::current_exe().unwrap();
            let own = exe.file_name().unwrap().to_string_lossy().to_string();
            assert_eq!(process_name(me), Some(own));
            assert!(boot_id().is_some_and(|b| b.len() == 36));
        }
        assert_eq!(ancestors(0), Vec::<u32>::new());
        assert_eq!(ancestors(1), Vec::<u32>::new());
    }

    #[test]
    fn a_program_is_named_by_its_first_argument_in_full() {
        let name = |b: &[u8]| program_name(b);
        assert_eq!(
            name(b"/usr/bin/gnome-calculator\0--mode\0").as_deref(),
            Some("gnome-calculator")
        );
        assert_eq!(name(b"mousepad\0").as_deref(), Some("mousepad"));
        assert_eq!(
            name(b"postgres: writer process   ").as_deref(),
            Some("postgres:")
        );
        assert_eq!(name(b""), None);
        assert_eq!(name(b"\0"), None);
        assert_eq!(name(b"/usr/bin/\0"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn start_time_executable_and_pid_list_of_self() {
        let me = std::process::id();
        assert!(process_start(me).is_some());
        assert!(process_exe(me).is_some());
        assert!(process_ids().contains(&me));
        assert_eq!(process_start(0), None);
        assert_eq!(process_exe(0), None);
    }

    #[test]
    fn proc_text_parsing() {
        let stat = "4242 (we ird) name)) S 17 4242 4242 0 -1 4194560";
        assert_eq!(parse_stat_ppid(stat), Some(17));
        assert_eq!(parse_stat_ppid("garbage"), None);
        let status = "Name:\tx\nUmask:\t0022\nUid:\t1000\t1001\t1002\t1003\nGid:\t5\t5\t5\t5\n";
        assert_eq!(parse_status_uid(status), Some(1000));
        assert_eq!(parse_status_uid("Name:\tx\n"), None);
    }

    #[test]
    fn stat_state_and_start_time_parsing() {
        let stat = "4242 (we ird) name)) S 17 4242 4242 0 -1 4194560";
        assert_eq!(parse_stat_state(stat), Some('S'));
        assert_eq!(parse_stat_state("1 (z) Z 0"), Some('Z'));
        let long = "7 (x) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 99 20";
        assert_eq!(parse_stat_start(long), Some(99));
        assert_eq!(parse_stat_start(stat), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_reaped_child_is_not_alive() {
        let gone = dead_pid();
        assert!(!pid_alive(gone));
        assert!(!reap_if_exited(gone));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_zombie_is_not_alive_and_is_reaped() {
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        // Not waited for: once it exits it stays a zombie until reaped.
        while proc_read(pid, "stat").and_then(|s| parse_stat_state(&s)) != Some('Z') {
            assert!(std::time::Instant::now() < deadline, "child never exited");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        // kill(0) still answers for a zombie; pid_alive does not count it.
        // SAFETY: signal 0 sends nothing.
        assert_eq!(unsafe { libc::kill(pid as libc::pid_t, 0) }, 0);
        assert!(!pid_alive(pid));
        assert!(reap_if_exited(pid));
        assert!(proc_read(pid, "stat").is_none());
        drop(child);
    }

    #[cfg(unix)]
    #[test]
    fn a_running_child_is_alive_until_signalled() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id();
        assert!(pid_alive(pid));
        assert!(!reap_if_exited(pid), "still running");
        // Not a group leader: the group signal fails and the pid itself is signalled.
        assert!(signal_group_or_pid(pid, Signal::Term));
        let status = child.wait().unwrap();
        assert!(!status.success());
        assert!(!pid_alive(pid));
        assert!(!signal_group_or_pid(0, Signal::Term));
        assert!(!signal_group_or_pid(1, Signal::Term));
        assert!(!signal_group_or_pid(u32::MAX, Signal::Kill));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_environment_of_a_child_is_readable() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .env("DESKPILOT_OS_TEST_MARK", "a=b")
            .spawn()
            .unwrap();
        let pid = child.id();
        // Until the child has called exec, /proc shows the environment it was forked
        // with.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !process_env_contains(pid, "DESKPILOT_OS_TEST_MARK", "a=b") {
            assert!(std::time::Instant::now() < deadline, "marker never seen");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!process_env_contains(pid, "DESKPILOT_OS_TEST_MARK", "a"));
        assert!(!process_env_contains(0, "PATH", ""));
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_peer_of_a_socket_pair_is_ourselves() {
        use std::os::fd::AsFd;
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert_eq!(peer_uid(a.as_fd()), Some(current_uid()));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_process_descends_from_itself_and_its_parent() {
        let me = std::process::id();
        assert!(descends_from(me, me));
        let parent = *ancestors(me).get(1).expect("a parent");
        assert!(descends_from(me, parent));
        assert!(!descends_from(parent, me));
    }
}
