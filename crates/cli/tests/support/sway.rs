//! A real wlroots compositor for the Wayland tests: Debian's `sway` on its headless backend,
//! with two virtual outputs (1920x1080 at scale 1, and 1920x1080 at scale 1.5 to its right).
//! sway refuses to run as root, so when the tests run as root (as under `scripts/test.sh`) it
//! and every client under test run as `nobody` through `setpriv`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// One compositor at a time: each test starts its own, and they would share the CPU badly.
static SWAY_LOCK: Mutex<()> = Mutex::new(());

const NOBODY: u32 = 65534;

const CONFIG: &str = "output HEADLESS-1 mode 1920x1080 position 0 0 scale 1
output HEADLESS-2 mode 1920x1080 position 1920 0 scale 1.5
default_border none
focus_follows_mouse no
";

pub struct Sway {
    child: Child,
    pub dir: tempfile::TempDir,
    runtime: PathBuf,
    _lock: MutexGuard<'static, ()>,
}

fn is_root() -> bool {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::geteuid() == 0 }
}

fn chown(path: &Path) {
    if is_root() {
        std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).unwrap();
    }
}

/// sway headless, or `None` (the test is skipped, with a note) where sway is not installed.
/// With `DESKHAND_TEST_WAYLAND` set, a missing sway is a failure.
pub fn start() -> Option<Sway> {
    let lock = SWAY_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let installed = Command::new("sway")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !installed {
        assert!(
            std::env::var_os("DESKHAND_TEST_WAYLAND").is_none(),
            "DESKHAND_TEST_WAYLAND is set but sway is not installed"
        );
        eprintln!("skipped: sway is not installed (scripts/test.sh installs it)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    chown(dir.path());
    let runtime = dir.path().join("run");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(
        &runtime,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    chown(&runtime);
    let config = dir.path().join("config");
    std::fs::write(&config, CONFIG).unwrap();
    let log = std::fs::File::create(dir.path().join("sway.log")).unwrap();
    let mut command = Command::new("sway");
    command.arg("-c").arg(&config);
    let child = as_client(&mut command, dir.path(), &runtime)
        .env("WLR_BACKENDS", "headless")
        .env("WLR_HEADLESS_OUTPUTS", "2")
        .env("WLR_LIBINPUT_NO_DEVICES", "1")
        .env("WLR_RENDERER", "pixman")
        .env_remove("WAYLAND_DISPLAY")
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("sway starts");
    let sway = Sway {
        child,
        dir,
        runtime,
        _lock: lock,
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while sway.ipc_socket().is_none() || !sway.socket().exists() {
        assert!(
            Instant::now() < deadline,
            "sway did not start: {}",
            sway.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Both outputs configured.
    while !sway.msg(&["-t", "get_outputs"]).contains("HEADLESS-2") {
        assert!(Instant::now() < deadline, "sway has no second output");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(sway)
}

/// `command` as a Wayland client of the test's compositor: as `nobody` when the tests run as
/// root, with a clean environment (no X display, no session bus).
fn as_client<'a>(command: &'a mut Command, home: &Path, runtime: &Path) -> &'a mut Command {
    if is_root() {
        let program = command.get_program().to_owned();
        let args: Vec<_> = command.get_args().map(|a| a.to_owned()).collect();
        let mut wrapped = Command::new("setpriv");
        wrapped
            .arg(format!("--reuid={NOBODY}"))
            .arg(format!("--regid={NOBODY}"))
            .arg("--clear-groups")
            .arg(program)
            .args(args);
        *command = wrapped;
    }
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .env("XDG_RUNTIME_DIR", runtime)
        .env("WAYLAND_DISPLAY", "wayland-1")
        .env("LANG", "C.UTF-8")
}

impl Sway {
    /// The compositor's socket.
    pub fn socket(&self) -> PathBuf {
        self.runtime.join("wayland-1")
    }

    fn ipc_socket(&self) -> Option<PathBuf> {
        std::fs::read_dir(&self.runtime)
            .ok()?
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("sway-ipc"))
            })
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("sway.log")).unwrap_or_default()
    }

    /// A Wayland client of this compositor (see [`as_client`]), in `self.dir`.
    pub fn client(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        as_client(&mut command, self.dir.path(), &self.runtime);
        command.current_dir(self.dir.path());
        command
    }

    /// `deskhand` as a client, with its data in a directory of its own.
    pub fn deskhand(&self) -> Command {
        let data = self.dir.path().join("data");
        if !data.exists() {
            std::fs::create_dir(&data).unwrap();
            chown(&data);
        }
        // `nobody` may not reach the build's directory (a checkout under /root): run a copy.
        let binary = if is_root() {
            let copy = self.dir.path().join("deskhand");
            if !copy.exists() {
                std::fs::copy(env!("CARGO_BIN_EXE_deskhand"), &copy).unwrap();
            }
            copy
        } else {
            PathBuf::from(env!("CARGO_BIN_EXE_deskhand"))
        };
        let mut command = self.client(binary);
        command
            .env("DESKHAND_DATA_DIR", &data)
            .env("DESKHAND_CONFIG_DIR", &data)
            .stdin(Stdio::null());
        command
    }

    /// A file the clients can write, readable by the test.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `swaymsg`'s answer; panics if it fails.
    pub fn msg(&self, args: &[&str]) -> String {
        let Some(ipc) = self.ipc_socket() else {
            return String::new();
        };
        let out = self
            .client("swaymsg")
            .env("SWAYSOCK", ipc)
            .args(args)
            .output()
            .expect("swaymsg runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits (at most 15 s) until sway's tree has a focused window of `app_id`: a client that
    /// is typed into or pointed at must be mapped and focused first.
    pub fn wait_for_focus(&self, app_id: &str) {
        fn focused(node: &serde_json::Value, app_id: &str) -> bool {
            (node["app_id"] == app_id && node["focused"] == true)
                || ["nodes", "floating_nodes"].iter().any(|kind| {
                    node[kind]
                        .as_array()
                        .is_some_and(|nodes| nodes.iter().any(|n| focused(n, app_id)))
                })
        }
        let ready = deskhand_test_support::wait_until(Duration::from_secs(15), || {
            serde_json::from_str(&self.msg(&["-t", "get_tree"]))
                .is_ok_and(|tree| focused(&tree, app_id))
        });
        assert!(
            ready,
            "no focused {app_id} window: {}",
            self.msg(&["-t", "get_tree"])
        );
    }

    /// Waits (at most 15 s) until `output`, as `grim` captures it, is `ready`: what a
    /// compositor draws (a background, a rotation) lands a frame or more after it answers.
    pub fn wait_for_screen(
        &self,
        output: &str,
        what: &str,
        ready: impl Fn(&image::RgbImage) -> bool,
    ) {
        let shown = deskhand_test_support::wait_until(Duration::from_secs(15), || {
            self.client("grim")
                .args(["-o", output, "-"])
                .output()
                .ok()
                .and_then(|out| image::load_from_memory(&out.stdout).ok())
                .is_some_and(|shot| ready(&shot.to_rgb8()))
        });
        assert!(shown, "the screen never showed {what}");
    }

    /// Stops the compositor now, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Sway {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A client process killed when the test ends, also when it fails.
pub struct Client(pub Child);

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits until `ready` holds for the file's text, or panics after 15 s.
pub fn wait_for_file(path: &Path, what: &str, ready: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if ready(&text) {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "no {what} in {}: {text}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
