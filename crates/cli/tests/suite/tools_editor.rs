//! The text editor tool on real files: every command, every error path, and writes that
//! readers never see half done.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::support::output_text;
use deskhand_engine::tools::editor::EditorTool;
use deskhand_engine::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

async fn run(tool: &EditorTool, input: Value) -> ToolOutput {
    tool.run(&input, &ToolContext::new(CancellationToken::new()))
        .await
}

fn path_in(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).display().to_string()
}

async fn ok(tool: &EditorTool, input: Value) -> String {
    let output = run(tool, input.clone()).await;
    assert!(!output.is_error, "{input}: {}", output_text(&output));
    output_text(&output)
}

async fn fails(tool: &EditorTool, input: Value) -> String {
    let output = run(tool, input.clone()).await;
    assert!(
        output.is_error,
        "{input} should fail: {}",
        output_text(&output)
    );
    output_text(&output)
}

#[tokio::test]
async fn view_numbers_lines_and_honours_view_range() {
    let dir = tempfile::tempdir().unwrap();
    let file = path_in(&dir, "poem.txt");
    std::fs::write(&file, "one\ntwo\nthree\nfour\nfive\n").unwrap();
    let tool = EditorTool::new(None);

    let whole = ok(&tool, json!({"command": "view", "path": file})).await;
    assert_eq!(
        whole,
        format!(
            "Here's the result of running `cat -n` on {file}:\n     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour\n     5\tfive\n"
        )
    );
    let part = ok(
        &tool,
        json!({"command": "view", "path": file, "view_range": [2, 3]}),
    )
    .await;
    assert!(
        part.ends_with("     2\ttwo\n     3\tthree\n[lines 4-5 not shown]\n"),
        "{part}"
    );
    let to_end = ok(
        &tool,
        json!({"command": "view", "path": file, "view_range": [4, -1]}),
    )
    .await;
    assert!(to_end.ends_with("     4\tfour\n     5\tfive\n"), "{to_end}");

    let bad = fails(
        &tool,
        json!({"command": "view", "path": file, "view_range": [9, 10]}),
    )
    .await;
    assert!(bad.contains("between 1 and 5"), "{bad}");
    let backwards = fails(
        &tool,
        json!({"command": "view", "path": file, "view_range": [3, 2]}),
    )
    .await;
    assert!(
        backwards.contains("-1 (the end) or at least the first"),
        "{backwards}"
    );
}

#[tokio::test]
async fn view_lists_a_directory_two_levels_deep_without_hidden_entries() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/deep/deeper")).unwrap();
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join("README.md"), "hi").unwrap();
    std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
    std::fs::write(root.join("src/deep/too_deep.rs"), "").unwrap();
    std::fs::write(root.join(".env"), "SECRET=1").unwrap();
    let tool = EditorTool::new(None);

    let listing = ok(
        &tool,
        json!({"command": "view", "path": root.display().to_string()}),
    )
    .await;
    let r = root.display();
    assert_eq!(
        listing,
        format!(
            "Here are the files and directories up to 2 levels deep in {r}, excluding hidden items:\n{r}\n{r}/README.md\n{r}/src/\n{r}/src/deep/\n{r}/src/main.rs\n"
        )
    );
    let ranged = fails(
        &tool,
        json!({"command": "view", "path": r.to_string(), "view_range": [1, 2]}),
    )
    .await;
    assert!(ranged.contains("is a directory"), "{ranged}");
}

#[tokio::test]
async fn max_characters_cuts_a_view_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let file = path_in(&dir, "long.txt");
    std::fs::write(&file, "x".repeat(5_000)).unwrap();
    let tool = EditorTool::new(Some(300));
    assert_eq!(
        tool.definition().anthropic.unwrap().definition,
        json!({"type": "text_editor_20250728", "name": "str_replace_based_edit_tool", "max_characters": 300})
    );
    let shown = ok(&tool, json!({"command": "view", "path": file})).await;
    let (kept, note) = shown.split_once("\n[... ").unwrap();
    assert_eq!(kept.chars().count(), 300);
    assert!(
        note.contains("more characters not shown (max_characters is 300)"),
        "{note}"
    );
    // One line longer than the cap: no `view_range` helps, and the note says so.
    assert!(
        note.ends_with("; the file has 1 lines, and line 1 alone is longer than that: read it in parts with bash (`cut -c`, `head -c`)]"),
        "{note}"
    );
}

#[tokio::test]
async fn create_writes_new_files_and_parent_directories_and_overwrites() {
    let dir = tempfile::tempdir().unwrap();
    let file = path_in(&dir, "new/sub/hello.py");
    let tool = EditorTool::new(None);
    let created = ok(
        &tool,
        json!({"command": "create", "path": file, "file_text": "print('hi')\n"}),
    )
    .await;
    assert_eq!(created, format!("File created: {file}"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "print('hi')\n");
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_ne!(
        mode & 0o044,
        0,
        "a new file is readable by others as usual, not 0600: {mode:o}"
    );

    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o750)).unwrap();
    let again = ok(
        &tool,
        json!({"command": "create", "path": file, "file_text": "print('bye')\n"}),
    )
    .await;
    assert_eq!(again, format!("File overwritten: {file}"));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "print('bye')\n");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o750, "an existing file keeps its permissions");
}

#[tokio::test]
async fn str_replace_needs_exactly_one_occurrence() {
    let dir = tempfile::tempdir().unwrap();
    let file = path_in(&dir, "config.toml");
    let original = "[a]\nvalue = 1\n[b]\nvalue = 1\nname = \"x\"\n";
    std::fs::write(&file, original).unwrap();
    let tool = EditorTool::new(None);

    let many = fails(
        &tool,
        json!({"command": "str_replace", "path": file, "old_str": "value = 1", "new_str": "value = 2"}),
    )
    .await;
    assert!(many.contains("occurs 2 times"), "{many}");
    assert!(many.contains("(lines 2, 4)"), "{many}");
    let none = fails(
        &tool,
        json!({"command": "str_replace", "path": file, "old_str": "value = 3", "new_str": ""}),
    )
    .await;
    assert!(none.contains("does not occur verbatim"), "{none}");
    let empty = fails(
        &tool,
        json!({"command": "str_replace", "path": file, "old_str": "", "new_str": "x"}),
    )
    .await;
    assert!(empty.contains("`old_str` is empty"), "{empty}");
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        original,
        "failed edits change nothing"
    );

    let edited = ok(
        &tool,
        json!({"command": "str_replace", "path": file, "old_str": "[b]\nvalue = 1", "new_str": "[b]\nvalue = 2\nextra = true"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "[a]\nvalue = 1\n[b]\nvalue = 2\nextra = true\nname = \"x\"\n"
    );
    assert!(edited.starts_with(&format!("The file {file} has been edited.")));
    assert!(
        edited.contains("     4\tvalue = 2\n     5\textra = true\n"),
        "{edited}"
    );

    // `new_str` left out deletes the text.
    ok(
        &tool,
        json!({"command": "str_replace", "path": file, "old_str": "extra = true\n"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "[a]\nvalue = 1\n[b]\nvalue = 2\nname = \"x\"\n"
    );
}

#[tokio::test]
async fn insert_goes_after_the_given_line_with_zero_for_the_top() {
    let dir = tempfile::tempdir().unwrap();
    let file = path_in(&dir, "list.txt");
    std::fs::write(&file, "b\nc").unwrap();
    let tool = EditorTool::new(None);
    ok(
        &tool,
        json!({"command": "insert", "path": file, "insert_line": 0, "new_str": "a"}),
    )
    .await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a\nb\nc");
    ok(
        &tool,
        json!({"command": "insert", "path": file, "insert_line": 2, "new_str": "b2\nb3\n"}),
    )
    .await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a\nb\nb2\nb3\nc");
    let shown = ok(
        &tool,
        json!({"command": "insert", "path": file, "insert_line": 5, "new_str": "d"}),
    )
    .await;
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "a\nb\nb2\nb3\nc\nd"
    );
    assert!(shown.contains("     6\td\n"), "{shown}");

    let past = fails(
        &tool,
        json!({"command": "insert", "path": file, "insert_line": 9, "new_str": "x"}),
    )
    .await;
    assert!(
        past.contains("has 6 lines, so it must be between 0 and 6"),
        "{past}"
    );
    let missing = fails(
        &tool,
        json!({"command": "insert", "path": file, "new_str": "x"}),
    )
    .await;
    assert!(missing.contains("needs `insert_line`"), "{missing}");
}

#[tokio::test]
async fn bad_paths_and_files_get_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let binary = path_in(&dir, "image.bin");
    std::fs::write(&binary, b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR").unwrap();
    let latin1 = path_in(&dir, "latin1.txt");
    std::fs::write(&latin1, b"caf\xe9\n").unwrap();
    let missing = path_in(&dir, "nope.txt");
    let directory = dir.path().display().to_string();
    let tool = EditorTool::new(None);

    let relative = fails(&tool, json!({"command": "view", "path": "src/main.rs"})).await;
    assert!(
        relative.contains("`src/main.rs` is not an absolute path"),
        "{relative}"
    );
    let relative_write = fails(
        &tool,
        json!({"command": "create", "path": "notes.txt", "file_text": "x"}),
    )
    .await;
    assert!(relative_write.contains("not an absolute path"));
    assert!(!Path::new("notes.txt").exists());

    for command in [
        json!({"command": "view", "path": missing}),
        json!({"command": "str_replace", "path": missing, "old_str": "a", "new_str": "b"}),
        json!({"command": "insert", "path": missing, "insert_line": 0, "new_str": "b"}),
    ] {
        let error = fails(&tool, command).await;
        assert_eq!(error, format!("{missing} does not exist"));
    }
    for command in [
        json!({"command": "create", "path": directory, "file_text": "x"}),
        json!({"command": "str_replace", "path": directory, "old_str": "a", "new_str": "b"}),
        json!({"command": "insert", "path": directory, "insert_line": 0, "new_str": "b"}),
    ] {
        let error = fails(&tool, command).await;
        assert!(error.contains("is a directory, not a file"), "{error}");
    }
    let error = fails(&tool, json!({"command": "view", "path": binary})).await;
    assert!(error.contains("is a binary file"), "{error}");
    let error = fails(
        &tool,
        json!({"command": "str_replace", "path": binary, "old_str": "PNG", "new_str": "GIF"}),
    )
    .await;
    assert!(error.contains("is a binary file"), "{error}");
    let error = fails(&tool, json!({"command": "view", "path": latin1})).await;
    assert!(error.contains("is not UTF-8 text"), "{error}");
    let error = fails(
        &tool,
        json!({"command": "create", "path": path_in(&dir, "x")}),
    )
    .await;
    assert!(error.contains("`create` needs `file_text`"), "{error}");
    assert_eq!(
        std::fs::read(&binary).unwrap(),
        b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"
    );
}

#[tokio::test]
async fn view_is_read_only_and_writes_are_planned_as_a_diff() {
    let dir = tempfile::tempdir().unwrap();
    let file = path_in(&dir, "app.py");
    std::fs::write(&file, "def f():\n    return 1\n").unwrap();
    let tool = EditorTool::new(None);

    let view = tool
        .plan(&json!({"command": "view", "path": file}))
        .unwrap();
    assert!(view.read_only);
    assert_eq!(view.kind, "editor.view");

    let replace = tool
        .plan(&json!({"command": "str_replace", "path": file, "old_str": "return 1", "new_str": "return 2"}))
        .unwrap();
    assert!(!replace.read_only);
    assert_eq!(replace.kind, "editor.str_replace");
    assert_eq!(replace.summary, format!("str_replace {file} (+1 -1 lines)"));
    assert_eq!(
        replace.detail.diff().unwrap(),
        format!(
            "--- {file}\n+++ {file}\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"
        )
    );
    let create = tool
        .plan(
            &json!({"command": "create", "path": path_in(&dir, "new.txt"), "file_text": "hello\n"}),
        )
        .unwrap();
    assert_eq!(
        create.detail.diff().unwrap(),
        format!(
            "--- /dev/null\n+++ {}\n@@ -0,0 +1 @@\n+hello\n",
            path_in(&dir, "new.txt")
        )
    );
    assert_eq!(create.kind, "editor.create");
    // Planning writes nothing, and a plan that cannot apply is refused before approval.
    assert!(!dir.path().join("new.txt").exists());
    assert_eq!(
        std::fs::read_to_string(&file).unwrap(),
        "def f():\n    return 1\n"
    );
    let refused = tool
        .plan(&json!({"command": "str_replace", "path": file, "old_str": "nope", "new_str": "x"}))
        .unwrap_err()
        .to_string();
    assert!(refused.contains("does not occur verbatim"), "{refused}");
}

/// A reader that watches the file during many rewrites only ever sees a whole old or a
/// whole new version, and no temp file is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_are_atomic() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("big.txt");
    let a = "a".repeat(2_000_000) + "\n";
    let b = "b".repeat(2_000_000) + "\n";
    std::fs::write(&file, &a).unwrap();
    let tool = EditorTool::new(None);

    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (stop, file) = (stop.clone(), file.clone());
        let (a, b) = (a.clone(), b.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(Ordering::Relaxed) {
                let seen = std::fs::read_to_string(&file).unwrap();
                assert!(
                    seen == a || seen == b,
                    "a partial file of {} bytes",
                    seen.len()
                );
                reads += 1;
            }
            reads
        })
    };
    for i in 0..20 {
        let text = if i % 2 == 0 { &b } else { &a };
        ok(
            &tool,
            json!({"command": "create", "path": file.display().to_string(), "file_text": text}),
        )
        .await;
    }
    stop.store(true, Ordering::Relaxed);
    let reads = reader.join().expect("the reader saw only whole files");
    assert!(reads > 0);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), a);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["big.txt"]);
}

#[tokio::test]
async fn a_symbolic_link_is_followed_not_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("real.txt");
    let link = dir.path().join("link.txt");
    std::fs::write(&target, "old\n").unwrap();
    std::os::unix::fs::symlink(&target, &link).unwrap();
    let tool = EditorTool::new(None);
    ok(
        &tool,
        json!({"command": "str_replace", "path": link.display().to_string(), "old_str": "old", "new_str": "new"}),
    )
    .await;
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "new\n");
}

/// What the model sent with `text_editor_20250728` (`insert_text`) and before (`new_str`).
#[tokio::test]
async fn insert_takes_insert_text_and_new_str() {
    let dir = tempfile::tempdir().unwrap();
    let file = path_in(&dir, "list.txt");
    std::fs::write(&file, "a\nc\n").unwrap();
    let tool = EditorTool::new(None);
    ok(
        &tool,
        json!({"command": "insert", "path": file, "insert_line": 1, "insert_text": "b"}),
    )
    .await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a\nb\nc\n");
    ok(
        &tool,
        json!({"command": "insert", "path": file, "insert_line": 3, "new_str": "d"}),
    )
    .await;
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "a\nb\nc\nd\n");
    let missing = fails(
        &tool,
        json!({"command": "insert", "path": file, "insert_line": 0}),
    )
    .await;
    assert!(
        missing.contains("`insert` needs `insert_text`"),
        "{missing}"
    );
    let schema = tool.definition().input_schema;
    assert_eq!(schema["properties"]["insert_text"]["type"], "string");
}

#[tokio::test]
async fn str_replace_says_where_each_match_is() {
    let dir = tempfile::tempdir().unwrap();
    let file = path_in(&dir, "same_line.txt");
    std::fs::write(&file, "x = 1; y = 1\nz = 1\n").unwrap();
    let tool = EditorTool::new(None);
    let many = fails(
        &tool,
        json!({"command": "str_replace", "path": file, "old_str": "= 1", "new_str": "= 2"}),
    )
    .await;
    assert!(
        many.contains("occurs 3 times")
            && many.contains("(at line 1 column 3, line 1 column 10, line 2 column 3)"),
        "{many}"
    );
}

/// A view with no `max_characters` is still cut, and the note says how long the file is
/// and which `view_range` shows more.
#[tokio::test]
async fn a_view_is_cut_by_default_with_the_line_count_and_a_view_range() {
    let dir = tempfile::tempdir().unwrap();
    let file = path_in(&dir, "long.txt");
    let text: String = (1..=5_000).map(|i| format!("line number {i}\n")).collect();
    std::fs::write(&file, &text).unwrap();
    let tool = EditorTool::new(None);
    let shown = ok(&tool, json!({"command": "view", "path": file})).await;
    let (kept, note) = shown.split_once("\n[... ").unwrap();
    assert_eq!(
        kept.chars().count(),
        deskhand_engine::tools::editor::DEFAULT_VIEW_CHARACTERS
    );
    assert!(
        note.contains("more characters not shown (a view shows at most 20000 characters)"),
        "{note}"
    );
    // The last whole line kept, then the range that follows it.
    let last_whole = kept.lines().rev().nth(1).unwrap();
    let last: usize = last_whole
        .split('\t')
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(
        note.contains(&format!(
            "the file has 5000 lines: view a smaller `view_range`, such as [{}, ",
            last + 1
        )),
        "{note}"
    );
    let part = ok(
        &tool,
        json!({"command": "view", "path": file, "view_range": [4990, -1]}),
    )
    .await;
    assert!(part.ends_with("  5000\tline number 5000\n"), "{part}");
}

/// `create` replaces regular files only: a device node, a symbolic link whose target is
/// missing and a link loop are left as they are, with a message naming what they are.
#[tokio::test]
async fn create_never_replaces_a_device_a_broken_link_or_a_link_loop() {
    use std::os::unix::fs::FileTypeExt as _;
    let dir = tempfile::tempdir().unwrap();
    let tool = EditorTool::new(None);
    let dangling = dir.path().join("dangling");
    std::os::unix::fs::symlink(dir.path().join("missing.txt"), &dangling).unwrap();
    let a = dir.path().join("loop_a");
    let b = dir.path().join("loop_b");
    std::os::unix::fs::symlink(&b, &a).unwrap();
    std::os::unix::fs::symlink(&a, &b).unwrap();
    for (link, expected) in [
        (&dangling, "which does not exist"),
        (&a, "is a symbolic link that cannot be followed"),
    ] {
        let error = fails(
            &tool,
            json!({"command": "create", "path": link.display().to_string(), "file_text": "x"}),
        )
        .await;
        assert!(error.contains(expected), "{error}");
        assert!(
            std::fs::symlink_metadata(link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }
    assert!(!dir.path().join("missing.txt").exists());

    // A device node (root can make one; /dev/null's numbers, in the temp directory).
    let device = dir.path().join("null");
    let c = std::ffi::CString::new(device.to_str().unwrap()).unwrap();
    if unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) } == 0 {
        let error = fails(
            &tool,
            json!({"command": "create", "path": device.display().to_string(), "file_text": "x"}),
        )
        .await;
        assert!(
            error.ends_with("is a character device, not a regular file"),
            "{error}"
        );
        assert!(
            std::fs::symlink_metadata(&device)
                .unwrap()
                .file_type()
                .is_char_device()
        );
    } else {
        eprintln!("the device case needs root: skipped");
    }
}

#[tokio::test]
async fn create_through_dot_dot_makes_no_directory_on_the_way() {
    let dir = tempfile::tempdir().unwrap();
    let tool = EditorTool::new(None);
    let path = format!("{}/new/../b.txt", dir.path().display());
    let error = fails(
        &tool,
        json!({"command": "create", "path": path, "file_text": "x"}),
    )
    .await;
    assert!(error.contains("goes through `..`"), "{error}");
    assert!(!dir.path().join("new").exists());
    assert!(!dir.path().join("b.txt").exists());
}

/// A stop that comes before the write means nothing is written, and the answer says why.
#[tokio::test]
async fn a_stop_before_the_write_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let file = path_in(&dir, "never.txt");
    let tool = EditorTool::new(None);
    let cancel = CancellationToken::new();
    cancel.cancel();
    let output = tool
        .run(
            &json!({"command": "create", "path": file, "file_text": "x"}),
            &ToolContext::new(cancel),
        )
        .await;
    assert!(output.is_error);
    assert_eq!(output_text(&output), "cancelled by the user");
    assert!(!Path::new(&file).exists());
}

/// Each error names its cause once (no "Is a directory (os error 21): Is a directory").
#[tokio::test]
async fn each_error_says_its_cause_once() {
    let dir = tempfile::tempdir().unwrap();
    let file = path_in(&dir, "plain.txt");
    std::fs::write(&file, "x\n").unwrap();
    let tool = EditorTool::new(None);
    for input in [
        json!({"command": "create", "path": format!("{file}/below.txt"), "file_text": "x"}),
        json!({"command": "view", "path": format!("{file}/below.txt")}),
        json!({"command": "create", "path": dir.path().display().to_string(), "file_text": "x"}),
    ] {
        let error = fails(&tool, input.clone()).await;
        let parts: Vec<&str> = error.split([':', ';', '(']).map(str::trim).collect();
        for (i, part) in parts.iter().enumerate() {
            assert!(
                part.len() < 8 || !parts[i + 1..].contains(part),
                "{input}: `{part}` is said twice in `{error}`"
            );
        }
    }
}

// Hostile files, each in a child process with its peak memory and time measured (see
// crate::support::rss): a device that never ends, a FIFO with no writer, a 2 GB sparse file, a
// 50 MB file, and an edit of /dev/zero planned before any approval.

const HOSTILE_LIMIT: std::time::Duration = std::time::Duration::from_secs(20);
const HOSTILE_RSS_MB: f64 = 300.0;

fn hostile(name: &str) {
    crate::support::rss::assert_bounded(module_path!(), name, HOSTILE_LIMIT, HOSTILE_RSS_MB);
}

fn block_on<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

#[test]
fn view_of_dev_zero_is_refused_in_bounded_memory() {
    hostile("child_view_dev_zero");
}

#[test]
#[ignore = "run by view_of_dev_zero_is_refused_in_bounded_memory in a child process"]
fn child_view_dev_zero() {
    let Some(_peak) = crate::support::rss::child() else {
        return;
    };
    let tool = EditorTool::new(None);
    let error = block_on(fails(
        &tool,
        json!({"command": "view", "path": "/dev/zero"}),
    ));
    assert_eq!(error, "/dev/zero is a character device, not a regular file");
}

#[test]
fn an_edit_of_dev_zero_is_refused_while_planning_in_bounded_memory() {
    hostile("child_plan_dev_zero");
}

#[test]
#[ignore = "run by an_edit_of_dev_zero_is_refused_while_planning_in_bounded_memory in a child process"]
fn child_plan_dev_zero() {
    let Some(_peak) = crate::support::rss::child() else {
        return;
    };
    let tool = EditorTool::new(None);
    for input in [
        json!({"command": "str_replace", "path": "/dev/zero", "old_str": "a", "new_str": "b"}),
        json!({"command": "insert", "path": "/dev/zero", "insert_line": 0, "insert_text": "b"}),
        json!({"command": "create", "path": "/dev/zero", "file_text": "b"}),
    ] {
        let error = tool.plan(&input).unwrap_err().to_string();
        assert!(
            error.ends_with("is a character device, not a regular file"),
            "{error}"
        );
    }
}

#[test]
fn view_of_a_fifo_is_refused_without_waiting() {
    hostile("child_view_fifo");
}

#[test]
#[ignore = "run by view_of_a_fifo_is_refused_without_waiting in a child process"]
fn child_view_fifo() {
    let Some(_peak) = crate::support::rss::child() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let tool = EditorTool::new(None);
    let path = fifo.display().to_string();
    let started = std::time::Instant::now();
    for input in [
        json!({"command": "view", "path": path}),
        json!({"command": "create", "path": path, "file_text": "x"}),
    ] {
        let error = block_on(fails(&tool, input));
        assert!(
            error.ends_with("is a named pipe (FIFO), not a regular file"),
            "{error}"
        );
    }
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn view_of_a_2_gb_sparse_file_is_refused_before_reading() {
    hostile("child_view_sparse");
}

#[test]
#[ignore = "run by view_of_a_2_gb_sparse_file_is_refused_before_reading in a child process"]
fn child_view_sparse() {
    let Some(_peak) = crate::support::rss::child() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sparse.bin");
    std::fs::File::create(&path)
        .unwrap()
        .set_len(2 << 30)
        .unwrap();
    let tool = EditorTool::new(None);
    let started = std::time::Instant::now();
    let error = block_on(fails(
        &tool,
        json!({"command": "view", "path": path.display().to_string()}),
    ));
    assert!(
        error.contains("is 2147483648 bytes; the limit is"),
        "{error}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
}

#[test]
fn view_of_a_50_mb_file_is_cut_in_bounded_memory() {
    hostile("child_view_50_mb");
}

#[test]
#[ignore = "run by view_of_a_50_mb_file_is_cut_in_bounded_memory in a child process"]
fn child_view_50_mb() {
    let Some(_peak) = crate::support::rss::child() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.txt");
    let line = "x".repeat(99) + "\n";
    std::fs::write(&path, line.repeat(500_000)).unwrap();
    let tool = EditorTool::new(None);
    let shown = block_on(ok(
        &tool,
        json!({"command": "view", "path": path.display().to_string()}),
    ));
    assert!(shown.len() < 25_000, "{} bytes", shown.len());
    assert!(
        shown.contains("the file has 500000 lines"),
        "{}",
        &shown[shown.len() - 300..]
    );
}

/// Planning runs before the approval, on the agent's loop: a write that replaces every line
/// of a big file must not cost a line diff's quadratic time (it took minutes).
#[test]
fn planning_a_rewrite_of_a_big_file_takes_bounded_time() {
    let dir = tempfile::tempdir().unwrap();
    let file = path_in(&dir, "big.txt");
    let lines = 60_000;
    let old: String = (0..lines).map(|i| format!("alpha line {i}\n")).collect();
    let new: String = (0..lines).map(|i| format!("beta line {i}\n")).collect();
    std::fs::write(&file, &old).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let input = json!({"command": "create", "path": file, "file_text": new});
    std::thread::spawn(move || {
        let _ = tx.send(EditorTool::new(None).plan(&input));
    });
    let plan = rx
        .recv_timeout(std::time::Duration::from_secs(5))
        .expect("the plan within 5 s")
        .unwrap();
    assert_eq!(
        plan.summary,
        format!("create {file} (+{lines} -{lines} lines)")
    );
    let diff = plan.detail.diff().unwrap();
    assert!(
        diff.starts_with(&format!(
            "--- {file}\n+++ {file}\n@@ -1,{lines} +1,{lines} @@\n-alpha line 0\n-alpha line 1\n"
        )),
        "{}",
        &diff[..200]
    );
    assert!(diff.ends_with("+beta line 59998\n+beta line 59999\n"));
}

/// A change in the middle of a file is shown with three lines of context, equal lines
/// inside the change as context too, and line numbers that count from the file's top.
#[test]
fn a_planned_diff_shows_context_and_line_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let file = path_in(&dir, "mid.txt");
    let old: String = (1..=20).map(|i| format!("{i}\n")).collect();
    std::fs::write(&file, &old).unwrap();
    let plan = EditorTool::new(None)
        .plan(&json!({"command": "str_replace", "path": file, "old_str": "10\n11\n12\n", "new_str": "ten\n11\ntwelve\nmore\n"}))
        .unwrap();
    assert_eq!(
        plan.detail.diff().unwrap(),
        format!(
            "--- {file}\n+++ {file}\n@@ -7,9 +7,10 @@\n 7\n 8\n 9\n-10\n+ten\n 11\n-12\n+twelve\n+more\n 13\n 14\n 15\n"
        )
    );
    assert_eq!(plan.summary, format!("str_replace {file} (+3 -2 lines)"));
    // No newline at the end, said as diff(1) says it.
    let bare = path_in(&dir, "bare.txt");
    std::fs::write(&bare, "a\nb").unwrap();
    let plan = EditorTool::new(None)
        .plan(&json!({"command": "str_replace", "path": bare, "old_str": "b", "new_str": "c"}))
        .unwrap();
    assert_eq!(
        plan.detail.diff().unwrap(),
        format!(
            "--- {bare}\n+++ {bare}\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        )
    );
}
