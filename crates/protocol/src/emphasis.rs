//! The one markup of action summaries: `**strong**` around a name that came from the screen
//! ("Click **7** (toggle button) in galculator"), with a backslash before a `*` or `\` that is
//! part of the text. Producers write it with [`escape`]; every surface that shows a summary
//! (the terminal, desktop notifications; the window has the same parser in
//! `ui/src/lib/emphasis.ts`) draws it with [`render`], so the syntax is never shown and the
//! text never becomes markup of the surface.

/// A piece of a summary: text, shown strong or not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Span {
    pub text: String,
    pub strong: bool,
}

/// `text` with `\` and `*` escaped, so that a name (or app) from the screen cannot open or
/// close emphasis in a summary.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '*') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The spans of a summary, in order. A `**` without a closing one is text; a backslash before
/// ASCII punctuation keeps that character as text.
pub fn spans(text: &str) -> Vec<Span> {
    let chars: Vec<char> = text.chars().collect();
    let mut spans: Vec<Span> = Vec::new();
    let mut current = String::new();
    let mut strong = false;
    let mut i = 0;
    let push = |spans: &mut Vec<Span>, text: &mut String, strong: bool| {
        if !text.is_empty() {
            spans.push(Span {
                text: std::mem::take(text),
                strong,
            });
        }
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '\\' && chars.get(i + 1).is_some_and(|n| n.is_ascii_punctuation()) {
            current.push(chars[i + 1]);
            i += 2;
        } else if c == '*' && chars.get(i + 1) == Some(&'*') {
            if strong || closes(&chars, i + 2) {
                push(&mut spans, &mut current, strong);
                strong = !strong;
            } else {
                current.push_str("**");
            }
            i += 2;
        } else {
            current.push(c);
            i += 1;
        }
    }
    push(&mut spans, &mut current, strong);
    spans
}

/// Whether an unescaped `**` follows `from`.
fn closes(chars: &[char], from: usize) -> bool {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\\' if chars.get(i + 1).is_some_and(|n| n.is_ascii_punctuation()) => i += 2,
            '*' if chars.get(i + 1) == Some(&'*') => return true,
            _ => i += 1,
        }
    }
    false
}

/// A summary drawn for one surface: each span's text through `text` (the surface's escaping),
/// strong ones then through `strong` (its styling).
pub fn render(
    summary: &str,
    text: impl Fn(&str) -> String,
    strong: impl Fn(&str) -> String,
) -> String {
    spans(summary)
        .iter()
        .map(|span| {
            let shown = text(&span.text);
            if span.strong { strong(&shown) } else { shown }
        })
        .collect()
}

/// A summary as plain text, without its markup.
pub fn plain(summary: &str) -> String {
    render(summary, str::to_string, str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(summary: &str) -> String {
        render(summary, str::to_string, |t| format!("[{t}]"))
    }

    #[test]
    fn strong_names_are_styled_and_their_markup_is_gone() {
        assert_eq!(
            shown("Click **7** (toggle button) in galculator"),
            "Click [7] (toggle button) in galculator"
        );
        assert_eq!(plain("**a** and **b**"), "a and b");
    }

    #[test]
    fn an_escaped_name_with_stars_and_backslashes_comes_back_as_it_was() {
        for name in [
            "a**b",
            "**",
            "C:\\Users\\",
            "*x*",
            "\\**",
            "<img src=x onerror=alert(1)>",
        ] {
            let summary = format!("Click **{}** in {}", escape(name), escape(name));
            assert_eq!(
                shown(&summary),
                format!("Click [{name}] in {name}"),
                "{name}"
            );
        }
    }

    #[test]
    fn an_unclosed_marker_is_text() {
        assert_eq!(shown("2 ** 3"), "2 ** 3");
        assert_eq!(shown("**a** 2 ** 3"), "[a] 2 ** 3");
        assert_eq!(shown("a\\b"), "a\\b");
    }
}
