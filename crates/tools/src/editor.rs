//! The text editor tool (`text_editor_20250728`, named `str_replace_based_edit_tool`): view
//! files and directories, create files, replace a unique string, insert lines.
//!
//! Each write is computed in full before anything touches the disk, once for the approval
//! (which shows it as a unified diff) and again when it runs, and lands atomically: a temp
//! file in the same directory, synced, then renamed over the target.

use std::io::Write as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path, PathBuf};

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use similar::{Algorithm, ChangeTag};

use super::{ActionDetail, ActionPlan, ToolContext, ToolError, ToolOutput, TypedTool, input};
use deskhand_host::files::{self, ReadError};
use deskhand_llm::{AnthropicNativeTool, ToolDefinition};

pub const NAME: &str = "str_replace_based_edit_tool";
/// A directory view stops after this many entries.
const MAX_LISTED: usize = 1000;
/// Lines of context around an edit in the snippet the model gets back.
const SNIPPET_CONTEXT: usize = 4;
/// The largest file `view` reads: bigger ones are refused before a byte is read.
const MAX_VIEW_BYTES: u64 = 64 << 20;
/// The largest file an edit reads (it is held twice, and diffed, before the approval).
const MAX_EDIT_BYTES: u64 = 10 << 20;
/// What a `view` returns at most when `max_characters` is not set, like bash's cap on
/// each stream: a whole big file would fill the context and the history.
pub const DEFAULT_VIEW_CHARACTERS: usize = 20_000;

const DESCRIPTION: &str = "View, create and edit text files. Paths must be absolute. \
Commands: `view` shows a file with line numbers (optional `view_range: [start, end]`, end -1 \
for the end of the file) or lists a directory two levels deep; `create` writes `file_text` to \
`path`, replacing any file there; `str_replace` replaces `old_str`, which must occur exactly \
once in the file (include enough context to make it unique), with `new_str`; `insert` puts \
`insert_text` after line `insert_line` (0 for the top of the file).";

pub struct EditorTool {
    /// The most characters a `view` returns; the rest is cut with a note.
    max_characters: Option<usize>,
}

impl EditorTool {
    pub fn new(max_characters: Option<usize>) -> Self {
        Self { max_characters }
    }

    /// The cap on what a `view` returns: the configured `max_characters`, else the default.
    fn view_cap(&self) -> ViewCap {
        match self.max_characters {
            Some(max) => ViewCap {
                max,
                why: format!("max_characters is {max}"),
            },
            None => ViewCap {
                max: DEFAULT_VIEW_CHARACTERS,
                why: format!("a view shows at most {DEFAULT_VIEW_CHARACTERS} characters"),
            },
        }
    }
}

#[async_trait]
impl TypedTool for EditorTool {
    type Input = EditorInput;

    fn definition(&self) -> ToolDefinition {
        let mut native = json!({"type": "text_editor_20250728", "name": NAME});
        if let Some(max) = self.max_characters {
            native["max_characters"] = json!(max);
        }
        ToolDefinition {
            name: NAME.into(),
            description: DESCRIPTION.into(),
            input_schema: input::schema::<EditorInput>(),
            anthropic: Some(AnthropicNativeTool::new(native, None)),
        }
    }

    fn read(&self, input: &Value) -> Result<EditorInput, ToolError> {
        input::read(NAME, input)
    }

    fn plan(&self, input: &EditorInput) -> Result<ActionPlan, ToolError> {
        let command = input.command;
        let path = absolute(input)?;
        if command == EditorCommand::View {
            return Ok(ActionPlan {
                kind: "editor.view".into(),
                read_only: true,
                summary: format!("view {}", path.display()),
                detail: ActionDetail::FileView { path },
                on_screen: false,
                safety_checks: Vec::new(),
                target: None,
            });
        }
        let edit = Edit::compute(&path, input)?;
        let shown = path.display().to_string();
        let old_name = if edit.old.is_some() {
            shown.as_str()
        } else {
            "/dev/null"
        };
        let (unified, added, removed) = unified_diff(
            edit.old.as_deref().unwrap_or(""),
            &edit.new,
            old_name,
            &shown,
        );
        Ok(ActionPlan {
            kind: format!("editor.{}", command.name()),
            read_only: false,
            summary: format!("{} {shown} (+{added} -{removed} lines)", command.name()),
            detail: ActionDetail::FileEdit {
                path,
                diff: unified,
            },
            on_screen: false,
            safety_checks: Vec::new(),
            target: None,
        })
    }

    /// The file work runs on a blocking thread, never on the async loop; a stop answers at
    /// once, and a stop that comes before the write means nothing is written.
    async fn run(&self, input: EditorInput, ctx: &ToolContext) -> ToolOutput {
        let cap = self.view_cap();
        let cancel = ctx.cancel.clone();
        let work = tokio::task::spawn_blocking(move || {
            let path = absolute(&input)?;
            if input.command == EditorCommand::View {
                return view(&path, &input, &cap);
            }
            let edit = Edit::compute(&path, &input)?;
            if cancel.is_cancelled() {
                return Err(ToolError::Cancelled);
            }
            write_atomic(&edit.target, &edit.new)
                .map_err(|e| ToolError::Io(format!("could not write {}: {e}", path.display())))?;
            Ok(edit.report)
        });
        let done = tokio::select! {
            done = work => done,
            () = ctx.cancel.cancelled() => return ToolError::Cancelled.into(),
        };
        match done {
            Ok(Ok(text)) => ToolOutput::text(text),
            Ok(Err(e)) => e.into(),
            Err(e) => ToolOutput::error(format!("the editor failed: {e}")),
        }
    }
}

// A call's input. Field doc comments are the descriptions the model reads in the schema.
#[derive(Deserialize, JsonSchema)]
pub struct EditorInput {
    command: EditorCommand,
    /// An absolute path.
    path: String,
    /// view: first and last line to show, 1-based; -1 as the last means the end.
    view_range: Option<[i64; 2]>,
    /// create: the file's content.
    file_text: Option<String>,
    /// str_replace: text that occurs exactly once.
    old_str: Option<String>,
    /// str_replace: the replacement.
    new_str: Option<String>,
    /// insert: the text to insert (older models send it as `new_str`).
    insert_text: Option<String>,
    /// insert: the line to insert after; 0 for the top.
    insert_line: Option<u64>,
}

#[derive(Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum EditorCommand {
    View,
    Create,
    StrReplace,
    Insert,
}

impl EditorCommand {
    fn name(self) -> &'static str {
        match self {
            Self::View => "view",
            Self::Create => "create",
            Self::StrReplace => "str_replace",
            Self::Insert => "insert",
        }
    }
}

fn absolute(input: &EditorInput) -> Result<PathBuf, ToolError> {
    let path = PathBuf::from(&input.path);
    if path.as_os_str().is_empty() {
        return Err(ToolError::InvalidInput(
            "`path` is empty; give an absolute path".into(),
        ));
    }
    if !path.is_absolute() {
        let hint = std::env::current_dir()
            .map(|cwd| format!(", such as {}", cwd.join(&path).display()))
            .unwrap_or_default();
        return Err(ToolError::InvalidInput(format!(
            "`{}` is not an absolute path; give one that starts with /{hint}",
            path.display()
        )));
    }
    Ok(path)
}

/// A text file's content, at most `limit` bytes, or a clear reason why it cannot be
/// edited as text. Only regular files are read (symbolic links followed), never blocking.
fn read_text(path: &Path, limit: u64) -> Result<String, ToolError> {
    let shown = path.display();
    let bytes = files::read_regular(path, limit).map_err(|e| match e {
        ReadError::Directory { .. } => {
            ToolError::InvalidInput(format!("{e} (`view` lists a directory)"))
        }
        ReadError::TooLarge { .. } => ToolError::NotAllowed(format!(
            "{e}; the editor reads files up to that size, use bash (head, sed -n, grep -n) for bigger ones"
        )),
        ReadError::NotFound { .. } => ToolError::NotFound(e.to_string()),
        ReadError::NotRegular { .. } => ToolError::NotAllowed(e.to_string()),
        ReadError::Io { .. } => ToolError::Io(e.to_string()),
    })?;
    if bytes.contains(&0) {
        return Err(ToolError::NotAllowed(format!(
            "{shown} is a binary file; the editor works on text files only"
        )));
    }
    String::from_utf8(bytes).map_err(|e| {
        ToolError::NotAllowed(format!(
            "{shown} is not UTF-8 text (invalid byte at offset {}); the editor works on UTF-8 text files only",
            e.utf8_error().valid_up_to()
        ))
    })
}

fn view(path: &Path, input: &EditorInput, cap: &ViewCap) -> Result<String, ToolError> {
    if path.is_dir() {
        if input.view_range.is_some() {
            return Err(ToolError::InvalidInput(format!(
                "{} is a directory; `view_range` applies to files only",
                path.display()
            )));
        }
        return Ok(cap.cut(list_directory(path)?, 0, None));
    }
    let text = read_text(path, MAX_VIEW_BYTES)?;
    let lines: Vec<&str> = text.lines().collect();
    let count = lines.len();
    let (first, last) = match input.view_range {
        None => (1, count),
        Some([start, end]) => {
            if start < 1 || start as usize > count.max(1) {
                return Err(ToolError::OutOfRange(format!(
                    "invalid `view_range` [{start}, {end}]: the first line must be between 1 and {count}, the file's last line"
                )));
            }
            if end != -1 && end < start {
                return Err(ToolError::OutOfRange(format!(
                    "invalid `view_range` [{start}, {end}]: the last line must be -1 (the end) or at least the first"
                )));
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
    // Lines past the cap are counted, not formatted: a big file costs no second copy.
    let mut built = out.chars().count();
    let mut unbuilt = 0;
    for (i, line) in lines[first - 1..last].iter().enumerate() {
        let numbered = format!("{:6}\t{line}\n", first + i);
        let chars = numbered.chars().count();
        if built > cap.max {
            unbuilt += chars;
        } else {
            built += chars;
            out.push_str(&numbered);
        }
    }
    if last < count {
        out.push_str(&format!("[lines {}-{count} not shown]\n", last + 1));
    }
    Ok(cap.cut(out, unbuilt, Some((first, count))))
}

/// Lines as `cat -n` shows them, numbered from `first`.
fn numbered(lines: &[&str], first: usize) -> String {
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        out.push_str(&format!("{:6}\t{line}\n", first + i));
    }
    out
}

/// The most characters a `view` returns, and why, for the note on a cut view.
struct ViewCap {
    max: usize,
    why: String,
}

impl ViewCap {
    /// `text` cut to the cap, with a note saying how much was cut (with `unbuilt` more
    /// characters that were never put into `text`) and, for a view of a file from line
    /// `first` of its `count` lines, which `view_range` shows what follows.
    fn cut(&self, text: String, unbuilt: usize, lines: Option<(usize, usize)>) -> String {
        let Some((cut, _)) = text.char_indices().nth(self.max) else {
            return text;
        };
        let kept = &text[..cut];
        let rest = text[cut..].chars().count() + unbuilt;
        let hint = match lines {
            Some((first, count)) => {
                // Whole lines kept: the newlines after the header line's own.
                let whole = kept.matches('\n').count().saturating_sub(1);
                let next = first + whole;
                if whole == 0 {
                    format!(
                        "; the file has {count} lines, and line {first} alone is longer than that: read it in parts with bash (`cut -c`, `head -c`)"
                    )
                } else {
                    format!(
                        "; the file has {count} lines: view a smaller `view_range`, such as [{next}, {}]",
                        (next + whole - 1).min(count)
                    )
                }
            }
            None => String::new(),
        };
        format!(
            "{kept}\n[... {rest} more characters not shown ({}){hint}]",
            self.why
        )
    }
}

/// Files and directories up to two levels below `root`, hidden ones left out, like
/// `find root -maxdepth 2 -not -path '*/.*'`.
fn list_directory(root: &Path) -> Result<String, ToolError> {
    let mut entries = Vec::new();
    collect(root, 2, &mut entries)
        .map_err(|e| ToolError::Io(format!("cannot list {}: {e}", root.display())))?;
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
    fn compute(path: &Path, input: &EditorInput) -> Result<Edit, ToolError> {
        let shown = path.display();
        let command = input.command.name();
        let field = |value: &Option<String>, name: &str| {
            value
                .clone()
                .ok_or_else(|| ToolError::InvalidInput(format!("`{command}` needs `{name}`")))
        };
        match input.command {
            EditorCommand::View => Err(ToolError::InvalidInput("`view` changes nothing".into())),
            EditorCommand::Create => {
                let text = field(&input.file_text, "file_text")?;
                let (target, old) = match std::fs::symlink_metadata(path) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        refuse_steps_through_new_directories(path)?;
                        (path.to_path_buf(), None)
                    }
                    Err(e) => return Err(ToolError::Io(format!("cannot create {shown}: {e}"))),
                    // Only a regular file (or a link to one) is replaced: the rename that
                    // lands the write would replace a device, a FIFO or a broken link too.
                    Ok(_) => {
                        let target = followed(path)?;
                        (target, Some(read_text(path, MAX_EDIT_BYTES)?))
                    }
                };
                let report = match old {
                    Some(_) => format!("File overwritten: {shown}"),
                    None => format!("File created: {shown}"),
                };
                Ok(Edit {
                    target,
                    old,
                    new: text,
                    report,
                })
            }
            EditorCommand::StrReplace => {
                let old_str = field(&input.old_str, "old_str")?;
                let new_str = input.new_str.as_deref().unwrap_or_default();
                if old_str.is_empty() {
                    return Err(ToolError::InvalidInput(
                        "`old_str` is empty; give text that occurs exactly once in the file".into(),
                    ));
                }
                let text = read_text(path, MAX_EDIT_BYTES)?;
                let starts: Vec<usize> = text
                    .match_indices(old_str.as_str())
                    .map(|(at, _)| at)
                    .collect();
                let at = match starts.as_slice() {
                    [at] => *at,
                    [] => {
                        return Err(ToolError::NotFound(format!(
                            "no replacement was made: `old_str` does not occur verbatim in {shown} (check whitespace and indentation)"
                        )));
                    }
                    many => {
                        return Err(ToolError::InvalidInput(format!(
                            "no replacement was made: `old_str` occurs {} times in {shown} ({}); include more surrounding text so it occurs exactly once",
                            many.len(),
                            places(&text, many)
                        )));
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
                    target: followed(path)?,
                    old: Some(text),
                    new,
                    report,
                })
            }
            EditorCommand::Insert => {
                // `text_editor_20250728` models send `insert_text`; older ones `new_str`.
                let new_str = match (input.insert_text.as_deref(), input.new_str.as_deref()) {
                    (Some(text), _) | (None, Some(text)) => text,
                    (None, None) => {
                        return Err(ToolError::InvalidInput(
                            "`insert` needs `insert_text` (the text to insert after `insert_line`)"
                                .into(),
                        ));
                    }
                };
                let Some(after) = input.insert_line else {
                    return Err(ToolError::InvalidInput(
                        "`insert` needs `insert_line` (0 for the top of the file)".into(),
                    ));
                };
                let text = read_text(path, MAX_EDIT_BYTES)?;
                let lines: Vec<&str> = text.split_inclusive('\n').collect();
                let count = lines.len();
                let after = after as usize;
                if after > count {
                    return Err(ToolError::OutOfRange(format!(
                        "invalid `insert_line` {after}: {shown} has {count} lines, so it must be between 0 and {count}"
                    )));
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
                    target: followed(path)?,
                    old: Some(text),
                    new,
                    report,
                })
            }
        }
    }
}

/// Lines of context around the change in an approval's diff.
const DIFF_CONTEXT: usize = 3;
/// The most changed lines (both sides) compared line by line. A line diff's time grows with
/// the product of the sides, and it runs while planning, on the agent's loop: a bigger
/// change is shown as its old lines removed and its new lines added.
const MAX_DIFFED_LINES: usize = 2_000;

/// The unified diff of a write (one hunk: the changed lines between the unchanged start and
/// end of the file, with context), and the lines it adds and removes, in time linear in the
/// file's size.
fn unified_diff(old: &str, new: &str, old_name: &str, new_name: &str) -> (String, usize, usize) {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (a_mid, b_mid) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    if a_mid.is_empty() && b_mid.is_empty() {
        return (String::new(), 0, 0);
    }
    let first = prefix.saturating_sub(DIFF_CONTEXT);
    let mut body: Vec<(char, &str)> = a[first..prefix].iter().map(|l| (' ', *l)).collect();
    if a_mid.len() + b_mid.len() <= MAX_DIFFED_LINES {
        for op in similar::capture_diff_slices(Algorithm::Myers, a_mid, b_mid) {
            for change in op.iter_changes(a_mid, b_mid) {
                let mark = match change.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                };
                body.push((mark, change.value()));
            }
        }
    } else {
        body.extend(a_mid.iter().map(|l| ('-', *l)));
        body.extend(b_mid.iter().map(|l| ('+', *l)));
    }
    let end = a.len() - suffix;
    body.extend(
        a[end..(end + DIFF_CONTEXT).min(a.len())]
            .iter()
            .map(|l| (' ', *l)),
    );

    let count = |marks: &[char]| body.iter().filter(|(m, _)| marks.contains(m)).count();
    let (old_len, new_len) = (count(&[' ', '-']), count(&[' ', '+']));
    // diff(1)'s ranges: `start,length`, the length left out when it is 1, and an empty
    // range starting at the line before it.
    let range = |len: usize| match len {
        0 => format!("{first},0"),
        1 => format!("{}", first + 1),
        _ => format!("{},{len}", first + 1),
    };
    let mut out = format!(
        "--- {old_name}\n+++ {new_name}\n@@ -{} +{} @@\n",
        range(old_len),
        range(new_len)
    );
    for (mark, line) in &body {
        out.push(*mark);
        out.push_str(line);
        if !line.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
    (out, count(&['+']), count(&['-']))
}

/// The 1-based line that byte `at` is on.
fn line_of(text: &str, at: usize) -> usize {
    text[..at].matches('\n').count() + 1
}

/// Where matches start, for the model to tell them apart: "lines 2, 4", or with the column
/// (1-based, in characters) of each when two share a line. The first 20 are named.
fn places(text: &str, starts: &[usize]) -> String {
    const NAMED: usize = 20;
    let at: Vec<(usize, usize)> = starts
        .iter()
        .take(NAMED)
        .map(|&start| {
            let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
            (
                line_of(text, start),
                text[line_start..start].chars().count() + 1,
            )
        })
        .collect();
    let shared = at.windows(2).any(|w| w[0].0 == w[1].0);
    let named: Vec<String> = at
        .iter()
        .map(|(line, column)| match shared {
            true => format!("line {line} column {column}"),
            false => line.to_string(),
        })
        .collect();
    let more = match starts.len().saturating_sub(NAMED) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    match shared {
        true => format!("at {}{more}", named.join(", ")),
        false => format!("lines {}{more}", named.join(", ")),
    }
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

/// The file an existing `path` names, symbolic links followed, so that a write replaces
/// the file a link points to, not the link. A link whose target is missing, or a loop,
/// is refused rather than replaced by a regular file.
fn followed(path: &Path) -> Result<PathBuf, ToolError> {
    std::fs::canonicalize(path).map_err(|e| {
        let shown = path.display();
        match std::fs::read_link(path) {
            Ok(to) if e.kind() == std::io::ErrorKind::NotFound => ToolError::NotAllowed(format!(
                "{shown} is a symbolic link to {}, which does not exist; give the path of the file to create, or remove the link",
                to.display()
            )),
            Ok(_) => ToolError::NotAllowed(format!(
                "{shown} is a symbolic link that cannot be followed: {e}"
            )),
            Err(_) => ToolError::Io(format!("cannot resolve {shown}: {e}")),
        }
    })
}

/// `create_dir_all("a/new/..")` would make `a/new` only to step back out of it, so a path
/// that needs new directories may not go through `..`.
fn refuse_steps_through_new_directories(path: &Path) -> Result<(), ToolError> {
    let parent_exists = path.parent().is_none_or(Path::is_dir);
    if parent_exists || !path.components().any(|c| c == Component::ParentDir) {
        return Ok(());
    }
    Err(ToolError::NotAllowed(format!(
        "{} goes through `..` in directories that do not exist yet; give the path without `..`",
        path.display()
    )))
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
