//! A private desktop's own session bus, so that its accessibility tree never mixes with
//! another desktop's. AT-SPI's bus launcher keys its socket on `XDG_RUNTIME_DIR` and
//! publishes the bus on the X root window of `DISPLAY`: both must be the desktop's own
//! before its session bus starts, or several desktops share one accessibility bus. Programs
//! started on the desktop get [`DesktopBus::program_env`], which also turns on Qt's
//! accessibility (off by default).
//!
//! The person's own desktop keeps the session bus Deskhand was started with.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use super::TREE_TIMEOUT;
use super::atspi_tree::{accessibility_bus, within};

#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error("cannot make the runtime directory {path}: {source}")]
    RuntimeDir {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start dbus-daemon (install the dbus package): {0}")]
    Start(std::io::Error),
    #[error("dbus-daemon gave no address")]
    NoAddress,
}

/// A session bus for one desktop; the bus stops when this is dropped.
pub struct DesktopBus {
    display: String,
    runtime_dir: PathBuf,
    address: String,
    /// The desktop's accessibility bus, when at-spi2-core could start one.
    accessibility: Option<String>,
    daemon: Child,
    /// Kept open: the daemon's stdout, which it printed its address on.
    _stdout: std::process::ChildStdout,
}

impl DesktopBus {
    /// Starts a session bus for the X display `display` (":3"), with `runtime_dir` (made,
    /// mode 0700) as the desktop's `XDG_RUNTIME_DIR`.
    pub fn start(display: &str, runtime_dir: &Path) -> Result<Self, BusError> {
        let made = std::fs::create_dir_all(runtime_dir).and_then(|()| {
            std::fs::set_permissions(runtime_dir, std::fs::Permissions::from_mode(0o700))
        });
        made.map_err(|source| BusError::RuntimeDir {
            path: runtime_dir.to_path_buf(),
            source,
        })?;
        let mut daemon = Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .env("DISPLAY", display)
            .env("XDG_RUNTIME_DIR", runtime_dir)
            .env_remove("DBUS_SESSION_BUS_ADDRESS")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(BusError::Start)?;
        let mut line = String::new();
        let mut stdout = BufReader::new(daemon.stdout.take().ok_or(BusError::NoAddress)?);
        let read = stdout.read_line(&mut line);
        let address = line.trim().to_string();
        if read.is_err() || address.is_empty() {
            let _ = daemon.kill();
            let _ = daemon.wait();
            return Err(BusError::NoAddress);
        }
        // Started now and named to every program: GTK takes the accessibility bus named on
        // the X root window before its session's, and desktops that share a display (the
        // tests' do) would each overwrite that name.
        let accessibility =
            async_io::block_on(within(TREE_TIMEOUT, accessibility_bus(Some(&address))))
                .and_then(Result::ok);
        Ok(Self {
            display: display.to_string(),
            runtime_dir: runtime_dir.to_path_buf(),
            address,
            accessibility,
            daemon,
            _stdout: stdout.into_inner(),
        })
    }

    /// The bus's address, for [`AtspiTree::on_bus`](super::atspi_tree::AtspiTree::on_bus).
    pub fn address(&self) -> &str {
        &self.address
    }

    /// What a program started on this desktop needs in its environment.
    pub fn program_env(&self) -> Vec<(&'static str, String)> {
        let mut env = vec![
            ("DISPLAY", self.display.clone()),
            ("XDG_RUNTIME_DIR", self.runtime_dir.display().to_string()),
            ("DBUS_SESSION_BUS_ADDRESS", self.address.clone()),
            ("QT_LINUX_ACCESSIBILITY_ALWAYS_ON", "1".into()),
        ];
        env.extend(
            self.accessibility
                .clone()
                .map(|address| ("AT_SPI_BUS_ADDRESS", address)),
        );
        env
    }

    /// `command` set up to run on this desktop.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        // An inherited accessibility bus would be the person's.
        command.env_remove("AT_SPI_BUS_ADDRESS");
        command.envs(self.program_env());
        command
    }
}

impl Drop for DesktopBus {
    fn drop(&mut self) {
        let _ = self.daemon.kill();
        let _ = self.daemon.wait();
    }
}
