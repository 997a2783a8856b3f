//! Names of targets a person would want to be asked about even in auto mode: a click on one
//! of them can lose data or money. The list is documented in `docs/elements.md`.

use std::collections::HashSet;
use std::sync::OnceLock;

use unicode_normalization::UnicodeNormalization;
use unicode_security::confusable_detection;

use crate::visible;

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
/// now", but not "Undelete" or "Sender"), compared as a person reads it: see [`read_as`].
pub fn is_sensitive(name: &str) -> bool {
    let sensitive = sensitive_forms();
    let name: String = name.nfkc().filter(|&c| !visible::is_hidden(c)).collect();
    name.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .any(|word| read_as(word).iter().any(|form| sensitive.contains(form)))
}

/// How a word reads: its Unicode TR39 confusable skeleton, case left aside, both from the
/// word lower-cased and as written (a capital I reads as an l, which its lower case does
/// not). A Cyrillic "Dеlеtе" or a fullwidth "Ｄｅｌｅｔｅ" reads as "delete". The caller has
/// already normalized the name (NFKC) and taken out what shows nothing (zero-width and bidi
/// characters), which would otherwise split a word in two.
fn read_as(word: &str) -> [String; 2] {
    let skeleton = |text: &str| -> String { confusable_detection::skeleton(text).collect() };
    [
        skeleton(&word.to_lowercase()),
        skeleton(&skeleton(word).to_lowercase()),
    ]
}

/// The sensitive words as they read.
fn sensitive_forms() -> &'static HashSet<String> {
    static FORMS: OnceLock<HashSet<String>> = OnceLock::new();
    FORMS.get_or_init(|| SENSITIVE_WORDS.iter().flat_map(|w| read_as(w)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alikes_and_hidden_characters_do_not_get_a_name_past() {
        for name in [
            "D\u{435}l\u{435}t\u{435}",                         // Cyrillic е
            "\u{422}ransfer",                                   // Cyrillic Т
            "P\u{430}y",                                        // Cyrillic а
            "\u{405}end",                                       // Cyrillic Ѕ
            "Del\u{200b}ete",                                   // zero-width space
            "Tr\u{200d}ansfer now",                             // zero-width joiner
            "\u{202e}Delete",                                   // bidi override
            "Sub\u{ad}mit",                                     // soft hyphen
            "\u{ff24}\u{ff45}\u{ff4c}\u{ff45}\u{ff54}\u{ff45}", // fullwidth
            "DELETE",
            "DEIETE", // a capital I for the L
            "\u{1d41d}\u{1d41e}\u{1d425}\u{1d41e}\u{1d42d}\u{1d41e}", // mathematical bold
            "Rem\u{43e}ve", // Cyrillic о
        ] {
            assert!(is_sensitive(name), "{name:?}");
        }
        for name in ["Undel\u{200b}ete", "Senders", "Оpen"] {
            assert!(!is_sensitive(name), "{name:?}");
        }
    }
}
