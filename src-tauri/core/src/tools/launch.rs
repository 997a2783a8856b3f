//! How the programs the agent's tools start are launched: on which desktop (its
//! environment), and inside which sandbox (a command they run under).

use std::ffi::{OsStr, OsString};

use tokio::process::Command;

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
}

impl Launch {
    /// `program` with `args`, under the wrapper, with the agent's programs' environment
    /// (`program_env`) and this launch's.
    pub fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut command = match self.wrapper.split_first() {
            Some((first, rest)) => {
                let mut command = Command::new(first);
                command.args(rest).arg(program);
                command
            }
            None => Command::new(program),
        };
        command.args(args);
        crate::program_env::apply(&mut command);
        for name in &self.remove {
            command.env_remove(name);
        }
        command.envs(self.env.iter().map(|(k, v)| (k.as_os_str(), v.as_os_str())));
        command
    }

    /// The `DISPLAY` the programs get.
    pub fn display(&self) -> Option<&OsStr> {
        self.env
            .iter()
            .find(|(k, _)| k == "DISPLAY")
            .map(|(_, v)| v.as_os_str())
    }
}
