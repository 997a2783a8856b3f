//! The sandbox the agent's programs run in (`--sandbox`): bubblewrap, as Flatpak uses it.
//! A home of its own in place of the person's, the system read-only, a private `/tmp` and
//! `/run` (so neither the person's session bus nor their keyring can be reached by path),
//! the folders shared on purpose read-write, and the network on unless cut. What it does not
//! protect against is in docs/sandbox.md.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::tools::launch::Launch;

/// What a front end chose for the sandbox.
#[derive(Clone, Debug, PartialEq)]
pub struct SandboxChoice {
    /// Folders the agent's programs may read and write, at the same path.
    pub shares: Vec<PathBuf>,
    pub network: bool,
}

impl Default for SandboxChoice {
    fn default() -> Self {
        Self {
            shares: Vec::new(),
            network: true,
        }
    }
}

impl SandboxChoice {
    /// The sandbox a run gets: the one asked for (`sandbox`), else one by default on an agent
    /// desktop. Shares and a cut network mean nothing without one, and are refused then.
    pub fn for_run(
        agent_desktop: bool,
        sandbox: Option<bool>,
        shares: Vec<PathBuf>,
        network: bool,
    ) -> Result<Option<Self>, String> {
        if sandbox.unwrap_or(agent_desktop) {
            return Ok(Some(Self { shares, network }));
        }
        if !shares.is_empty() || !network {
            return Err("sharing a folder and cutting the network need the sandbox".into());
        }
        Ok(None)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "cannot start the sandbox: bubblewrap (`bwrap`) is not installed (apt install bubblewrap)"
    )]
    NoBwrap,
    #[error(
        "cannot start the sandbox: bubblewrap failed ({0}); user namespaces may be turned off \
         (sysctl kernel.unprivileged_userns_clone=1)"
    )]
    WontStart(String),
    #[error("cannot share `{path}` with the sandbox: {reason}")]
    Share { path: PathBuf, reason: String },
    #[error("the sandbox's home {path}: {source}")]
    Home {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// A sandbox ready to wrap programs.
#[derive(Clone, Debug)]
pub struct Sandbox {
    /// The sandbox's own home, mounted where the person's is.
    home: PathBuf,
    shares: Vec<PathBuf>,
    network: bool,
}

impl Sandbox {
    /// Checks the choice (each share exists and is a folder, bubblewrap can start here) and
    /// makes `home` the sandbox's home directory.
    pub fn new(choice: &SandboxChoice, home: &Path) -> Result<Self, SandboxError> {
        let mut shares = Vec::new();
        for path in &choice.shares {
            let share = |reason: String| SandboxError::Share {
                path: path.clone(),
                reason,
            };
            let canonical = path.canonicalize().map_err(|e| share(e.to_string()))?;
            if !canonical.is_dir() {
                return Err(share("it is not a folder".into()));
            }
            shares.push(canonical);
        }
        probe()?;
        std::fs::create_dir_all(home).map_err(|source| SandboxError::Home {
            path: home.to_path_buf(),
            source,
        })?;
        Ok(Self {
            home: home.to_path_buf(),
            shares,
            network: choice.network,
        })
    }

    /// `launch` inside the sandbox: its programs run under `bwrap`, and the display's
    /// socket and the desktop's runtime directory (its own bus) are mounted in.
    pub fn wrap(&self, launch: &Launch) -> Launch {
        let person_home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "/root".into());
        let mut args: Vec<OsString> = [
            "bwrap",
            "--die-with-parent",
            "--new-session",
            "--unshare-pid",
            "--unshare-uts",
            "--unshare-cgroup-try",
            "--ro-bind",
            "/usr",
            "/usr",
            "--ro-bind",
            "/etc",
            "/etc",
            "--ro-bind-try",
            "/opt",
            "/opt",
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/sbin",
            "/sbin",
            "--symlink",
            "usr/lib",
            "/lib",
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "--tmpfs",
            "/tmp",
            "--tmpfs",
            "/run",
            "--tmpfs",
            "/home",
            "--tmpfs",
            "/var",
            "--dir",
            "/tmp/.X11-unix",
        ]
        .map(OsString::from)
        .to_vec();
        let mut bind = |flag: &str, from: &Path, to: &Path| {
            args.extend([flag.into(), from.into(), to.into()]);
        };
        bind("--bind", &self.home, Path::new(&person_home));
        if let Some(display) = launch.display().and_then(local_display) {
            let socket = PathBuf::from(format!("/tmp/.X11-unix/X{display}"));
            bind("--bind-try", &socket, &socket);
        }
        let runtime = launch
            .env
            .iter()
            .find(|(k, _)| k == "XDG_RUNTIME_DIR")
            .map(|(_, v)| PathBuf::from(v));
        if let Some(runtime) = &runtime {
            bind("--bind", runtime, runtime);
        }
        for share in &self.shares {
            bind("--bind", share, share);
        }
        if !self.network {
            args.push("--unshare-net".into());
        }
        args.extend(["--chdir".into(), person_home.clone()]);
        let mut remove = launch.remove.clone();
        remove.push("XAUTHORITY".into());
        if runtime.is_none() {
            // The person's bus and runtime directory are not in the sandbox.
            remove.extend(["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"].map(OsString::from));
        }
        Launch {
            env: launch.env.clone(),
            remove,
            wrapper: args,
        }
    }
}

/// The number of a local display (`:N` or `:N.S`).
fn local_display(display: &std::ffi::OsStr) -> Option<u32> {
    let text = display.to_str()?.strip_prefix(':')?;
    text.split('.').next()?.parse().ok()
}

/// Starts bubblewrap once, to say clearly why it cannot work here.
fn probe() -> Result<(), SandboxError> {
    let out = std::process::Command::new("bwrap")
        .args(["--ro-bind", "/", "/", "--unshare-pid", "true"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => SandboxError::NoBwrap,
            _ => SandboxError::WontStart(e.to_string()),
        })?;
    if !out.status.success() {
        return Err(SandboxError::WontStart(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    Ok(())
}
