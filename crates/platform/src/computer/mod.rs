//! The screen and the input devices: capture and input on X11, wlroots and the desktop
//! portals, each behind the `Screen` and `Input` seams, and the pipeline that turns a frame
//! into the screenshot the model sees.

pub mod capture;
pub mod fingerprint;
pub mod input;
pub mod keys;
pub mod pipeline;
#[cfg(target_os = "linux")]
pub mod portal;
pub mod screen;
pub mod settle;
#[cfg(target_os = "linux")]
pub mod wlroots;

use self::input::{Direction, Input, InputError, Key};

/// Presses `keys` in order, runs `body`, then releases them in reverse, also when `body`
/// fails, so no modifier is left stuck.
pub fn with_keys_held(
    input: &mut Box<dyn Input>,
    keys: &[Key],
    body: impl FnOnce(&mut Box<dyn Input>) -> Result<(), InputError>,
) -> Result<(), InputError> {
    let mut pressed = Vec::new();
    let mut result = Ok(());
    for key in keys {
        match input.key(*key, Direction::Press) {
            Ok(()) => pressed.push(*key),
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    if result.is_ok() {
        result = body(input);
    }
    for key in pressed.iter().rev() {
        let released = input.key(*key, Direction::Release);
        if result.is_ok() {
            result = released;
        }
    }
    result
}
