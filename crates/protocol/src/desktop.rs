//! Where a session's runs work, and the person's input to an agent desktop's live view.

use serde::Deserialize;

/// Where a session's runs work, as saved with the session (by the window's side panel, or by
/// a task that chose it, from any front end): the person's screen, or an agent desktop
/// (sandboxed unless turned off, and kept between runs if asked).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, ts_rs::TS)]
#[serde(deny_unknown_fields)]
pub struct DesktopChoice {
    pub agent: bool,
    #[serde(default = "DesktopChoice::sandbox_by_default")]
    pub sandbox: bool,
    #[serde(default)]
    pub keep: bool,
}

impl DesktopChoice {
    fn sandbox_by_default() -> bool {
        true
    }
}

impl Default for DesktopChoice {
    fn default() -> Self {
        Self {
            agent: false,
            sandbox: Self::sandbox_by_default(),
            keep: false,
        }
    }
}

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
