//! Tool types an endpoint refused with HTTP 400 for a model, remembered so that every later
//! request and run offers the older version at once: in memory for the process, and, where
//! a file is given, in `tool-fallbacks.json` in the config directory for later processes.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use deskhand_host::files;

/// The file's name in the config directory.
pub const FILE_NAME: &str = "tool-fallbacks.json";
/// The largest file read back; one entry is about 150 bytes.
const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Entries kept; the oldest go first.
const MAX_ENTRIES: usize = 500;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Refusal {
    base_url: String,
    model: String,
    tool_type: String,
}

static MEMORY: Mutex<Vec<Refusal>> = Mutex::new(Vec::new());

/// Where refusals are remembered beyond this process: `None` keeps them in memory only.
#[derive(Clone, Debug, Default)]
pub struct FallbackMemory {
    file: Option<PathBuf>,
}

impl FallbackMemory {
    /// Remembers in `file` too, and reads back what it holds. A missing, unreadable or
    /// malformed file is the same as an empty one: it only ever saves a refused request.
    pub fn in_file(file: PathBuf) -> Self {
        for refusal in read(&file) {
            add(refusal);
        }
        Self { file: Some(file) }
    }

    /// The tool types refused at `base_url` for `model`, oldest first.
    pub fn refused(&self, base_url: &str, model: &str) -> Vec<String> {
        memory()
            .iter()
            .filter(|r| r.base_url == base_url && r.model == model)
            .map(|r| r.tool_type.clone())
            .collect()
    }

    pub fn remember(&self, base_url: &str, model: &str, tool_type: &str) {
        add(Refusal {
            base_url: base_url.into(),
            model: model.into(),
            tool_type: tool_type.into(),
        });
        if let Some(file) = &self.file {
            // Best effort: a read-only config directory costs one refused request per run.
            let _ = write(file, &memory());
        }
    }
}

fn memory() -> std::sync::MutexGuard<'static, Vec<Refusal>> {
    MEMORY.lock().unwrap_or_else(|e| e.into_inner())
}

fn add(refusal: Refusal) {
    let mut memory = memory();
    if !memory.contains(&refusal) {
        memory.push(refusal);
        let excess = memory.len().saturating_sub(MAX_ENTRIES);
        memory.drain(..excess);
    }
}

fn read(file: &Path) -> Vec<Refusal> {
    files::read_regular(file, MAX_FILE_BYTES)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Vec<Refusal>>(&bytes).ok())
        .unwrap_or_default()
}

/// Writes a temp file beside `file` and renames it over, so a reader never sees half of it.
fn write(file: &Path, refusals: &[Refusal]) -> std::io::Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let temp = dir.join(format!(".{FILE_NAME}.{}", std::process::id()));
    std::fs::write(&temp, serde_json::to_vec_pretty(refusals)?)?;
    std::fs::rename(&temp, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_survive_in_the_file_and_a_bad_file_is_empty() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(FILE_NAME);
        let url = format!("http://unit-test-{}", std::process::id());
        FallbackMemory::in_file(file.clone()).remember(
            &url,
            "claude-x-5",
            "computer_toolset_20260801",
        );
        let stored: Vec<Refusal> = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert!(
            stored
                .iter()
                .any(|r| r.base_url == url && r.model == "claude-x-5")
        );
        assert_eq!(
            FallbackMemory::default().refused(&url, "claude-x-5"),
            ["computer_toolset_20260801"]
        );
        assert!(
            FallbackMemory::default()
                .refused(&url, "claude-y-5")
                .is_empty()
        );
        std::fs::write(&file, b"{not json").unwrap();
        let _ = FallbackMemory::in_file(file);
    }
}
