//! Recognises secrets in text meant for a note: the run's key as the loop redacted it, the
//! values of the secret variables this process started with (`key_guard`), the values of
//! the `*API_KEY` variables it has, the provider key formats,
//! and `NAME_API_KEY=value` assignments. A note is sent to
//! the model in every later run, so a key written into one would leak for good.

/// What secret `text` seems to contain (worded for a refusal, never quoting it), if any.
pub fn looks_like_secret(text: &str) -> Option<&'static str> {
    // The loop has already replaced the run's own key (from the keyring or the environment)
    // in what the model sent: the note would have held it.
    if text.contains(crate::agent::REDACTED) {
        return Some("this run's API key (shown to you as \"[redacted API key]\")");
    }
    if crate::key_guard::environment_secrets().any(|key| key.len() >= 8 && text.contains(key)) {
        return Some("the value of a secret variable of this machine");
    }
    let in_environment = std::env::vars_os().any(|(name, value)| {
        let is_key = name
            .to_str()
            .is_some_and(|n| n.to_ascii_uppercase().ends_with("API_KEY"));
        is_key
            && value
                .to_str()
                .is_some_and(|v| v.trim().len() >= 8 && text.contains(v.trim()))
    });
    if in_environment {
        return Some("the value of an API key variable of this machine");
    }
    if let Some(format) = tokens(text).find_map(key_format) {
        return Some(format);
    }
    if assigns_api_key(text) {
        return Some("an API_KEY setting with its value");
    }
    None
}

/// Runs of the characters keys are made of.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .filter(|t| t.len() >= 20)
}

/// The provider key format `token` has: Anthropic (`sk-ant-`), OpenRouter (`sk-or-`),
/// OpenAI (`sk-`, `sk-proj-`), Azure OpenAI (32 hexadecimal digits).
fn key_format(token: &str) -> Option<&'static str> {
    let body_after = |prefix: &str| {
        token
            .strip_prefix(prefix)
            .filter(|rest| rest.len() >= 16 && rest.chars().any(|c| c.is_ascii_digit()))
    };
    if body_after("sk-ant-").is_some() {
        Some("what looks like an Anthropic API key")
    } else if body_after("sk-or-").is_some() {
        Some("what looks like an OpenRouter API key")
    } else if body_after("sk-").is_some() {
        Some("what looks like an OpenAI API key")
    } else if token.len() == 32
        && token.chars().all(|c| c.is_ascii_hexdigit())
        && token.chars().any(|c| c.is_ascii_digit())
        && token.chars().any(|c| c.is_ascii_alphabetic())
    {
        Some("what looks like an Azure OpenAI API key")
    } else {
        None
    }
}

/// `SOMETHING_API_KEY=value` or `SOMETHING_API_KEY: value`, with a value.
fn assigns_api_key(text: &str) -> bool {
    let upper = text.to_ascii_uppercase();
    upper.match_indices("API_KEY").any(|(at, name)| {
        let rest = text[at + name.len()..]
            .trim_start_matches(|c: char| c.is_ascii_alphanumeric() || c == '_');
        let rest = rest.trim_start_matches([' ', '"', '\'']);
        let Some(value) = rest.strip_prefix(['=', ':']) else {
            return false;
        };
        value
            .trim_start_matches([' ', '"', '\''])
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '\'')
            .count()
            >= 8
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_key_formats_are_recognised() {
        for key in [
            "sk-ant-api03-Zx9_abcdefghijklmnopQRSTUVWXYZ-0123456789",
            "sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef",
            "sk-proj-AbCdEf0123456789GhIjKl0123456789",
            "sk-AbCdEf0123456789GhIjKl0123456789",
            "0123456789abcdef0123456789ABCDEF",
        ] {
            let note = format!("the key for work is {key}, use it");
            assert!(looks_like_secret(&note).is_some(), "{key}");
        }
    }

    #[test]
    fn assignments_of_api_key_variables_are_recognised() {
        assert!(looks_like_secret("export OPENAI_API_KEY=hunter2hunter2").is_some());
        assert!(looks_like_secret("MY_SERVICE_API_KEY: \"abcd1234efgh\"").is_some());
        assert!(looks_like_secret("the OPENAI_API_KEY variable is set in ~/.profile").is_none());
    }

    #[test]
    fn the_run_key_as_redacted_is_recognised() {
        let note = format!("my key is {}", crate::agent::REDACTED);
        assert!(looks_like_secret(&note).is_some());
    }

    #[test]
    fn ordinary_notes_pass() {
        for note in [
            "use Firefox, not Chromium",
            "the invoices are in ~/Documents/Acme/2026-invoices-and-receipts",
            "the sk-8 printer is on the second floor",
            "commit 0123456789abcdef0123456789abcdef01234567 fixed the report script",
            "task-list-for-the-quarterly-report-export",
        ] {
            assert_eq!(looks_like_secret(note), None, "{note}");
        }
    }
}
