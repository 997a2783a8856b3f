//! Places whose reading is never silent: keys, keyrings, browser profiles, `.env` and shell rc
//! files, `/proc`, and Deskhand's own directories. A read-only action (an editor `view`)
//! of such a place asks in the ask and auto modes and is refused in read-only mode, so a
//! prompt-injected model cannot read `~/.ssh/id_ed25519` or an `export …API_KEY=` line
//! without the person seeing it. The person extends the list with
//! `deskhand settings set secret-paths`.

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

/// Absolute places: every process's memory map, environment and command line.
const ABSOLUTE: &[&str] = &["/proc"];

/// The secret places of one person, with the directories as given and as resolved.
#[derive(Clone, Debug)]
pub struct SecretPlaces {
    places: Vec<Place>,
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
        Self { places }
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

    fn match_path(&self, path: &Path) -> Option<String> {
        if let Some(place) = self.places.iter().find(|place| {
            path.starts_with(&place.path)
                || place.resolved.as_ref().is_some_and(|r| path.starts_with(r))
        }) {
            return Some(place.shown.clone());
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
                PathBuf::from("/home/bob/.ssh/id_rsa"),
                "a .ssh directory".into(),
            ),
        ] {
            assert_eq!(places.place_of(&path), Some(place), "{}", path.display());
        }
        for path in [h("project/main.rs"), h(".environment"), h("ssh/notes.txt")] {
            assert_eq!(places.place_of(&path), None, "{}", path.display());
        }
        assert_eq!(places.place_of(Path::new("/tmp/relative")), None);
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
