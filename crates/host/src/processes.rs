//! The programs the agent starts (its shell, plugin servers) end with Deskhand, and so does
//! everything they start in turn, including what leaves their process group with `setsid`
//! and what is orphaned on the way (`cmd & exit`).
//!
//! Each such program runs under a *keeper*: a small process of its own, forked between
//! Deskhand and the program. The keeper is a child subreaper (`PR_SET_CHILD_SUBREAPER`), so
//! every orphan below it is re-parented to it, not to init, and it can find them all. It ends
//! the whole tree (SIGKILL, round after round, until it has no child left) when the program
//! exits, when Deskhand asks (a timeout, a stop, the end of a run: [`end`]), and when
//! Deskhand dies, even by `kill -9`: it learns that by `PR_SET_PDEATHSIG` and checks it
//! against its parent's pid. The program itself gets `PR_SET_PDEATHSIG` too, so it never
//! outlives its keeper.
//!
//! The keeper is forked in the child before `exec` (a `pre_exec` hook), so it runs no Rust
//! runtime: only system calls that are safe after `fork` in a threaded process.
//!
//! The keeper names itself [`KEEPER_NAME`], which only it can (a process's name is changed by
//! its own threads alone). Every program of a run therefore has a keeper among its ancestors
//! for as long as it lives under one, orphans included: that is how the local API tells the
//! agent's programs from the person's ([`kept_by`]), in any Deskhand process.

/// The keeper's process name (`comm`, at most 15 bytes).
pub const KEEPER_NAME: &std::ffi::CStr = c"deskhand-keeper";

/// The most ancestors [`kept_by`] looks at; process trees are never this deep.
const MAX_ANCESTORS: usize = 4096;

/// Who holds a process, as [`kept_by`] finds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Holder {
    /// A keeper (its pid), or this process for a descendant no keeper holds.
    Keeper(u32),
    /// Nothing of Deskhand's: the person's process.
    Nobody,
    /// The process or one of its parents could not be read (it has exited, or hides its
    /// `/proc` files), so nobody can say.
    Unknown,
}

/// What marks `pid` as a run's program, found by walking its parents (`/proc/PID/stat`) up
/// to init: the keeper it runs under (itself or an ancestor), or this process when `pid` is
/// a descendant of it that no keeper holds (an orphan whose keeper was killed, adopted by
/// this process: [`adopt_orphans`]; or another program it started, none of which is a
/// client of its own).
pub fn kept_by(pid: u32) -> Holder {
    let me = std::process::id();
    let mut current = pid;
    for _ in 0..MAX_ANCESTORS {
        // Checked first: in a container the service may be pid 1.
        if current == me {
            return if pid == me {
                Holder::Nobody
            } else {
                Holder::Keeper(me)
            };
        }
        if current <= 1 {
            return Holder::Nobody;
        }
        let Some((name, parent)) = name_and_parent(current) else {
            return Holder::Unknown;
        };
        if name.as_bytes() == KEEPER_NAME.to_bytes() {
            return Holder::Keeper(current);
        }
        current = parent;
    }
    Holder::Unknown
}

/// Makes this process the subreaper of everything it starts: a program whose keeper was
/// killed (by the program itself, `kill -9 $PPID`) leaves its orphans to this process, not to
/// init, so that [`kept_by`] still finds them. For the process that serves the local API.
pub fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_CHILD_SUBREAPER takes plain integers and touches no memory of ours.
    unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    }
}

/// A process's name and its parent's pid, from `/proc/PID/stat` ("pid (name) state ppid …";
/// the name may hold spaces and parentheses, so it ends at the last `)`).
pub fn name_and_parent(pid: u32) -> Option<(String, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (head, rest) = stat.rsplit_once(')')?;
    let (_, name) = head.split_once('(')?;
    let parent = rest.split_whitespace().nth(1)?.parse().ok()?;
    Some((name.to_string(), parent))
}

/// Runs `command`'s program under a keeper (see the module). The child's pid is then the
/// keeper's; [`end`] it to end the program and everything below it. On other systems the
/// command is left as it is.
pub fn keep(command: &mut tokio::process::Command) {
    #[cfg(target_os = "linux")]
    {
        let deskhand = std::process::id() as libc::pid_t;
        // SAFETY: the hook runs in the forked child before exec; `keeper::split` calls only
        // async-signal-safe functions and allocates nothing.
        unsafe {
            command.pre_exec(move || keeper::split(deskhand));
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = command;
}

/// The longest [`end`] waits for a keeper to have ended its tree.
const END_WAIT: std::time::Duration = std::time::Duration::from_millis(500);

/// Ends a program started with [`keep`], and everything it started: `pid` is the child's
/// (its keeper's). Returns once the keeper is done (a millisecond or two), or after
/// [`END_WAIT`], so that whoever drops a program next finds it gone.
pub fn end(pid: u32) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return;
    };
    if pid <= 0 {
        return;
    }
    // SAFETY: kill(2) on our own child's pid; the keeper takes SIGTERM as "end them all".
    unsafe {
        libc::kill(pid, libc::SIGTERM);
    }
    let started = std::time::Instant::now();
    while is_running(pid) && started.elapsed() < END_WAIT {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Whether `pid` exists and has not exited (a zombie waiting to be reaped has).
fn is_running(pid: libc::pid_t) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

#[cfg(target_os = "linux")]
mod keeper {
    use std::io;

    /// What went wrong while starting a kept program, for the error the spawn returns.
    fn last_error() -> io::Error {
        io::Error::last_os_error()
    }

    /// How often the keeper checks on Deskhand when no signal came.
    const POLL: libc::timespec = libc::timespec {
        tv_sec: 0,
        tv_nsec: 250_000_000,
    };

    /// In the child of the spawn: forks the program (which returns here and goes on to exec)
    /// and stays behind as its keeper, never returning.
    pub(super) fn split(deskhand: libc::pid_t) -> io::Result<()> {
        // SAFETY (whole function): only async-signal-safe calls, no allocation.
        unsafe {
            let keeper = libc::getpid();
            let program = libc::fork();
            if program < 0 {
                return Err(last_error());
            }
            if program == 0 {
                // The program: ends if its keeper does, whatever killed it.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(last_error());
                }
                if libc::getppid() != keeper {
                    libc::_exit(137);
                }
                // A session of its own, so no controlling terminal: nothing the agent runs
                // can open `/dev/tty` and type into Deskhand's approval prompt (TIOCSTI).
                if libc::setsid() < 0 {
                    return Err(last_error());
                }
                return Ok(());
            }
            keep(program, deskhand)
        }
    }

    /// The keeper's life: reap, and end the tree when the program exits, when Deskhand asks
    /// (SIGTERM) or when Deskhand is gone.
    unsafe fn keep(program: libc::pid_t, deskhand: libc::pid_t) -> ! {
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
            libc::prctl(libc::PR_SET_NAME, super::KEEPER_NAME.as_ptr());
            // Signals arrive by sigtimedwait, not handlers: blocked here, after the fork, so
            // the program does not inherit the mask.
            let mut signals: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut signals);
            for signal in [libc::SIGCHLD, libc::SIGTERM, libc::SIGHUP, libc::SIGINT] {
                libc::sigaddset(&mut signals, signal);
            }
            libc::sigprocmask(libc::SIG_BLOCK, &signals, std::ptr::null_mut());
            // The parent-death signal is sent when the thread that forked ends, too: it only
            // wakes the keeper, which then checks its parent's pid.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGHUP);
            close_inherited_files();
            loop {
                let signal = libc::sigtimedwait(&signals, std::ptr::null_mut(), &POLL);
                if signal == libc::SIGTERM || signal == libc::SIGINT || libc::getppid() != deskhand
                {
                    end_all();
                    libc::_exit(137);
                }
                let mut status = 0;
                loop {
                    let reaped = libc::waitpid(-1, &mut status, libc::WNOHANG);
                    if reaped <= 0 {
                        break;
                    }
                    if reaped == program {
                        end_all();
                        libc::_exit(exit_code(status));
                    }
                }
            }
        }
    }

    /// The keeper holds none of Deskhand's files: the program's pipes close when the program
    /// and its children are done, and the spawn's exec-error pipe when the program execs.
    unsafe fn close_inherited_files() {
        unsafe {
            if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
                for fd in 0..4096 {
                    libc::close(fd);
                }
            }
        }
    }

    fn exit_code(status: libc::c_int) -> libc::c_int {
        if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            128 + libc::WTERMSIG(status)
        }
    }

    /// Kills every child, round after round: each killed process's own children are
    /// re-parented to the keeper (a subreaper) and killed in the next round, until none is
    /// left.
    unsafe fn end_all() {
        unsafe {
            for _ in 0..10_000 {
                let killed = kill_children();
                while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
                if killed == 0 {
                    // No child is listed; one that was just re-parented shows up as waitable.
                    if libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) < 0 {
                        return; // ECHILD: nothing is left
                    }
                }
                let pause = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 1_000_000,
                };
                libc::nanosleep(&pause, std::ptr::null_mut());
            }
        }
    }

    /// SIGKILLs each child listed in `/proc/thread-self/children`; returns how many.
    unsafe fn kill_children() -> usize {
        unsafe {
            let fd = libc::open(
                c"/proc/thread-self/children".as_ptr(),
                libc::O_RDONLY | libc::O_CLOEXEC,
            );
            if fd < 0 {
                return 0;
            }
            let mut buffer = [0u8; 4096];
            let (mut killed, mut pid) = (0, 0 as libc::pid_t);
            loop {
                let n = libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len());
                if n <= 0 {
                    break;
                }
                for &byte in &buffer[..n as usize] {
                    if byte.is_ascii_digit() {
                        pid = pid
                            .saturating_mul(10)
                            .saturating_add((byte - b'0') as libc::pid_t);
                    } else if pid > 0 {
                        libc::kill(pid, libc::SIGKILL);
                        killed += 1;
                        pid = 0;
                    }
                }
            }
            if pid > 0 {
                libc::kill(pid, libc::SIGKILL);
                killed += 1;
            }
            libc::close(fd);
            killed
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_kept_programs_orphan_is_known_by_its_keeper() {
        // The program starts a `setsid nohup` loop and exits its subshell: the loop is an
        // orphan in a session of its own, re-parented to the keeper.
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("loop.pid");
        let mut command = tokio::process::Command::new("sh");
        command.args([
            "-c",
            &format!(
                "(setsid nohup sh -c 'echo $$ > {0}; exec sleep 30' >/dev/null 2>&1 &); sleep 30",
                pid_file.display()
            ),
        ]);
        keep(&mut command);
        let child = command.spawn().unwrap();
        let keeper = child.id().unwrap();
        let started = std::time::Instant::now();
        let orphan = loop {
            if let Some(pid) = std::fs::read_to_string(&pid_file)
                .ok()
                .and_then(|t| t.trim().parse::<u32>().ok())
            {
                break pid;
            }
            assert!(started.elapsed().as_secs() < 10, "the loop did not start");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        };
        assert_eq!(kept_by(orphan), Holder::Keeper(keeper));
        assert_eq!(kept_by(keeper), Holder::Keeper(keeper));
        assert_eq!(kept_by(std::process::id()), Holder::Nobody);
        end(keeper);
        assert!(!is_running(orphan as libc::pid_t));
        // A process that has gone cannot be told from the agent's.
        assert_eq!(kept_by(orphan), Holder::Unknown);
    }
}
