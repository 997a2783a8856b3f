//! Names of targets a person would want to be asked about even in auto mode: a click on one
//! of them can lose data or money. The list is documented in `docs/elements.md`.

use std::collections::HashSet;
use std::sync::OnceLock;

use unicode_normalization::UnicodeNormalization;
use unicode_normalization::char::is_combining_mark;
use unicode_security::confusable_detection;

use deskhand_protocol::visible;

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
    read_as(&shown(name))
        .iter()
        .any(|reading| words(reading).any(|word| sensitive.contains(word)))
}

/// `name` as it shows: normalized (NFKC), a line break, tab or other control character read
/// as the space it shows as ("Transfer⏎money" is two words), and what shows nothing
/// (zero-width and bidi characters, which would otherwise split a word in two) left out.
fn shown(name: &str) -> String {
    name.nfkc()
        .filter_map(|c| {
            if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
                Some(' ')
            } else {
                (!visible::is_hidden(c)).then_some(c)
            }
        })
        .collect()
}

/// The words of a reading: runs of letters, digits and the marks a skeleton decomposes
/// accented letters into.
fn words(reading: &str) -> impl Iterator<Item = &str> {
    reading
        .split(|c: char| !(c.is_alphanumeric() || is_combining_mark(c)))
        .filter(|w| !w.is_empty())
}

/// How a text reads: its Unicode TR39 confusable skeleton, case left aside, both from the
/// text lower-cased and as written (a capital I reads as an l, which its lower case does
/// not). A Cyrillic "Dеlеtе" or a fullwidth "Ｄｅｌｅｔｅ" reads as "delete". A whole name's
/// skeleton is taken before it is split into words, so punctuation that reads as a letter
/// ("De|ete") does not split one.
fn read_as(text: &str) -> [String; 2] {
    let skeleton = |text: &str| -> String { confusable_detection::skeleton(text).collect() };
    [
        skeleton(&text.to_lowercase()),
        skeleton(&skeleton(text).to_lowercase()),
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

    /// A line break, tab or line separator shows as a space: the words on either side stay
    /// two words, not one ("transfermoney").
    #[test]
    fn line_breaks_and_tabs_separate_words() {
        for name in [
            "Transfer\nmoney",
            "Transfer\tmoney",
            "Transfer\u{2028}money",
            "Transfer\u{2029}money",
            "Transfer\r\nmoney",
            "Send\u{85}now",
        ] {
            assert!(is_sensitive(name), "{name:?}");
        }
    }

    /// Punctuation that reads as a letter is read as that letter, not as a word break.
    #[test]
    fn punctuation_that_reads_as_a_letter_does_not_split_a_word() {
        for name in ["De|ete", "De|ete file", "Ov\u{435}rwrite or De|ete"] {
            assert!(is_sensitive(name), "{name:?}");
        }
        assert!(!is_sensitive("Open | Save"));
    }
}
