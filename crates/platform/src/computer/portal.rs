//! The screen and input on Wayland desktops without the wlroots protocols (GNOME's mutter,
//! KDE's KWin): one xdg-desktop-portal RemoteDesktop session with ScreenCast sources, so the
//! person is asked once for both. Frames come from PipeWire, the pointer and keys go through
//! the portal's `Notify*` methods.
//!
//! Where the portal can keep the grant (RemoteDesktop version 2 and later), its restore token
//! is kept in the config directory and offered next time, so later runs do not ask. Every wait
//! has a deadline: a refusal, a dialog left unanswered, a portal or compositor that goes away
//! are errors naming the cause.

use std::collections::HashMap;
use std::io::Cursor;
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ashpd::desktop::remote_desktop::{
    Axis as PortalAxis, DeviceType, KeyState, NotifyKeyboardKeysymOptions,
    NotifyPointerAxisDiscreteOptions, NotifyPointerButtonOptions,
    NotifyPointerMotionAbsoluteOptions, RemoteDesktop, SelectDevicesOptions, StartOptions,
};
use ashpd::desktop::screencast::{
    CursorMode, OpenPipeWireRemoteOptions, Screencast, SelectSourcesOptions, SourceType,
};
use ashpd::desktop::{CreateSessionOptions, PersistMode, ResponseError, Session};
use ashpd::enumflags2::BitFlags;
use pipewire::spa::param::format::{FormatProperties, MediaSubtype, MediaType};
use pipewire::spa::param::video::{VideoFormat, VideoInfoRaw};
use pipewire::spa::param::{ParamType, format_utils};
use pipewire::spa::pod::{self, Pod, serialize::PodSerializer};
use pipewire::spa::utils::{Direction as PwDirection, Fraction, Rectangle, SpaTypes};
use pipewire::stream::{StreamFlags, StreamRc, StreamState};

use super::input::{Axis, Button, Direction, Input, InputError, Key, LinuxButton, linux_button};
use super::keys;
use super::screen::{Frame, Monitor, ScreenError};
use deskhand_protocol::scaling::{Geometry, Size};

/// How long the person has to answer the portal's dialog.
const CONSENT_WITHIN: Duration = Duration::from_secs(120);
/// How long the portal, PipeWire or the compositor have for anything else.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);
/// The Shift_L keysym.
const SHIFT_L: u32 = 0xffe1;
/// The restore token's file in the config directory.
const TOKEN_FILE: &str = "portal-restore-token";

/// One shared stream of the session: a monitor.
#[derive(Clone, Debug)]
struct Stream {
    node: u32,
    /// Logical position and size, what pointer motion is given in.
    position: (i32, i32),
    size: (i32, i32),
}

/// The last frame PipeWire delivered for a stream, as it came (32-bit pixels, rows `stride`
/// apart); turned into RGBA only when asked for.
struct Raw {
    size: Size,
    stride: usize,
    bgr: bool,
    pixels: Vec<u8>,
}

/// What the PipeWire thread shares: the latest frame of each stream, or why it stopped.
#[derive(Default)]
struct Frames {
    latest: HashMap<u32, Raw>,
    failed: Option<String>,
}

type Shared = Arc<(Mutex<Frames>, Condvar)>;

struct Inner {
    remote: RemoteDesktop,
    session: Session<RemoteDesktop>,
    streams: Vec<Stream>,
    frames: Shared,
    stop: pipewire::channel::Sender<()>,
    /// Where this process last put the pointer: the portal gives no way to ask.
    pointer_at: Option<(i32, i32)>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.stop.send(());
        let _ = zbus::block_on(self.session.close());
    }
}

/// The portal backend: a [`super::screen::Screen`] and, through [`Portal::input`], an
/// [`Input`] on one session.
#[derive(Clone)]
pub struct Portal(Arc<Mutex<Inner>>);

/// Why the portal path cannot be used, or what failed on it.
fn portal_error(what: &str, e: ashpd::Error) -> String {
    match e {
        ashpd::Error::Response(ResponseError::Cancelled) => {
            format!("{what}: the person refused the screen-sharing request")
        }
        ashpd::Error::Response(ResponseError::Other) => {
            format!("{what}: the desktop portal ended the request")
        }
        ashpd::Error::PortalNotFound(name) => {
            format!("{what}: no xdg-desktop-portal offers {name}")
        }
        e => format!("{what}: {e}"),
    }
}

/// Runs `future` with a deadline, on zbus's own executor (the callers are synchronous).
fn within<T>(
    limit: Duration,
    what: &str,
    future: impl std::future::Future<Output = Result<T, ashpd::Error>>,
) -> Result<T, String> {
    let timer = async {
        async_io::Timer::after(limit).await;
        Err(format!(
            "{what}: no answer within {} s (the desktop portal or its dialog did not respond)",
            limit.as_secs_f32()
        ))
    };
    let work = async { future.await.map_err(|e| portal_error(what, e)) };
    zbus::block_on(futures_util::future::select(
        Box::pin(work),
        Box::pin(timer),
    ))
    .factor_first()
    .0
}

fn token_path() -> PathBuf {
    deskhand_host::paths::config_dir().join(TOKEN_FILE)
}

impl Portal {
    /// Asks the desktop portal for a session (the person's consent, unless a kept token
    /// restores it) and starts receiving frames.
    pub fn connect() -> Result<Self, ScreenError> {
        let token = std::fs::read_to_string(token_path()).ok();
        let (remote, session, streams, fd) = within(
            CONSENT_WITHIN,
            "the desktop portal",
            start(token.as_deref()),
        )
        .map_err(ScreenError::NoDisplay)?;
        let frames: Shared = Arc::default();
        let nodes: Vec<u32> = streams.iter().map(|s| s.node).collect();
        let (stop, stop_rx) = pipewire::channel::channel();
        let thread_frames = frames.clone();
        std::thread::Builder::new()
            .name("deskhand-pipewire".into())
            .spawn(move || {
                if let Err(e) = receive(fd, &nodes, &thread_frames, stop_rx) {
                    fail(&thread_frames, format!("PipeWire: {e}"));
                }
            })
            .map_err(|e| ScreenError::NoDisplay(e.to_string()))?;
        Ok(Self(Arc::new(Mutex::new(Inner {
            remote,
            session,
            streams,
            frames,
            stop,
            pointer_at: None,
        }))))
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn monitors(&self) -> Result<Vec<Monitor>, ScreenError> {
        let inner = self.inner();
        // A stream's pixels are known once its first frame came: wait for them.
        let frames = wait_for(&inner.frames, |f| {
            inner.streams.iter().all(|s| f.latest.contains_key(&s.node))
        })
        .map_err(ScreenError::Monitors)?;
        let mut monitors: Vec<Monitor> = inner
            .streams
            .iter()
            .map(|s| {
                let pixels = frames.latest.get(&s.node).map(|r| r.size);
                monitor(0, s, pixels)
            })
            .collect();
        monitors.sort_by_key(|m| (m.geometry.y, m.geometry.x, m.id));
        for (index, m) in monitors.iter_mut().enumerate() {
            m.index = index;
            m.primary = index == 0;
        }
        Ok(monitors)
    }

    pub fn capture(&self, monitor: &Monitor) -> Result<Frame, ScreenError> {
        let inner = self.inner();
        let frames = wait_for(&inner.frames, |f| f.latest.contains_key(&monitor.id))
            .map_err(ScreenError::Capture)?;
        let raw = frames.latest.get(&monitor.id).ok_or_else(|| {
            ScreenError::Capture(format!(
                "monitor {} ({}) is gone: the desktop stopped sharing it",
                monitor.index, monitor.name
            ))
        })?;
        Ok(super::wlroots::to_rgba(
            &raw.pixels,
            raw.size,
            raw.stride,
            raw.bgr,
            false,
        ))
    }

    /// The pointer and keyboard of the same session.
    pub fn input(&self) -> PortalInput {
        PortalInput(self.clone())
    }
}

/// Creates the session, selects pointer, keyboard and every monitor, and starts it.
async fn start(
    token: Option<&str>,
) -> Result<(RemoteDesktop, Session<RemoteDesktop>, Vec<Stream>, OwnedFd), ashpd::Error> {
    let remote = RemoteDesktop::new().await?;
    let screencast = Screencast::new().await?;
    let session = remote
        .create_session(CreateSessionOptions::default())
        .await?;
    // RemoteDesktop version 1 (xdg-desktop-portal before 1.17) cannot keep a grant.
    let keeps = remote.version() >= 2;
    let mut devices =
        SelectDevicesOptions::default().set_devices(DeviceType::Keyboard | DeviceType::Pointer);
    if keeps {
        devices = devices
            .set_persist_mode(PersistMode::ExplicitlyRevoked)
            .set_restore_token(token);
    }
    remote.select_devices(&session, devices).await?.response()?;
    screencast
        .select_sources(
            &session,
            SelectSourcesOptions::default()
                .set_cursor_mode(CursorMode::Embedded)
                .set_sources(BitFlags::from_flag(SourceType::Monitor))
                .set_multiple(true),
        )
        .await?
        .response()?;
    let selected = remote
        .start(&session, None, StartOptions::default())
        .await?
        .response()?;
    if let Some(token) = selected.restore_token() {
        // Losing the token only means asking again next time.
        let path = token_path();
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = std::fs::write(&path, token);
    }
    let streams = streams_of(
        selected
            .streams()
            .iter()
            .map(|s| (s.pipe_wire_node_id(), s.position(), s.size())),
    );
    if streams.is_empty() {
        return Err(ashpd::Error::NoResponse);
    }
    let fd = screencast
        .open_pipe_wire_remote(&session, OpenPipeWireRemoteOptions::default())
        .await?;
    // mutter 43 drops the first key event of a session (seen in crates/cli/tests/suite/computer_portal.rs);
    // a Shift tap takes that place.
    for state in [KeyState::Pressed, KeyState::Released] {
        remote
            .notify_keyboard_keysym(
                &session,
                SHIFT_L as i32,
                state,
                NotifyKeyboardKeysymOptions::default(),
            )
            .await?;
    }
    Ok((remote, session, streams, fd))
}

/// The shared streams with a size; a stream without a position is placed at the origin.
fn streams_of(
    streams: impl Iterator<Item = (u32, Option<(i32, i32)>, Option<(i32, i32)>)>,
) -> Vec<Stream> {
    streams
        .filter_map(|(node, position, size)| {
            Some(Stream {
                node,
                position: position.unwrap_or_default(),
                size: size.filter(|(w, h)| *w > 0 && *h > 0)?,
            })
        })
        .collect()
}

/// The monitor for a stream: logical position and size for input, the frames' pixels.
fn monitor(index: usize, stream: &Stream, pixels: Option<Size>) -> Monitor {
    let input = Size::new(stream.size.0 as u32, stream.size.1 as u32);
    let pixels = pixels.unwrap_or(input);
    Monitor {
        index,
        id: stream.node,
        name: format!("portal stream {}", stream.node),
        primary: index == 0,
        scale_factor: pixels.width as f32 / input.width as f32,
        geometry: Geometry {
            x: stream.position.0,
            y: stream.position.1,
            input,
            pixels,
        },
    }
}

/// The stream a desktop point lies on, and the point in its logical coordinates.
fn locate(streams: &[Stream], x: i32, y: i32) -> Option<(u32, f64, f64)> {
    streams.iter().find_map(|s| {
        let (dx, dy) = (x - s.position.0, y - s.position.1);
        (dx >= 0 && dy >= 0 && dx < s.size.0 && dy < s.size.1)
            .then(|| (s.node, f64::from(dx), f64::from(dy)))
    })
}

fn fail(frames: &Shared, why: String) {
    let (lock, wake) = &**frames;
    let mut f = lock.lock().unwrap_or_else(|e| e.into_inner());
    f.failed.get_or_insert(why);
    wake.notify_all();
}

/// Waits until `ready` holds for the frames, PipeWire fails, or the deadline passes.
fn wait_for(
    frames: &Shared,
    ready: impl Fn(&Frames) -> bool,
) -> Result<MutexGuard<'_, Frames>, String> {
    let (lock, wake) = &**frames;
    let deadline = Instant::now() + ANSWER_WITHIN;
    let mut f = lock.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        if let Some(why) = &f.failed {
            return Err(why.clone());
        }
        if ready(&f) {
            return Ok(f);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "PipeWire delivered no frame within {} s",
                ANSWER_WITHIN.as_secs()
            ));
        }
        f = wake
            .wait_timeout(f, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
}

/// The format offer: 32-bit RGB layouts in memory (no DMA-BUF), any size and rate.
fn format_offer() -> Result<Vec<u8>, String> {
    let object = pod::object!(
        SpaTypes::ObjectParamFormat,
        ParamType::EnumFormat,
        pod::property!(FormatProperties::MediaType, Id, MediaType::Video),
        pod::property!(FormatProperties::MediaSubtype, Id, MediaSubtype::Raw),
        pod::property!(
            FormatProperties::VideoFormat,
            Choice,
            Enum,
            Id,
            VideoFormat::BGRx,
            VideoFormat::BGRx,
            VideoFormat::BGRA,
            VideoFormat::RGBx,
            VideoFormat::RGBA,
        ),
        pod::property!(
            FormatProperties::VideoSize,
            Choice,
            Range,
            Rectangle,
            Rectangle {
                width: 1920,
                height: 1080
            },
            Rectangle {
                width: 1,
                height: 1
            },
            Rectangle {
                width: 16384,
                height: 16384
            }
        ),
        pod::property!(
            FormatProperties::VideoFramerate,
            Choice,
            Range,
            Fraction,
            Fraction { num: 30, denom: 1 },
            Fraction { num: 0, denom: 1 },
            Fraction { num: 240, denom: 1 }
        ),
    );
    PodSerializer::serialize(Cursor::new(Vec::new()), &pod::Value::Object(object))
        .map(|(bytes, _)| bytes.into_inner())
        .map_err(|e| format!("{e:?}"))
}

/// The PipeWire thread: one stream per shared monitor, each keeping its latest frame, until
/// `stop` says so or the connection fails.
fn receive(
    fd: OwnedFd,
    nodes: &[u32],
    frames: &Shared,
    stop: pipewire::channel::Receiver<()>,
) -> Result<(), String> {
    pipewire::init();
    let main_loop = pipewire::main_loop::MainLoopRc::new(None).map_err(|e| e.to_string())?;
    let context = pipewire::context::ContextRc::new(&main_loop, None).map_err(|e| e.to_string())?;
    let core = context
        .connect_fd_rc(fd, None)
        .map_err(|e| format!("cannot connect to the portal's PipeWire remote: {e}"))?;
    let offer = format_offer()?;
    let mut kept = Vec::new();
    for &node in nodes {
        let stream = StreamRc::new(
            core.clone(),
            "deskhand",
            pipewire::properties::properties! {
                *pipewire::keys::MEDIA_TYPE => "Video",
                *pipewire::keys::MEDIA_CATEGORY => "Capture",
                *pipewire::keys::MEDIA_ROLE => "Screen",
            },
        )
        .map_err(|e| e.to_string())?;
        let on_state = frames.clone();
        let on_frame = frames.clone();
        let listener = stream
            .add_local_listener_with_user_data(VideoInfoRaw::default())
            // A stream that stopped streaming lost its compositor (or the desktop took the
            // monitor back): its last frame is stale from then on.
            .state_changed(move |_, _, old, new| match (old, new) {
                (_, StreamState::Error(e)) => fail(&on_state, format!("the stream failed: {e}")),
                (StreamState::Streaming, StreamState::Streaming) => {}
                (StreamState::Streaming, _) | (_, StreamState::Unconnected) => fail(
                    &on_state,
                    "the desktop stopped sharing the screen (the stream stopped)".into(),
                ),
                _ => {}
            })
            .param_changed(|_, format, id, param| {
                let Some(param) = param else {
                    return;
                };
                if id != ParamType::Format.as_raw() {
                    return;
                }
                if let Ok((MediaType::Video, MediaSubtype::Raw)) = format_utils::parse_format(param)
                {
                    let _ = format.parse(param);
                }
            })
            .process(move |stream, format| {
                let Some(mut buffer) = stream.dequeue_buffer() else {
                    return;
                };
                let Some(data) = buffer.datas_mut().first_mut() else {
                    return;
                };
                let (offset, stride) = (
                    data.chunk().offset() as usize,
                    data.chunk().stride().max(0) as usize,
                );
                let size = format.size();
                let bgr = match format.format() {
                    VideoFormat::BGRx | VideoFormat::BGRA => true,
                    VideoFormat::RGBx | VideoFormat::RGBA => false,
                    _ => return,
                };
                let Some(bytes) = data.data() else {
                    return;
                };
                let len = stride * size.height as usize;
                if stride < size.width as usize * 4 || bytes.len() < offset + len {
                    // An empty buffer: the content did not change (or only the cursor).
                    return;
                }
                let (lock, wake) = &*on_frame;
                let mut f = lock.lock().unwrap_or_else(|e| e.into_inner());
                let raw = f.latest.entry(node).or_insert_with(|| Raw {
                    size: Size::new(0, 0),
                    stride: 0,
                    bgr,
                    pixels: Vec::new(),
                });
                raw.size = Size::new(size.width, size.height);
                raw.stride = stride;
                raw.bgr = bgr;
                raw.pixels.clear();
                raw.pixels.extend_from_slice(&bytes[offset..offset + len]);
                wake.notify_all();
            })
            .register()
            .map_err(|e| e.to_string())?;
        let mut params = [Pod::from_bytes(&offer).ok_or("a bad format offer")?];
        stream
            .connect(
                PwDirection::Input,
                Some(node),
                StreamFlags::AUTOCONNECT | StreamFlags::MAP_BUFFERS,
                &mut params,
            )
            .map_err(|e| format!("cannot connect to stream {node}: {e}"))?;
        kept.push((stream, listener));
    }
    let quit = main_loop.clone();
    let _stop = stop.attach(main_loop.loop_(), move |()| quit.quit());
    let on_error = frames.clone();
    let _core_listener = core
        .add_listener_local()
        .error(move |_, _, _, message| {
            fail(
                &on_error,
                format!("the PipeWire connection failed: {message}"),
            );
        })
        .register();
    main_loop.run();
    Ok(())
}

/// The mouse and keyboard through the portal session.
pub struct PortalInput(Portal);

/// One `Notify*` call on the session, with a deadline.
fn sent(
    what: &str,
    call: impl std::future::Future<Output = Result<(), ashpd::Error>>,
) -> Result<(), InputError> {
    within(ANSWER_WITHIN, what, call).map_err(InputError)
}

impl PortalInput {
    fn keysym(&self, keysym: u32, pressed: bool) -> Result<(), InputError> {
        let state = if pressed {
            KeyState::Pressed
        } else {
            KeyState::Released
        };
        let inner = self.0.inner();
        sent(
            "a key through the desktop portal",
            inner.remote.notify_keyboard_keysym(
                &inner.session,
                keysym as i32,
                state,
                NotifyKeyboardKeysymOptions::default(),
            ),
        )
    }
}

/// A key's keysym value, from the name the key table gives it.
fn keysym_value(key: Key) -> Option<u32> {
    let name = keys::xkb_keysym(key)?;
    let value = xkbcommon::xkb::keysym_from_name(&name, xkbcommon::xkb::KEYSYM_NO_FLAGS).raw();
    (value != 0).then_some(value)
}

impl Input for PortalInput {
    fn move_to(&mut self, x: i32, y: i32) -> Result<(), InputError> {
        let streams = self.0.inner().streams.clone();
        let (node, sx, sy) = locate(&streams, x, y)
            .ok_or_else(|| InputError(format!("({x}, {y}) is on none of the shared monitors")))?;
        let mut inner = self.0.inner();
        sent(
            "a pointer move through the desktop portal",
            inner.remote.notify_pointer_motion_absolute(
                &inner.session,
                node,
                sx,
                sy,
                NotifyPointerMotionAbsoluteOptions::default(),
            ),
        )?;
        inner.pointer_at = Some((x, y));
        Ok(())
    }

    fn button(&mut self, button: Button, direction: Direction) -> Result<(), InputError> {
        let code = match linux_button(button) {
            LinuxButton::Wheel(axis, amount) => return self.scroll(amount, axis),
            LinuxButton::Code(code) => code,
        };
        let states: &[KeyState] = match direction {
            Direction::Press => &[KeyState::Pressed],
            Direction::Release => &[KeyState::Released],
            Direction::Click => &[KeyState::Pressed, KeyState::Released],
        };
        let inner = self.0.inner();
        for state in states {
            sent(
                "a button through the desktop portal",
                inner.remote.notify_pointer_button(
                    &inner.session,
                    code as i32,
                    *state,
                    NotifyPointerButtonOptions::default(),
                ),
            )?;
        }
        Ok(())
    }

    fn scroll(&mut self, amount: i32, axis: Axis) -> Result<(), InputError> {
        let axis = match axis {
            Axis::Vertical => PortalAxis::Vertical,
            Axis::Horizontal => PortalAxis::Horizontal,
        };
        let inner = self.0.inner();
        sent(
            "a scroll through the desktop portal",
            inner.remote.notify_pointer_axis_discrete(
                &inner.session,
                axis,
                amount,
                NotifyPointerAxisDiscreteOptions::default(),
            ),
        )
    }

    fn key(&mut self, key: Key, direction: Direction) -> Result<(), InputError> {
        let keysym = keysym_value(key)
            .ok_or_else(|| InputError(format!("no keysym for {key:?} on Wayland")))?;
        match direction {
            Direction::Press => self.keysym(keysym, true),
            Direction::Release => self.keysym(keysym, false),
            Direction::Click => {
                self.keysym(keysym, true)?;
                self.keysym(keysym, false)
            }
        }
    }

    fn text(&mut self, text: &str) -> Result<(), InputError> {
        for c in text.chars() {
            let key = match c {
                '\n' | '\r' => Key::Return,
                '\t' => Key::Tab,
                c => Key::Unicode(c),
            };
            self.key(key, Direction::Click)?;
        }
        Ok(())
    }

    /// Where Deskhand last put the pointer (the portal cannot ask), else the first monitor's
    /// centre, where it is moved before anything else happens.
    fn location(&self) -> Result<(i32, i32), InputError> {
        let (at, first) = {
            let inner = self.0.inner();
            (inner.pointer_at, inner.streams.first().cloned())
        };
        if let Some(at) = at {
            return Ok(at);
        }
        let first = first.ok_or_else(|| InputError("the portal shares no monitor".into()))?;
        let centre = (
            first.position.0 + first.size.0 / 2,
            first.position.1 + first.size.1 / 2,
        );
        PortalInput(self.0.clone()).move_to(centre.0, centre.1)?;
        Ok(centre)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_without_a_size_are_left_out_and_points_land_on_their_stream() {
        let streams = streams_of(
            [
                (40, Some((0, 0)), Some((1280, 800))),
                (41, Some((1280, 0)), Some((960, 540))),
                (42, Some((0, 800)), None),
            ]
            .into_iter(),
        );
        assert_eq!(streams.len(), 2);
        assert_eq!(locate(&streams, 0, 0), Some((40, 0.0, 0.0)));
        assert_eq!(locate(&streams, 1279, 799), Some((40, 1279.0, 799.0)));
        assert_eq!(locate(&streams, 1280, 10), Some((41, 0.0, 10.0)));
        assert_eq!(locate(&streams, 1280, 540), None, "below the second");
        assert_eq!(locate(&streams, -1, 0), None);
    }

    #[test]
    fn a_monitor_maps_logical_size_to_the_frames_pixels() {
        let stream = Stream {
            node: 7,
            position: (1280, 0),
            size: (1280, 720),
        };
        let m = monitor(1, &stream, Some(Size::new(1920, 1080)));
        assert_eq!(m.id, 7);
        assert_eq!(m.scale_factor, 1.5);
        assert_eq!(m.geometry.input, Size::new(1280, 720));
        assert_eq!(m.geometry.pixels, Size::new(1920, 1080));
        assert_eq!((m.geometry.x, m.geometry.y), (1280, 0));
    }

    #[test]
    fn keys_become_keysym_values() {
        assert_eq!(keysym_value(Key::Return), Some(0xff0d));
        assert_eq!(keysym_value(Key::Unicode('a')), Some(0x61));
        assert_eq!(keysym_value(Key::Unicode('é')), Some(0xe9));
        assert_eq!(keysym_value(Key::Unicode('✓')), Some(0x0100_2713));
        assert_eq!(keysym_value(Key::Control), Some(0xffe3));
    }

    #[test]
    fn a_portal_that_never_answers_is_an_error_at_the_deadline() {
        let started = Instant::now();
        let e = within(
            Duration::from_millis(100),
            "the desktop portal",
            futures_util::future::pending::<Result<(), ashpd::Error>>(),
        )
        .unwrap_err();
        assert!(e.contains("no answer within 0.1 s"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn a_refusal_names_the_person() {
        let e = portal_error(
            "the desktop portal",
            ashpd::Error::Response(ResponseError::Cancelled),
        );
        assert!(e.contains("refused"), "{e}");
    }
}
