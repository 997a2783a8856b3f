//! Names of targets a person would want to be asked about even in auto mode: a click on one
//! of them can lose data or money. The list is documented in `docs/elements.md`.

/// Matched as whole words, case-insensitively, against an element's name.
pub const SENSITIVE_WORDS: &[&str] = &[
    // English
    "delete",
    "remove",
    "pay",
    "buy",
    "send",
    "transfer",
    "submit",
    "format",
    "erase",
    "purchase",
    // German
    "löschen",
    "entfernen",
    "bezahlen",
    "kaufen",
    "senden",
    "überweisen",
    // French
    "supprimer",
    "payer",
    "acheter",
    "envoyer",
    "virement",
    // Spanish
    "eliminar",
    "borrar",
    "pagar",
    "comprar",
    "enviar",
    "transferir",
];

/// Whether `name` contains a word from [`SENSITIVE_WORDS`] ("Delete", "Delete file", "Send
/// now", but not "Undelete" or "Sender").
pub fn is_sensitive(name: &str) -> bool {
    name.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .any(|w| {
            let w = w.to_lowercase();
            SENSITIVE_WORDS.contains(&w.as_str())
        })
}
