//! Tests run on their own: the test binary runs one of its own tests in a child process,
//! which reports its own peak resident memory (`VmHWM`) as it ends, and is killed if it
//! outlives its time limit. For hostile-input tests, in-process figures would mix in every
//! test running beside, and `wait4`'s would include the programs the child started (a plugin
//! server); a test that changes what is the process's (its environment) needs it alone.

use std::time::{Duration, Instant};

/// Set in the child, to the file its peak memory goes to, so that the measured test runs
/// there and is a no-op everywhere else.
const CHILD: &str = "DESKHAND_MEASURED_CHILD";
/// The child's address space is capped, so that a test that fails by reading without
/// bounds fails at this size rather than taking the machine's memory.
const ADDRESS_SPACE_CAP: u64 = 3 << 30;

/// How the child test went.
#[derive(Debug)]
pub struct Measured {
    pub peak_rss_mb: f64,
    pub elapsed: Duration,
    pub passed: bool,
}

/// In the child process that [`measure`] started, a guard that reports the process's peak
/// memory when dropped, at the end of the test body; elsewhere `None`, and the test
/// returns at once.
pub fn child() -> Option<PeakReport> {
    std::env::var_os(CHILD).map(|path| PeakReport(path.into()))
}

pub struct PeakReport(std::path::PathBuf);

impl Drop for PeakReport {
    fn drop(&mut self) {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let peak_kb = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .map(|v| v.trim().trim_end_matches("kB").trim().to_string())
            .unwrap_or_default();
        let _ = std::fs::write(&self.0, peak_kb);
    }
}

/// Runs the test `name` of `module` (the caller's `module_path!()`) of this binary, marked
/// `#[ignore]` and guarded by [`child`], in a child process, killing it after `limit`.
/// Panics if it had to be killed.
pub fn measure(module: &str, name: &str, limit: Duration) -> Measured {
    use std::os::unix::process::CommandExt as _;
    // libtest names a test by its path without the crate: `suite::file::name`.
    let name = match module.split_once("::") {
        Some((_crate, path)) => format!("{path}::{name}"),
        None => name.to_string(),
    };
    let name = name.as_str();
    let exe = std::env::current_exe().expect("the test binary's path");
    let report = tempfile::NamedTempFile::new().expect("a file for the peak memory");
    let mut command = std::process::Command::new(exe);
    command
        .args([
            name,
            "--exact",
            "--ignored",
            "--test-threads=1",
            "--nocapture",
        ])
        .env(CHILD, report.path());
    // SAFETY: setrlimit is async-signal-safe, as a pre_exec hook must be.
    unsafe {
        command.pre_exec(|| {
            let cap = libc::rlimit {
                rlim_cur: ADDRESS_SPACE_CAP,
                rlim_max: ADDRESS_SPACE_CAP,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &cap) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = command.spawn().expect("start the measured child");
    let pid = child.id() as libc::pid_t;
    let started = Instant::now();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut status = 0;
        // SAFETY: waits for our own child; `status` outlives the call.
        let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
        let _ = tx.send((waited, status));
    });
    let Ok((waited, status)) = rx.recv_timeout(limit) else {
        // SAFETY: kill(2) of the child started above, not yet reaped.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        panic!("`{name}` was still running after {limit:?} and was killed");
    };
    assert_eq!(waited, pid, "waitpid of `{name}` failed");
    std::mem::forget(child); // reaped by waitpid above
    let peak_kb: f64 = std::fs::read_to_string(report.path())
        .unwrap_or_default()
        .parse()
        .unwrap_or(f64::INFINITY);
    let measured = Measured {
        peak_rss_mb: peak_kb / 1024.0,
        elapsed: started.elapsed(),
        passed: libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
    };
    eprintln!("{name}: {measured:?}");
    measured
}

/// [`measure`], then asserts that the child passed within `limit` under `max_rss_mb`.
pub fn assert_bounded(module: &str, name: &str, limit: Duration, max_rss_mb: f64) {
    let m = measure(module, name, limit);
    assert!(m.passed, "`{name}` failed in its child process (see above)");
    assert!(
        m.peak_rss_mb < max_rss_mb,
        "`{name}` peaked at {:.0} MB, over {max_rss_mb} MB",
        m.peak_rss_mb
    );
}
