//! The screen and input on wlroots compositors (sway, Hyprland, river), which have no X server
//! to ask: outputs from `wl_output` and `xdg-output` (logical position and size, so fractional
//! scales and rotation map right), frames through `wlr-screencopy` into shared memory, the
//! pointer through `wlr-virtual-pointer` and the keyboard through `zwp-virtual-keyboard` with a
//! keymap of our own, grown as keys are needed, so that any Unicode character can be typed.
//!
//! One Wayland connection serves both seams. Every wait on the compositor has a deadline, so a
//! compositor that stops answering is an error rather than a hang, and one that goes away is an
//! error naming that.

use std::collections::HashMap;
use std::io::Write as _;
use std::os::fd::AsFd as _;
use std::os::unix::io::AsRawFd as _;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use wayland_client::globals::{GlobalList, GlobalListContents, registry_queue_init};
use wayland_client::protocol::wl_buffer::WlBuffer;
use wayland_client::protocol::wl_output::{self, Transform, WlOutput};
use wayland_client::protocol::wl_pointer::{Axis as WlAxis, AxisSource, ButtonState};
use wayland_client::protocol::wl_registry::WlRegistry;
use wayland_client::protocol::wl_seat::WlSeat;
use wayland_client::protocol::wl_shm::{self, WlShm};
use wayland_client::protocol::wl_shm_pool::WlShmPool;
use wayland_client::{Connection, Dispatch, EventQueue, Proxy, QueueHandle, WEnum, delegate_noop};
use wayland_protocols::xdg::xdg_output::zv1::client::zxdg_output_manager_v1::ZxdgOutputManagerV1;
use wayland_protocols::xdg::xdg_output::zv1::client::zxdg_output_v1::{self, ZxdgOutputV1};
use wayland_protocols_misc::zwp_virtual_keyboard_v1::client::zwp_virtual_keyboard_manager_v1::ZwpVirtualKeyboardManagerV1;
use wayland_protocols_misc::zwp_virtual_keyboard_v1::client::zwp_virtual_keyboard_v1::ZwpVirtualKeyboardV1;
use wayland_protocols_wlr::screencopy::v1::client::zwlr_screencopy_frame_v1::{
    self, ZwlrScreencopyFrameV1,
};
use wayland_protocols_wlr::screencopy::v1::client::zwlr_screencopy_manager_v1::ZwlrScreencopyManagerV1;
use wayland_protocols_wlr::virtual_pointer::v1::client::zwlr_virtual_pointer_manager_v1::ZwlrVirtualPointerManagerV1;
use wayland_protocols_wlr::virtual_pointer::v1::client::zwlr_virtual_pointer_v1::ZwlrVirtualPointerV1;

use super::input::{Axis, Button, Direction, Input, InputError, Key, LinuxButton, linux_button};
use super::keys;
use super::screen::{Frame, Monitor, ScreenError};
use deskhand_protocol::scaling::{Geometry, Size};

/// How long the compositor has to answer any one request.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);
/// One wheel click, in the units of `wl_pointer.axis` (what libinput reports for a mouse).
const WHEEL_CLICK: f64 = 15.0;
/// Frames larger than this are refused rather than mapped (16K x 16K).
const MAX_FRAME_BYTES: usize = 16384 * 16384 * 4;

/// An output as the compositor last described it.
#[derive(Clone, Debug, Default)]
struct OutputInfo {
    name: String,
    transform: Option<Transform>,
    logical_position: Option<(i32, i32)>,
    logical_size: Option<(i32, i32)>,
    /// The current mode, in pixels before the transform.
    mode: Option<(i32, i32)>,
}

struct Output {
    wl: WlOutput,
    xdg: ZxdgOutputV1,
    info: OutputInfo,
}

/// Where a capture stands, filled in by the frame's events.
#[derive(Default)]
struct Capture {
    format: Option<(wl_shm::Format, u32, u32, u32)>,
    buffer_done: bool,
    y_invert: bool,
    ready: bool,
    failed: bool,
}

/// What the event handlers write into.
struct State {
    outputs: HashMap<u32, Output>,
    capture: Capture,
    synced: bool,
}

/// The shared-memory buffer frames are copied into, kept between captures of one size.
struct ShmBuffer {
    key: (wl_shm::Format, u32, u32, u32),
    map: memmap2::MmapMut,
    pool: WlShmPool,
    buffer: WlBuffer,
}

impl Drop for ShmBuffer {
    fn drop(&mut self) {
        self.buffer.destroy();
        self.pool.destroy();
    }
}

/// The keyboard's keymap: one keycode per keysym used so far.
struct Keymap {
    /// Keysym spellings (names or `0x` numbers) in keycode order from [`FIRST_KEYCODE`].
    keysyms: Vec<String>,
    uploaded: bool,
}

/// xkb keycode of the first key; Wayland key codes are 8 less (evdev's).
const FIRST_KEYCODE: u32 = 9;
/// X clients (XWayland) see keycodes up to 255 only.
const LAST_KEYCODE: u32 = 255;
/// Always in the keymap, so held modifiers keep their keycodes while others come and go.
const MODIFIERS: [(&str, u32); 9] = [
    ("Shift_L", 1 << 0),
    ("Shift_R", 1 << 0),
    ("Control_L", 1 << 2),
    ("Control_R", 1 << 2),
    ("Alt_L", 1 << 3),
    ("Alt_R", 1 << 3),
    ("Meta_L", 1 << 3),
    ("Super_L", 1 << 6),
    ("Super_R", 1 << 6),
];

impl Keymap {
    fn new() -> Self {
        Self {
            keysyms: MODIFIERS.iter().map(|(name, _)| name.to_string()).collect(),
            uploaded: false,
        }
    }

    fn keycode(&self, keysym: &str) -> Option<u32> {
        self.keysyms
            .iter()
            .position(|k| k == keysym)
            .map(|i| FIRST_KEYCODE + i as u32)
    }

    /// Adds the keysyms that are missing, starting afresh (modifiers kept) when the keymap is
    /// full; true if it changed and must be sent again.
    fn add(&mut self, wanted: &[String]) -> bool {
        let missing: Vec<&String> = wanted
            .iter()
            .filter(|k| self.keycode(k).is_none())
            .collect();
        if missing.is_empty() {
            return !self.uploaded;
        }
        let room = (LAST_KEYCODE - FIRST_KEYCODE + 1) as usize;
        if self.keysyms.len() + missing.len() > room {
            self.keysyms.truncate(MODIFIERS.len());
        }
        for keysym in missing {
            if self.keycode(keysym).is_none() {
                self.keysyms.push(keysym.clone());
            }
        }
        true
    }

    /// The keymap in xkb's text format. Types and compatibility come from xkeyboard-config,
    /// which every wlroots compositor already loads.
    fn text(&self) -> String {
        let last = FIRST_KEYCODE + self.keysyms.len() as u32 - 1;
        let mut codes = String::new();
        let mut symbols = String::new();
        for (i, keysym) in self.keysyms.iter().enumerate() {
            let code = FIRST_KEYCODE + i as u32;
            codes.push_str(&format!("<K{code}> = {code};\n"));
            symbols.push_str(&format!("key <K{code}> {{ [ {keysym} ] }};\n"));
        }
        let map = |mask: u32| {
            MODIFIERS
                .iter()
                .enumerate()
                .filter(|(_, (_, m))| *m == mask)
                .map(|(i, _)| format!("<K{}>", FIRST_KEYCODE + i as u32))
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "xkb_keymap {{\nxkb_keycodes \"deskhand\" {{ minimum = 8; maximum = {max};\n{codes}}};\n\
             xkb_types \"deskhand\" {{ include \"complete\" }};\n\
             xkb_compatibility \"deskhand\" {{ include \"complete\" }};\n\
             xkb_symbols \"deskhand\" {{\n{symbols}\
             modifier_map Shift {{ {shift} }};\nmodifier_map Control {{ {control} }};\n\
             modifier_map Mod1 {{ {alt} }};\nmodifier_map Mod4 {{ {logo} }};\n}};\n}};\n",
            max = last.max(FIRST_KEYCODE + MODIFIERS.len() as u32),
            shift = map(1),
            control = map(1 << 2),
            alt = map(1 << 3),
            logo = map(1 << 6),
        )
    }
}

/// The connection and everything bound on it.
struct Session {
    conn: Connection,
    queue: EventQueue<State>,
    state: State,
    globals: GlobalList,
    shm: WlShm,
    xdg_outputs: ZxdgOutputManagerV1,
    screencopy: ZwlrScreencopyManagerV1,
    pointer: Option<ZwlrVirtualPointerV1>,
    keyboard: Option<ZwpVirtualKeyboardV1>,
    buffer: Option<ShmBuffer>,
    keymap: Keymap,
    /// Modifier masks of the keys held now.
    held: Vec<(u32, u32)>,
    /// Where this process last put the pointer: the protocols give no way to ask.
    pointer_at: Option<(i32, i32)>,
    started: Instant,
}

/// The wlroots backend: a [`super::screen::Screen`] and, through [`Wlroots::input`], an
/// [`Input`] on one connection.
#[derive(Clone)]
pub struct Wlroots(Arc<Mutex<Session>>);

fn gone(e: impl std::fmt::Display) -> String {
    format!("the Wayland compositor closed the connection ({e})")
}

impl Wlroots {
    /// Connects to `WAYLAND_DISPLAY`; the error says which protocol the compositor lacks.
    pub fn connect() -> Result<Self, ScreenError> {
        let conn = Connection::connect_to_env().map_err(|e| {
            ScreenError::NoDisplay(format!("cannot connect to the Wayland compositor: {e}"))
        })?;
        Self::on(conn)
    }

    /// Connects to the compositor listening at `socket`.
    pub fn connect_at(socket: &std::path::Path) -> Result<Self, ScreenError> {
        let stream = std::os::unix::net::UnixStream::connect(socket).map_err(|e| {
            ScreenError::NoDisplay(format!("cannot connect to {}: {e}", socket.display()))
        })?;
        let conn = Connection::from_socket(stream).map_err(|e| {
            ScreenError::NoDisplay(format!("cannot connect to the Wayland compositor: {e}"))
        })?;
        Self::on(conn)
    }

    fn on(conn: Connection) -> Result<Self, ScreenError> {
        let (globals, queue) = registry_queue_init::<State>(&conn).map_err(|e| {
            ScreenError::NoDisplay(format!("the Wayland compositor did not answer: {e}"))
        })?;
        let qh = queue.handle();
        let missing = |what: &str| {
            ScreenError::NoDisplay(format!(
                "this Wayland compositor offers no {what}, so the computer tool cannot see its \
                 screen through the wlroots protocols"
            ))
        };
        let screencopy = globals
            .bind(&qh, 1..=3, ())
            .map_err(|_| missing("wlr-screencopy (zwlr_screencopy_manager_v1)"))?;
        let xdg_outputs = globals
            .bind(&qh, 2..=3, ())
            .map_err(|_| missing("xdg-output (zxdg_output_manager_v1)"))?;
        let shm = globals
            .bind(&qh, 1..=1, ())
            .map_err(|_| missing("shared memory (wl_shm)"))?;
        let seat: Option<WlSeat> = globals.bind(&qh, 1..=1, ()).ok();
        let pointer = globals
            .bind::<ZwlrVirtualPointerManagerV1, _, _>(&qh, 1..=2, ())
            .ok()
            .map(|m| m.create_virtual_pointer(seat.as_ref(), &qh, ()));
        let keyboard = match (
            globals.bind::<ZwpVirtualKeyboardManagerV1, _, _>(&qh, 1..=1, ()),
            &seat,
        ) {
            (Ok(manager), Some(seat)) => Some(manager.create_virtual_keyboard(seat, &qh, ())),
            _ => None,
        };
        let mut session = Session {
            conn,
            queue,
            state: State {
                outputs: HashMap::new(),
                capture: Capture::default(),
                synced: false,
            },
            globals,
            shm,
            xdg_outputs,
            screencopy,
            pointer,
            keyboard,
            buffer: None,
            keymap: Keymap::new(),
            held: Vec::new(),
            pointer_at: None,
            started: Instant::now(),
        };
        session.refresh_outputs().map_err(ScreenError::NoDisplay)?;
        Ok(Self(Arc::new(Mutex::new(session))))
    }

    fn session(&self) -> MutexGuard<'_, Session> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn monitors(&self) -> Result<Vec<Monitor>, ScreenError> {
        let mut session = self.session();
        session.refresh_outputs().map_err(ScreenError::Monitors)?;
        Ok(session.monitors())
    }

    pub fn capture(&self, monitor: &Monitor) -> Result<Frame, ScreenError> {
        self.session()
            .capture(monitor)
            .map_err(ScreenError::Capture)
    }

    /// The virtual pointer and keyboard, or which protocol is missing.
    pub fn input(&self) -> Result<WlrootsInput, InputError> {
        let session = self.session();
        session.pointer()?;
        session.keyboard()?;
        Ok(WlrootsInput(self.clone()))
    }
}

impl Session {
    /// Dispatches events until `done` holds, the deadline passes or the connection ends.
    fn dispatch_until(&mut self, done: impl Fn(&State) -> bool) -> Result<(), String> {
        let deadline = Instant::now() + ANSWER_WITHIN;
        loop {
            self.queue.dispatch_pending(&mut self.state).map_err(gone)?;
            if done(&self.state) {
                return Ok(());
            }
            self.conn.flush().map_err(gone)?;
            let Some(guard) = self.queue.prepare_read() else {
                continue;
            };
            let left = deadline.saturating_duration_since(Instant::now());
            let mut fd = libc::pollfd {
                fd: guard.connection_fd().as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            // SAFETY: one valid pollfd, for the duration of the call.
            let ready = unsafe { libc::poll(&mut fd, 1, left.as_millis() as libc::c_int) };
            if ready == 0 {
                return Err(format!(
                    "the Wayland compositor did not answer within {} s",
                    ANSWER_WITHIN.as_secs()
                ));
            }
            if ready < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(gone(e));
            }
            guard.read().map_err(gone)?;
        }
    }

    /// Waits until the compositor has handled every request sent so far.
    fn roundtrip(&mut self) -> Result<(), String> {
        self.state.synced = false;
        self.conn.display().sync(&self.queue.handle(), ());
        self.dispatch_until(|s| s.synced)
    }

    /// Binds outputs that appeared and drops those that went, then waits for their details.
    fn refresh_outputs(&mut self) -> Result<(), String> {
        self.roundtrip()?;
        let qh = self.queue.handle();
        let present: Vec<(u32, u32)> = self.globals.contents().with_list(|list| {
            list.iter()
                .filter(|g| g.interface == WlOutput::interface().name)
                .map(|g| (g.name, g.version))
                .collect()
        });
        self.state.outputs.retain(|name, output| {
            let keep = present.iter().any(|(n, _)| n == name);
            if !keep {
                output.xdg.destroy();
                if output.wl.version() >= 3 {
                    output.wl.release();
                }
            }
            keep
        });
        for (name, version) in present {
            if self.state.outputs.contains_key(&name) {
                continue;
            }
            let wl: WlOutput = self
                .globals
                .registry()
                .bind(name, version.min(4), &qh, name);
            let xdg = self.xdg_outputs.get_xdg_output(&wl, &qh, name);
            self.state.outputs.insert(
                name,
                Output {
                    wl,
                    xdg,
                    info: OutputInfo::default(),
                },
            );
        }
        self.roundtrip()?;
        self.roundtrip()
    }

    /// The outputs described in full, ordered by position (left to right, then top down).
    fn monitors(&self) -> Vec<Monitor> {
        let mut described: Vec<(u32, &OutputInfo)> = self
            .state
            .outputs
            .iter()
            .filter(|(_, o)| {
                o.info.logical_position.is_some()
                    && o.info.logical_size.is_some()
                    && o.info.mode.is_some()
            })
            .map(|(name, o)| (*name, &o.info))
            .collect();
        described.sort_by_key(|(name, info)| {
            let (x, y) = info.logical_position.unwrap_or_default();
            (y, x, *name)
        });
        described
            .into_iter()
            .enumerate()
            .map(|(index, (name, info))| monitor(index, name, info))
            .collect()
    }

    fn capture(&mut self, monitor: &Monitor) -> Result<Frame, String> {
        let unplugged = || {
            format!(
                "monitor {} ({}) is gone: the output was unplugged or disabled",
                monitor.index, monitor.name
            )
        };
        // Registry events are read first, so an output removed since is seen as gone.
        self.roundtrip()?;
        let present = self
            .globals
            .contents()
            .with_list(|list| list.iter().any(|g| g.name == monitor.id));
        let Some(output) = self.state.outputs.get(&monitor.id).filter(|_| present) else {
            return Err(unplugged());
        };
        let transform = output.info.transform.unwrap_or(Transform::Normal);
        let qh = self.queue.handle();
        self.state.capture = Capture::default();
        let frame = self.screencopy.capture_output(0, &output.wl, &qh, ());
        let result = self.copy_frame(&frame, transform);
        frame.destroy();
        let _ = self.conn.flush();
        match result {
            Err(e) if self.state.capture.failed => {
                // A frame fails when its output goes; say so if that is why.
                self.refresh_outputs()?;
                if self.state.outputs.contains_key(&monitor.id) {
                    Err(e)
                } else {
                    Err(unplugged())
                }
            }
            other => other,
        }
    }

    fn copy_frame(
        &mut self,
        frame: &ZwlrScreencopyFrameV1,
        transform: Transform,
    ) -> Result<Frame, String> {
        let v3 = frame.version() >= 3;
        self.dispatch_until(|s| {
            s.capture.failed || (s.capture.format.is_some() && (!v3 || s.capture.buffer_done))
        })?;
        let failed = || "the compositor could not copy the output".to_string();
        if self.state.capture.failed {
            return Err(failed());
        }
        let Some(key) = self.state.capture.format else {
            return Err(failed());
        };
        let (format, width, height, stride) = key;
        let bytes = stride as usize * height as usize;
        if width == 0 || height == 0 || stride < width * 4 || bytes > MAX_FRAME_BYTES {
            return Err(format!(
                "the compositor offered an unusable frame ({width}x{height}, stride {stride})"
            ));
        }
        if self.buffer.as_ref().map(|b| b.key) != Some(key) {
            self.buffer = None;
            self.buffer = Some(self.shm_buffer(key)?);
        }
        let Some(buffer) = self.buffer.as_ref() else {
            return Err(failed());
        };
        frame.copy(&buffer.buffer);
        self.dispatch_until(|s| s.capture.failed || s.capture.ready)?;
        if self.state.capture.failed {
            return Err(failed());
        }
        let Some(buffer) = self.buffer.as_ref() else {
            return Err(failed());
        };
        let bgr = match format {
            wl_shm::Format::Xrgb8888 | wl_shm::Format::Argb8888 => true,
            wl_shm::Format::Xbgr8888 | wl_shm::Format::Abgr8888 => false,
            other => return Err(format!("the compositor offered pixels as {other:?}")),
        };
        let upright = to_rgba(
            &buffer.map[..bytes],
            Size::new(width, height),
            stride as usize,
            bgr,
            self.state.capture.y_invert,
        );
        Ok(orient(upright, transform))
    }

    fn shm_buffer(&self, key: (wl_shm::Format, u32, u32, u32)) -> Result<ShmBuffer, String> {
        let (format, width, height, stride) = key;
        let len = stride as usize * height as usize;
        let file = memfd("deskhand-frame")?;
        file.set_len(len as u64).map_err(|e| e.to_string())?;
        // SAFETY: a memfd of our own; the compositor writes into it only between `copy` and
        // `ready`, while we wait.
        let map = unsafe { memmap2::MmapMut::map_mut(&file) }.map_err(|e| e.to_string())?;
        let qh = self.queue.handle();
        let pool = self.shm.create_pool(file.as_fd(), len as i32, &qh, ());
        let buffer = pool.create_buffer(
            0,
            width as i32,
            height as i32,
            stride as i32,
            format,
            &qh,
            (),
        );
        Ok(ShmBuffer {
            key,
            map,
            pool,
            buffer,
        })
    }

    fn time(&self) -> u32 {
        self.started.elapsed().as_millis() as u32
    }

    /// The layout's bounding box in logical units: what absolute pointer motion spans.
    fn layout(&self) -> Option<(i32, i32, i32, i32)> {
        let rects: Vec<(i32, i32, i32, i32)> = self
            .state
            .outputs
            .values()
            .filter_map(|o| {
                let (x, y) = o.info.logical_position?;
                let (w, h) = o.info.logical_size?;
                Some((x, y, x + w, y + h))
            })
            .collect();
        let left = rects.iter().map(|r| r.0).min()?;
        let top = rects.iter().map(|r| r.1).min()?;
        let right = rects.iter().map(|r| r.2).max()?;
        let bottom = rects.iter().map(|r| r.3).max()?;
        Some((left, top, right - left, bottom - top))
    }

    /// The virtual pointer; the compositor may offer none (the screen then works, the mouse
    /// does not).
    fn pointer(&self) -> Result<&ZwlrVirtualPointerV1, InputError> {
        self.pointer.as_ref().ok_or_else(|| {
            InputError(
                "this Wayland compositor offers no wlr-virtual-pointer, so the computer tool \
                 cannot move the mouse"
                    .into(),
            )
        })
    }

    fn keyboard(&self) -> Result<&ZwpVirtualKeyboardV1, InputError> {
        self.keyboard.as_ref().ok_or_else(|| {
            InputError(
                "this Wayland compositor offers no virtual keyboard (zwp_virtual_keyboard_v1), \
                 so the computer tool cannot type"
                    .into(),
            )
        })
    }

    /// Sends what was queued and checks the compositor is still there.
    fn flush(&mut self) -> Result<(), InputError> {
        self.roundtrip().map_err(InputError)
    }

    fn move_to(&mut self, x: i32, y: i32) -> Result<(), InputError> {
        let (left, top, width, height) = self
            .layout()
            .ok_or_else(|| InputError("the compositor reports no outputs".into()))?;
        let (dx, dy) = (x - left, y - top);
        if dx < 0 || dy < 0 || dx >= width || dy >= height {
            return Err(InputError(format!(
                "({x}, {y}) is outside the desktop ({width}x{height} at ({left}, {top}))"
            )));
        }
        let time = self.time();
        let pointer = self.pointer()?;
        pointer.motion_absolute(time, dx as u32, dy as u32, width as u32, height as u32);
        pointer.frame();
        self.pointer_at = Some((x, y));
        self.flush()
    }

    fn button(&mut self, button: Button, direction: Direction) -> Result<(), InputError> {
        let code = match linux_button(button) {
            LinuxButton::Wheel(axis, amount) => return self.scroll(amount, axis),
            LinuxButton::Code(code) => code,
        };
        let states: &[ButtonState] = match direction {
            Direction::Press => &[ButtonState::Pressed],
            Direction::Release => &[ButtonState::Released],
            Direction::Click => &[ButtonState::Pressed, ButtonState::Released],
        };
        for state in states {
            let time = self.time();
            let pointer = self.pointer()?;
            pointer.button(time, code, *state);
            pointer.frame();
        }
        self.flush()
    }

    fn scroll(&mut self, amount: i32, axis: Axis) -> Result<(), InputError> {
        let axis = match axis {
            Axis::Vertical => WlAxis::VerticalScroll,
            Axis::Horizontal => WlAxis::HorizontalScroll,
        };
        let step = amount.signum();
        for _ in 0..amount.unsigned_abs() {
            let time = self.time();
            let pointer = self.pointer()?;
            pointer.axis_source(AxisSource::Wheel);
            pointer.axis_discrete(time, axis, WHEEL_CLICK * f64::from(step), step);
            pointer.frame();
        }
        self.flush()
    }

    /// Makes sure every keysym has a keycode, sending the keymap again if it grew.
    fn keycodes(&mut self, keysyms: &[String]) -> Result<Vec<u32>, InputError> {
        if self.keymap.add(keysyms) {
            let text = self.keymap.text();
            let mut file = memfd("deskhand-keymap").map_err(InputError)?;
            file.write_all(text.as_bytes())
                .and_then(|()| file.write_all(&[0]))
                .map_err(|e| InputError(e.to_string()))?;
            let keyboard = self.keyboard()?;
            // Format 1 is XKB_V1 (wl_keyboard.keymap_format).
            keyboard.keymap(1, file.as_fd(), text.len() as u32 + 1);
            self.keymap.uploaded = true;
            self.send_modifiers();
        }
        keysyms
            .iter()
            .map(|k| {
                self.keymap
                    .keycode(k)
                    .ok_or_else(|| InputError(format!("the keymap has no room for {k}")))
            })
            .collect()
    }

    fn send_modifiers(&self) {
        let depressed = self.held.iter().fold(0, |mask, (_, m)| mask | m);
        if let Some(keyboard) = &self.keyboard {
            keyboard.modifiers(depressed, 0, 0, 0);
        }
    }

    fn press(&mut self, keycode: u32, pressed: bool) -> Result<(), InputError> {
        let time = self.time();
        self.keyboard()?.key(time, keycode - 8, u32::from(pressed));
        let mask = MODIFIERS
            .get((keycode - FIRST_KEYCODE) as usize)
            .map(|(_, mask)| *mask);
        if let Some(mask) = mask {
            self.held.retain(|(code, _)| *code != keycode);
            if pressed {
                self.held.push((keycode, mask));
            }
            self.send_modifiers();
        }
        Ok(())
    }

    fn key(&mut self, key: Key, direction: Direction) -> Result<(), InputError> {
        let keysym = keys::xkb_keysym(key)
            .ok_or_else(|| InputError(format!("no keysym for {key:?} on Wayland")))?;
        let code = self.keycodes(&[keysym])?[0];
        match direction {
            Direction::Press => self.press(code, true)?,
            Direction::Release => self.press(code, false)?,
            Direction::Click => {
                self.press(code, true)?;
                self.press(code, false)?;
            }
        }
        self.flush()
    }

    fn text(&mut self, text: &str) -> Result<(), InputError> {
        let keysyms: Vec<String> = text
            .chars()
            .map(|c| match c {
                '\n' | '\r' => Ok("Return".to_string()),
                '\t' => Ok("Tab".to_string()),
                c => keys::xkb_keysym(Key::Unicode(c))
                    .ok_or_else(|| InputError(format!("no keysym for {c:?} on Wayland"))),
            })
            .collect::<Result<_, _>>()?;
        for (i, code) in self.keycodes(&keysyms)?.into_iter().enumerate() {
            // A key pressed twice in a row needs its release seen first; a roundtrip between
            // repeats keeps clients from merging them.
            if i > 0 && keysyms[i - 1] == keysyms[i] {
                self.flush()?;
            }
            self.press(code, true)?;
            self.press(code, false)?;
        }
        self.flush()
    }
}

/// The monitor for an output: logical position and size for input, pixels for frames.
fn monitor(index: usize, name: u32, info: &OutputInfo) -> Monitor {
    let (x, y) = info.logical_position.unwrap_or_default();
    let (lw, lh) = info.logical_size.unwrap_or_default();
    let (mw, mh) = info.mode.unwrap_or_default();
    let transform = info.transform.unwrap_or(Transform::Normal);
    let (pw, ph) = if swaps_axes(transform) {
        (mh, mw)
    } else {
        (mw, mh)
    };
    let scale = if lw > 0 { pw as f32 / lw as f32 } else { 1.0 };
    Monitor {
        index,
        id: name,
        name: if info.name.is_empty() {
            format!("output {name}")
        } else {
            info.name.clone()
        },
        // Wayland has no primary output; the first (top left) is the default.
        primary: index == 0,
        scale_factor: scale,
        geometry: Geometry {
            x,
            y,
            input: Size::new(lw.max(0) as u32, lh.max(0) as u32),
            pixels: Size::new(pw.max(0) as u32, ph.max(0) as u32),
        },
    }
}

fn swaps_axes(transform: Transform) -> bool {
    matches!(
        transform,
        Transform::_90 | Transform::_270 | Transform::Flipped90 | Transform::Flipped270
    )
}

fn memfd(name: &str) -> Result<std::fs::File, String> {
    let name = std::ffi::CString::new(name).map_err(|e| e.to_string())?;
    // SAFETY: a valid C string; the descriptor returned is owned by the File.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    // SAFETY: a fresh descriptor nothing else owns.
    Ok(unsafe { <std::fs::File as std::os::fd::FromRawFd>::from_raw_fd(fd) })
}

/// 32-bit pixels (B, G, R, x or R, G, B, x in memory) to RGBA rows, flipped if the compositor
/// says the frame is upside down.
pub(super) fn to_rgba(
    pixels: &[u8],
    size: Size,
    stride: usize,
    bgr: bool,
    y_invert: bool,
) -> Frame {
    let (w, h) = (size.width as usize, size.height as usize);
    let mut rgba = vec![0; w * h * 4];
    for (row, out) in rgba.chunks_exact_mut(w * 4).enumerate() {
        let src = if y_invert { h - 1 - row } else { row };
        let line = &pixels[src * stride..src * stride + w * 4];
        for (o, p) in out.chunks_exact_mut(4).zip(line.chunks_exact(4)) {
            let v = u32::from_le_bytes([p[0], p[1], p[2], p[3]]);
            let v = if bgr {
                (v >> 16 & 0xff) | (v & 0xff00) | (v & 0xff) << 16
            } else {
                v & 0xff_ffff
            };
            o.copy_from_slice(&(v | 0xff00_0000).to_le_bytes());
        }
    }
    Frame { size, rgba }
}

/// The frame as the person sees the output: screencopy hands over the output's buffer, which a
/// rotated or flipped output shows turned by its transform.
fn orient(frame: Frame, transform: Transform) -> Frame {
    if transform == Transform::Normal {
        return frame;
    }
    let (w, h) = (frame.size.width as usize, frame.size.height as usize);
    let size = if swaps_axes(transform) {
        Size::new(h as u32, w as u32)
    } else {
        frame.size
    };
    let (ow, oh) = (size.width as usize, size.height as usize);
    let mut out = vec![0; frame.rgba.len()];
    for oy in 0..oh {
        for ox in 0..ow {
            // The buffer pixel shown at (ox, oy). The buffer holds the output's content
            // turned by its transform; undoing a 90° transform turns it back clockwise (as
            // seen on sway: crates/cli/tests/suite/computer_wayland.rs, a_rotated_output_is_captured_upright).
            let (sx, sy) = match transform {
                Transform::_90 => (oy, h - 1 - ox),
                Transform::_180 => (w - 1 - ox, h - 1 - oy),
                Transform::_270 => (w - 1 - oy, ox),
                Transform::Flipped => (w - 1 - ox, oy),
                Transform::Flipped90 => (w - 1 - oy, h - 1 - ox),
                Transform::Flipped180 => (ox, h - 1 - oy),
                Transform::Flipped270 => (oy, ox),
                _ => (ox, oy),
            };
            let (s, o) = ((sy * w + sx) * 4, (oy * ow + ox) * 4);
            out[o..o + 4].copy_from_slice(&frame.rgba[s..s + 4]);
        }
    }
    Frame { size, rgba: out }
}

/// The mouse and keyboard through the virtual pointer and keyboard.
pub struct WlrootsInput(Wlroots);

impl Input for WlrootsInput {
    fn move_to(&mut self, x: i32, y: i32) -> Result<(), InputError> {
        self.0.session().move_to(x, y)
    }

    fn button(&mut self, button: Button, direction: Direction) -> Result<(), InputError> {
        self.0.session().button(button, direction)
    }

    fn scroll(&mut self, amount: i32, axis: Axis) -> Result<(), InputError> {
        self.0.session().scroll(amount, axis)
    }

    fn key(&mut self, key: Key, direction: Direction) -> Result<(), InputError> {
        self.0.session().key(key, direction)
    }

    fn text(&mut self, text: &str) -> Result<(), InputError> {
        self.0.session().text(text)
    }

    /// Where Deskhand last put the pointer (the protocols cannot ask the compositor), else
    /// the first monitor's centre, where it is moved before anything else happens.
    fn location(&self) -> Result<(i32, i32), InputError> {
        let mut session = self.0.session();
        if let Some(at) = session.pointer_at {
            return Ok(at);
        }
        let (left, top, width, height) = session
            .layout()
            .ok_or_else(|| InputError("the compositor reports no outputs".into()))?;
        let centre = (left + width / 2, top + height / 2);
        session.move_to(centre.0, centre.1)?;
        Ok(centre)
    }
}

impl Dispatch<WlRegistry, GlobalListContents> for State {
    fn event(
        _: &mut Self,
        _: &WlRegistry,
        _: <WlRegistry as Proxy>::Event,
        _: &GlobalListContents,
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        // The global list keeps itself up to date; outputs are re-read on each listing.
    }
}

impl Dispatch<WlOutput, u32> for State {
    fn event(
        state: &mut Self,
        _: &WlOutput,
        event: wl_output::Event,
        name: &u32,
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        let Some(output) = state.outputs.get_mut(name) else {
            return;
        };
        match event {
            wl_output::Event::Geometry {
                transform: WEnum::Value(transform),
                ..
            } => output.info.transform = Some(transform),
            wl_output::Event::Mode {
                flags: WEnum::Value(flags),
                width,
                height,
                ..
            } if flags.contains(wl_output::Mode::Current) => {
                output.info.mode = Some((width, height));
            }
            wl_output::Event::Name { name } => output.info.name = name,
            _ => {}
        }
    }
}

impl Dispatch<ZxdgOutputV1, u32> for State {
    fn event(
        state: &mut Self,
        _: &ZxdgOutputV1,
        event: zxdg_output_v1::Event,
        name: &u32,
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        let Some(output) = state.outputs.get_mut(name) else {
            return;
        };
        match event {
            zxdg_output_v1::Event::LogicalPosition { x, y } => {
                output.info.logical_position = Some((x, y));
            }
            zxdg_output_v1::Event::LogicalSize { width, height } => {
                output.info.logical_size = Some((width, height));
            }
            zxdg_output_v1::Event::Name { name } if output.info.name.is_empty() => {
                output.info.name = name;
            }
            _ => {}
        }
    }
}

impl Dispatch<ZwlrScreencopyFrameV1, ()> for State {
    fn event(
        state: &mut Self,
        _: &ZwlrScreencopyFrameV1,
        event: zwlr_screencopy_frame_v1::Event,
        _: &(),
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        let capture = &mut state.capture;
        match event {
            zwlr_screencopy_frame_v1::Event::Buffer {
                format: WEnum::Value(format),
                width,
                height,
                stride,
            } => {
                // The first 32-bit format offered that `to_rgba` reads.
                let readable = matches!(
                    format,
                    wl_shm::Format::Xrgb8888
                        | wl_shm::Format::Argb8888
                        | wl_shm::Format::Xbgr8888
                        | wl_shm::Format::Abgr8888
                );
                if capture.format.is_none() || readable {
                    capture
                        .format
                        .get_or_insert((format, width, height, stride));
                }
            }
            zwlr_screencopy_frame_v1::Event::BufferDone => capture.buffer_done = true,
            zwlr_screencopy_frame_v1::Event::Flags {
                flags: WEnum::Value(flags),
            } => {
                capture.y_invert = flags.contains(zwlr_screencopy_frame_v1::Flags::YInvert);
            }
            zwlr_screencopy_frame_v1::Event::Ready { .. } => capture.ready = true,
            zwlr_screencopy_frame_v1::Event::Failed => capture.failed = true,
            _ => {}
        }
    }
}

impl Dispatch<wayland_client::protocol::wl_callback::WlCallback, ()> for State {
    fn event(
        state: &mut Self,
        _: &wayland_client::protocol::wl_callback::WlCallback,
        _: wayland_client::protocol::wl_callback::Event,
        _: &(),
        _: &Connection,
        _: &QueueHandle<Self>,
    ) {
        state.synced = true;
    }
}

delegate_noop!(State: ignore WlSeat);
delegate_noop!(State: ignore WlShm);
delegate_noop!(State: WlShmPool);
delegate_noop!(State: ignore WlBuffer);
delegate_noop!(State: ZxdgOutputManagerV1);
delegate_noop!(State: ZwlrScreencopyManagerV1);
delegate_noop!(State: ZwlrVirtualPointerManagerV1);
delegate_noop!(State: ZwlrVirtualPointerV1);
delegate_noop!(State: ZwpVirtualKeyboardManagerV1);
delegate_noop!(State: ZwpVirtualKeyboardV1);

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(w: u32, h: u32) -> Frame {
        // Each pixel's red byte is its index, to follow it through a turn.
        let mut rgba = Vec::new();
        for i in 0..w * h {
            rgba.extend_from_slice(&[i as u8, 0, 0, 255]);
        }
        Frame {
            size: Size::new(w, h),
            rgba,
        }
    }

    fn reds(f: &Frame) -> Vec<u8> {
        f.rgba.chunks_exact(4).map(|p| p[0]).collect()
    }

    #[test]
    fn a_rotated_output_is_turned_upright() {
        // Buffer 3x2:  0 1 2 / 3 4 5.
        let turned = orient(frame(3, 2), Transform::_90);
        assert_eq!(turned.size, Size::new(2, 3));
        assert_eq!(reds(&turned), vec![3, 0, 4, 1, 5, 2]);
        let back = orient(frame(3, 2), Transform::_270);
        assert_eq!(reds(&back), vec![2, 5, 1, 4, 0, 3]);
        assert_eq!(
            reds(&orient(frame(3, 2), Transform::_180)),
            vec![5, 4, 3, 2, 1, 0]
        );
        assert_eq!(
            reds(&orient(frame(3, 2), Transform::Flipped)),
            vec![2, 1, 0, 5, 4, 3]
        );
    }

    #[test]
    fn pixels_are_read_in_either_byte_order_and_flipped_when_inverted() {
        // Two rows of one pixel, a stride of 8 bytes (padding ignored).
        let bytes = [1, 2, 3, 0, 9, 9, 9, 9, 4, 5, 6, 0, 9, 9, 9, 9];
        let bgr = to_rgba(&bytes, Size::new(1, 2), 8, true, false);
        assert_eq!(bgr.rgba, vec![3, 2, 1, 255, 6, 5, 4, 255]);
        let rgb = to_rgba(&bytes, Size::new(1, 2), 8, false, true);
        assert_eq!(rgb.rgba, vec![4, 5, 6, 255, 1, 2, 3, 255]);
    }

    #[test]
    fn the_keymap_grows_keeps_modifiers_and_starts_afresh_when_full() {
        let mut keymap = Keymap::new();
        assert!(keymap.add(&["0x1004f60".to_string()]));
        keymap.uploaded = true;
        assert!(!keymap.add(&["0x1004f60".to_string(), "Shift_L".to_string()]));
        let text = keymap.text();
        assert!(text.contains("key <K18> { [ 0x1004f60 ] };"), "{text}");
        assert!(
            text.contains("modifier_map Control { <K11>, <K12> };"),
            "{text}"
        );
        let many: Vec<String> = (0..300).map(|i| format!("0x{:x}", 0x1000100 + i)).collect();
        assert!(keymap.add(&many[..240]));
        assert!(keymap.add(&many[240..]));
        assert_eq!(keymap.keycode("Shift_L"), Some(FIRST_KEYCODE));
        assert_eq!(keymap.keycode(&many[240]), Some(FIRST_KEYCODE + 9));
        assert!(keymap.keycode("0x1004f60").is_none());
    }
}
