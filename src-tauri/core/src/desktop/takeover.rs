//! Take-over: the person's clicks and keys, from the live view, sent to the agent desktop's
//! display only (its own X connection, by name), never to the person's screen.

use serde::Deserialize;

use crate::tools::computer::input::{Axis, Button, Direction, EnigoInput, Input, InputError};
use crate::tools::computer::keys;
use crate::tools::computer::with_keys_held;

/// One input of the person, in the desktop's pixels (the live view maps its scaled
/// coordinates back before sending).
#[derive(Clone, Debug, Deserialize, PartialEq, ts_rs::TS)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum TakeOverInput {
    /// Presses and releases `button` at (x, y).
    Click {
        x: i32,
        y: i32,
        #[serde(default)]
        button: PointerButton,
    },
    /// Wheel clicks at (x, y): positive is down.
    Scroll { x: i32, y: i32, amount: i32 },
    /// Keys in xdotool syntax (`Return`, `ctrl+a`).
    Key { keys: String },
    /// Text typed as it is.
    Text { text: String },
}

#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq, ts_rs::TS)]
#[serde(rename_all = "snake_case")]
pub enum PointerButton {
    #[default]
    Left,
    Middle,
    Right,
}

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
                let combos = keys::parse(text).map_err(InputError)?;
                for combo in combos {
                    with_keys_held(input, &combo, |_| Ok(()))?;
                }
                Ok(())
            }
            TakeOverInput::Text { text } => input.text(text),
        }
    }
}
