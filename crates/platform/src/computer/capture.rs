//! The real screen: an X server spoken to directly, a wlroots compositor through its
//! protocols, any other Wayland desktop through the desktop portal, or xcap on macOS and
//! Windows, chosen at run time behind the `Screen` seam.

use deskhand_protocol::scaling::{Geometry, Size};

use super::screen::{Frame, Monitor, Screen, ScreenError};

/// Which way the real screen is reached, chosen at run time and reported by `deskhand
/// monitors` and `deskhand screenshot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// An X server, spoken to directly; input through XTEST.
    X11,
    /// A wlroots Wayland compositor: wlr-screencopy, xdg-output, the virtual pointer and
    /// keyboard.
    Wlroots,
    /// Any other Wayland desktop (GNOME, KDE): xdg-desktop-portal RemoteDesktop with
    /// ScreenCast, frames from PipeWire.
    Portal,
    /// xcap and enigo (macOS, Windows).
    Xcap,
}

impl std::fmt::Display for Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::X11 => "x11 (RandR, MIT-SHM, XTEST)",
            Self::Wlroots => {
                "wayland-wlroots (wlr-screencopy, xdg-output, wlr-virtual-pointer, zwp-virtual-keyboard)"
            }
            Self::Portal => {
                "wayland-portal (xdg-desktop-portal RemoteDesktop + ScreenCast, PipeWire)"
            }
            Self::Xcap => "xcap",
        })
    }
}

/// The real screen. On X11 it talks to the server itself (see `x11`), on wlroots compositors
/// through their protocols (see `wlroots`), on other Wayland desktops through the desktop
/// portal (see `portal`); on macOS and Windows it goes through xcap.
pub struct RealScreen {
    #[cfg(target_os = "linux")]
    x11: Option<x11::X11>,
    /// The X display named for this screen (an agent desktop's), where the process's
    /// `DISPLAY` is someone else's: xcap, which reads `DISPLAY`, is never used then.
    #[cfg(target_os = "linux")]
    named: Option<String>,
    #[cfg(target_os = "linux")]
    wayland: Option<Wayland>,
}

/// The Wayland path in use.
#[cfg(target_os = "linux")]
enum Wayland {
    Wlroots(super::wlroots::Wlroots),
    Portal(super::portal::Portal),
}

#[cfg(target_os = "linux")]
impl Wayland {
    /// The wlroots protocols where the compositor offers them (no consent needed), else the
    /// desktop portal; the error says what each lacked.
    fn connect() -> Result<Self, ScreenError> {
        let wlroots = match super::wlroots::Wlroots::connect() {
            Ok(wlroots) => return Ok(Self::Wlroots(wlroots)),
            Err(ScreenError::NoDisplay(why)) => why,
            Err(e) => return Err(e),
        };
        super::portal::Portal::connect()
            .map(Self::Portal)
            .map_err(|portal| {
                ScreenError::NoDisplay(format!(
                    "no way to this Wayland desktop's screen: {wlroots}; and {portal}"
                ))
            })
    }
}

impl RealScreen {
    /// Fails early, with the reason, where no display can be reached.
    pub fn open() -> Result<Self, ScreenError> {
        #[cfg(target_os = "linux")]
        if std::env::var_os("DISPLAY").is_none() && std::env::var_os("WAYLAND_DISPLAY").is_none() {
            return Err(ScreenError::NoDisplay(
                "neither DISPLAY nor WAYLAND_DISPLAY is set".into(),
            ));
        }
        #[cfg(target_os = "linux")]
        let wayland = Self::on_wayland();
        let screen = Self {
            #[cfg(target_os = "linux")]
            x11: (!wayland).then(|| x11::X11::open(None)).transpose()?,
            #[cfg(target_os = "linux")]
            named: None,
            #[cfg(target_os = "linux")]
            wayland: wayland.then(Wayland::connect).transpose()?,
        };
        if screen.monitors()?.is_empty() {
            return Err(ScreenError::NoDisplay(
                "the display reports no monitors".into(),
            ));
        }
        Ok(screen)
    }

    /// The X display `display` (`:N`), whatever the process's `DISPLAY` says.
    #[cfg(target_os = "linux")]
    pub fn open_x11(display: &str) -> Result<Self, ScreenError> {
        let x11 = x11::X11::open(Some(display))?;
        let screen = Self {
            x11: Some(x11),
            named: Some(display.to_string()),
            wayland: None,
        };
        if screen.monitors()?.is_empty() {
            return Err(ScreenError::NoDisplay(format!(
                "the display {display} reports no monitors"
            )));
        }
        Ok(screen)
    }

    fn xcap_monitors() -> Result<Vec<xcap::Monitor>, ScreenError> {
        xcap::Monitor::all().map_err(|e| ScreenError::Monitors(e.to_string()))
    }

    /// The list as xcap reports it, in logical units that are turned back into pixels.
    fn monitors_from_xcap() -> Result<Vec<Monitor>, ScreenError> {
        let err = |e: xcap::XCapError| ScreenError::Monitors(e.to_string());
        let mut out = Vec::new();
        for (index, m) in Self::xcap_monitors()?.into_iter().enumerate() {
            let scale = m.scale_factor().map_err(err)?;
            let scale = if scale.is_finite() && scale > 0.0 {
                scale
            } else {
                1.0
            };
            let physical = |v: f64| (v * f64::from(scale)).round();
            let (x, y) = (
                f64::from(m.x().map_err(err)?),
                f64::from(m.y().map_err(err)?),
            );
            let (w, h) = (
                f64::from(m.width().map_err(err)?),
                f64::from(m.height().map_err(err)?),
            );
            let pixels = Size::new(physical(w) as u32, physical(h) as u32);
            // Input is in physical pixels on X11 and Windows, in logical points on macOS.
            let geometry = if cfg!(target_os = "macos") {
                Geometry {
                    x: x as i32,
                    y: y as i32,
                    input: Size::new(w as u32, h as u32),
                    pixels,
                }
            } else {
                Geometry {
                    x: physical(x) as i32,
                    y: physical(y) as i32,
                    input: pixels,
                    pixels,
                }
            };
            out.push(Monitor {
                index,
                id: m.id().map_err(err)?,
                name: m.name().map_err(err)?,
                primary: m.is_primary().unwrap_or(false),
                scale_factor: scale,
                geometry,
            });
        }
        Ok(out)
    }

    /// A Wayland session, unless the session says it is X11: XWayland's `DISPLAY` shows only
    /// the X programs, so it is not used on Wayland.
    #[cfg(target_os = "linux")]
    fn on_wayland() -> bool {
        match std::env::var("XDG_SESSION_TYPE").as_deref() {
            Ok("wayland") => true,
            Ok("x11") => false,
            _ => std::env::var_os("WAYLAND_DISPLAY").is_some_and(|d| !d.is_empty()),
        }
    }

    pub fn backend(&self) -> Backend {
        #[cfg(target_os = "linux")]
        {
            match self.wayland {
                Some(Wayland::Wlroots(_)) => return Backend::Wlroots,
                Some(Wayland::Portal(_)) => return Backend::Portal,
                None => {}
            }
            if self.x11.is_some() {
                return Backend::X11;
            }
        }
        Backend::Xcap
    }

    /// The mouse and keyboard that go with this screen.
    pub fn input(&self) -> Result<Box<dyn super::input::Input>, super::input::InputError> {
        #[cfg(target_os = "linux")]
        match &self.wayland {
            Some(Wayland::Wlroots(wlroots)) => return Ok(Box::new(wlroots.input()?)),
            Some(Wayland::Portal(portal)) => return Ok(Box::new(portal.input())),
            None => {}
        }
        #[cfg(target_os = "linux")]
        return Ok(Box::new(super::input::EnigoInput::open(
            self.named.clone(),
        )?));
        #[cfg(not(target_os = "linux"))]
        Ok(Box::new(super::input::EnigoInput::open(None)?))
    }

    /// A frame through xcap: the monitor itself, or, for a monitor without an output of its
    /// own, a region of the one it lies on.
    fn capture_with_xcap(monitor: &Monitor) -> Result<Frame, ScreenError> {
        let failed = |e: xcap::XCapError| ScreenError::Capture(e.to_string());
        let all = Self::xcap_monitors()?;
        let image = if let Some(m) = all.iter().find(|m| m.id().ok() == Some(monitor.id)) {
            m.capture_image().map_err(failed)?
        } else {
            let g = monitor.geometry;
            let host = all
                .iter()
                .find(|m| {
                    let (Ok(x), Ok(y), Ok(w), Ok(h)) = (m.x(), m.y(), m.width(), m.height()) else {
                        return false;
                    };
                    g.x >= x
                        && g.y >= y
                        && g.x + g.pixels.width as i32 <= x + w as i32
                        && g.y + g.pixels.height as i32 <= y + h as i32
                })
                .ok_or_else(|| {
                    ScreenError::Capture(format!(
                        "monitor {} ({}) is gone",
                        monitor.index, monitor.name
                    ))
                })?;
            let (hx, hy) = (host.x().map_err(failed)?, host.y().map_err(failed)?);
            host.capture_region(
                (g.x - hx) as u32,
                (g.y - hy) as u32,
                g.pixels.width,
                g.pixels.height,
            )
            .map_err(failed)?
        };
        Ok(Frame {
            size: Size::new(image.width(), image.height()),
            rgba: image.into_raw(),
        })
    }
}

impl Screen for RealScreen {
    fn monitors(&self) -> Result<Vec<Monitor>, ScreenError> {
        #[cfg(target_os = "linux")]
        if let Some(x11) = &self.x11 {
            return x11.monitors();
        }
        #[cfg(target_os = "linux")]
        match &self.wayland {
            Some(Wayland::Wlroots(wlroots)) => return wlroots.monitors(),
            Some(Wayland::Portal(portal)) => return portal.monitors(),
            None => {}
        }
        Self::monitors_from_xcap()
    }

    fn capture(&self, monitor: &Monitor) -> Result<Frame, ScreenError> {
        #[cfg(target_os = "linux")]
        match &self.wayland {
            Some(Wayland::Wlroots(wlroots)) => return wlroots.capture(monitor),
            Some(Wayland::Portal(portal)) => return portal.capture(monitor),
            None => {}
        }
        #[cfg(target_os = "linux")]
        if let Some(frame) = self
            .x11
            .as_ref()
            .map(|x11| x11.capture(&monitor.geometry))
            .transpose()?
            .flatten()
        {
            return Ok(frame);
        }
        #[cfg(target_os = "linux")]
        if let Some(display) = &self.named {
            return Err(ScreenError::Capture(format!(
                "the display {display} does not use 32-bit xRGB pixels"
            )));
        }
        Self::capture_with_xcap(monitor)
    }
}

/// The X server spoken to directly over one connection kept open: RandR's monitor list (xcap
/// skips RandR monitors that have no output of their own, such as `xrandr --setmonitor`
/// splitting a wide screen or virtual monitors on Xvfb), and frames copied by the server into
/// shared memory (MIT-SHM). xcap opens five connections a capture and receives the 8 MB of a
/// 1080p frame over the socket, several times slower (docs/benchmarks.md, "The computer
/// tool").
#[cfg(target_os = "linux")]
mod x11 {
    use std::sync::{Mutex, MutexGuard};

    use x11rb::connection::{Connection as _, RequestConnection as _};
    use x11rb::protocol::randr::ConnectionExt as _;
    use x11rb::protocol::shm::{self, ConnectionExt as _};
    use x11rb::protocol::xproto::{ConnectionExt as _, ImageFormat, ImageOrder, Screen, Window};
    use x11rb::rust_connection::RustConnection;

    use super::{Frame, Geometry, Monitor, ScreenError, Size};

    pub struct X11 {
        conn: RustConnection,
        root: Window,
        /// Whether pixels come as 32-bit little-endian xRGB, the layout nearly every X server
        /// uses and the only one read here; frames in any other go through xcap.
        xrgb: bool,
        /// The segment frames are copied into; `None` where the server cannot share memory
        /// with this process (a remote display, another IPC namespace), and frames come over
        /// the socket instead.
        shm: Mutex<Option<Segment>>,
        /// Opened on a named display: xcap (which reads `DISPLAY`) cannot tell its scale.
        named: bool,
    }

    fn err(e: impl std::fmt::Display) -> ScreenError {
        ScreenError::Capture(e.to_string())
    }

    impl X11 {
        /// `display`, else the process's `DISPLAY`.
        pub fn open(display: Option<&str>) -> Result<Self, ScreenError> {
            let (conn, screen) =
                x11rb::connect(display).map_err(|e| ScreenError::NoDisplay(e.to_string()))?;
            let named = display.is_some();
            let setup = conn.setup();
            let root = &setup.roots[screen];
            let xrgb = setup.image_byte_order == ImageOrder::LSB_FIRST && is_xrgb(setup, root);
            let frame_bytes =
                usize::from(root.width_in_pixels) * usize::from(root.height_in_pixels) * 4;
            let root = root.root;
            let shm = if xrgb {
                Segment::attach(&conn, frame_bytes)
            } else {
                None
            };
            Ok(Self {
                conn,
                root,
                xrgb,
                shm: Mutex::new(shm),
                named,
            })
        }

        pub fn monitors(&self) -> Result<Vec<Monitor>, ScreenError> {
            let err = |e: &dyn std::fmt::Display| ScreenError::Monitors(e.to_string());
            let reply = self
                .conn
                .randr_get_monitors(self.root, true)
                .map_err(|e| err(&e))?
                .reply()
                .map_err(|e| err(&e))?;
            let scale = (!self.named)
                .then(xcap::Monitor::all)
                .and_then(Result::ok)
                .and_then(|all| all.first()?.scale_factor().ok())
                .filter(|s| s.is_finite() && *s > 0.0)
                .unwrap_or(1.0);
            reply
                .monitors
                .iter()
                .enumerate()
                .map(|(index, m)| {
                    let name = self
                        .conn
                        .get_atom_name(m.name)
                        .map_err(|e| err(&e))?
                        .reply()
                        .map_err(|e| err(&e))?;
                    let size = Size::new(u32::from(m.width), u32::from(m.height));
                    Ok(Monitor {
                        index,
                        // xcap's id is the output's; a monitor without one goes by its name atom.
                        id: m.outputs.first().copied().unwrap_or(m.name),
                        name: String::from_utf8_lossy(&name.name).into_owned(),
                        primary: m.primary,
                        scale_factor: scale,
                        geometry: Geometry {
                            x: i32::from(m.x),
                            y: i32::from(m.y),
                            input: size,
                            pixels: size,
                        },
                    })
                })
                .collect()
        }

        /// The monitor's pixels, or `None` when they are not xRGB and xcap has to read them.
        pub fn capture(&self, g: &Geometry) -> Result<Option<Frame>, ScreenError> {
            if !self.xrgb {
                return Ok(None);
            }
            let size = g.pixels;
            let (x, y) = (
                i16::try_from(g.x).map_err(err)?,
                i16::try_from(g.y).map_err(err)?,
            );
            let (w, h) = (
                u16::try_from(size.width).map_err(err)?,
                u16::try_from(size.height).map_err(err)?,
            );
            let bytes = usize::from(w) * usize::from(h) * 4;
            let shm = self.segment(bytes);
            let rgba = if let Some(segment) = shm.as_ref() {
                let format = ImageFormat::Z_PIXMAP.into();
                self.conn
                    .shm_get_image(self.root, x, y, w, h, !0, format, segment.id, 0)
                    .map_err(err)?
                    .reply()
                    .map_err(err)?;
                to_rgba(&segment.bytes()[..bytes])
            } else {
                let reply = self
                    .conn
                    .get_image(ImageFormat::Z_PIXMAP, self.root, x, y, w, h, !0)
                    .map_err(err)?
                    .reply()
                    .map_err(err)?;
                to_rgba(&reply.data)
            };
            Ok(Some(Frame { size, rgba }))
        }

        /// The shared segment, grown first if the screen has grown since it was made.
        fn segment(&self, bytes: usize) -> MutexGuard<'_, Option<Segment>> {
            let mut shm = self.shm.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(small) = shm.take_if(|s| s.len < bytes) {
                let _ = self.conn.shm_detach(small.id);
                *shm = Segment::attach(&self.conn, bytes);
            }
            shm
        }
    }

    /// Whether the root window's visual is 24-bit colour in 32-bit pixels, red in the high byte.
    fn is_xrgb(setup: &x11rb::protocol::xproto::Setup, root: &Screen) -> bool {
        let Some(format) = setup
            .pixmap_formats
            .iter()
            .find(|f| f.depth == root.root_depth)
        else {
            return false;
        };
        let visual = root
            .allowed_depths
            .iter()
            .flat_map(|d| &d.visuals)
            .find(|v| v.visual_id == root.root_visual);
        format.bits_per_pixel == 32
            && matches!(root.root_depth, 24 | 32)
            && visual.is_some_and(|v| {
                (v.red_mask, v.green_mask, v.blue_mask) == (0xff_0000, 0xff00, 0xff)
            })
    }

    /// xRGB (bytes B, G, R, x) to RGBA, a whole pixel at a time.
    fn to_rgba(xrgb: &[u8]) -> Vec<u8> {
        let mut rgba = vec![0; xrgb.len()];
        for (out, pixel) in rgba.chunks_exact_mut(4).zip(xrgb.chunks_exact(4)) {
            let v = u32::from_le_bytes([pixel[0], pixel[1], pixel[2], pixel[3]]);
            let swapped = (v >> 16 & 0xff) | (v & 0xff00) | (v & 0xff) << 16 | 0xff00_0000;
            out.copy_from_slice(&swapped.to_le_bytes());
        }
        rgba
    }

    /// A System V shared-memory segment attached both here (read-only) and in the X server.
    struct Segment {
        id: shm::Seg,
        addr: *mut libc::c_void,
        len: usize,
    }

    // SAFETY: the mapping belongs to the segment alone and is only read under the mutex.
    unsafe impl Send for Segment {}

    impl Segment {
        /// A new segment of `len` bytes attached to the server, or `None` if either side
        /// cannot have one.
        fn attach(conn: &RustConnection, len: usize) -> Option<Self> {
            conn.extension_information(shm::X11_EXTENSION_NAME)
                .ok()
                .flatten()?;
            // SAFETY: a private segment, mapped once and unmapped on drop. It is marked for
            // removal as soon as the server has attached it (or failed to), so the kernel
            // frees it when both sides are gone, even after a crash.
            unsafe {
                let shmid = libc::shmget(libc::IPC_PRIVATE, len, libc::IPC_CREAT | 0o600);
                if shmid < 0 {
                    return None;
                }
                let addr = libc::shmat(shmid, std::ptr::null(), libc::SHM_RDONLY);
                let attached = if addr as isize == -1 {
                    None
                } else {
                    conn.generate_id().ok().filter(|&id| {
                        conn.shm_attach(id, shmid as u32, false)
                            .is_ok_and(|cookie| cookie.check().is_ok())
                    })
                };
                libc::shmctl(shmid, libc::IPC_RMID, std::ptr::null_mut());
                match attached {
                    Some(id) => Some(Self { id, addr, len }),
                    None => {
                        if addr as isize != -1 {
                            libc::shmdt(addr);
                        }
                        None
                    }
                }
            }
        }

        fn bytes(&self) -> &[u8] {
            // SAFETY: `addr` maps `len` bytes for as long as `self` lives.
            unsafe { std::slice::from_raw_parts(self.addr.cast::<u8>(), self.len) }
        }
    }

    impl Drop for Segment {
        fn drop(&mut self) {
            // SAFETY: mapped in `attach` and not unmapped since.
            unsafe { libc::shmdt(self.addr) };
        }
    }
}
