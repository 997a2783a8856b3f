//! The agent's own desktop: a private Xvfb with a window manager, a session D-Bus and an
//! accessibility bus of its own, so the agent works there while the person goes on working on
//! their screen.
//!
//! Nothing of it starts a program on the agent's behalf (docs/sandbox.md): openbox gets a
//! configuration with no menu and no key binding ([`OPENBOX_CONFIG`]), and the session bus
//! one with no service directory ([`BUS_CONFIG`]), so a `.service` file written anywhere
//! starts nothing. The accessibility bus (a second `dbus-daemon`, configured the same way)
//! and its registry are started with the desktop, so nothing has to be activated later.
//!
//! Both buses also take anonymous clients: as root, the sandbox's programs are user 1000
//! inside their user namespace, and D-Bus refuses a client whose claimed user is not the one
//! its socket shows (root's). Only Deskhand's user and the sandbox (through its read-only
//! mount) can reach the sockets, in the desktop's 0700 runtime directory.
//!
//! Each program (Xvfb, openbox, dbus-daemon) runs under a keeper (`deskhand_host::processes`), so it
//! ends with the desktop and with Deskhand, even after a `kill -9`. What a killed Xvfb leaves
//! (its lock file and socket, the desktop's runtime directory) is written down in a registry
//! in the runtime directory; the next desktop to start cleans what a dead owner left.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub use deskhand_protocol::desktop::DesktopChoice;
use tokio::process::Command;

pub mod live;
pub mod takeover;

/// The first display number tried (`$DESKHAND_FIRST_DISPLAY` moves it, for tests that must
/// not meet each other); taken ones are skipped upward.
const FIRST_DISPLAY: u32 = 100;
const DISPLAYS_TRIED: u32 = 200;
/// How long Xvfb and the bus may take to come up.
const START_WAIT: Duration = Duration::from_secs(10);
/// The agent desktop's screen.
pub const SIZE: (u32, u32) = (1280, 800);

/// What of the desktop's runtime directory a sandbox sees (read-only): the session bus's
/// socket and the accessibility bus's folder.
pub const SANDBOX_SOCKETS: [&str; 2] = ["bus", "at-spi"];

/// The configuration of the desktop's session bus and of its accessibility bus (`{type}`,
/// `{listen}`: its address). Unlike the stock `session.conf` (and at-spi2-core's
/// `accessibility.conf`) it names no service directory, not even
/// `$XDG_RUNTIME_DIR/dbus-1/services`, so that no client can have the bus start a program;
/// and no client may change the environment such a program would start with.
const BUS_CONFIG: &str = r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>{type}</type>
  <keep_umask/>
  <listen>{listen}</listen>
  <auth>EXTERNAL</auth>
  <auth>ANONYMOUS</auth>
  <allow_anonymous/>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"
          send_member="UpdateActivationEnvironment"/>
  </policy>
</busconfig>
"#;

/// openbox's configuration: windows are focused and raised by a click and moved by their
/// title bar, and that is all. No root menu (the stock one offers a terminal), no key
/// bindings (the stock ones run programs), and an empty menu file in place of the stock one.
const OPENBOX_CONFIG: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<openbox_config xmlns="http://openbox.org/3.4/rc">
  <focus><focusNew>yes</focusNew><followMouse>no</followMouse></focus>
  <placement><policy>Smart</policy></placement>
  <desktops><number>1</number></desktops>
  <keyboard></keyboard>
  <mouse>
    <context name="Frame">
      <mousebind button="Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
    </context>
    <context name="Client">
      <mousebind button="Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Middle" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Right" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
    </context>
    <context name="Titlebar">
      <mousebind button="Left" action="Press"><action name="Focus"/><action name="Raise"/></mousebind>
      <mousebind button="Left" action="Drag"><action name="Move"/></mousebind>
    </context>
    <context name="Close">
      <mousebind button="Left" action="Click"><action name="Close"/></mousebind>
    </context>
  </mouse>
  <menu><file>{menu}</file></menu>
</openbox_config>
"#;

/// The menu file openbox reads: no menu at all.
const OPENBOX_MENU: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<openbox_menu xmlns="http://openbox.org/3.4/menu"></openbox_menu>
"#;

/// Where at-spi2-core installs its registry (Debian and Fedora, then Arch and older Debian).
const REGISTRY_PROGRAMS: [&str; 2] = [
    "/usr/libexec/at-spi2-registryd",
    "/usr/lib/at-spi2-core/at-spi2-registryd",
];

#[derive(Debug, thiserror::Error)]
pub enum DesktopError {
    #[error("cannot start an agent desktop: {program} is not installed ({hint})")]
    Missing {
        program: &'static str,
        hint: &'static str,
    },
    #[error("the agent desktop's display :{display} did not start: {reason}")]
    WontStart { display: u32, reason: String },
    #[error("no free display number between :{first} and :{last}")]
    NoFreeDisplay { first: u32, last: u32 },
    #[error("the agent desktop's {what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> DesktopError {
    let what = what.into();
    move |source| DesktopError::Io { what, source }
}

/// A running agent desktop; dropping it ends every program on it.
pub struct AgentDesktop {
    display: u32,
    runtime: PathBuf,
    bus: String,
    /// The accessibility bus's address, when at-spi2-core is installed.
    accessibility: Option<String>,
    /// The keepers of Xvfb, the bus and the window manager, last started first.
    keepers: Vec<u32>,
    record: PathBuf,
}

impl AgentDesktop {
    /// Starts a desktop on the first free display number, after cleaning what desktops of
    /// dead Deskhand processes left.
    pub async fn start() -> Result<Self, DesktopError> {
        let first = std::env::var("DESKHAND_FIRST_DISPLAY")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(FIRST_DISPLAY);
        Self::start_in(&registry_dir(), first).await
    }

    /// [`start`](Self::start) with the registry and the first display number given rather
    /// than read from the environment: tests that share one process must not change it.
    pub async fn start_in(registry: &Path, first: u32) -> Result<Self, DesktopError> {
        std::fs::create_dir_all(registry)
            .map_err(io(format!("registry {}", registry.display())))?;
        clean_leftovers(registry);
        for display in first..first + DISPLAYS_TRIED {
            if is_taken(display) {
                continue;
            }
            match Self::start_on(display, registry).await {
                // Another server took the number meanwhile: skip it.
                Err(DesktopError::WontStart { .. }) if is_taken(display) => continue,
                other => return other,
            }
        }
        Err(DesktopError::NoFreeDisplay {
            first,
            last: first + DISPLAYS_TRIED - 1,
        })
    }

    async fn start_on(display: u32, registry: &Path) -> Result<Self, DesktopError> {
        let runtime = registry.join(display.to_string());
        let record = registry.join(format!("{display}.pids"));
        std::fs::create_dir_all(&runtime).map_err(io("runtime directory"))?;
        set_private(&runtime);
        let mut desktop = Self {
            display,
            bus: format!("unix:path={}", runtime.join("bus").display()),
            accessibility: None,
            runtime,
            keepers: Vec::new(),
            record,
        };
        let (w, h) = SIZE;
        let screen = format!("{w}x{h}x24");
        let name = desktop.display_name();
        let log = desktop.runtime.join("xvfb.log");
        let xvfb = desktop.spawn(
            "Xvfb",
            "apt install xvfb",
            &[
                &name,
                "-screen",
                "0",
                &screen,
                "-noreset",
                "-nolisten",
                "tcp",
            ],
            Some(&log),
        )?;
        // Two desktops starting at once may both try this number: the server that lost exits,
        // and its desktop must not take the winner's socket for its own.
        wait_until(
            || socket(display).exists() && owns_display(display, xvfb),
            START_WAIT,
            xvfb,
            "nothing listened",
        )
        .await
        .map_err(|reason| {
            let said = std::fs::read_to_string(&log).unwrap_or_default();
            let last = said.lines().rev().find(|l| !l.trim().is_empty());
            DesktopError::WontStart {
                display,
                reason: match last {
                    Some(line) => format!("{reason}: {}", line.trim()),
                    None => reason,
                },
            }
        })?;
        let bus_socket = desktop.runtime.join("bus");
        let address = desktop.bus.clone();
        let bus = desktop.spawn_bus("bus.conf", "session", &address)?;
        wait_for(&bus_socket, START_WAIT, bus)
            .await
            .map_err(|reason| DesktopError::WontStart {
                display,
                reason: format!("its session bus: {reason}"),
            })?;
        desktop.start_accessibility().await;
        let menu = desktop.write_config("openbox-menu.xml", OPENBOX_MENU)?;
        let openbox_config = desktop.write_config(
            "openbox.xml",
            &OPENBOX_CONFIG.replace("{menu}", &menu.display().to_string()),
        )?;
        let openbox = desktop.spawn(
            "openbox",
            "apt install openbox",
            &[
                "--sm-disable",
                "--config-file",
                &openbox_config.to_string_lossy(),
            ],
            None,
        )?;
        wait_until(
            || has_window_manager(&name),
            START_WAIT,
            openbox,
            "it took no windows",
        )
        .await
        .map_err(|reason| DesktopError::WontStart {
            display,
            reason: format!("its window manager: {reason}"),
        })?;
        Ok(desktop)
    }

    /// Writes one of the desktop's configuration files into its runtime directory (which
    /// no sandbox can write to) and says where.
    fn write_config(&self, name: &str, text: &str) -> Result<PathBuf, DesktopError> {
        let path = self.runtime.join(name);
        std::fs::write(&path, text).map_err(io(format!("configuration {}", path.display())))?;
        Ok(path)
    }

    /// Starts a `dbus-daemon` of this desktop with [`BUS_CONFIG`] (written to `config`),
    /// listening at `address`; gives its keeper.
    fn spawn_bus(&mut self, config: &str, kind: &str, address: &str) -> Result<u32, DesktopError> {
        let text = BUS_CONFIG
            .replace("{type}", kind)
            .replace("{listen}", address);
        let config = format!(
            "--config-file={}",
            self.write_config(config, &text)?.display()
        );
        self.spawn(
            "dbus-daemon",
            "apt install dbus",
            &[&config, "--nofork", "--nopidfile"],
            None,
        )
    }

    /// Starts the desktop's accessibility bus and its registry (at-spi2-core's), now, so
    /// that neither is ever started on a client's request later. The bus's socket is in
    /// `<runtime>/at-spi/`, which a sandbox sees read-only. Without at-spi2-core, or when
    /// the registry does not come up, the desktop has none (and no element map).
    async fn start_accessibility(&mut self) {
        let Some(registry) = REGISTRY_PROGRAMS
            .iter()
            .find(|path| Path::new(path).exists())
        else {
            return;
        };
        let folder = self.runtime.join("at-spi");
        if std::fs::create_dir_all(&folder).is_err() {
            return;
        }
        set_private(&folder);
        let socket = folder.join("bus");
        let address = format!("unix:path={}", socket.display());
        let Ok(bus) = self.spawn_bus("accessibility.conf", "accessibility", &address) else {
            return;
        };
        if wait_for(&socket, START_WAIT, bus).await.is_err() {
            return;
        }
        // The registry finds its bus in its environment, as every program here does.
        self.accessibility = Some(address.clone());
        let ready = match self.spawn(registry, "apt install at-spi2-core", &[], None) {
            Ok(keeper) => wait_for_registry(&address, START_WAIT, keeper).await,
            Err(_) => false,
        };
        if !ready {
            self.accessibility = None;
        }
    }

    /// Starts `program` on this desktop under a keeper and writes it down in the registry.
    fn spawn(
        &mut self,
        program: &'static str,
        hint: &'static str,
        args: &[&str],
        log: Option<&Path>,
    ) -> Result<u32, DesktopError> {
        let stderr = match log {
            Some(path) => std::fs::File::create(path)
                .map_err(io(format!("log {}", path.display())))?
                .into(),
            None => std::process::Stdio::null(),
        };
        let mut command = Command::new(program);
        // Its window manager and buses are the agent's programs too: no secret, no runtime
        // directory but the desktop's own.
        deskhand_host::program_env::apply(&mut command);
        command
            .args(args)
            // The person's accessibility bus is not the desktop's.
            .env_remove("AT_SPI_BUS_ADDRESS")
            .envs(self.environment())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(stderr)
            .process_group(0);
        deskhand_host::processes::keep(&mut command);
        let child = command.spawn().map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => DesktopError::Missing { program, hint },
            _ => DesktopError::Io {
                what: program.to_string(),
                source: e,
            },
        })?;
        // The keeper reaps it; the handle is not needed.
        let pid = child.id().unwrap_or_default();
        drop(child);
        self.keepers.push(pid);
        self.write_record()?;
        Ok(pid)
    }

    fn write_record(&self) -> Result<(), DesktopError> {
        let pids: Vec<String> = self.keepers.iter().map(u32::to_string).collect();
        std::fs::write(
            &self.record,
            format!("{}\n{}\n", std::process::id(), pids.join(" ")),
        )
        .map_err(io("registry record"))
    }

    pub fn display(&self) -> u32 {
        self.display
    }

    /// `:N`, as `DISPLAY` takes it.
    pub fn display_name(&self) -> String {
        format!(":{}", self.display)
    }

    /// The desktop's own runtime directory (its bus socket lives there).
    pub fn runtime_dir(&self) -> &Path {
        &self.runtime
    }

    /// The desktop's accessibility bus, which holds the tree of its programs; `None`
    /// without at-spi2-core.
    pub fn accessibility_bus(&self) -> Option<&str> {
        self.accessibility.as_deref()
    }

    /// What the desktop's programs get in their environment: its display, its runtime
    /// directory, session bus and accessibility bus (so accessibility trees never mix with
    /// the person's, whose `AT_SPI_BUS_ADDRESS` is replaced or blanked), and Qt's
    /// accessibility turned on for element maps.
    pub fn environment(&self) -> Vec<(OsString, OsString)> {
        [
            ("DISPLAY", self.display_name().into()),
            ("XDG_RUNTIME_DIR", self.runtime.clone().into_os_string()),
            ("DBUS_SESSION_BUS_ADDRESS", self.bus.clone().into()),
            (
                "AT_SPI_BUS_ADDRESS",
                self.accessibility.clone().unwrap_or_default().into(),
            ),
            ("QT_LINUX_ACCESSIBILITY_ALWAYS_ON", "1".into()),
        ]
        .into_iter()
        .map(|(k, v): (&str, OsString)| (k.into(), v))
        .chain(["WAYLAND_DISPLAY", "XAUTHORITY"].map(|k| (k.into(), OsString::new())))
        .filter(|(_, v)| !v.is_empty())
        .collect()
    }
}

impl Drop for AgentDesktop {
    fn drop(&mut self) {
        for keeper in self.keepers.iter().rev() {
            deskhand_host::processes::end(*keeper);
        }
        remove_display_files(self.display);
        let _ = std::fs::remove_dir_all(&self.runtime);
        let _ = std::fs::remove_file(&self.record);
    }
}

/// `$XDG_RUNTIME_DIR/deskhand/desktops`, else `desktops` in the data directory.
pub fn registry_dir() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").filter(|dir| !dir.is_empty()) {
        Some(dir) => PathBuf::from(dir).join("deskhand").join("desktops"),
        None => deskhand_host::paths::data_dir().join("desktops"),
    }
}

fn lock_file(display: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/.X{display}-lock"))
}

fn socket(display: u32) -> PathBuf {
    PathBuf::from(format!("/tmp/.X11-unix/X{display}"))
}

/// A number with an X lock file or socket is someone's, live or not: never reused.
fn is_taken(display: u32) -> bool {
    lock_file(display).exists() || socket(display).exists()
}

fn set_private(dir: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700));
}

/// Removes a display's lock file and socket once the server that wrote the lock is gone.
fn remove_display_files(display: u32) {
    let lock = lock_file(display);
    if lock_owner(display).is_some_and(is_alive) {
        return;
    }
    let _ = std::fs::remove_file(lock);
    let _ = std::fs::remove_file(socket(display));
}

/// Whether the X server that holds `display`'s lock runs under `keeper`.
fn owns_display(display: u32, keeper: u32) -> bool {
    lock_owner(display).is_some_and(|server| {
        deskhand_host::processes::kept_by(server)
            == deskhand_host::processes::Holder::Keeper(keeper)
    })
}

fn is_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists.
    pid > 0 && i32::try_from(pid).is_ok_and(|pid| unsafe { libc::kill(pid, 0) } == 0)
}

/// Ends and removes what desktops of Deskhand processes that are gone left behind; returns
/// how many it cleaned.
pub fn clean_leftovers(registry: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(registry) else {
        return 0;
    };
    let mut cleaned = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(display) = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".pids"))
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let mut lines = text.lines();
        let owner = lines.next().and_then(|l| l.trim().parse::<u32>().ok());
        if owner.is_some_and(is_alive) {
            continue;
        }
        // Each keeper led its own process group: end the groups that are still there.
        for pid in lines
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse::<i32>().ok())
            .filter(|p| *p > 1)
        {
            // SAFETY: kill(2) on a process group this registry recorded as a desktop's.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
            }
        }
        let started = Instant::now();
        while is_taken_by_live_server(display) && started.elapsed() < Duration::from_secs(1) {
            std::thread::sleep(Duration::from_millis(10));
        }
        remove_display_files(display);
        let _ = std::fs::remove_dir_all(registry.join(display.to_string()));
        let _ = std::fs::remove_file(&path);
        cleaned += 1;
    }
    cleaned
}

fn is_taken_by_live_server(display: u32) -> bool {
    lock_owner(display).is_some_and(is_alive)
}

/// The pid of the X server that wrote `display`'s lock file.
fn lock_owner(display: u32) -> Option<u32> {
    std::fs::read_to_string(lock_file(display))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Waits until `path` exists, or says why not: the program ended, or the time ran out.
async fn wait_for(path: &Path, limit: Duration, keeper: u32) -> Result<(), String> {
    wait_until(|| path.exists(), limit, keeper, "nothing listened").await
}

/// Waits until `ready()`, or says why not: the program under `keeper` ended, or the time ran
/// out (`late` says what did not happen).
async fn wait_until(
    mut ready: impl FnMut() -> bool,
    limit: Duration,
    keeper: u32,
    late: &str,
) -> Result<(), String> {
    let started = Instant::now();
    loop {
        if ready() {
            return Ok(());
        }
        if !std::path::Path::new(&format!("/proc/{keeper}")).exists()
            || std::fs::read_to_string(format!("/proc/{keeper}/stat")).is_ok_and(|s| {
                s.rsplit_once(')')
                    .is_some_and(|(_, r)| r.trim_start().starts_with('Z'))
            })
        {
            return Err("it exited at once".into());
        }
        if started.elapsed() > limit {
            return Err(format!("{late} after {} s", limit.as_secs()));
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits until the accessibility bus at `address` has its registry, for at most `limit`, and
/// while the program under `keeper` (the registry) runs; says whether it did.
async fn wait_for_registry(address: &str, limit: Duration, keeper: u32) -> bool {
    let started = Instant::now();
    while started.elapsed() < limit && Path::new(&format!("/proc/{keeper}")).exists() {
        if crate::elements::has_registry(address)
            .await
            .unwrap_or(false)
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    false
}

/// Whether a window manager has taken `display`'s screen: it names its check window on the
/// root (`_NET_SUPPORTING_WM_CHECK`, which openbox sets once it redirects the root's
/// children). A window mapped before that can be left unmapped for good.
fn has_window_manager(display: &str) -> bool {
    use x11rb::connection::Connection as _;
    use x11rb::protocol::xproto::{AtomEnum, ConnectionExt as _};
    let Ok((conn, screen)) = x11rb::connect(Some(display)) else {
        return false;
    };
    let root = conn.setup().roots[screen].root;
    let check = conn
        .intern_atom(true, b"_NET_SUPPORTING_WM_CHECK")
        .ok()
        .and_then(|cookie| cookie.reply().ok())
        .map(|reply| reply.atom)
        .filter(|atom| *atom != 0);
    check.is_some_and(|atom| {
        conn.get_property(false, root, atom, AtomEnum::WINDOW, 0, 1)
            .ok()
            .and_then(|cookie| cookie.reply().ok())
            .is_some_and(|reply| reply.value_len > 0)
    })
}
