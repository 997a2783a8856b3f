//! How the programs the agent's tools start are launched: on which desktop (its
//! environment), and inside which sandbox (a command they run under).

use std::ffi::{OsStr, OsString};
use std::os::fd::AsRawFd as _;

use tokio::process::Command;

use crate::sandbox::seccomp::{self, SeccompError};

/// The environment and wrapper every program a tool starts gets; `Default`: this process's
/// environment, no wrapper.
#[derive(Clone, Debug, Default)]
pub struct Launch {
    /// Variables set for the program (an agent desktop's `DISPLAY`, bus, runtime directory).
    pub env: Vec<(OsString, OsString)>,
    /// Variables taken away from it (the person's session bus, in a sandbox).
    pub remove: Vec<OsString>,
    /// The command the program runs under (`bwrap …`); empty: none.
    pub wrapper: Vec<OsString>,
    /// Whether the wrapper is bubblewrap and takes the sandbox's seccomp filter
    /// (`--seccomp FD`, an in-memory file made for each command).
    pub seccomp: bool,
}

impl Launch {
    /// `program` with `args`, under the wrapper, with the agent's programs' environment
    /// (`program_env`) and this launch's. Without a wrapper, as root, the program cannot
    /// reach into Deskhand (`root_powers`).
    pub fn command(&self, program: &str, args: &[&str]) -> Result<Command, SeccompError> {
        let mut command = match self.wrapper.split_first() {
            Some((first, rest)) => {
                let mut command = Command::new(first);
                command.args(rest);
                if self.seccomp {
                    pass_seccomp(&mut command)?;
                }
                command.arg(program);
                command
            }
            None => {
                let mut command = Command::new(program);
                deskhand_host::root_powers::drop_root_powers(&mut command);
                command
            }
        };
        command.args(args);
        deskhand_host::program_env::apply(&mut command);
        for name in &self.remove {
            command.env_remove(name);
        }
        command.envs(self.env.iter().map(|(k, v)| (k.as_os_str(), v.as_os_str())));
        Ok(command)
    }

    /// The `DISPLAY` the programs get.
    pub fn display(&self) -> Option<&OsStr> {
        self.env
            .iter()
            .find(|(k, _)| k == "DISPLAY")
            .map(|(_, v)| v.as_os_str())
    }
}

/// `--seccomp FD` for bubblewrap: the filter in an in-memory file that the child keeps open
/// across `exec` (and that closes in Deskhand when the command is dropped).
fn pass_seccomp(command: &mut Command) -> Result<(), SeccompError> {
    let filter = seccomp::memfd()?;
    let fd = filter.as_raw_fd();
    command.arg("--seccomp").arg(fd.to_string());
    // SAFETY: the hook runs in the forked child before exec and makes only fcntl and lseek
    // calls on a descriptor the closure owns; it allocates nothing.
    unsafe {
        command.pre_exec(move || {
            let fd = filter.as_raw_fd();
            if libc::fcntl(fd, libc::F_SETFD, 0) != 0 || libc::lseek(fd, 0, libc::SEEK_SET) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}
