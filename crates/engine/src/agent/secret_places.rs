//! Places whose reading is never silent: keys, keyrings, credentials, browser profiles, `.env`
//! and shell rc files, other users' homes, `/proc`, `/etc/shadow`, and Deskhand's own
//! directories. An editor command on such a place (whose result can carry the file) and a
//! plugin call whose arguments name one ask in the ask and auto modes and are refused in
//! read-only mode, so a prompt-injected model cannot read `~/.ssh/id_ed25519` or an `export
//! …API_KEY=` line without the person seeing it. The person extends the list with
//! `deskhand settings set secret-paths`.

use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use crate::store::{Store, StoreError};

/// Directories under the home directory.
const IN_HOME: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".local/share/keyrings",
    ".password-store",
    ".mozilla",
    ".config/google-chrome",
    ".config/chromium",
    ".config/BraveSoftware",
    ".config/microsoft-edge",
    ".config/vivaldi",
    ".config/opera",
    "snap/firefox",
    "snap/chromium",
    ".aws",
    ".kube",
    ".docker",
    ".config/gcloud",
    ".config/gh",
    ".cargo/credentials",
    ".cargo/credentials.toml",
];

/// Directories that are secret wherever they are (another user's home, a backup).
const DIRECTORY_NAMES: &[&str] = &[".ssh", ".gnupg", ".password-store"];

/// Files that are secret wherever they are: credentials and shell start-up files, which often
/// hold `export …_API_KEY=`. `.env` also covers `.env.local`, `.env.production`, ….
const FILE_NAMES: &[&str] = &[
    ".env",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".bash_history",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zsh_history",
    ".kshrc",
    ".cshrc",
    ".tcshrc",
    ".netrc",
    ".git-credentials",
    ".pgpass",
    ".npmrc",
    ".pypirc",
];

/// Absolute places: every process's memory map, environment and command line; the password
/// and group password hashes and their backups.
const ABSOLUTE: &[&str] = &[
    "/proc",
    "/etc/shadow",
    "/etc/shadow-",
    "/etc/gshadow",
    "/etc/gshadow-",
];

/// Where other users' homes are: the directories in `/home`, and root's home; a home the
/// person has or owns is not another's.
const HOMES: &str = "/home";
const ROOT_HOME: &str = "/root";

/// The most strings of a plugin call's arguments that are looked at; a call with more is
/// taken to name a secret place, so that no secret path hides behind a wall of others.
const MAX_ARGUMENT_STRINGS: usize = 4096;

/// The secret places of one person, with the directories as given and as resolved.
#[derive(Clone, Debug)]
pub struct SecretPlaces {
    places: Vec<Place>,
    /// The person's home, lexically and resolved: the homes beside it are other users'.
    home: Vec<PathBuf>,
    /// The user Deskhand runs as: a home directory this user owns is not another's.
    uid: u32,
}

#[derive(Clone, Debug)]
struct Place {
    /// As the person knows it (`~/.ssh`).
    shown: String,
    path: PathBuf,
    /// `path` with symlinks resolved, when it exists.
    resolved: Option<PathBuf>,
}

impl Default for SecretPlaces {
    /// This user's: the home directory from `$HOME`, Deskhand's data and config directories.
    fn default() -> Self {
        Self::new(
            dirs::home_dir().as_deref(),
            &[crate::paths::data_dir(), crate::paths::config_dir()],
            &[],
        )
    }
}

impl SecretPlaces {
    /// The stored setting that adds places: a JSON array of paths (`~/` is the home
    /// directory).
    pub const SETTING: &'static str = "approval.secret_paths";

    /// The built-in places for `home`, Deskhand's own directories, and `extra` (`~/`
    /// expanded).
    pub fn new(home: Option<&Path>, own_dirs: &[PathBuf], extra: &[String]) -> Self {
        let mut places = Vec::new();
        let own_home: Vec<PathBuf> = home
            .map(|home| {
                let lexical = normalized(home);
                let resolved = std::fs::canonicalize(&lexical).ok();
                [Some(lexical), resolved].into_iter().flatten().collect()
            })
            .unwrap_or_default();
        if let Some(home) = home {
            places.extend(
                IN_HOME
                    .iter()
                    .map(|dir| Place::new(format!("~/{dir}"), home.join(dir))),
            );
        }
        places.extend(
            ABSOLUTE
                .iter()
                .map(|dir| Place::new(*dir, PathBuf::from(dir))),
        );
        places.extend(
            own_dirs
                .iter()
                .map(|dir| Place::new(format!("Deskhand's {}", dir.display()), dir.clone())),
        );
        for entry in extra {
            let path = match (entry.strip_prefix("~/"), home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ => PathBuf::from(entry),
            };
            if path.is_absolute() {
                places.push(Place::new(entry.clone(), path));
            }
        }
        Self {
            places,
            home: own_home,
            // SAFETY: `geteuid` takes nothing and cannot fail.
            uid: unsafe { libc::geteuid() },
        }
    }

    /// The built-in places, the store's directory (beside the default data directory and
    /// the config directory), and those added with `deskhand settings set secret-paths`.
    pub fn for_store(store: &Store) -> Result<Self, StoreError> {
        let extra = Self::stored(store)?;
        Ok(Self::new(
            dirs::home_dir().as_deref(),
            &[
                store.dir().to_path_buf(),
                crate::paths::data_dir(),
                crate::paths::config_dir(),
            ],
            &extra,
        ))
    }

    /// The places added in the settings.
    fn stored(store: &Store) -> Result<Vec<String>, StoreError> {
        Ok(match store.setting(Self::SETTING)? {
            Some(Value::Array(entries)) => entries
                .iter()
                .filter_map(|e| e.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        })
    }

    /// The secret place `path` is in, as the person knows it, if any. Symlinks and `..` are
    /// followed first, so neither leads around the list; the path as given is checked too.
    pub fn place_of(&self, path: &Path) -> Option<String> {
        let lexical = normalized(path);
        let resolved = resolved(&lexical);
        [Some(&lexical), resolved.as_ref()]
            .into_iter()
            .flatten()
            .find_map(|path| self.match_path(path))
    }

    /// The secret place a plugin call's arguments name, if any: each string, as a path and
    /// word by word (`cat ~/.ssh/id_rsa`, `file:///etc/shadow`), `~/` being the home.
    pub fn place_named_in(&self, arguments: &Value) -> Option<String> {
        let mut strings = Vec::new();
        collect_strings(arguments, &mut strings);
        if strings.len() > MAX_ARGUMENT_STRINGS {
            return Some(format!(
                "more than {MAX_ARGUMENT_STRINGS} paths or words to check in its arguments"
            ));
        }
        strings.into_iter().find_map(|text| {
            let words = text.split(|c: char| {
                c.is_whitespace()
                    || matches!(c, '"' | '\'' | '`' | '=' | ',' | ';' | '|' | '<' | '>')
            });
            std::iter::once(text)
                .chain(words)
                .filter_map(|word| self.as_path(word))
                .find_map(|path| self.place_of(&path))
        })
    }

    /// `word` as a path, if it can be one: absolute, in the home (`~/`), a `file:` URI, or
    /// relative with a `/` or a leading dot (`.env`, `.ssh/id_rsa`).
    fn as_path(&self, word: &str) -> Option<PathBuf> {
        let word = word.strip_prefix("file://").unwrap_or(word);
        if let Some(rest) = word.strip_prefix("~/") {
            return Some(self.home.first()?.join(rest));
        }
        (word.starts_with('/') || word.starts_with('.') || word.contains('/'))
            .then(|| PathBuf::from(word))
    }

    /// Another user's home that `path` is in: `/home/NAME` or `/root` when it is neither
    /// the person's home (nor a directory above it) nor owned by the user Deskhand runs as.
    fn other_home(&self, path: &Path) -> Option<String> {
        let home = match path.strip_prefix(HOMES) {
            Ok(rest) => match rest.components().next() {
                Some(Component::Normal(name)) => Path::new(HOMES).join(name),
                _ => return None,
            },
            Err(_) if path.starts_with(ROOT_HOME) => PathBuf::from(ROOT_HOME),
            Err(_) => return None,
        };
        let own = self.home.iter().any(|mine| mine.starts_with(&home))
            || std::fs::metadata(&home).is_ok_and(|m| m.uid() == self.uid);
        (!own).then(|| format!("another user's home ({})", home.display()))
    }

    fn match_path(&self, path: &Path) -> Option<String> {
        if let Some(place) = self.places.iter().find(|place| {
            path.starts_with(&place.path)
                || place.resolved.as_ref().is_some_and(|r| path.starts_with(r))
        }) {
            return Some(place.shown.clone());
        }
        if let Some(home) = self.other_home(path) {
            return Some(home);
        }
        let names: Vec<&str> = path
            .components()
            .filter_map(|c| match c {
                Component::Normal(name) => name.to_str(),
                _ => None,
            })
            .collect();
        if let Some(dir) = names.iter().find(|name| DIRECTORY_NAMES.contains(name)) {
            return Some(format!("a {dir} directory"));
        }
        let file = names.last()?;
        let secret_file = FILE_NAMES.contains(file) || file.starts_with(".env.");
        secret_file.then(|| format!("a {file} file"))
    }
}

impl Place {
    fn new(shown: impl Into<String>, path: PathBuf) -> Self {
        let path = normalized(&path);
        Self {
            shown: shown.into(),
            resolved: std::fs::canonicalize(&path).ok(),
            path,
        }
    }
}

/// Every string in `value`, object keys left out.
fn collect_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Array(items) => items.iter().for_each(|item| collect_strings(item, out)),
        Value::Object(map) => map.values().for_each(|item| collect_strings(item, out)),
        _ => {}
    }
}

/// `path` with `.` and `..` taken away without looking at the disk.
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `path` with every symlink resolved: the deepest existing ancestor resolved, the rest
/// added as it is (a file about to be read may not exist yet).
fn resolved(path: &Path) -> Option<PathBuf> {
    let mut rest = Vec::new();
    let mut ancestor = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(ancestor) {
            return Some(rest.iter().rev().fold(real, |p, name| p.join(name)));
        }
        rest.push(ancestor.file_name()?);
        ancestor = ancestor.parent()?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_rc_files_env_files_proc_and_own_dirs_are_secret_and_others_are_not() {
        let home = tempfile::tempdir().unwrap();
        let data = home.path().join("data");
        let places = SecretPlaces::new(
            Some(home.path()),
            std::slice::from_ref(&data),
            &["~/work/keys".into(), "/srv/vault".into(), "relative".into()],
        );
        let h = |p: &str| home.path().join(p);
        for (path, place) in [
            (h(".ssh/id_ed25519"), "~/.ssh".to_string()),
            (
                h(".local/share/keyrings/login.keyring"),
                "~/.local/share/keyrings".into(),
            ),
            (
                h(".mozilla/firefox/x.default/logins.json"),
                "~/.mozilla".into(),
            ),
            (
                h(".config/google-chrome/Default/Cookies"),
                "~/.config/google-chrome".into(),
            ),
            (h(".bashrc"), "a .bashrc file".into()),
            (h("project/.env"), "a .env file".into()),
            (h("project/.env.local"), "a .env.local file".into()),
            (PathBuf::from("/proc/self/environ"), "/proc".into()),
            (
                data.join("history.sqlite3"),
                format!("Deskhand's {}", data.display()),
            ),
            (h("work/keys/prod.pem"), "~/work/keys".into()),
            (PathBuf::from("/srv/vault/token"), "/srv/vault".into()),
            (
                PathBuf::from("/srv/backup/.ssh/id_rsa"),
                "a .ssh directory".into(),
            ),
            (h(".config/gh/hosts.yml"), "~/.config/gh".into()),
            (h(".cargo/credentials"), "~/.cargo/credentials".into()),
            (
                h(".cargo/credentials.toml"),
                "~/.cargo/credentials.toml".into(),
            ),
            (h(".docker/config.json"), "~/.docker".into()),
            (h(".kube/config"), "~/.kube".into()),
            (h(".netrc"), "a .netrc file".into()),
            (h(".pgpass"), "a .pgpass file".into()),
            (h(".git-credentials"), "a .git-credentials file".into()),
            (PathBuf::from("/etc/shadow"), "/etc/shadow".into()),
            (PathBuf::from("/etc/gshadow"), "/etc/gshadow".into()),
            (
                PathBuf::from("/home/bob/.aws/credentials"),
                "another user's home (/home/bob)".into(),
            ),
            (
                PathBuf::from("/home/bob/notes.txt"),
                "another user's home (/home/bob)".into(),
            ),
        ] {
            assert_eq!(places.place_of(&path), Some(place), "{}", path.display());
        }
        for path in [
            h("project/main.rs"),
            h(".environment"),
            h("ssh/notes.txt"),
            h(".cargo/config.toml"),
            PathBuf::from("/home"),
            PathBuf::from("/etc/passwd"),
        ] {
            assert_eq!(places.place_of(&path), None, "{}", path.display());
        }
        assert_eq!(places.place_of(Path::new("/tmp/relative")), None);
    }

    #[test]
    fn the_own_home_is_not_another_users_and_root_is_secret_only_to_others() {
        // As a user who owns neither /root nor anything in /home.
        let ann = SecretPlaces {
            uid: u32::MAX - 1,
            ..SecretPlaces::new(Some(Path::new("/home/ann")), &[], &[])
        };
        assert_eq!(ann.place_of(Path::new("/home/ann/Documents/a.txt")), None);
        assert_eq!(
            ann.place_of(Path::new("/home/bob/.config/gh/hosts.yml"))
                .as_deref(),
            Some("another user's home (/home/bob)")
        );
        assert_eq!(
            ann.place_of(Path::new("/root/.cargo/credentials.toml"))
                .as_deref(),
            Some("another user's home (/root)")
        );
        let root = SecretPlaces {
            uid: u32::MAX - 1,
            ..SecretPlaces::new(Some(Path::new("/root")), &[], &[])
        };
        assert_eq!(root.place_of(Path::new("/root/notes.txt")), None);
        // A home the user owns is theirs, wherever `$HOME` points (a test's own `HOME`).
        let owner = std::fs::metadata("/root").unwrap().uid();
        let elsewhere = SecretPlaces {
            uid: owner,
            ..SecretPlaces::new(Some(Path::new("/tmp/ci-home")), &[], &[])
        };
        assert_eq!(elsewhere.place_of(Path::new("/root/repo/README.md")), None);
        assert_eq!(
            root.place_of(Path::new("/etc/shadow")).as_deref(),
            Some("/etc/shadow")
        );
    }

    #[test]
    fn plugin_arguments_that_name_a_secret_place_are_found_in_any_string() {
        let home = tempfile::tempdir().unwrap();
        let places = SecretPlaces::new(Some(home.path()), &[], &[]);
        let named = |arguments: Value| places.place_named_in(&arguments);
        for (arguments, place) in [
            (serde_json::json!({"path": "~/.ssh/id_ed25519"}), "~/.ssh"),
            (
                serde_json::json!({"path": home.path().join(".ssh")}),
                "~/.ssh",
            ),
            (
                serde_json::json!({"uri": "file:///etc/shadow"}),
                "/etc/shadow",
            ),
            (
                serde_json::json!({"command": "cat ~/.config/gh/hosts.yml | head"}),
                "~/.config/gh",
            ),
            (
                serde_json::json!({"files": ["README.md", {"name": "project/.env"}]}),
                "a .env file",
            ),
            (
                serde_json::json!({"args": ["--file=.netrc"]}),
                "a .netrc file",
            ),
        ] {
            assert_eq!(
                named(arguments.clone()).as_deref(),
                Some(place),
                "{arguments}"
            );
        }
        for arguments in [
            serde_json::json!({"path": "/tmp/report.txt", "query": "ssh keys", "n": 3}),
            serde_json::json!({"text": "the ssh keys are in the usual directory"}),
            serde_json::json!({"~/.ssh": "an object key is not an argument value"}),
        ] {
            assert_eq!(named(arguments.clone()), None, "{arguments}");
        }
        let wall: Vec<String> = (0..=MAX_ARGUMENT_STRINGS)
            .map(|i| format!("/tmp/{i}"))
            .collect();
        assert!(named(serde_json::json!({ "paths": wall })).is_some());
    }

    #[test]
    fn symlinks_and_dot_dots_do_not_lead_around_the_list() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".ssh")).unwrap();
        std::fs::write(home.path().join(".ssh/id_ed25519"), "key").unwrap();
        std::fs::create_dir(home.path().join("notes")).unwrap();
        let link = home.path().join("notes/harmless.txt");
        std::os::unix::fs::symlink(home.path().join(".ssh/id_ed25519"), &link).unwrap();
        let dir_link = home.path().join("innocent");
        std::os::unix::fs::symlink(home.path().join(".ssh"), &dir_link).unwrap();
        let places = SecretPlaces::new(Some(home.path()), &[], &[]);
        for path in [
            link,
            dir_link.join("id_ed25519"),
            home.path().join("notes/../.ssh/id_ed25519"),
            home.path().join("notes/./../.ssh/./id_ed25519"),
        ] {
            assert_eq!(
                places.place_of(&path).as_deref(),
                Some("~/.ssh"),
                "{}",
                path.display()
            );
        }
    }
}
