//! The `Input` seam: the mouse and keyboard. enigo in the app (on Linux its x11rb backend,
//! with no libxdo), a recorder in unit tests.

#[cfg(any(test, feature = "test-support"))]
use std::sync::{Arc, Mutex};

pub use enigo::{Axis, Button, Direction, Key};
use enigo::{Coordinate, Enigo, Keyboard, Mouse, Settings};

#[derive(Debug, thiserror::Error)]
#[error("input failed: {0}")]
pub struct InputError(pub String);

/// Positions are desktop coordinates in the input driver's units (see `scaling::Geometry`).
pub trait Input: Send {
    fn move_to(&mut self, x: i32, y: i32) -> Result<(), InputError>;
    fn button(&mut self, button: Button, direction: Direction) -> Result<(), InputError>;
    /// Scrolls `amount` wheel clicks; positive is down or right.
    fn scroll(&mut self, amount: i32, axis: Axis) -> Result<(), InputError>;
    fn key(&mut self, key: Key, direction: Direction) -> Result<(), InputError>;
    /// Types text as it is, whatever the keyboard layout.
    fn text(&mut self, text: &str) -> Result<(), InputError>;
    fn location(&self) -> Result<(i32, i32), InputError>;
}

/// A button as Linux's input layer names it, for the Wayland backends that speak in those.
pub enum LinuxButton {
    /// One wheel click: the axis, and -1 (up or left) or 1 (down or right).
    Wheel(Axis, i32),
    /// A button code (linux/input-event-codes.h).
    Code(u32),
}

pub fn linux_button(button: Button) -> LinuxButton {
    match button {
        Button::ScrollUp => LinuxButton::Wheel(Axis::Vertical, -1),
        Button::ScrollDown => LinuxButton::Wheel(Axis::Vertical, 1),
        Button::ScrollLeft => LinuxButton::Wheel(Axis::Horizontal, -1),
        Button::ScrollRight => LinuxButton::Wheel(Axis::Horizontal, 1),
        Button::Right => LinuxButton::Code(0x111),
        Button::Middle => LinuxButton::Code(0x112),
        Button::Forward => LinuxButton::Code(0x115),
        Button::Back => LinuxButton::Code(0x116),
        Button::Left => LinuxButton::Code(0x110),
    }
}

/// Real input through enigo.
pub struct EnigoInput(Enigo);

impl EnigoInput {
    /// On `x11_display` (`:N`), else the process's display.
    pub fn open(x11_display: Option<String>) -> Result<Self, InputError> {
        Enigo::new(&Settings {
            x11_display,
            ..Settings::default()
        })
        .map(Self)
        .map_err(|e| InputError(format!("cannot connect to the display for input: {e}")))
    }
}

fn failed(e: enigo::InputError) -> InputError {
    InputError(e.to_string())
}

impl Input for EnigoInput {
    fn move_to(&mut self, x: i32, y: i32) -> Result<(), InputError> {
        self.0.move_mouse(x, y, Coordinate::Abs).map_err(failed)
    }

    fn button(&mut self, button: Button, direction: Direction) -> Result<(), InputError> {
        self.0.button(button, direction).map_err(failed)
    }

    fn scroll(&mut self, amount: i32, axis: Axis) -> Result<(), InputError> {
        self.0.scroll(amount, axis).map_err(failed)
    }

    fn key(&mut self, key: Key, direction: Direction) -> Result<(), InputError> {
        self.0.key(key, direction).map_err(failed)
    }

    fn text(&mut self, text: &str) -> Result<(), InputError> {
        self.0.text(text).map_err(failed)
    }

    fn location(&self) -> Result<(i32, i32), InputError> {
        self.0.location().map_err(failed)
    }
}

/// What a `RecordingInput` was asked to do.
#[cfg(any(test, feature = "test-support"))]
#[derive(Clone, Debug, PartialEq)]
pub enum InputEvent {
    MoveTo(i32, i32),
    Button(Button, Direction),
    Scroll(i32, Axis),
    Key(Key, Direction),
    Text(String),
}

/// Records every call instead of acting, for unit tests. Clones share one record.
#[cfg(any(test, feature = "test-support"))]
#[derive(Clone, Default)]
pub struct RecordingInput {
    pub events: Arc<Mutex<Vec<InputEvent>>>,
    position: Arc<Mutex<(i32, i32)>>,
}

#[cfg(any(test, feature = "test-support"))]
impl RecordingInput {
    pub fn events(&self) -> Vec<InputEvent> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn push(&self, event: InputEvent) -> Result<(), InputError> {
        self.events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(event);
        Ok(())
    }
}

#[cfg(any(test, feature = "test-support"))]
impl Input for RecordingInput {
    fn move_to(&mut self, x: i32, y: i32) -> Result<(), InputError> {
        *self.position.lock().unwrap_or_else(|e| e.into_inner()) = (x, y);
        self.push(InputEvent::MoveTo(x, y))
    }

    fn button(&mut self, button: Button, direction: Direction) -> Result<(), InputError> {
        self.push(InputEvent::Button(button, direction))
    }

    fn scroll(&mut self, amount: i32, axis: Axis) -> Result<(), InputError> {
        self.push(InputEvent::Scroll(amount, axis))
    }

    fn key(&mut self, key: Key, direction: Direction) -> Result<(), InputError> {
        self.push(InputEvent::Key(key, direction))
    }

    fn text(&mut self, text: &str) -> Result<(), InputError> {
        self.push(InputEvent::Text(text.to_string()))
    }

    fn location(&self) -> Result<(i32, i32), InputError> {
        Ok(*self.position.lock().unwrap_or_else(|e| e.into_inner()))
    }
}
