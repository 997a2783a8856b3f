//! Short refs ("e12" for a tree element, "w3" for an OCR word) that stay the same while the
//! element exists, so the model can name an element from an earlier answer. A ref whose
//! element is gone is an error naming that, never a click somewhere else.

use std::collections::HashMap;

use super::{Element, ElementKey, Origin, Snapshot};

#[derive(Default)]
pub struct RefBook {
    by_key: HashMap<ElementKey, String>,
    /// What each ref was when it was given, to say what is gone.
    given: HashMap<String, String>,
    next: usize,
}

impl RefBook {
    /// The ref of `element`, given now if it has none yet.
    pub fn reference(&mut self, element: &Element) -> String {
        if let Some(r) = self.by_key.get(&element.key) {
            return r.clone();
        }
        self.next += 1;
        let prefix = match element.origin {
            Origin::Tree => "e",
            Origin::Ocr => "w",
        };
        let r = format!("{prefix}{}", self.next);
        self.by_key.insert(element.key.clone(), r.clone());
        self.given.insert(r.clone(), element.describe());
        r
    }

    /// The element `reference` names in `snapshot`, or why there is none.
    pub fn resolve<'a>(
        &self,
        reference: &str,
        snapshot: &'a Snapshot,
    ) -> Result<&'a Element, RefError> {
        let Some(key) = self
            .by_key
            .iter()
            .find(|(_, r)| r.as_str() == reference)
            .map(|(k, _)| k)
        else {
            return Err(RefError::Unknown {
                reference: reference.to_string(),
            });
        };
        snapshot
            .elements
            .iter()
            .find(|e| &e.key == key)
            .ok_or_else(|| RefError::Gone {
                reference: reference.to_string(),
                was: self
                    .given
                    .get(reference)
                    .map_or("?", String::as_str)
                    .to_string(),
            })
    }
}

/// Why a ref names no element.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RefError {
    #[error("there is no element `{reference}`: refs come from `find` or `elements`")]
    Unknown { reference: String },
    /// `was` is what the element was when the ref was given.
    #[error(
        "element `{reference}` ({was}) no longer exists on the screen; nothing was done. Use \
         `find` or `elements` for the current refs"
    )]
    Gone { reference: String, was: String },
}
