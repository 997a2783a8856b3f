//! The environment of the programs Deskhand starts for the agent (the shell, plugin servers,
//! the proof-of-done check, the agent desktop's own programs): an allowlist, not the person's
//! whole environment. A program the agent runs gets `PATH`, `HOME`, the locale, the terminal,
//! the display and the `XDG_*` directories (not the runtime directory, where the local API's
//! socket is), and the names the person passes on in settings ([`PASS_SETTING`]); never a
//! variable that looks like a secret ([`is_secret`]), even when listed. The browser a link
//! opens in (the person's program) keeps the person's environment less the secrets.

use std::ffi::{OsStr, OsString};
use std::sync::{OnceLock, RwLock};

/// The stored setting: names of more variables the agent's programs get (a JSON array).
pub const PASS_SETTING: &str = "programs.pass_env";

/// Variables every program the agent runs gets, when Deskhand has them. `XAUTHORITY` names
/// the display's cookie file (which the agent's programs can read anyway): without it, no
/// program of theirs could open the person's display on most desktops.
const ALLOWED: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "TERM",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XAUTHORITY",
];

/// Words in a variable's name that mark it as a secret.
const SECRET_WORDS: &[&str] = &["TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "AUTH"];

/// Names with such a word that hold no secret: the display's cookie file, and which keyring
/// entry Deskhand uses.
const NOT_SECRETS: &[&str] = &["XAUTHORITY", "DESKHAND_KEYRING_SERVICE"];

/// Whether a variable's name marks it as a secret (`DESKHAND_API_TOKEN`, `GITHUB_TOKEN`,
/// `AWS_SECRET_ACCESS_KEY`, a provider's `*_API_KEY`, …).
pub fn is_secret_name(name: &OsStr) -> bool {
    let upper = name.to_string_lossy().to_ascii_uppercase();
    !NOT_SECRETS.contains(&upper.as_str()) && SECRET_WORDS.iter().any(|word| upper.contains(word))
}

/// Whether a variable looks like a secret: by its name ([`is_secret_name`]), or because its
/// value is a URL with credentials (`scheme://user:password@host`).
pub fn is_secret(name: &OsStr, value: &OsStr) -> bool {
    is_secret_name(name) || has_credentials(value)
}

/// Whether a secret variable's value is itself a secret to hide: not when it is an absolute
/// path (`SSH_AUTH_SOCK=/run/user/1000/keyring/ssh`, `ICEAUTHORITY`, `GNOME_KEYRING_CONTROL`).
/// Such a variable is still withheld from the agent's programs (the ssh agent's socket is a
/// real power), but its value is no secret to blank, redact or look for in notes: any path
/// under the same folder would read as a piece of it.
pub fn is_secret_value(value: &str) -> bool {
    !value.starts_with('/') || value.contains("://")
}

/// `scheme://user:password@…`: a URL that carries a password before its host.
fn has_credentials(value: &OsStr) -> bool {
    let Some(value) = value.to_str() else {
        return false;
    };
    let Some((scheme, rest)) = value.split_once("://") else {
        return false;
    };
    let valid_scheme = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    valid_scheme
        && authority
            .rsplit_once('@')
            .is_some_and(|(user, _)| user.contains(':'))
}

/// Whether the agent's programs may get `name` (before the secret check), given the names
/// the person passes on.
fn is_allowed(name: &OsStr, passed: &[String]) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    ALLOWED.contains(&name)
        || name.starts_with("LC_")
        || (name.starts_with("XDG_") && name != "XDG_RUNTIME_DIR")
        || passed.iter().any(|passed| passed == name)
}

/// The environment of a program the agent runs: the allowed variables of this process's
/// environment, none of them a secret or one this process set for itself alone. Callers
/// clear the command's environment first ([`apply`]).
pub fn for_programs() -> Vec<(OsString, OsString)> {
    let passed = PASSED.read().unwrap_or_else(|e| e.into_inner());
    std::env::vars_os()
        .filter(|(name, value)| {
            is_allowed(name, &passed) && !is_secret(name, value) && !is_own(name.as_os_str())
        })
        .collect()
}

/// Gives `command` the environment of [`for_programs`] and nothing else.
pub fn apply(command: &mut tokio::process::Command) {
    command.env_clear().envs(for_programs());
}

/// The variables of this process's environment that a program the person opens (the
/// browser) must not get: the secrets, and what this process set for itself alone.
pub fn withheld() -> impl Iterator<Item = OsString> {
    std::env::vars_os()
        .filter(|(name, value)| is_secret(name, value) || is_own(name))
        .map(|(name, _)| name)
}

static PASSED: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Sets the names the person passes on to the agent's programs ([`PASS_SETTING`]): each run
/// reads the setting as it starts.
pub fn pass_on(names: Vec<String>) {
    *PASSED.write().unwrap_or_else(|e| e.into_inner()) = names;
}

static OWN_VARIABLES: OnceLock<Vec<OsString>> = OnceLock::new();

fn is_own(name: &OsStr) -> bool {
    OWN_VARIABLES
        .get()
        .is_some_and(|own| own.iter().any(|n| n == name))
}

/// Names variables this process set for its own use (the desktop app's WebKit settings, say),
/// so that the programs it starts see the environment the person started Deskhand with.
/// Called once, at start; later calls change nothing.
pub fn withhold_from_programs(names: Vec<OsString>) {
    let _ = OWN_VARIABLES.set(names);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_secret_is_known_by_its_name_or_by_credentials_in_its_url() {
        let secret = |name: &str, value: &str| is_secret(OsStr::new(name), OsStr::new(value));
        for name in [
            "GITHUB_TOKEN",
            "AWS_SECRET_ACCESS_KEY",
            "ANTHROPIC_AUTH_TOKEN",
            "DESKHAND_API_TOKEN",
            "DESKHAND_DELEGATE_TOKEN_FAR",
            "db_password",
            "MY_PASSWD",
            "OPENAI_API_KEY",
            "SSH_AUTH_SOCK",
        ] {
            assert!(secret(name, "x"), "{name}");
        }
        assert!(secret("DATABASE_URL", "postgres://app:hunter2@db:5432/app"));
        assert!(secret("HTTPS_PROXY", "http://me:pw@proxy:3128"));
        for (name, value) in [
            ("DATABASE_URL", "postgres://db:5432/app"),
            ("HOMEPAGE", "https://example.com/a:b@c"),
            ("XAUTHORITY", "/run/user/1000/gdm/Xauthority"),
            ("DESKHAND_KEYRING_SERVICE", "deskhand"),
            ("PATH", "/usr/bin"),
        ] {
            assert!(!secret(name, value), "{name}={value}");
        }
    }

    /// A secret variable whose value is a path is still withheld, but the path is no secret
    /// value to blank, redact or look for in notes.
    #[test]
    fn a_path_is_no_secret_value_though_its_variable_is_withheld() {
        for (name, value) in [
            ("SSH_AUTH_SOCK", "/run/user/1000/keyring/ssh"),
            ("ICEAUTHORITY", "/run/user/1000/ICEauthority"),
            ("GNOME_KEYRING_CONTROL", "/run/user/1000/keyring"),
        ] {
            assert!(is_secret(OsStr::new(name), OsStr::new(value)), "{name}");
            assert!(!is_secret_value(value), "{value}");
        }
        for value in [
            "hunter2",
            "sk-ant-abc",
            "file:///etc/x",
            "/x://y",
            "relative/path",
        ] {
            assert!(is_secret_value(value), "{value}");
        }
    }

    #[test]
    fn the_agents_programs_get_the_allowlist_and_no_runtime_directory() {
        let passed = ["MY_TOOL_HOME".to_string()];
        let allowed = |name: &str| is_allowed(OsStr::new(name), &passed);
        for name in [
            "PATH",
            "HOME",
            "LANG",
            "LC_ALL",
            "TERM",
            "DISPLAY",
            "WAYLAND_DISPLAY",
            "XDG_CONFIG_HOME",
            "MY_TOOL_HOME",
        ] {
            assert!(allowed(name), "{name}");
        }
        for name in [
            "XDG_RUNTIME_DIR",
            "DBUS_SESSION_BUS_ADDRESS",
            "DESKHAND_DATA_DIR",
            "EDITOR",
        ] {
            assert!(!allowed(name), "{name}");
        }
    }
}
