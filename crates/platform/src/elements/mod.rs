//! The element map: what UI elements are showing, with their role, name, text, states and
//! bounds, from the accessibility tree (AT-SPI, [`atspi_tree`]) and, where an app exposes no
//! tree or the wanted text is not in it, OCR words ([`ocr`]). The `ui` tool acts on it, and
//! the approval gate hit-tests it to name what a click will touch. See `docs/elements.md`.

#[cfg(target_os = "linux")]
pub mod atspi_tree;
#[cfg(target_os = "linux")]
pub mod bus;
pub mod marks;
#[cfg(target_os = "linux")]
pub mod ocr;
pub mod refs;
pub mod sensitive;

use serde::Serialize;
use serde_json::{Value, json};

pub use deskhand_protocol::action::Target;
use deskhand_protocol::scaling::Mapping;

/// How long the whole tree may take: an app that hangs on D-Bus is left out after this.
pub const TREE_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(500);
/// The most nodes read from one app; a tree of 100,000 nodes is cut here, with a note.
pub const MAX_NODES_PER_APP: usize = 5_000;
/// The most elements one `elements` answer lists; the rest are counted in a note.
pub const MAX_LISTED: usize = 150;

/// A rectangle on the desktop, in input units (what the pointer moves in).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Rect {
    pub x: i32,
    pub y: i32,
    pub width: i32,
    pub height: i32,
}

impl Rect {
    pub fn contains(&self, x: i32, y: i32) -> bool {
        x >= self.x && y >= self.y && x < self.x + self.width && y < self.y + self.height
    }

    pub fn centre(&self) -> (i32, i32) {
        (self.x + self.width / 2, self.y + self.height / 2)
    }

    fn area(&self) -> i64 {
        i64::from(self.width) * i64::from(self.height)
    }

    /// This rectangle in the model's coordinates `[x, y, width, height]`, or `None` when its
    /// centre is off the monitor the model sees.
    pub fn to_model(&self, mapping: &Mapping) -> Option<[u32; 4]> {
        let (cx, cy) = self.centre();
        mapping.to_model(cx, cy)?;
        let g = &mapping.geometry;
        let clamp = |x: i32, y: i32| {
            let x = x.clamp(g.x, g.x + g.input.width as i32 - 1);
            let y = y.clamp(g.y, g.y + g.input.height as i32 - 1);
            mapping.to_model(x, y).unwrap_or((0, 0))
        };
        let (l, t) = clamp(self.x, self.y);
        let (r, b) = clamp(self.x + self.width - 1, self.y + self.height - 1);
        Some([l, t, r - l + 1, b - t + 1])
    }
}

/// Where an element came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    Tree,
    Ocr,
}

/// What identifies an element while it exists: its AT-SPI object (bus name and path), or an
/// OCR word by its text and box.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ElementKey {
    Object { bus: String, path: String },
    Word { text: String, bounds: Rect },
}

/// One element showing on the screen.
#[derive(Clone, Debug, PartialEq)]
pub struct Element {
    pub key: ElementKey,
    /// AT-SPI's role name ("push button"), or "word" for OCR.
    pub role: String,
    pub name: String,
    /// An entry's or text view's content, a value's text; OCR words have none beyond `name`.
    pub text: Option<String>,
    pub states: Vec<String>,
    pub bounds: Rect,
    pub app: String,
    pub window: String,
    /// Whether its window is the active one.
    pub focused_window: bool,
    pub origin: Origin,
}

/// Roles a person clicks or types into; set-of-marks numbers these.
const INTERACTIVE_ROLES: &[&str] = &[
    "push button",
    "toggle button",
    "check box",
    "radio button",
    "menu item",
    "check menu item",
    "radio menu item",
    "menu",
    "combo box",
    "entry",
    "password text",
    "text",
    "spin button",
    "slider",
    "link",
    "page tab",
    "list item",
    "table cell",
    "tree item",
    "toggle",
    "button",
];

impl Element {
    /// This element as an approval names it.
    pub fn target(&self) -> Target {
        Target {
            known: true,
            name: self.name.clone(),
            role: self.role.clone(),
            app: self.app.clone(),
            sensitive: self.is_sensitive(),
            why: None,
        }
    }

    pub fn is_interactive(&self) -> bool {
        self.origin == Origin::Ocr || INTERACTIVE_ROLES.contains(&self.role.as_str())
    }

    /// Whether the name is on the sensitive list (Delete, Pay, Send, ...).
    pub fn is_sensitive(&self) -> bool {
        sensitive::is_sensitive(&self.name)
    }

    /// "**Delete** (push button) in Mousepad", as approvals say it.
    pub fn describe(&self) -> String {
        self.target().describe()
    }

    /// The element as the model and `--json` see it: bounds in model coordinates.
    pub fn to_json(&self, reference: &str, mapping: &Mapping) -> Value {
        let mut value = json!({
            "ref": reference,
            "role": self.role,
            "name": self.name,
            "bounds": self.bounds.to_model(mapping),
            "app": self.app,
            "window": self.window,
            "source": self.origin,
        });
        if let Some(text) = &self.text {
            value["text"] = json!(text);
        }
        if !self.states.is_empty() {
            value["states"] = json!(self.states);
        }
        if self.is_sensitive() {
            value["sensitive"] = json!(true);
        }
        value
    }
}

/// Everything showing, with notes on what was left out (an app that did not answer, a tree
/// cut at the cap).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub elements: Vec<Element>,
    pub notes: Vec<String>,
}

/// Roles that only hold others: a click on one is a click on nothing in particular.
pub fn is_container(role: &str) -> bool {
    matches!(role, "frame" | "window" | "filler" | "panel")
}

impl Snapshot {
    /// The smallest element whose bounds hold the desktop point: what a click there touches.
    pub fn at(&self, x: i32, y: i32) -> Option<&Element> {
        self.elements
            .iter()
            .filter(|e| e.origin == Origin::Tree && e.bounds.contains(x, y))
            .filter(|e| !is_container(&e.role))
            .min_by_key(|e| e.bounds.area())
    }

    /// Elements matching `text` (case-insensitive, in the name or text) and `role` (exactly).
    pub fn find(&self, text: Option<&str>, role: Option<&str>) -> Vec<&Element> {
        let needle = text.map(str::to_lowercase);
        self.elements
            .iter()
            .filter(|e| role.is_none_or(|r| e.role.eq_ignore_ascii_case(r)))
            .filter(|e| {
                needle.as_deref().is_none_or(|n| {
                    e.name.to_lowercase().contains(n)
                        || e.text
                            .as_deref()
                            .is_some_and(|t| t.to_lowercase().contains(n))
                })
            })
            .collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ElementError {
    #[error(
        "no accessibility bus: {0} (the computer tool still works on pixels; `find` can fall back to OCR)"
    )]
    NoBus(String),
    #[error("the accessibility tree did not answer within {} ms", TREE_TIMEOUT.as_millis())]
    Timeout,
    #[error("OCR is not available: {0}")]
    NoOcr(String),
    #[error("OCR failed: {0}")]
    Ocr(String),
}

impl ElementError {
    /// Nothing known at a point, because the tree could not be asked.
    pub fn target(&self) -> Target {
        Target {
            why: Some(self.brief()),
            ..Target::default()
        }
    }

    /// The reason alone, for an approval's target line.
    pub fn brief(&self) -> String {
        match self {
            Self::NoBus(_) => "no accessibility bus".into(),
            other => other.to_string(),
        }
    }
}

/// Where the element map comes from: the real AT-SPI tree, or a fake in unit tests.
pub trait Tree: Send + Sync {
    /// Every showing element of every app, with bounds on the desktop, within
    /// [`TREE_TIMEOUT`].
    fn snapshot(&self) -> Result<Snapshot, ElementError>;

    /// What a click at the desktop point touches, as [`Snapshot::at`] finds it. The approval
    /// waits on this, so a tree that can ask about one point does, rather than read everything.
    fn at(&self, x: i32, y: i32) -> Result<Option<Element>, ElementError> {
        Ok(self.snapshot()?.at(x, y).cloned())
    }
}

/// Whether an agent desktop's accessibility bus has its registry: [`atspi_tree::has_registry`].
#[cfg(target_os = "linux")]
pub use atspi_tree::has_registry;

/// The tree of the display a run acts on: on an agent desktop, the tree on its accessibility
/// bus `bus`, or none when it has no bus (at-spi2-core missing, or it did not start); else
/// the person's. The element map, the `ui` tool and the approvals' hit test of a run read
/// that display, and no other: never the person's tree for an agent desktop.
pub fn tree_of(on_agent_desktop: bool, bus: Option<&str>) -> std::sync::Arc<dyn Tree> {
    match (on_agent_desktop, bus) {
        #[cfg(target_os = "linux")]
        (true, Some(bus)) => std::sync::Arc::new(atspi_tree::AtspiTree::on_accessibility_bus(bus)),
        #[cfg(not(target_os = "linux"))]
        (true, Some(_)) => desktop_tree(),
        (true, None) => std::sync::Arc::new(NoTree(
            "this agent desktop's accessibility bus is not available (at-spi2-core is missing \
             or did not start), so it has no element map; the computer tool still works on \
             pixels"
                .into(),
        )),
        (false, _) => desktop_tree(),
    }
}

/// The tree of a desktop that has none: no elements, with a note saying why, and a hit test
/// that says it cannot tell what a click touches.
pub struct NoTree(pub String);

impl Tree for NoTree {
    fn snapshot(&self) -> Result<Snapshot, ElementError> {
        Ok(Snapshot {
            elements: Vec::new(),
            notes: vec![self.0.clone()],
        })
    }

    fn at(&self, _x: i32, _y: i32) -> Result<Option<Element>, ElementError> {
        Err(ElementError::NoBus(self.0.clone()))
    }
}

/// The tree of the person's desktop: AT-SPI on Linux, nothing elsewhere (yet).
pub fn desktop_tree() -> std::sync::Arc<dyn Tree> {
    #[cfg(target_os = "linux")]
    return std::sync::Arc::new(atspi_tree::AtspiTree::new());
    #[cfg(not(target_os = "linux"))]
    return std::sync::Arc::new(FakeTree(Snapshot {
        elements: Vec::new(),
        notes: vec!["no accessibility tree on this system yet".into()],
    }));
}

/// A tree that always gives the same elements, for unit tests.
pub struct FakeTree(pub Snapshot);

impl Tree for FakeTree {
    fn snapshot(&self) -> Result<Snapshot, ElementError> {
        Ok(self.0.clone())
    }
}

#[cfg(any(test, feature = "test-support"))]
pub mod fixtures;
#[cfg(test)]
mod tests;
