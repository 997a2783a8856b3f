//! The sandbox the agent's programs run in (`--sandbox`): bubblewrap, as Flatpak uses it.
//! A home of its own in place of the person's, the system read-only, a private `/tmp` and
//! `/run` (so neither the person's session bus nor their keyring can be reached by path),
//! the folders shared on purpose read-write, and the network on unless cut. Its programs
//! have no capability even as root (a user namespace of their own, `--cap-drop ALL`) and run
//! under Flatpak's kind of seccomp filter ([`seccomp`]). What it does not protect against is
//! in docs/sandbox.md.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::launch::Launch;

pub mod seccomp;

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
    /// As root: what others may not read under /etc, hidden in the sandbox.
    hidden: Vec<Hidden>,
}

impl Sandbox {
    /// Checks the choice (each share exists, is a folder, and is none of the folders that
    /// must not be shared; bubblewrap can start here) and makes `<data_dir>/sandbox-home` the
    /// sandbox's home directory.
    pub fn new(choice: &SandboxChoice, data_dir: &Path) -> Result<Self, SandboxError> {
        let home = data_dir.join("sandbox-home");
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
            if let Some(reason) = refused_share(&canonical, data_dir) {
                return Err(share(reason));
            }
            shares.push(canonical);
        }
        probe()?;
        std::fs::create_dir_all(&home).map_err(|source| SandboxError::Home {
            path: home.clone(),
            source,
        })?;
        Ok(Self {
            home,
            shares,
            network: choice.network,
            hidden: if is_root() {
                unreadable_to_others(Path::new("/etc"))
            } else {
                Vec::new()
            },
        })
    }

    /// `launch` inside the sandbox: its programs run under `bwrap` (in a user namespace of
    /// their own with no capability, under the seccomp filter of [`seccomp`]), and the
    /// display's socket and the desktop's bus sockets are mounted in.
    pub fn wrap(&self, launch: &Launch) -> Launch {
        let person_home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "/root".into());
        let mut args: Vec<OsString> = [
            "bwrap",
            "--die-with-parent",
            "--new-session",
            // A user namespace of its own, with every capability dropped in it (and, as
            // root, a user id that is not 0: programs that see 0 act as root, and fail
            // without the capabilities) and no way to make another one.
            "--unshare-user",
            "--disable-userns",
            "--cap-drop",
            "ALL",
            "--unshare-pid",
            "--unshare-ipc",
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
        if is_root() {
            args.extend(["--uid", SANDBOX_ID, "--gid", SANDBOX_ID].map(OsString::from));
        }
        let mut bind = |flag: &str, from: &Path, to: Option<&Path>| {
            args.extend([flag.into(), from.into()]);
            args.extend(to.map(OsString::from));
        };
        // What only root may read under /etc (shadow, host keys) is root's in the sandbox
        // too, as its programs keep root's user id on the host: hidden.
        for hidden in &self.hidden {
            match hidden {
                Hidden::File(path) => bind("--ro-bind", Path::new("/dev/null"), Some(path)),
                Hidden::Folder(path) => bind("--tmpfs", path, None),
            }
        }
        bind("--bind", &self.home, Some(Path::new(&person_home)));
        if let Some(display) = launch.display().and_then(local_display) {
            let socket = PathBuf::from(format!("/tmp/.X11-unix/X{display}"));
            bind("--bind-try", &socket, Some(&socket));
        }
        let runtime = launch
            .env
            .iter()
            .find(|(k, _)| k == "XDG_RUNTIME_DIR")
            .map(|(_, v)| PathBuf::from(v));
        if let Some(runtime) = &runtime {
            // The desktop's runtime directory is an empty one of the sandbox's own: only its
            // session bus and accessibility bus sockets are there, read-only, so nothing
            // written inside reaches the desktop's programs outside.
            bind("--tmpfs", runtime, None);
            for socket in crate::desktop::SANDBOX_SOCKETS {
                let path = runtime.join(socket);
                bind("--ro-bind-try", &path, Some(&path));
            }
        }
        for share in &self.shares {
            bind("--bind", share, Some(share));
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
            seccomp: true,
        }
    }
}

/// The user and group id the sandbox's programs have inside when Deskhand runs as root.
/// (On the host they are still root's, with no capability.)
const SANDBOX_ID: &str = "1000";

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Why `share` (canonical) must not be shared, if it must not: it would hand the sandbox the
/// whole machine, the person's whole home, or Deskhand's own data (its history, its
/// settings, the sandbox's home).
fn refused_share(share: &Path, data_dir: &Path) -> Option<String> {
    if share == Path::new("/") {
        return Some("it is the whole file system; share a folder of the project".into());
    }
    let person_home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .and_then(|h| PathBuf::from(h).canonicalize().ok());
    if person_home.as_deref() == Some(share) {
        return Some("it is your whole home folder; share a folder inside it".into());
    }
    let data = data_dir
        .canonicalize()
        .unwrap_or_else(|_| data_dir.to_path_buf());
    if data.starts_with(share) || share.starts_with(&data) {
        return Some(format!(
            "it holds Deskhand's own data ({}): the history, the settings and the sandbox's home",
            data.display()
        ));
    }
    None
}

/// A path under /etc that only its owner (or group) may read, and how it is hidden.
#[derive(Clone, Debug)]
enum Hidden {
    /// Replaced by an empty file.
    File(PathBuf),
    /// Replaced by an empty folder.
    Folder(PathBuf),
}

/// The files and folders under `dir` that others may not read (a folder that others may
/// not read is hidden whole).
fn unreadable_to_others(dir: &Path) -> Vec<Hidden> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut hidden = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return hidden;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let others_read = meta.permissions().mode() & 0o004 != 0;
        if meta.is_dir() {
            if others_read && meta.permissions().mode() & 0o001 != 0 {
                hidden.extend(unreadable_to_others(&path));
            } else {
                hidden.push(Hidden::Folder(path));
            }
        } else if meta.is_file() && !others_read {
            hidden.push(Hidden::File(path));
        }
    }
    hidden
}

/// The number of a local display (`:N` or `:N.S`).
fn local_display(display: &std::ffi::OsStr) -> Option<u32> {
    let text = display.to_str()?.strip_prefix(':')?;
    text.split('.').next()?.parse().ok()
}

/// Starts bubblewrap once, to say clearly why it cannot work here.
fn probe() -> Result<(), SandboxError> {
    let out = std::process::Command::new("bwrap")
        .args(["--unshare-user", "--disable-userns", "--cap-drop", "ALL"])
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
