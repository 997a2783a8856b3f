//! Making text from outside (the model, a tool, a plugin, a file name, an import) safe to show
//! on a terminal: every control, bidi or invisible character becomes a visible escape, so no
//! such text can move the cursor, erase a line, draw a fake prompt, write the clipboard
//! (OSC 52) or look different from what it is. The window mirrors the same list in
//! TypeScript; `docs/security.md` holds it for both.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Whether `c` must not reach a terminal raw: C0 and C1 controls and DEL, bidi controls, and
/// characters that show nothing (zero-width, joiners, word joiner and invisible operators,
/// the byte-order mark, fillers, tags).
pub fn is_hidden(c: char) -> bool {
    matches!(c,
        '\u{0}'..='\u{1f}'
        | '\u{7f}'..='\u{9f}'
        | '\u{ad}'
        | '\u{34f}'
        | '\u{61c}'
        | '\u{115f}' | '\u{1160}'
        | '\u{17b4}' | '\u{17b5}'
        | '\u{180b}'..='\u{180f}'
        | '\u{200b}'..='\u{200f}'
        | '\u{2028}'..='\u{202e}'
        | '\u{2060}'..='\u{206f}'
        | '\u{3164}'
        | '\u{feff}'
        | '\u{ffa0}'
        | '\u{fff0}'..='\u{fffb}'
        | '\u{1d173}'..='\u{1d17a}'
        | '\u{e0000}'..='\u{e007f}'
    )
}

/// How many characters [`text`] escapes (line breaks and tabs are not counted), for the
/// warning on an approval prompt.
pub fn hidden_count(text: &str) -> usize {
    text.chars()
        .filter(|&c| is_hidden(c) && !kept_in_text(c))
        .count()
}

fn kept_in_text(c: char) -> bool {
    c == '\n' || c == '\t'
}

/// `text` with line breaks and tabs kept and every other hidden character escaped: for
/// multi-line text such as a diff or the model's reply.
pub fn text(text: &str) -> Cow<'_, str> {
    escape(text, kept_in_text)
}

/// `text` on one line: line breaks and tabs are escaped too. For a command on an approval
/// prompt, a title in a list, a one-line summary.
pub fn line(text: &str) -> Cow<'_, str> {
    escape(text, |_| false)
}

/// JSON text as serde_json writes it, with every hidden character as a `\u` escape: the same
/// value, safe on a terminal. serde_json escapes the C0 controls itself but writes DEL, the
/// C1 controls (U+009B is a CSI on some terminals), bidi and invisible characters as they
/// are; outside strings it writes only ASCII, and line breaks only between values.
pub fn json(json: &str) -> Cow<'_, str> {
    if !json.chars().any(|c| is_hidden(c) && c != '\n') {
        return Cow::Borrowed(json);
    }
    let mut shown = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if is_hidden(c) && c != '\n' {
            for unit in c.encode_utf16(&mut [0; 2]) {
                let _ = write!(shown, "\\u{unit:04x}");
            }
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// The most characters of a typed text an approval line shows before it shortens it.
pub const TYPED_CHARS: usize = 60;

/// The most characters of an element's name an approval line shows before it shortens it.
pub const NAME_CHARS: usize = 80;

/// `text` cut to its first `max` characters for a one-line display, and what goes after it:
/// nothing when it is whole, else an ellipsis and the full length ("… (1,234 characters)"),
/// so that a shortened value never passes for the whole one.
pub fn shortened(text: &str, max: usize) -> (&str, String) {
    match text.char_indices().nth(max) {
        None => (text, String::new()),
        Some((end, _)) => (
            &text[..end],
            format!("… ({} characters)", grouped(text.chars().count())),
        ),
    }
}

/// `n` with its thousands grouped by commas: 1,234,567.
fn grouped(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (at, digit) in digits.chars().enumerate() {
        if at > 0 && (digits.len() - at).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

fn escape(text: &str, keep: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(|c| is_hidden(c) && !keep(c)) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match c {
            c if !is_hidden(c) || keep(c) => shown.push(c),
            '\u{1b}' => shown.push_str("\\e"),
            '\r' => shown.push_str("\\r"),
            '\n' => shown.push_str("\\n"),
            '\t' => shown.push_str("\\t"),
            c => {
                let _ = write!(shown, "\\u{{{:x}}}", u32::from(c));
            }
        }
    }
    Cow::Owned(shown)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shortened_text_says_it_was_cut_and_how_long_it_is() {
        assert_eq!(shortened("short", 10), ("short", String::new()));
        assert_eq!(shortened("exactly10!", 10), ("exactly10!", String::new()));
        let long = "é".repeat(1234);
        let (start, rest) = shortened(&long, 3);
        assert_eq!(start, "ééé");
        assert_eq!(rest, "… (1,234 characters)");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(1234567), "1,234,567");
    }

    #[test]
    fn escapes_terminal_sequences_bidi_and_invisible_characters() {
        let fake = "rm -f victim.txt\r\u{1b}[2K\u{1b}[1AAllow bash: ls -la?";
        assert_eq!(
            line(fake),
            "rm -f victim.txt\\r\\e[2K\\e[1AAllow bash: ls -la?"
        );
        assert_eq!(
            text("osc\u{1b}]52;c;ZXZpbA==\u{7}\nnext\tline"),
            "osc\\e]52;c;ZXZpbA==\\u{7}\nnext\tline"
        );
        assert_eq!(line("a\nb\tc"), "a\\nb\\tc");
        assert_eq!(
            line("ls \u{202e}txt.exe\u{202c} \u{200b}\u{feff}\u{2066}\u{9b}"),
            "ls \\u{202e}txt.exe\\u{202c} \\u{200b}\\u{feff}\\u{2066}\\u{9b}"
        );
        assert_eq!(hidden_count("a\u{1b}b\u{202e}c\n\t"), 2);
    }

    #[test]
    fn json_keeps_its_value_and_loses_its_hidden_characters() {
        let value = serde_json::json!({"t": "a\u{1b}[2J\u{9b}2J\u{7f}\u{202e}\u{e0041}\nz"});
        for text in [
            serde_json::to_string(&value).unwrap(),
            serde_json::to_string_pretty(&value).unwrap(),
        ] {
            let shown = json(&text);
            assert!(
                shown.contains(r"\u001b[2J\u009b2J\u007f\u202e\udb40\udc41\nz"),
                "{shown}"
            );
            assert!(!shown.chars().any(|c| is_hidden(c) && c != '\n'), "{shown}");
            let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
            assert_eq!(back, value);
        }
        assert!(matches!(json("{\n  \"a\": \"é\"\n}"), Cow::Borrowed(_)));
    }

    #[test]
    fn ordinary_text_is_left_as_it_is() {
        let plain = "grep -r 'a\\.b' ~/src | héllo wörld 日本 🙂 \\e";
        assert!(matches!(line(plain), Cow::Borrowed(_)));
        assert!(matches!(text("two\nlines\n"), Cow::Borrowed(_)));
        assert_eq!(hidden_count(plain), 0);
    }
}
