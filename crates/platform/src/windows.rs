//! The desktop's top-level windows as its window manager publishes them (EWMH): which one has
//! the focus, which ones a process owns, and giving the focus back. The desktop app uses it to
//! put the desktop back as it was when an action was planned (the person's click on Approve
//! moves the pointer and the focus), and to refuse an action that would land on one of its own
//! windows. X11 only: elsewhere [`Desk::open`] says it is unavailable.

#[cfg(not(target_os = "linux"))]
use crate::elements::Rect;

#[derive(Debug, thiserror::Error)]
pub enum WindowsError {
    #[error("the desktop's windows cannot be read: {0}")]
    Unavailable(String),
}

/// Where the keyboard and the pointer were: the window with the focus (0 for none) and the
/// pointer's place on the desktop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Focus {
    pub window: u32,
    pub pointer: (i32, i32),
}

#[cfg(target_os = "linux")]
pub use x11::Desk;

#[cfg(not(target_os = "linux"))]
pub struct Desk;

#[cfg(not(target_os = "linux"))]
impl Desk {
    pub fn open() -> Result<Self, WindowsError> {
        Err(WindowsError::Unavailable("only X11 is supported".into()))
    }
    pub fn focus(&self) -> Result<Focus, WindowsError> {
        Err(WindowsError::Unavailable("only X11 is supported".into()))
    }
    pub fn restore(&self, _focus: &Focus) -> Result<(), WindowsError> {
        Err(WindowsError::Unavailable("only X11 is supported".into()))
    }
    pub fn windows_of(&self, _pid: u32) -> Result<Vec<Rect>, WindowsError> {
        Err(WindowsError::Unavailable("only X11 is supported".into()))
    }
    pub fn owner(&self, _window: u32) -> Option<u32> {
        None
    }
    pub fn grab(&self, _area: &Rect) -> Result<Vec<u8>, WindowsError> {
        Err(WindowsError::Unavailable("only X11 is supported".into()))
    }
}

#[cfg(target_os = "linux")]
mod x11 {
    use x11rb::connection::Connection as _;
    use x11rb::protocol::xproto::{
        Atom, AtomEnum, ClientMessageEvent, ConnectionExt as _, EventMask, ImageFormat, MapState,
        Window,
    };
    use x11rb::rust_connection::RustConnection;
    use x11rb::wrapper::ConnectionExt as _;

    use super::{Focus, WindowsError};
    use crate::elements::Rect;

    /// One connection to the display named by `$DISPLAY`.
    pub struct Desk {
        conn: RustConnection,
        root: Window,
        /// The root window's size: an image can only be read inside it.
        screen: (i32, i32),
        active: Atom,
        clients: Atom,
        pid: Atom,
    }

    fn failed(e: impl std::fmt::Display) -> WindowsError {
        WindowsError::Unavailable(e.to_string())
    }

    impl Desk {
        pub fn open() -> Result<Self, WindowsError> {
            let (conn, screen) = x11rb::connect(None).map_err(failed)?;
            let root = &conn.setup().roots[screen];
            let (root, screen) = (
                root.root,
                (root.width_in_pixels.into(), root.height_in_pixels.into()),
            );
            let atom = |name: &[u8]| -> Result<Atom, WindowsError> {
                Ok(conn
                    .intern_atom(false, name)
                    .map_err(failed)?
                    .reply()
                    .map_err(failed)?
                    .atom)
            };
            let (active, clients, pid) = (
                atom(b"_NET_ACTIVE_WINDOW")?,
                atom(b"_NET_CLIENT_LIST")?,
                atom(b"_NET_WM_PID")?,
            );
            Ok(Self {
                conn,
                root,
                screen,
                active,
                clients,
                pid,
            })
        }

        /// The window property `atom` as 32-bit values; empty when it is not set.
        fn values(&self, window: Window, atom: Atom, kind: AtomEnum) -> Vec<u32> {
            self.conn
                .get_property(false, window, atom, kind, 0, 4096)
                .ok()
                .and_then(|cookie| cookie.reply().ok())
                .and_then(|reply| reply.value32().map(Iterator::collect))
                .unwrap_or_default()
        }

        pub fn focus(&self) -> Result<Focus, WindowsError> {
            let window = self
                .values(self.root, self.active, AtomEnum::WINDOW)
                .first()
                .copied()
                .unwrap_or(0);
            let pointer = self
                .conn
                .query_pointer(self.root)
                .map_err(failed)?
                .reply()
                .map_err(failed)?;
            Ok(Focus {
                window,
                pointer: (pointer.root_x.into(), pointer.root_y.into()),
            })
        }

        /// Moves the pointer back and asks the window manager to give `focus.window` the
        /// focus again (source 2: a pager acting for the person, which window managers obey
        /// where they might ignore an application).
        pub fn restore(&self, focus: &Focus) -> Result<(), WindowsError> {
            let (x, y) = focus.pointer;
            let clamp = |v: i32| v.clamp(i16::MIN.into(), i16::MAX.into()) as i16;
            self.conn
                .warp_pointer(x11rb::NONE, self.root, 0, 0, 0, 0, clamp(x), clamp(y))
                .map_err(failed)?;
            if focus.window != 0 {
                let message = ClientMessageEvent::new(
                    32,
                    focus.window,
                    self.active,
                    [2, x11rb::CURRENT_TIME, 0, 0, 0],
                );
                self.conn
                    .send_event(
                        false,
                        self.root,
                        EventMask::SUBSTRUCTURE_REDIRECT | EventMask::SUBSTRUCTURE_NOTIFY,
                        message,
                    )
                    .map_err(failed)?;
            }
            self.conn.sync().map_err(failed)
        }

        /// The process that owns `window`, as it says in `_NET_WM_PID`.
        pub fn owner(&self, window: Window) -> Option<u32> {
            self.values(window, self.pid, AtomEnum::CARDINAL)
                .first()
                .copied()
        }

        /// Where the shown top-level windows of process `pid` are on the desktop.
        pub fn windows_of(&self, pid: u32) -> Result<Vec<Rect>, WindowsError> {
            let mut found = Vec::new();
            for window in self.values(self.root, self.clients, AtomEnum::WINDOW) {
                if self.owner(window) != Some(pid) {
                    continue;
                }
                let viewable = self
                    .conn
                    .get_window_attributes(window)
                    .ok()
                    .and_then(|c| c.reply().ok())
                    .is_some_and(|a| a.map_state == MapState::VIEWABLE);
                if !viewable {
                    continue;
                }
                let Some(geometry) = self
                    .conn
                    .get_geometry(window)
                    .ok()
                    .and_then(|c| c.reply().ok())
                else {
                    continue;
                };
                let Some(origin) = self
                    .conn
                    .translate_coordinates(window, self.root, 0, 0)
                    .ok()
                    .and_then(|c| c.reply().ok())
                else {
                    continue;
                };
                found.push(Rect {
                    x: origin.dst_x.into(),
                    y: origin.dst_y.into(),
                    width: geometry.width.into(),
                    height: geometry.height.into(),
                });
            }
            Ok(found)
        }

        /// The pixels the desktop shows in `area`, as the X server holds them: for telling
        /// when a window that was just hidden has been painted over, without a screenshot.
        pub fn grab(&self, area: &Rect) -> Result<Vec<u8>, WindowsError> {
            let (x, y) = (area.x.max(0), area.y.max(0));
            let right = (area.x + area.width).min(self.screen.0);
            let bottom = (area.y + area.height).min(self.screen.1);
            if right <= x || bottom <= y {
                return Ok(Vec::new());
            }
            // Inside the root window, so each value fits the protocol's 16 bits.
            let [x, y, width, height] = [x, y, right - x, bottom - y].map(|v| v as u16);
            Ok(self
                .conn
                .get_image(
                    ImageFormat::Z_PIXMAP,
                    self.root,
                    x as i16,
                    y as i16,
                    width,
                    height,
                    !0,
                )
                .map_err(failed)?
                .reply()
                .map_err(failed)?
                .data)
        }
    }
}
