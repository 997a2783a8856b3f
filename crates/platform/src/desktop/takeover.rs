//! Take-over: the person's clicks and keys, from the live view, sent to the agent desktop's
//! display only (its own X connection, by name), never to the person's screen.

use crate::computer::input::{Axis, Button, Direction, EnigoInput, Input, InputError};
use crate::computer::keys;
use crate::computer::with_keys_held;
pub use deskhand_protocol::desktop::{PointerButton, TakeOverInput};

/// The input side of one agent desktop's display.
pub struct TakeOver {
    display: String,
    input: Box<dyn Input>,
}

impl TakeOver {
    /// Connects to `display` (`:N`).
    pub fn open(display: &str) -> Result<Self, InputError> {
        Ok(Self {
            display: display.to_string(),
            input: Box::new(EnigoInput::open(Some(display.to_string()))?),
        })
    }

    pub fn display(&self) -> &str {
        &self.display
    }

    /// Sends one input. Keys that are not known are refused before anything is pressed.
    pub fn send(&mut self, what: &TakeOverInput) -> Result<(), InputError> {
        let input = &mut self.input;
        match what {
            TakeOverInput::Click { x, y, button } => {
                let button = match button {
                    PointerButton::Left => Button::Left,
                    PointerButton::Middle => Button::Middle,
                    PointerButton::Right => Button::Right,
                };
                input.move_to(*x, *y)?;
                input.button(button, Direction::Press)?;
                input.button(button, Direction::Release)
            }
            TakeOverInput::Scroll { x, y, amount } => {
                input.move_to(*x, *y)?;
                input.scroll(*amount, Axis::Vertical)
            }
            TakeOverInput::Key { keys: text } => {
                let combos = keys::parse(text).map_err(|e| InputError(e.to_string()))?;
                for combo in combos {
                    with_keys_held(input, &combo, |_| Ok(()))?;
                }
                Ok(())
            }
            TakeOverInput::Text { text } => input.text(text),
        }
    }
}
