//! The text editor tool (`text_editor_20250728`, named `str_replace_based_edit_tool`): view
//! files and directories, create files, replace a unique string, insert lines.
//!
//! Each write is computed in full before anything touches the disk, once for the approval
//! (which shows it as a unified diff) and again when it runs, and lands atomically: a temp
//! file in the same directory, synced, then renamed over the target.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use serde_json::{Value, json};
use similar::{ChangeTag, TextDiff};

use super::{ActionPlan, Tool, ToolContext, ToolOutput};
use crate::llm::{AnthropicNativeTool, ToolDefinition};

pub const NAME: &str = "str_replace_based_edit_tool";
/// A directory view stops after this many entries.
const MAX_LISTED: usize = 1000;
/// Lines of context around an edit in the snippet the model gets back.
const SNIPPET_CONTEXT: usize = 4;

const DESCRIPTION: &str = "View, create and edit text files. Paths must be absolute. \
Commands: `view` shows a file with line numbers (optional `view_range: [start, end]`, end -1 \
for the end of the file) or lists a directory two levels deep; `create` writes `file_text` to \
`path`, replacing any file there; `str_replace` replaces `old_str`, which must occur exactly \
once in the file (include enough context to make it unique), with `new_str`; `insert` puts \
`new_str` after line `insert_line` (0 for the top of the file).";

pub struct EditorTool {
    /// The most characters a `view` returns; the rest is cut with a note.
    max_characters: Option<usize>,
}

impl EditorTool {
    pub fn new(max_characters: Option<usize>) -> Self {
        Self { max_characters }
    }
}

#[async_trait]
impl Tool for EditorTool {
    fn definition(&self) -> ToolDefinition {
        let mut native = json!({"type": "text_editor_20250728", "name": NAME});
        if let Some(max) = self.max_characters {
            native["max_characters"] = json!(max);
        }
        ToolDefinition {
            name: NAME.into(),
            description: DESCRIPTION.into(),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert"]},
                    "path": {"type": "string", "description": "An absolute path."},
                    "view_range": {
                        "type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
                        "description": "view: first and last line to show, 1-based; -1 as the last means the end."
                    },
                    "file_text": {"type": "string", "description": "create: the file's content."},
                    "old_str": {"type": "string", "description": "str_replace: text that occurs exactly once."},
                    "new_str": {"type": "string", "description": "str_replace: the replacement; insert: the text to insert."},
                    "insert_line": {"type": "integer", "minimum": 0, "description": "insert: the line to insert after; 0 for the top."}
                },
                "required": ["command", "path"]
            }),
            anthropic: Some(AnthropicNativeTool::new(native, None)),
        }
    }

    fn plan(&self, input: &Value) -> Result<ActionPlan, String> {
        let command = input["command"].as_str().unwrap_or_default();
        let path = absolute(input)?;
        if command == "view" {
            return Ok(ActionPlan {
                kind: "editor.view".into(),
                read_only: true,
                summary: format!("view {}", path.display()),
                detail: json!({"path": path}),
            });
        }
        let edit = Edit::compute(command, &path, input)?;
        let diff = TextDiff::from_lines(edit.old.as_deref().unwrap_or(""), &edit.new);
        let (mut added, mut removed) = (0, 0);
        for change in diff.iter_all_changes() {
            match change.tag() {
                ChangeTag::Insert => added += 1,
                ChangeTag::Delete => removed += 1,
                ChangeTag::Equal => {}
            }
        }
        let shown = path.display().to_string();
        let old_name = if edit.old.is_some() {
            shown.as_str()
        } else {
            "/dev/null"
        };
        let unified = diff
            .unified_diff()
            .context_radius(3)
            .header(old_name, &shown)
            .to_string();
        Ok(ActionPlan {
            kind: format!("editor.{command}"),
            read_only: false,
            summary: format!("{command} {shown} (+{added} -{removed} lines)"),
            detail: json!({"path": path, "diff": unified}),
        })
    }

    async fn run(&self, input: &Value, _ctx: &ToolContext) -> ToolOutput {
        let command = input["command"].as_str().unwrap_or_default().to_string();
        let input = input.clone();
        let max_characters = self.max_characters;
        let done = tokio::task::spawn_blocking(move || {
            let path = absolute(&input)?;
            if command == "view" {
                return view(&path, &input, max_characters);
            }
            let edit = Edit::compute(&command, &path, &input)?;
            write_atomic(&edit.target, &edit.new)
                .map_err(|e| format!("could not write {}: {e}", path.display()))?;
            Ok(edit.report)
        })
        .await;
        match done {
            Ok(Ok(text)) => ToolOutput::text(text),
            Ok(Err(message)) => ToolOutput::error(message),
            Err(e) => ToolOutput::error(format!("the editor failed: {e}")),
        }
    }
}

fn absolute(input: &Value) -> Result<PathBuf, String> {
    let path = PathBuf::from(input["path"].as_str().unwrap_or_default());
    if path.as_os_str().is_empty() {
        return Err("`path` is empty; give an absolute path".into());
    }
    if !path.is_absolute() {
        let hint = std::env::current_dir()
            .map(|cwd| format!(", such as {}", cwd.join(&path).display()))
            .unwrap_or_default();
        return Err(format!(
            "`{}` is not an absolute path; give one that starts with /{hint}",
            path.display()
        ));
    }
    Ok(path)
}

/// A text file's content, or a clear reason why it cannot be edited as text.
fn read_text(path: &Path) -> Result<String, String> {
    let shown = path.display();
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("{shown} does not exist"));
        }
        Err(e) => return Err(format!("cannot read {shown}: {e}")),
    };
    if meta.is_dir() {
        return Err(format!(
            "{shown} is a directory, not a file (`view` lists a directory)"
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if bytes.contains(&0) {
        return Err(format!(
            "{shown} is a binary file; the editor works on text files only"
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "{shown} is not UTF-8 text (invalid byte at offset {}); the editor works on UTF-8 text files only",
            e.utf8_error().valid_up_to()
        )
    })
}

fn view(path: &Path, input: &Value, max_characters: Option<usize>) -> Result<String, String> {
    if path.is_dir() {
        if !input["view_range"].is_null() {
            return Err(format!(
                "{} is a directory; `view_range` applies to files only",
                path.display()
            ));
        }
        return Ok(truncate(list_directory(path)?, max_characters));
    }
    let text = read_text(path)?;
    let lines: Vec<&str> = text.lines().collect();
    let count = lines.len();
    let (first, last) = match input["view_range"].as_array() {
        None => (1, count),
        Some(range) => {
            let start = range[0].as_i64().unwrap_or(0);
            let end = range[1].as_i64().unwrap_or(0);
            if start < 1 || start as usize > count.max(1) {
                return Err(format!(
                    "invalid `view_range` [{start}, {end}]: the first line must be between 1 and {count}, the file's last line"
                ));
            }
            if end != -1 && end < start {
                return Err(format!(
                    "invalid `view_range` [{start}, {end}]: the last line must be -1 (the end) or at least the first"
                ));
            }
            let last = if end == -1 {
                count
            } else {
                (end as usize).min(count)
            };
            (start as usize, last)
        }
    };
    if count == 0 {
        return Ok(format!("{} is empty.", path.display()));
    }
    let mut out = format!(
        "Here's the result of running `cat -n` on {}:\n",
        path.display()
    );
    out.push_str(&numbered(&lines[first - 1..last], first));
    if last < count {
        out.push_str(&format!("[lines {}-{count} not shown]\n", last + 1));
    }
    Ok(truncate(out, max_characters))
}

/// Lines as `cat -n` shows them, numbered from `first`.
fn numbered(lines: &[&str], first: usize) -> String {
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        out.push_str(&format!("{:6}\t{line}\n", first + i));
    }
    out
}

fn truncate(text: String, max_characters: Option<usize>) -> String {
    let Some(max) = max_characters else {
        return text;
    };
    match text.char_indices().nth(max) {
        None => text,
        Some((cut, _)) => {
            let rest = text[cut..].chars().count();
            format!(
                "{}\n[... {rest} more characters not shown (max_characters is {max}); view a smaller `view_range`]",
                &text[..cut]
            )
        }
    }
}

/// Files and directories up to two levels below `root`, hidden ones left out, like
/// `find root -maxdepth 2 -not -path '*/.*'`.
fn list_directory(root: &Path) -> Result<String, String> {
    let mut entries = Vec::new();
    collect(root, 2, &mut entries).map_err(|e| format!("cannot list {}: {e}", root.display()))?;
    let total = entries.len();
    let mut out = format!(
        "Here are the files and directories up to 2 levels deep in {}, excluding hidden items:\n{}\n",
        root.display(),
        root.display()
    );
    for entry in entries.iter().take(MAX_LISTED) {
        out.push_str(entry);
        out.push('\n');
    }
    if total > MAX_LISTED {
        out.push_str(&format!(
            "[... {} more entries not shown]\n",
            total - MAX_LISTED
        ));
    }
    Ok(out)
}

fn collect(dir: &Path, depth: usize, out: &mut Vec<String>) -> std::io::Result<()> {
    let mut children: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    children.sort_by_key(|e| e.file_name());
    for child in children {
        let path = child.path();
        let is_dir = child.file_type().is_ok_and(|t| t.is_dir());
        out.push(format!(
            "{}{}",
            path.display(),
            if is_dir { "/" } else { "" }
        ));
        if is_dir && depth > 1 {
            // An unreadable subdirectory is listed but not entered.
            let _ = collect(&path, depth - 1, out);
        }
    }
    Ok(())
}

/// A write, computed but not yet done.
struct Edit {
    /// The file actually written: symbolic links are followed, not replaced.
    target: PathBuf,
    /// The content before, or `None` for a new file.
    old: Option<String>,
    new: String,
    /// What the model is told once it is written.
    report: String,
}

impl Edit {
    fn compute(command: &str, path: &Path, input: &Value) -> Result<Edit, String> {
        let shown = path.display();
        let field = |name: &str| {
            input[name]
                .as_str()
                .ok_or_else(|| format!("`{command}` needs `{name}`"))
        };
        match command {
            "create" => {
                let text = field("file_text")?;
                let old = if path.exists() {
                    Some(read_text(path)?)
                } else {
                    None
                };
                let report = match old {
                    Some(_) => format!("File overwritten: {shown}"),
                    None => format!("File created: {shown}"),
                };
                Ok(Edit {
                    target: resolve(path),
                    old,
                    new: text.to_string(),
                    report,
                })
            }
            "str_replace" => {
                let old_str = field("old_str")?;
                let new_str = input["new_str"].as_str().unwrap_or_default();
                if old_str.is_empty() {
                    return Err(
                        "`old_str` is empty; give text that occurs exactly once in the file".into(),
                    );
                }
                let text = read_text(path)?;
                let starts: Vec<usize> = text.match_indices(old_str).map(|(at, _)| at).collect();
                let at = match starts.as_slice() {
                    [at] => *at,
                    [] => {
                        return Err(format!(
                            "no replacement was made: `old_str` does not occur verbatim in {shown} (check whitespace and indentation)"
                        ));
                    }
                    many => {
                        let lines: Vec<String> = many
                            .iter()
                            .map(|&at| line_of(&text, at).to_string())
                            .collect();
                        return Err(format!(
                            "no replacement was made: `old_str` occurs {} times in {shown} (lines {}); include more surrounding text so it occurs exactly once",
                            many.len(),
                            lines.join(", ")
                        ));
                    }
                };
                let new = format!("{}{new_str}{}", &text[..at], &text[at + old_str.len()..]);
                let first = line_of(&new, at);
                let last = first + new_str.matches('\n').count();
                let report = format!(
                    "The file {shown} has been edited. Here's the result of running `cat -n` on a snippet of it:\n{}Review the changes and make sure they are as expected.",
                    snippet(&new, first, last)
                );
                Ok(Edit {
                    target: resolve(path),
                    old: Some(text),
                    new,
                    report,
                })
            }
            "insert" => {
                let new_str = field("new_str")?;
                let Some(after) = input["insert_line"].as_u64() else {
                    return Err("`insert` needs `insert_line` (0 for the top of the file)".into());
                };
                let text = read_text(path)?;
                let lines: Vec<&str> = text.split_inclusive('\n').collect();
                let count = lines.len();
                let after = after as usize;
                if after > count {
                    return Err(format!(
                        "invalid `insert_line` {after}: {shown} has {count} lines, so it must be between 0 and {count}"
                    ));
                }
                let mut new = lines[..after].concat();
                if !new.is_empty() && !new.ends_with('\n') {
                    new.push('\n');
                }
                new.push_str(new_str);
                let ends_line = after < count || text.ends_with('\n');
                if ends_line && !new_str.ends_with('\n') {
                    new.push('\n');
                }
                new.push_str(&lines[after..].concat());
                let inserted = new_str.lines().count().max(1);
                let report = format!(
                    "The file {shown} has been edited. Here's the result of running `cat -n` on a snippet of it:\n{}Review the changes and make sure they are as expected.",
                    snippet(&new, after + 1, after + inserted)
                );
                Ok(Edit {
                    target: resolve(path),
                    old: Some(text),
                    new,
                    report,
                })
            }
            other => Err(format!(
                "unknown command `{other}`; use view, create, str_replace or insert"
            )),
        }
    }
}

/// The 1-based line that byte `at` is on.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// Lines `first..=last` of `text` with some context around them, numbered.
fn snippet(text: &str, first: usize, last: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let from = first.saturating_sub(SNIPPET_CONTEXT).max(1);
    let to = (last + SNIPPET_CONTEXT).min(lines.len());
    if from > to {
        return String::new();
    }
    numbered(&lines[from - 1..to], from)
}

/// Follows a symbolic link so that writing replaces the file it points to, not the link.
fn resolve(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Writes `text` to `path` so that readers see the old file or the new one, never a part:
/// a temp file in the same directory (so the rename stays on one file system), synced, then
/// renamed over the target. An existing file's permissions carry over.
fn write_atomic(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir)?;
    // A new file gets the usual 0666 less the umask, not a temp file's 0600.
    let mut temp = tempfile::Builder::new()
        .prefix(".deskhand-edit-")
        .suffix(".tmp")
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    temp.write_all(text.as_bytes())?;
    if let Ok(meta) = std::fs::metadata(path) {
        temp.as_file().set_permissions(meta.permissions())?;
    }
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}
