//! Elements made up for tests, here and in the crates above.

use super::{Element, ElementKey, Origin, Rect};

/// An element of Mousepad's focused window at `bounds` (x, y, width, height).
pub fn element(path: &str, role: &str, name: &str, bounds: (i32, i32, i32, i32)) -> Element {
    Element {
        key: ElementKey::Object {
            bus: ":1.5".into(),
            path: path.into(),
        },
        role: role.into(),
        name: name.into(),
        text: None,
        states: Vec::new(),
        bounds: Rect {
            x: bounds.0,
            y: bounds.1,
            width: bounds.2,
            height: bounds.3,
        },
        app: "Mousepad".into(),
        window: "notes.txt".into(),
        focused_window: true,
        origin: Origin::Tree,
    }
}
