//! A GNOME-like Wayland desktop for the portal tests, all real but one part: Debian's `mutter
//! --headless` with a virtual monitor, PipeWire with WirePlumber, the real xdg-desktop-portal
//! frontend, on a private session bus. The one stand-in is the portal *backend* (the
//! `org.freedesktop.impl.portal.*` side that `xdg-desktop-portal-gnome` fills on a desktop):
//! that one shows the consent dialog, which nothing can click on a headless machine. The
//! stand-in here speaks the real backend interfaces to the frontend and does what
//! xdg-desktop-portal-gnome does behind its dialog: it asks mutter's own RemoteDesktop and
//! ScreenCast D-Bus services for a session, so frames still come from mutter through PipeWire
//! and input still goes into mutter. Its answer to the consent question is set by the test.
//!
//! Skipped, with a note, where mutter, PipeWire or xdg-desktop-portal is missing;
//! `DESKHAND_TEST_PORTAL` makes that a failure.

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use zbus::zvariant::{ObjectPath, OwnedObjectPath, OwnedValue, Value};

/// One desktop at a time: mutter and PipeWire share the CPU badly.
static LOCK: Mutex<()> = Mutex::new(());

const FRONTEND: &str = "/usr/libexec/xdg-desktop-portal";
const BACKEND_NAME: &str = "org.freedesktop.impl.portal.desktop.deskhandtest";
const WAYLAND_SOCKET: &str = "wayland-deskhand";
/// mutter's place among the children: after the bus, PipeWire and WirePlumber.
const MUTTER: usize = 3;

/// What the stand-in answers when asked for consent.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Consent {
    Grant,
    Refuse,
}

pub struct Desktop {
    children: Vec<Child>,
    pub dir: tempfile::TempDir,
    bus: String,
    consent: Arc<Mutex<Consent>>,
    /// How many times the stand-in was asked for consent.
    pub asked: Arc<Mutex<u32>>,
    _backend: zbus::blocking::Connection,
    _lock: MutexGuard<'static, ()>,
}

fn installed(program: &str) -> bool {
    Path::new(program).is_absolute() && Path::new(program).exists()
        || Command::new("sh")
            .args(["-c", &format!("command -v {program}")])
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
}

/// The desktop, or `None` (skipped, with a note) where a part is not installed.
pub fn start() -> Option<Desktop> {
    let lock = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let missing: Vec<&str> = ["mutter", "pipewire", "wireplumber", "dbus-daemon", FRONTEND]
        .into_iter()
        .filter(|p| !installed(p))
        .collect();
    if !missing.is_empty() {
        assert!(
            std::env::var_os("DESKHAND_TEST_PORTAL").is_none(),
            "DESKHAND_TEST_PORTAL is set but these are not installed: {missing:?}"
        );
        eprintln!("skipped: not installed: {missing:?} (scripts/test.sh installs them)");
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let runtime = dir.path().join("run");
    std::fs::create_dir(&runtime).unwrap();
    std::fs::set_permissions(
        &runtime,
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let mut children = Vec::new();
    let log = |name: &str| std::fs::File::create(dir.path().join(name)).unwrap();
    let socket = dir.path().join("bus");
    // The bus starts the services it activates with its own environment. With the test's
    // DISPLAY and HOME, mutter's accessibility bus launcher would take over the display's
    // accessibility socket under HOME and delete it on exit, leaving the desktop's GTK apps
    // with no tree for the tests after this one.
    let mut daemon = Command::new("dbus-daemon")
        .args(["--session", "--nofork", "--print-address=1"])
        .arg(format!("--address=unix:path={}", socket.display()))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir.path())
        .env("XDG_RUNTIME_DIR", &runtime)
        .stdout(Stdio::piped())
        .stderr(log("dbus.log"))
        .spawn()
        .expect("dbus-daemon starts");
    let mut bus = String::new();
    BufReader::new(daemon.stdout.take().unwrap())
        .read_line(&mut bus)
        .unwrap();
    let bus = bus.trim().to_string();
    children.push(daemon);
    let env = |command: &mut Command| {
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", dir.path())
            .env("XDG_RUNTIME_DIR", &runtime)
            .env("DBUS_SESSION_BUS_ADDRESS", &bus)
            .env("XDG_CURRENT_DESKTOP", "deskhandtest")
            .env("XDG_SESSION_TYPE", "wayland")
            .stdout(Stdio::null());
    };
    for (program, args, logname) in [
        ("pipewire", &[][..], "pipewire.log"),
        ("wireplumber", &[], "wireplumber.log"),
        (
            "mutter",
            &[
                "--headless",
                "--virtual-monitor",
                "1280x800",
                "--no-x11",
                "--wayland-display",
                WAYLAND_SOCKET,
            ],
            "mutter.log",
        ),
    ] {
        let mut command = Command::new(program);
        command.args(args);
        env(&mut command);
        children.push(command.stderr(log(logname)).spawn().unwrap());
        std::thread::sleep(Duration::from_millis(300));
    }
    let wait_for_name = |name: &str| {
        let conn = zbus::blocking::connection::Builder::address(bus.as_str())
            .unwrap()
            .build()
            .unwrap();
        let dbus = zbus::blocking::fdo::DBusProxy::new(&conn).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while !dbus
            .name_has_owner(name.try_into().unwrap())
            .unwrap_or(false)
        {
            assert!(
                Instant::now() < deadline,
                "{name} did not appear on the bus"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    wait_for_name("org.gnome.Mutter.ScreenCast");
    wait_for_name("org.gnome.Mutter.RemoteDesktop");
    let consent = Arc::new(Mutex::new(Consent::Grant));
    let asked = Arc::new(Mutex::new(0));
    let backend = serve_backend(&bus, consent.clone(), asked.clone());
    let portals = dir.path().join("portals");
    std::fs::create_dir(&portals).unwrap();
    std::fs::write(
        portals.join("deskhandtest.portal"),
        format!(
            "[portal]\nDBusName={BACKEND_NAME}\nInterfaces=org.freedesktop.impl.portal.ScreenCast;\
             org.freedesktop.impl.portal.RemoteDesktop;\nUseIn=deskhandtest\n"
        ),
    )
    .unwrap();
    let mut frontend = Command::new(FRONTEND);
    env(&mut frontend);
    children.push(
        frontend
            .env("XDG_DESKTOP_PORTAL_DIR", &portals)
            .env("WAYLAND_DISPLAY", WAYLAND_SOCKET)
            .stderr(log("xdg-desktop-portal.log"))
            .spawn()
            .unwrap(),
    );
    wait_for_name("org.freedesktop.portal.Desktop");
    Some(Desktop {
        children,
        dir,
        bus,
        consent,
        asked,
        _backend: backend,
        _lock: lock,
    })
}

impl Desktop {
    pub fn set_consent(&self, consent: Consent) {
        *self.consent.lock().unwrap() = consent;
    }

    pub fn times_asked(&self) -> u32 {
        *self.asked.lock().unwrap()
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.path(name)).unwrap_or_default()
    }

    /// What a client of this desktop runs with: its bus, its Wayland socket, no X display.
    pub fn env(&self) -> Vec<(&'static str, std::ffi::OsString)> {
        vec![
            ("PATH", std::env::var_os("PATH").unwrap_or_default()),
            ("HOME", self.dir.path().into()),
            ("XDG_RUNTIME_DIR", self.dir.path().join("run").into()),
            ("DBUS_SESSION_BUS_ADDRESS", self.bus.clone().into()),
            ("WAYLAND_DISPLAY", WAYLAND_SOCKET.into()),
            ("XDG_SESSION_TYPE", "wayland".into()),
            ("LANG", "C.UTF-8".into()),
        ]
    }

    /// `command` as a client of this desktop, in its directory.
    pub fn client(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .envs(self.env())
            .current_dir(self.dir.path());
        command
    }

    /// `deskhand` as a client, with its config (and so the restore token) in `data`.
    pub fn deskhand(&self) -> Command {
        let data = self.path("data");
        std::fs::create_dir_all(&data).unwrap();
        let mut command = self.client(env!("CARGO_BIN_EXE_deskhand"));
        command
            .env("DESKHAND_DATA_DIR", &data)
            .env("DESKHAND_CONFIG_DIR", &data)
            .stdin(Stdio::null());
        command
    }
}

impl Desktop {
    /// Stops mutter now, as a crash would.
    pub fn kill_compositor(&mut self) {
        let mutter = &mut self.children[MUTTER];
        let _ = mutter.kill();
        let _ = mutter.wait();
    }
}

impl Drop for Desktop {
    fn drop(&mut self) {
        for child in self.children.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One portal session: mutter's sessions behind it and the streams it shares.
struct Shared {
    remote: OwnedObjectPath,
    screencast: OwnedObjectPath,
    /// PipeWire node and mutter's stream object.
    streams: Vec<(u32, OwnedObjectPath)>,
}

type Sessions = Arc<Mutex<HashMap<OwnedObjectPath, Shared>>>;

type Results = (u32, HashMap<String, OwnedValue>);

fn ok() -> Results {
    (0, HashMap::new())
}

fn failed(e: impl std::fmt::Display) -> zbus::fdo::Error {
    zbus::fdo::Error::Failed(e.to_string())
}

async fn mutter<'a>(
    conn: &zbus::Connection,
    service: &'a str,
    path: impl TryInto<ObjectPath<'a>, Error = zbus::zvariant::Error>,
    interface: &'a str,
) -> zbus::fdo::Result<zbus::Proxy<'a>> {
    zbus::Proxy::new(conn, service, path, interface)
        .await
        .map_err(failed)
}

struct RemoteDesktopBackend {
    sessions: Sessions,
    consent: Arc<Mutex<Consent>>,
    asked: Arc<Mutex<u32>>,
}

#[zbus::interface(name = "org.freedesktop.impl.portal.RemoteDesktop")]
impl RemoteDesktopBackend {
    async fn create_session(
        &self,
        _handle: OwnedObjectPath,
        session_handle: OwnedObjectPath,
        _app_id: String,
        _options: HashMap<String, OwnedValue>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> zbus::fdo::Result<Results> {
        let rd = mutter(
            conn,
            "org.gnome.Mutter.RemoteDesktop",
            "/org/gnome/Mutter/RemoteDesktop",
            "org.gnome.Mutter.RemoteDesktop",
        )
        .await?;
        let remote: OwnedObjectPath = rd.call("CreateSession", &()).await.map_err(failed)?;
        let session = mutter(
            conn,
            "org.gnome.Mutter.RemoteDesktop",
            remote.as_str(),
            "org.gnome.Mutter.RemoteDesktop.Session",
        )
        .await?;
        let id: String = session.get_property("SessionId").await.map_err(failed)?;
        let sc = mutter(
            conn,
            "org.gnome.Mutter.ScreenCast",
            "/org/gnome/Mutter/ScreenCast",
            "org.gnome.Mutter.ScreenCast",
        )
        .await?;
        let properties = HashMap::from([("remote-desktop-session-id", Value::from(id))]);
        let screencast: OwnedObjectPath = sc
            .call("CreateSession", &(properties,))
            .await
            .map_err(failed)?;
        conn.object_server()
            .at(session_handle.as_str(), SessionObject)
            .await
            .map_err(failed)?;
        self.sessions.lock().unwrap().insert(
            session_handle,
            Shared {
                remote,
                screencast,
                streams: Vec::new(),
            },
        );
        Ok(ok())
    }

    async fn select_devices(
        &self,
        _handle: OwnedObjectPath,
        _session_handle: OwnedObjectPath,
        _app_id: String,
        _options: HashMap<String, OwnedValue>,
    ) -> Results {
        ok()
    }

    /// Where xdg-desktop-portal-gnome shows its dialog: the test's answer instead.
    async fn start(
        &self,
        _handle: OwnedObjectPath,
        session_handle: OwnedObjectPath,
        _app_id: String,
        _parent_window: String,
        _options: HashMap<String, OwnedValue>,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> zbus::fdo::Result<Results> {
        *self.asked.lock().unwrap() += 1;
        if *self.consent.lock().unwrap() == Consent::Refuse {
            return Ok((1, HashMap::new()));
        }
        let (remote, screencast) = {
            let sessions = self.sessions.lock().unwrap();
            let s = sessions
                .get(&session_handle)
                .ok_or_else(|| failed("no such session"))?;
            (s.remote.clone(), s.screencast.clone())
        };
        let sc = mutter(
            conn,
            "org.gnome.Mutter.ScreenCast",
            screencast.as_str(),
            "org.gnome.Mutter.ScreenCast.Session",
        )
        .await?;
        // The primary monitor, the cursor drawn into the frames.
        let properties = HashMap::from([("cursor-mode", Value::U32(1))]);
        let stream_path: OwnedObjectPath = sc
            .call("RecordMonitor", &("", properties))
            .await
            .map_err(failed)?;
        let stream = mutter(
            conn,
            "org.gnome.Mutter.ScreenCast",
            stream_path.as_str(),
            "org.gnome.Mutter.ScreenCast.Stream",
        )
        .await?;
        let mut added = stream
            .receive_signal("PipeWireStreamAdded")
            .await
            .map_err(failed)?;
        let rd = mutter(
            conn,
            "org.gnome.Mutter.RemoteDesktop",
            remote.as_str(),
            "org.gnome.Mutter.RemoteDesktop.Session",
        )
        .await?;
        let () = rd.call("Start", &()).await.map_err(failed)?;
        let node: u32 = added
            .next()
            .await
            .ok_or_else(|| failed("mutter added no PipeWire stream"))?
            .body()
            .deserialize()
            .map_err(failed)?;
        let parameters: HashMap<String, OwnedValue> =
            stream.get_property("Parameters").await.map_err(failed)?;
        let pair = |key: &str| -> (i32, i32) {
            parameters
                .get(key)
                .and_then(|v| <(i32, i32)>::try_from(v.try_clone().ok()?).ok())
                .unwrap_or_default()
        };
        let properties: HashMap<String, Value> = HashMap::from([
            ("position".to_string(), Value::from(pair("position"))),
            ("size".to_string(), Value::from(pair("size"))),
            ("source_type".to_string(), Value::U32(1)),
        ]);
        if let Some(s) = self.sessions.lock().unwrap().get_mut(&session_handle) {
            s.streams.push((node, stream_path));
        }
        let results = HashMap::from([
            ("devices".to_string(), OwnedValue::from(3u32)),
            (
                "streams".to_string(),
                Value::from(vec![(node, properties)])
                    .try_to_owned()
                    .map_err(failed)?,
            ),
        ]);
        Ok((0, results))
    }

    async fn notify_pointer_motion_absolute(
        &self,
        session_handle: OwnedObjectPath,
        _options: HashMap<String, OwnedValue>,
        stream: u32,
        x: f64,
        y: f64,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> zbus::fdo::Result<()> {
        let (remote, path) = {
            let sessions = self.sessions.lock().unwrap();
            let s = sessions
                .get(&session_handle)
                .ok_or_else(|| failed("no such session"))?;
            let path = s
                .streams
                .iter()
                .find(|(node, _)| *node == stream)
                .map(|(_, path)| path.clone())
                .ok_or_else(|| failed("no such stream"))?;
            (s.remote.clone(), path)
        };
        self.forward(
            conn,
            &remote,
            "NotifyPointerMotionAbsolute",
            &(path.as_str(), x, y),
        )
        .await
    }

    async fn notify_pointer_button(
        &self,
        session_handle: OwnedObjectPath,
        _options: HashMap<String, OwnedValue>,
        button: i32,
        state: u32,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> zbus::fdo::Result<()> {
        let remote = self.remote(&session_handle)?;
        self.forward(conn, &remote, "NotifyPointerButton", &(button, state != 0))
            .await
    }

    async fn notify_pointer_axis_discrete(
        &self,
        session_handle: OwnedObjectPath,
        _options: HashMap<String, OwnedValue>,
        axis: u32,
        steps: i32,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> zbus::fdo::Result<()> {
        let remote = self.remote(&session_handle)?;
        self.forward(conn, &remote, "NotifyPointerAxisDiscrete", &(axis, steps))
            .await
    }

    async fn notify_keyboard_keysym(
        &self,
        session_handle: OwnedObjectPath,
        _options: HashMap<String, OwnedValue>,
        keysym: i32,
        state: u32,
        #[zbus(connection)] conn: &zbus::Connection,
    ) -> zbus::fdo::Result<()> {
        let remote = self.remote(&session_handle)?;
        self.forward(
            conn,
            &remote,
            "NotifyKeyboardKeysym",
            &(keysym as u32, state != 0),
        )
        .await
    }

    #[zbus(property)]
    fn available_device_types(&self) -> u32 {
        3
    }

    #[zbus(property, name = "version")]
    fn version(&self) -> u32 {
        1
    }
}

impl RemoteDesktopBackend {
    fn remote(&self, session_handle: &OwnedObjectPath) -> zbus::fdo::Result<OwnedObjectPath> {
        self.sessions
            .lock()
            .unwrap()
            .get(session_handle)
            .map(|s| s.remote.clone())
            .ok_or_else(|| failed("no such session"))
    }

    async fn forward<B>(
        &self,
        conn: &zbus::Connection,
        remote: &OwnedObjectPath,
        method: &str,
        body: &B,
    ) -> zbus::fdo::Result<()>
    where
        B: serde::Serialize + zbus::zvariant::DynamicType,
    {
        let session = mutter(
            conn,
            "org.gnome.Mutter.RemoteDesktop",
            remote.as_str(),
            "org.gnome.Mutter.RemoteDesktop.Session",
        )
        .await?;
        session.call(method, body).await.map_err(failed)
    }
}

/// The ScreenCast side: sources are chosen on the remote desktop session, so selecting them
/// only says yes; the monitor is shared when the session starts.
struct ScreenCastBackend;

#[zbus::interface(name = "org.freedesktop.impl.portal.ScreenCast")]
impl ScreenCastBackend {
    async fn select_sources(
        &self,
        _handle: OwnedObjectPath,
        _session_handle: OwnedObjectPath,
        _app_id: String,
        _options: HashMap<String, OwnedValue>,
    ) -> Results {
        ok()
    }

    #[zbus(property)]
    fn available_source_types(&self) -> u32 {
        1
    }

    #[zbus(property)]
    fn available_cursor_modes(&self) -> u32 {
        3
    }

    #[zbus(property, name = "version")]
    fn version(&self) -> u32 {
        1
    }
}

/// The backend's session object, which the frontend closes when the client does.
struct SessionObject;

#[zbus::interface(name = "org.freedesktop.impl.portal.Session")]
impl SessionObject {
    async fn close(
        &self,
        #[zbus(object_server)] server: &zbus::ObjectServer,
        #[zbus(header)] header: zbus::message::Header<'_>,
    ) {
        if let Some(path) = header.path() {
            let _ = server.remove::<Self, _>(path).await;
        }
    }
}

fn serve_backend(
    bus: &str,
    consent: Arc<Mutex<Consent>>,
    asked: Arc<Mutex<u32>>,
) -> zbus::blocking::Connection {
    let path = "/org/freedesktop/portal/desktop";
    zbus::blocking::connection::Builder::address(bus)
        .unwrap()
        .name(BACKEND_NAME)
        .unwrap()
        .serve_at(
            path,
            RemoteDesktopBackend {
                sessions: Sessions::default(),
                consent,
                asked,
            },
        )
        .unwrap()
        .serve_at(path, ScreenCastBackend)
        .unwrap()
        .build()
        .expect("the stand-in portal backend is on the bus")
}
