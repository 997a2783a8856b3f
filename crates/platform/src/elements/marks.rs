//! Set-of-marks: small numbered boxes drawn on a screenshot over the interactive elements,
//! for models that ground poorly. Off by default (`ToolSettings::set_of_marks`); the model
//! gets the numbers' refs as text beside the image. Cost measured in `docs/benchmarks.md`.

use serde_json::Value;

use crate::computer::screen::Frame;

/// The stored setting (`deskhand settings set set-of-marks on`, the window's toggle) every
/// front end's runs read.
pub const SETTING: &str = "computer.set_of_marks";
/// Overrides the stored setting for one process: `1` on, `0` off.
pub const OVERRIDE_VARIABLE: &str = "DESKHAND_SET_OF_MARKS";

/// Whether a run's screenshots carry marks: the run's own choice (`ask --set-of-marks`),
/// else the override variable's value, else the stored setting, else off.
pub fn chosen(
    run: Option<bool>,
    variable: Option<&str>,
    stored: Option<&Value>,
) -> Result<bool, BadOverride> {
    if let Some(on) = run {
        return Ok(on);
    }
    match variable {
        Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(other) => Err(BadOverride(other.to_string())),
        None => Ok(stored.and_then(Value::as_bool).unwrap_or(false)),
    }
}

/// A value of [`OVERRIDE_VARIABLE`] that is neither on nor off.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{OVERRIDE_VARIABLE} is `1` (on) or `0` (off), not `{0}`")]
pub struct BadOverride(String);

/// Digits 0–9, 3x5 pixels each, one row per `u8` (bits 2..0 left to right).
const DIGITS: [[u8; 5]; 10] = [
    [7, 5, 5, 5, 7],
    [2, 6, 2, 2, 7],
    [7, 1, 7, 4, 7],
    [7, 1, 7, 1, 7],
    [5, 5, 7, 1, 1],
    [7, 4, 7, 1, 7],
    [7, 4, 7, 5, 7],
    [7, 1, 1, 1, 1],
    [7, 5, 7, 5, 7],
    [7, 5, 7, 1, 7],
];
/// Each font pixel is drawn this many pixels wide and high.
const SCALE: u32 = 2;
const MARK: [u8; 4] = [255, 0, 255, 255];
const LABEL_TEXT: [u8; 4] = [255, 255, 255, 255];

/// Draws mark `number` for each `[x, y, width, height]` (in `frame`'s pixels): the box's
/// outline and its number on a filled tag at the box's top-left corner.
pub fn draw(frame: &mut Frame, marks: &[(usize, [u32; 4])]) {
    for (number, [x, y, w, h]) in marks {
        let (x, y, w, h) = (*x, *y, (*w).max(1), (*h).max(1));
        for dx in 0..w {
            put(frame, x + dx, y, MARK);
            put(frame, x + dx, y + h - 1, MARK);
        }
        for dy in 0..h {
            put(frame, x, y + dy, MARK);
            put(frame, x + w - 1, y + dy, MARK);
        }
        let digits: Vec<usize> = number
            .to_string()
            .bytes()
            .map(|b| usize::from(b - b'0'))
            .collect();
        let tag_w = digits.len() as u32 * 4 * SCALE + SCALE;
        let tag_h = 7 * SCALE;
        for ty in 0..tag_h {
            for tx in 0..tag_w {
                put(frame, x + tx, y + ty, MARK);
            }
        }
        for (i, d) in digits.iter().enumerate() {
            for (row, bits) in DIGITS[*d].iter().enumerate() {
                for col in 0..3u32 {
                    if bits & (4 >> col) == 0 {
                        continue;
                    }
                    for sy in 0..SCALE {
                        for sx in 0..SCALE {
                            put(
                                frame,
                                x + SCALE + (i as u32 * 4 + col) * SCALE + sx,
                                y + SCALE + row as u32 * SCALE + sy,
                                LABEL_TEXT,
                            );
                        }
                    }
                }
            }
        }
    }
}

fn put(frame: &mut Frame, x: u32, y: u32, colour: [u8; 4]) {
    if x >= frame.size.width || y >= frame.size.height {
        return;
    }
    let at = ((y * frame.size.width + x) * 4) as usize;
    frame.rgba[at..at + 4].copy_from_slice(&colour);
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskhand_protocol::scaling::Size;

    #[test]
    fn the_run_choice_wins_then_the_variable_then_the_stored_setting_and_off_by_default() {
        let on = Value::Bool(true);
        assert_eq!(chosen(None, None, None), Ok(false));
        assert_eq!(chosen(None, None, Some(&Value::Null)), Ok(false));
        assert_eq!(chosen(None, None, Some(&on)), Ok(true));
        assert_eq!(chosen(None, Some("0"), Some(&on)), Ok(false));
        assert_eq!(chosen(None, Some("1"), None), Ok(true));
        assert_eq!(chosen(Some(true), Some("0"), None), Ok(true));
        assert_eq!(chosen(Some(false), None, Some(&on)), Ok(false));
        let bad = chosen(None, Some("yes"), Some(&on))
            .unwrap_err()
            .to_string();
        assert!(
            bad.contains(OVERRIDE_VARIABLE) && bad.contains("`yes`"),
            "{bad}"
        );
    }

    #[test]
    fn a_mark_outlines_its_box_and_stays_inside_the_frame() {
        let mut frame = Frame {
            size: Size::new(40, 30),
            rgba: vec![0; 40 * 30 * 4],
        };
        draw(&mut frame, &[(7, [5, 5, 20, 10]), (12, [35, 25, 20, 20])]);
        let at = |x: u32, y: u32| frame.rgba[((y * 40 + x) * 4) as usize..][..4].to_vec();
        assert_eq!(
            at(24, 14),
            MARK.to_vec(),
            "bottom-right corner of the first box"
        );
        assert_eq!(at(15, 10), vec![0; 4], "inside the box stays as it was");
        assert_eq!(at(0, 0), vec![0; 4]);
    }
}
