//! Recognises secrets in text meant for a note. A note is sent to the model in every later
//! run, so a secret written into one would leak for good. Two kinds are looked for:
//! - the keys this process knows (the run's provider key, the values of the secret variables
//!   it started with, `key_guard`): as they are, spaced or punctuated, split in pieces, and inside base64, hex or
//!   percent-encoded runs of the note, which are decoded and looked at again;
//! - secrets by their form: provider, GitHub, GitLab, Slack and AWS keys, JWTs, long
//!   hexadecimal and base64 strings, `…API_KEY=value` assignments, and passwords, tokens and
//!   secrets stated as such.

/// What a key is replaced with, wherever it is redacted.
pub const REDACTED: &str = "[redacted API key]";

use base64::Engine as _;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// Keys shorter than this are not looked for: no service issues keys that short, and a
/// short one would match ordinary text.
const MIN_KEY_LENGTH: usize = 8;

/// The longest pieces of a key that are looked for on their own: a key split in two still
/// has whole pieces this long in the note (half the key, for a key shorter than twice this).
const KEY_PIECE: usize = 12;

/// Words that spell out a character of a key: separators, said as words, stand for nothing
/// (the squashed reading drops separators anyway), and digits stand for themselves.
const SPELLED: &[(&str, &str)] = &[
    ("dash", ""),
    ("hyphen", ""),
    ("minus", ""),
    ("underscore", ""),
    ("dot", ""),
    ("period", ""),
    ("slash", ""),
    ("plus", ""),
    ("equals", ""),
    ("capital", ""),
    ("uppercase", ""),
    ("lowercase", ""),
    ("zero", "0"),
    ("one", "1"),
    ("two", "2"),
    ("three", "3"),
    ("four", "4"),
    ("five", "5"),
    ("six", "6"),
    ("seven", "7"),
    ("eight", "8"),
    ("nine", "9"),
];

/// Encoded runs shorter than this are not decoded: they cannot hold a key piece.
const MIN_ENCODED_RUN: usize = 16;

/// Long hexadecimal or base64 strings from this length on are taken for keys or tokens.
const LONG_STRING: usize = 32;

/// What secret `text` seems to contain (worded for a refusal, never quoting it), if any.
/// `run_keys` are the run's provider keys; the key variables this process started with are
/// always looked for.
pub fn looks_like_secret(text: &str, run_keys: &[String]) -> Option<&'static str> {
    // The loop has already replaced the run's own key (from the keyring or the environment)
    // in what the model sent: the note would have held it.
    if text.contains(REDACTED) {
        return Some("this run's API key (shown to you as \"[redacted API key]\")");
    }
    let environment = machine_secrets(crate::key_guard::environment_secrets(), std::env::vars_os());
    if holds_key(text, run_keys) {
        return Some("this run's API key, or a piece or an encoding of it");
    }
    if holds_key(text, &environment) {
        return Some(
            "the value of a secret variable of this machine, or a piece or an encoding of it",
        );
    }
    if let Some(format) = tokens(text).find_map(key_format) {
        return Some(format);
    }
    if let Some(format) = encoded_runs(text).find_map(long_string) {
        return Some(format);
    }
    if assigns_api_key(text) {
        return Some("an API_KEY setting with its value");
    }
    if states_a_secret(text) {
        return Some("a password, token or secret stated with its value");
    }
    None
}

/// The secret values of this machine's variables a note may not hold: those `key_guard`
/// guards, and the values of `vars` named `…API_KEY`; a path is none
/// (`program_env::is_secret_value`).
fn machine_secrets<'a>(
    guarded: impl Iterator<Item = &'a str>,
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
) -> Vec<String> {
    guarded
        .map(str::to_string)
        .chain(vars.filter_map(|(name, value)| {
            let name = name.to_str()?.to_ascii_uppercase();
            name.ends_with("API_KEY")
                .then(|| value.to_str().map(|v| v.trim().to_string()))
                .flatten()
        }))
        .filter(|value| crate::program_env::is_secret_value(value))
        .collect()
}

/// Whether `text` holds one of `keys`: as it is, with separators between its characters,
/// split in pieces, or encoded in base64, hex or percent-encoding.
fn holds_key(text: &str, keys: &[String]) -> bool {
    let keys: Vec<String> = keys
        .iter()
        .filter(|key| key.trim().len() >= MIN_KEY_LENGTH)
        .map(|key| squashed(key))
        .filter(|key| key.len() >= MIN_KEY_LENGTH)
        .collect();
    if keys.is_empty() {
        return false;
    }
    let mut readings = vec![text.to_string(), spelled_out(text)];
    readings.extend(decodings(text));
    readings.iter().any(|reading| {
        let reading = squashed(reading);
        keys.iter().any(|key| has_piece_of(&reading, key))
    })
}

/// `text` with everything but letters and digits taken out, lower-cased: a key spelled out
/// with spaces, dashes or commas between its characters reads as the key.
fn squashed(text: &str) -> String {
    text.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// `text` with the words that spell out a key's characters ("dash", "zero") read as them.
fn spelled_out(text: &str) -> String {
    text.split(|c: char| !c.is_alphanumeric())
        .map(|word| {
            let lower = word.to_lowercase();
            SPELLED
                .iter()
                .find(|(spelled, _)| *spelled == lower)
                .map_or(word, |(_, stands_for)| stands_for)
        })
        .collect()
}

/// Whether `text` contains `key` or a piece of it: a key split in two leaves whole pieces of
/// [`KEY_PIECE`] characters (or half the key, if shorter) in each half.
fn has_piece_of(text: &str, key: &str) -> bool {
    let piece = (key.len() / 2).clamp(MIN_KEY_LENGTH, KEY_PIECE);
    if key.len() <= piece {
        return text.contains(key);
    }
    (0..=key.len() - piece).any(|at| text.contains(&key[at..at + piece]))
}

/// What the note's encoded runs decode to: base64 (standard and URL-safe, with or without
/// padding), hexadecimal, and the whole note percent-decoded.
fn decodings(text: &str) -> Vec<String> {
    let lenient = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    let engines = [
        GeneralPurpose::new(&base64::alphabet::STANDARD, lenient),
        GeneralPurpose::new(&base64::alphabet::URL_SAFE, lenient),
    ];
    let mut out = Vec::new();
    for run in encoded_runs(text) {
        // A run cut at a character that is not whole base64 still decodes without its tail.
        for end in [run.len(), run.len() - run.len() % 4] {
            for engine in &engines {
                if let Ok(bytes) = engine.decode(&run[..end]) {
                    out.push(String::from_utf8_lossy(&bytes).into_owned());
                }
            }
        }
        if run.len() % 2 == 0
            && let Ok(bytes) = hex::decode(run)
        {
            out.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    if text.contains('%') {
        out.push(
            percent_encoding::percent_decode_str(text)
                .decode_utf8_lossy()
                .into_owned(),
        );
    }
    out
}

/// Runs of base64 (either alphabet, padding left off) and hexadecimal characters.
fn encoded_runs(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '-' | '_')))
        .filter(|run| run.len() >= MIN_ENCODED_RUN)
}

/// Runs of the characters keys are made of.
fn tokens(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .map(|t| t.trim_matches('.'))
        .filter(|t| t.len() >= 16)
}

/// The key format `token` has: a provider's (Anthropic `sk-ant-`, OpenRouter `sk-or-`,
/// OpenAI `sk-`, Azure OpenAI's 32 hexadecimal digits), GitHub's, GitLab's, Slack's, an AWS
/// access key id, or a JWT.
fn key_format(token: &str) -> Option<&'static str> {
    let body_after = |prefix: &str, length: usize| {
        token
            .strip_prefix(prefix)
            .filter(|rest| rest.len() >= length && rest.chars().any(|c| c.is_ascii_digit()))
    };
    let all = |text: &str, allowed: fn(char) -> bool| text.chars().all(allowed);
    if body_after("sk-ant-", 16).is_some() {
        Some("what looks like an Anthropic API key")
    } else if body_after("sk-or-", 16).is_some() {
        Some("what looks like an OpenRouter API key")
    } else if body_after("sk-", 16).is_some() {
        Some("what looks like an OpenAI API key")
    } else if ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"]
        .iter()
        .any(|prefix| body_after(prefix, 30).is_some())
        || body_after("github_pat_", 22).is_some()
    {
        Some("what looks like a GitHub token")
    } else if body_after("glpat-", 20).is_some() {
        Some("what looks like a GitLab token")
    } else if ["xoxa-", "xoxb-", "xoxp-", "xoxr-", "xoxs-"]
        .iter()
        .any(|prefix| body_after(prefix, 10).is_some())
    {
        Some("what looks like a Slack token")
    } else if token.len() == 20
        && (token.starts_with("AKIA") || token.starts_with("ASIA"))
        && all(token, |c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        Some("what looks like an AWS access key id")
    } else if is_jwt(token) {
        Some("what looks like a JSON Web Token")
    } else if token.len() == 32
        && all(token, |c| c.is_ascii_hexdigit())
        && token.chars().any(|c| c.is_ascii_digit())
        && token.chars().any(|c| c.is_ascii_alphabetic())
    {
        Some("what looks like an Azure OpenAI API key")
    } else {
        None
    }
}

/// `header.payload.signature`, each base64url, the first two JSON objects (`eyJ`).
fn is_jwt(token: &str) -> bool {
    let parts: Vec<&str> = token.split('.').collect();
    parts.len() == 3
        && parts[0].starts_with("eyJ")
        && parts[1].starts_with("eyJ")
        && parts[..2].iter().all(|p| p.len() >= 10)
}

/// A long hexadecimal string (a token, a key, a full hash: a note keeps a short commit id),
/// or a long base64 string that reads as random rather than as words.
fn long_string(run: &str) -> Option<&'static str> {
    if run.len() < LONG_STRING {
        return None;
    }
    let hex = run.chars().all(|c| c.is_ascii_hexdigit());
    if hex
        && run.chars().any(|c| c.is_ascii_digit())
        && run.chars().any(|c| c.is_ascii_alphabetic())
    {
        return Some(
            "a long hexadecimal string, which may be a key or a token (a note keeps a \
             commit or a checksum by its first 12 characters)",
        );
    }
    looks_random(run).then_some("a long random-looking string, which may be a key or a token")
}

/// Whether a run of base64 characters reads as random: upper case, lower case and digits
/// mixed, the kind changing often between neighbours, and capitals not starting words (as in
/// `CamelCaseNames`).
fn looks_random(run: &str) -> bool {
    #[derive(PartialEq, Clone, Copy)]
    enum Kind {
        Upper,
        Lower,
        Digit,
        Other,
    }
    let kind = |c: char| match c {
        'A'..='Z' => Kind::Upper,
        'a'..='z' => Kind::Lower,
        '0'..='9' => Kind::Digit,
        _ => Kind::Other,
    };
    let kinds: Vec<Kind> = run.chars().map(kind).collect();
    let count = |k: Kind| kinds.iter().filter(|&&x| x == k).count();
    if count(Kind::Upper) < 2 || count(Kind::Lower) < 2 || count(Kind::Digit) < 2 {
        return false;
    }
    // Changes between letters and digits only: a path's slashes and dashes are no sign.
    let changes = kinds
        .windows(2)
        .filter(|w| w[0] != w[1] && !w.contains(&Kind::Other))
        .count();
    let capitals_starting_words = kinds
        .windows(2)
        .filter(|w| w[0] == Kind::Upper && w[1] == Kind::Lower)
        .count();
    changes * 3 >= kinds.len() && capitals_starting_words * 10 < count(Kind::Upper) * 7
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
        first_word(value).chars().count() >= 8
    })
}

/// Words that name a secret when a value follows them. Not `pwd` (the working directory far
/// more often than a password) nor `pin` (a pinned version as often as a PIN: a PIN is only
/// taken for one when its value is digits, [`states_a_secret`]).
const SECRET_WORDS: &[&str] = &["password", "passwd", "passphrase", "token", "secret"];

/// "password: hunter2", "the wifi password is Tr0ub4dor&3", "secret_access_key = …", "bank
/// PIN is 4921": a secret word, then `:`, `=`, "is" or "was", and a value that is not a
/// plain word (digits or symbols in it), so "the password is in the keyring" and "the sudo
/// password: required" pass. A plain word is taken for a value after a label that starts a
/// line ("Password: correcthorse"). A PIN's value is four digits or more, nothing else.
fn states_a_secret(text: &str) -> bool {
    let lower = text.to_lowercase();
    let stated = |word: &str, is_value: &dyn Fn(&str, bool) -> bool| {
        lower.match_indices(word).any(|(at, _)| {
            let before = lower[..at].chars().next_back();
            let after = lower[at + word.len()..].chars().next();
            // A word of its own, or the start of a name (`secret_access_key`, `password2`),
            // not of a longer word (`tokens`, `pinned`).
            if before.is_some_and(char::is_alphanumeric) || after.is_some_and(char::is_alphabetic) {
                return false;
            }
            let starts_line = lower[..at].trim_end_matches([' ', '\t']).ends_with('\n')
                || lower[..at].trim().is_empty();
            let rest = lower[at..]
                .trim_start_matches(|c: char| c.is_alphanumeric() || c == '_' || c == '-')
                .trim_start_matches([' ', '"', '\'']);
            if let Some(value) = rest.strip_prefix([':', '=']) {
                return is_value(first_word(value), starts_line);
            }
            ["is ", "was "]
                .iter()
                .find_map(|verb| rest.strip_prefix(verb))
                .is_some_and(|value| is_value(first_word(value), false))
        })
    };
    let secret_value = |value: &str, after_label: bool| {
        value.chars().count() >= 4 && (after_label || value.chars().any(|c| !c.is_alphabetic()))
    };
    let pin_value =
        |value: &str, _: bool| value.len() >= 4 && value.chars().all(|c| c.is_ascii_digit());
    SECRET_WORDS.iter().any(|word| stated(word, &secret_value)) || stated("pin", &pin_value)
}

/// The first word of `text`, after spaces and quotes, up to a space or quote.
fn first_word(text: &str) -> &str {
    let text = text.trim_start_matches([' ', '"', '\'', '`']);
    let end = text
        .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '`'))
        .unwrap_or(text.len());
    text[..end].trim_end_matches(['.', ',', ';', ')'])
}

#[cfg(test)]
mod tests {
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};

    use super::*;

    const RUN_KEY: &str = "sk-ant-api03-Qm7vX2pL9sKd4TnB8wZc1RfY6hJa0UeG";

    fn secret(text: &str) -> Option<&'static str> {
        looks_like_secret(text, &[RUN_KEY.to_string()])
    }

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
            assert!(secret(&note).is_some(), "{key}");
        }
    }

    #[test]
    fn service_tokens_jwts_and_long_random_strings_are_recognised() {
        for (note, what) in [
            (
                "gh token ghp_R8dK2mQx7LpV4nTz9WcY1bHs6JfA3uEo5GiN",
                "GitHub",
            ),
            ("gho_R8dK2mQx7LpV4nTz9WcY1bHs6JfA3uEo5GiN", "GitHub"),
            (
                "github_pat_11ABCDEFG0aBcDeFgHiJkL_mNoPqRsTuVwXyZ0123456789abcdefghijKLMNOPQRSTUV",
                "GitHub",
            ),
            ("gitlab: glpat-x7Rk2PqLm9VnT4wZc1Yd", "GitLab"),
            (
                "bot xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx",
                "Slack",
            ),
            ("xoxp-2468013579-AbCdEf", "Slack"),
            ("AWS id AKIAIOSFODNN7EXAMPLE", "AWS"),
            ("ASIAQ3EGUZW4XKXHRTYB is the session key id", "AWS"),
            (
                "token eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
                "JSON Web Token",
            ),
            (
                "aws pair: AzMKgFqQzwM2JioxHuXGkP73z2iTnM3BXTfWgjOI",
                "random-looking",
            ),
            (
                "deploy hook 5f2b9c1e8a7d4036b1e9f8c2a4d7e0b3c6a9f1e2",
                "hexadecimal",
            ),
        ] {
            let found = secret(note).unwrap_or_else(|| panic!("not found in {note:?}"));
            assert!(found.contains(what), "{note:?}: {found}");
        }
    }

    #[test]
    fn passwords_and_secrets_stated_as_such_are_recognised() {
        for note in [
            "my password is hunter2",
            "Password: correcthorse",
            "the wifi passphrase is Tr0ub4dor&3",
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "the API token: abcd1234efgh",
            "bank PIN is 4921",
            "pin: 482913",
            "the db password: s3cret!x",
            "token=abc123def",
            "notes\nPassword: correcthorse",
        ] {
            assert!(secret(note).is_some(), "{note}");
        }
    }

    #[test]
    fn the_run_key_in_any_encoding_spaced_or_split_is_recognised() {
        let spaced: String = RUN_KEY.chars().flat_map(|c| [c, ' ']).collect();
        let dashed: String = RUN_KEY
            .chars()
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let (first, second) = RUN_KEY.split_at(RUN_KEY.len() / 2);
        let percent: String = RUN_KEY.bytes().map(|b| format!("%{b:02X}")).collect();
        let words = "s k dash a n t dash a p i zero three dash Q m seven v X two p L nine s K d \
                     four T n B eight w Z c one";
        for note in [
            format!("the key, base64: {}", STANDARD.encode(RUN_KEY)),
            format!("k={}", URL_SAFE_NO_PAD.encode(format!("key {RUN_KEY} end"))),
            format!("hex {}", hex::encode(RUN_KEY)),
            format!("url {percent}"),
            format!("spelled out: {spaced}"),
            format!("letters: {dashed}"),
            format!("first half {first}; the rest is in the next note"),
            format!("second half of the key: {second}"),
            format!(
                "halves {} and {}",
                STANDARD.encode(first),
                hex::encode(second)
            ),
            format!("spelled out: {words}"),
        ] {
            assert!(secret(&note).is_some(), "{note}");
        }
        assert_eq!(looks_like_secret("spelled: s k - a n t", &[]), None);
    }

    #[test]
    fn assignments_of_api_key_variables_are_recognised() {
        assert!(secret("export OPENAI_API_KEY=hunter2hunter2").is_some());
        assert!(secret("MY_SERVICE_API_KEY: \"abcd1234efgh\"").is_some());
        assert!(secret("the OPENAI_API_KEY variable is set in ~/.profile").is_none());
    }

    /// A secret variable whose value is a path (`SSH_AUTH_SOCK`) is no secret value: a
    /// note naming a path beside it passes, and a real value is still looked for.
    #[test]
    fn paths_in_secret_variables_are_not_looked_for() {
        let vars = [
            ("SOME_API_KEY", "/run/user/1000/keyring/api"),
            ("OTHER_API_KEY", "Qm7vX2pL9sKd4TnB8wZc"),
            ("PATH", "/usr/bin"),
        ]
        .map(|(name, value)| (name.into(), value.into()));
        let guarded = ["/run/user/1000/keyring/ssh", "hunter2hunter2"];
        let secrets = machine_secrets(guarded.into_iter(), vars.into_iter());
        assert_eq!(secrets, ["hunter2hunter2", "Qm7vX2pL9sKd4TnB8wZc"]);
        assert!(!holds_key("logs are in /run/user/1000/app", &secrets));
        assert!(holds_key("it is Qm7vX2pL9sKd4TnB8wZc", &secrets));
        // What the old list held would have refused the note.
        let unfiltered = ["/run/user/1000/keyring/ssh".to_string()];
        assert!(holds_key("logs are in /run/user/1000/app", &unfiltered));
    }

    #[test]
    fn the_run_key_as_redacted_is_recognised() {
        let note = format!("my key is {}", REDACTED);
        assert!(secret(&note).is_some());
    }

    #[test]
    fn ordinary_notes_pass() {
        for note in [
            "use Firefox, not Chromium",
            "the invoices are in ~/Documents/Acme/2026-invoices-and-receipts",
            "the sk-8 printer is on the second floor",
            "commit 0123456789ab fixed the report script",
            "task-list-for-the-quarterly-report-export",
            "the password is in the keyring, never ask for it",
            "the password manager is KeePassXC",
            "tokens are refreshed every hour by the sync job",
            "the project uses ThisIsMyVeryLongIdentifierName2026 as its entry point",
            "notes live in /home/ann/Documents/Notes2026/Meetings/Q3-planning",
            "the build id format is 2026-11-28T00:17:05Z",
            "the PIN pad is by the door",
            "On this box the sudo password: required",
            "the password: see the team vault",
            "tests run where pwd is /srv/app",
            "pin: python3.11",
            "dependencies: pin = numpy1.26",
            "https://example.com/reports/2026/summary?page=2 has the summary",
        ] {
            assert_eq!(secret(note), None, "{note}");
        }
    }
}
