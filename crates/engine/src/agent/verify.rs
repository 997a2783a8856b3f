//! Proof of done: after the model stops, a check command says whether the job was done.
//! A failed check goes back to the model once; every run ends with a `verification` event.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use crate::agent::RunStatus;
use crate::llm::ContentBlock;
use crate::tools::capped::CappedOutput;
pub use deskhand_protocol::check::{
    CHECK_FAILED_EXIT, CHECK_NOT_RUN_EXIT, SavedCheck, UNVERIFIED_EXIT, Verification, VerifyOutcome,
};

/// The most output of a check kept (its start and end), for the event and the model.
const CHECK_OUTPUT_LIMIT: usize = 8 * 1024;
pub const DEFAULT_CHECK_TIMEOUT: Duration = Duration::from_secs(60);

/// A shell command whose exit status 0 means the job was done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub command: String,
    pub timeout: Duration,
    /// Variables set for it: an agent desktop's display and bus, so it looks where the
    /// agent worked.
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CheckError {
    #[error("the check command is empty")]
    Empty,
    #[error("the check's program `{0}` was not found (not a file, not on PATH)")]
    NotFound(String),
    #[error("the check's timeout must be more than 0 and at most 86400 seconds")]
    BadTimeout,
}

/// A check as its session saves it.
impl From<&Check> for SavedCheck {
    fn from(check: &Check) -> Self {
        Self {
            command: check.command.clone(),
            timeout_secs: check.timeout.as_secs_f64(),
        }
    }
}

impl Check {
    /// The check a session saved, refused as [`Check::new`] refuses one.
    pub fn saved(saved: &SavedCheck) -> Result<Self, CheckError> {
        if !(saved.timeout_secs > 0.0 && saved.timeout_secs <= 86_400.0) {
            return Err(CheckError::BadTimeout);
        }
        Self::new(&saved.command, Duration::from_secs_f64(saved.timeout_secs))
    }

    /// Refuses, before anything runs, a check whose program does not exist. Shell syntax
    /// the first word cannot name a program with (builtins, assignments, groups) passes.
    pub fn new(command: &str, timeout: Duration) -> Result<Self, CheckError> {
        let Some(program) = command.split_whitespace().next() else {
            return Err(CheckError::Empty);
        };
        let shell_syntax = program.contains(['=', '(', '{', '$', '`', '!', '[', ';', '&', '|'])
            || SHELL_WORDS.contains(&program);
        if !shell_syntax && !program_exists(program) {
            return Err(CheckError::NotFound(program.into()));
        }
        Ok(Self {
            command: command.into(),
            timeout,
            env: Vec::new(),
        })
    }
}

const SHELL_WORDS: &[&str] = &[
    "test", "true", "false", "cd", "if", "for", "while", "case", "exit", "export", "set",
    "command", "exec", "eval", ".", ":",
];

fn program_exists(program: &str) -> bool {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(Path::new(program));
    }
    std::env::var_os("PATH").is_some_and(|paths| {
        std::env::split_paths(&paths).any(|dir| executable(&dir.join(program)))
    })
}

/// Reads what `pipe` has, or nothing once it is closed (taken).
async fn read_some(
    pipe: &mut Option<impl tokio::io::AsyncRead + Unpin>,
    buf: &mut [u8],
) -> std::io::Result<usize> {
    match pipe {
        Some(pipe) => pipe.read(buf).await,
        None => Ok(0),
    }
}

/// Runs `check` with the environment of the agent's programs (`program_env`: no secret, no
/// runtime directory) and the check's own variables, under a keeper (`processes`), so that
/// it and everything it started end after its timeout and the local API knows them.
pub async fn run_check(check: &Check, cancel: &CancellationToken) -> Verification {
    let mut result = Verification {
        check: Some(check.command.clone()),
        ..Verification::without_check()
    };
    let mut command = tokio::process::Command::new("sh");
    command
        .args(["-c", &check.command])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    crate::root_powers::drop_root_powers(&mut command);
    crate::program_env::apply(&mut command);
    command.envs(check.env.iter().map(|(k, v)| (k, v)));
    crate::processes::keep(&mut command);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            result.error = Some(format!("the check could not start: {e}"));
            return result;
        }
    };
    let keeper = child.id();
    let (mut stdout, mut stderr) = (child.stdout.take(), child.stderr.take());
    let collect = async {
        let (mut out, mut err) = (
            CappedOutput::new(CHECK_OUTPUT_LIMIT),
            CappedOutput::new(CHECK_OUTPUT_LIMIT),
        );
        let (mut b1, mut b2) = ([0u8; 4096], [0u8; 4096]);
        let (mut open1, mut open2) = (stdout.is_some(), stderr.is_some());
        while open1 || open2 {
            tokio::select! {
                n = read_some(&mut stdout, &mut b1), if open1 => match n {
                    Ok(0) | Err(_) => open1 = false,
                    Ok(n) => out.push(&b1[..n]),
                },
                n = read_some(&mut stderr, &mut b2), if open2 => match n {
                    Ok(0) | Err(_) => open2 = false,
                    Ok(n) => err.push(&b2[..n]),
                },
            }
        }
        let status = child.wait().await;
        (status, format!("{}{}", out.text(), err.text()))
    };
    let waited = tokio::select! {
        done = tokio::time::timeout(check.timeout, collect) => done.map_err(|_| {
            format!("the check timed out after {} s and was killed", check.timeout.as_secs_f64())
        }),
        () = cancel.cancelled() => Err("the check was stopped by the user".to_string()),
    };
    match waited {
        Ok((Ok(status), output)) => {
            result.output = output;
            result.exit_code = status.code();
            result.outcome = match status.code() {
                Some(0) => VerifyOutcome::Verified,
                Some(126 | 127) => {
                    result.error = Some(format!(
                        "the check could not run (exit {}: command not found or not executable)",
                        status.code().unwrap_or_default()
                    ));
                    VerifyOutcome::Unverified
                }
                _ => VerifyOutcome::Failed,
            };
        }
        Ok((Err(e), _)) => result.error = Some(format!("the check could not be waited for: {e}")),
        Err(why) => {
            if let Some(keeper) = keeper {
                // The keeper ends the check's whole tree, whatever left its session or group.
                crate::processes::end(keeper);
            }
            result.error = Some(why);
        }
    }
    result
}

/// Proof of done for one run: the check after the model stops, the failure sent back once,
/// and the run's [`Verification`].
pub struct Checker<'a> {
    check: Option<&'a Check>,
    /// Steps aside while the check runs: what it captures never shows Deskhand's window.
    window: Option<&'a dyn super::RunWindow>,
    last: Option<Verification>,
    retried: bool,
}

impl<'a> Checker<'a> {
    pub fn new(check: Option<&'a Check>, window: Option<&'a dyn super::RunWindow>) -> Self {
        Self {
            check,
            window,
            last: None,
            retried: false,
        }
    }

    async fn run(&self, check: &Check, cancel: &CancellationToken) -> Verification {
        let _aside = match self.window {
            Some(window) => Some(window.step_aside().await),
            None => None,
        };
        run_check(check, cancel).await
    }

    /// The model ended its turn: runs the check. Returns what to send back to the model when
    /// the check failed for the first time and `turns_left` allows another request.
    pub async fn after_model_stopped(
        &mut self,
        turns_left: u32,
        cancel: &CancellationToken,
    ) -> Option<ContentBlock> {
        let check = self.check?;
        let result = self.run(check, cancel).await;
        let send_back = result.outcome == VerifyOutcome::Failed && !self.retried && turns_left > 0;
        let report = send_back.then(|| {
            ContentBlock::text(format!(
                "[Deskhand] The check `{}` failed (exit {}). Its output:\n{}\nFix what failed; \
                 the check runs once more when you stop.",
                check.command,
                result
                    .exit_code
                    .map_or("unknown".to_string(), |c| c.to_string()),
                result.output
            ))
        });
        self.retried |= send_back;
        self.last = Some(result);
        report
    }

    /// The run's verification, once it ended `status`: the check's last result if the model
    /// ended the run, a fresh check if a limit or a stall ended it, none after a stop or an
    /// error.
    pub async fn finish(self, status: RunStatus, cancel: &CancellationToken) -> Verification {
        let mut verification = match (self.check, status, &self.last) {
            (None, _, _) => Verification::without_check(),
            (Some(check), RunStatus::Cancelled | RunStatus::Error, _) => Verification {
                check: Some(check.command.clone()),
                ..Verification::without_check()
            },
            (Some(_), RunStatus::Done, Some(last)) => last.clone(),
            (Some(check), _, _) => self.run(check, cancel).await,
        };
        verification.retried = self.retried;
        verification
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(command: &str, timeout_ms: u64) -> Check {
        Check::new(command, Duration::from_millis(timeout_ms)).unwrap()
    }

    #[tokio::test]
    async fn pass_fail_and_timeout_are_told_apart() {
        let cancel = CancellationToken::new();
        let passed = run_check(&check("echo fine", 5000), &cancel).await;
        assert_eq!(
            (passed.outcome, passed.output.as_str()),
            (VerifyOutcome::Verified, "fine\n")
        );
        let failed = run_check(&check("echo bad >&2; exit 3", 5000), &cancel).await;
        assert_eq!(
            (failed.outcome, failed.exit_code),
            (VerifyOutcome::Failed, Some(3))
        );
        assert_eq!(failed.output, "bad\n");
        let started = std::time::Instant::now();
        let hung = run_check(&check("sleep 30", 200), &cancel).await;
        assert!(started.elapsed() < Duration::from_secs(5));
        assert_eq!(hung.outcome, VerifyOutcome::Unverified);
        assert!(
            hung.error
                .as_deref()
                .unwrap_or_default()
                .contains("timed out")
        );
        assert_eq!(hung.exit_code(RunStatus::Done, false), CHECK_NOT_RUN_EXIT);
    }

    /// A check runs in a session of its own (`processes`), so a kill of its process group
    /// would miss what it started: its keeper ends the whole tree at the timeout.
    #[tokio::test]
    async fn what_a_check_started_ends_at_its_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("pid");
        let command = format!(
            "setsid sleep 301 > /dev/null 2>&1 & echo $! > {}; sleep 30",
            pid_file.display()
        );
        let hung = run_check(&check(&command, 500), &CancellationToken::new()).await;
        assert!(hung.error.unwrap_or_default().contains("timed out"));
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let started = std::time::Instant::now();
        while std::path::Path::new(&format!("/proc/{}", pid.trim())).exists() {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "the check's child {pid} outlived its timeout"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn a_missing_program_is_refused_before_anything_runs() {
        assert_eq!(
            Check::new("no-such-checker --x", DEFAULT_CHECK_TIMEOUT),
            Err(CheckError::NotFound("no-such-checker".into()))
        );
        assert!(Check::new("test -f /etc/hostname", DEFAULT_CHECK_TIMEOUT).is_ok());
        assert!(Check::new("grep -q x /dev/null", DEFAULT_CHECK_TIMEOUT).is_ok());
    }
}
