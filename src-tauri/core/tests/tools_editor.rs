//! The text editor tool on real files: every command, every error path, and writes that
//! readers never see half done.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use deskhand::tools::editor::EditorTool;
use deskhand::tools::{Tool, ToolContext, ToolOutput};
use serde_json::{Value, json};
use support::output_text;
use tokio_util::sync::CancellationToken;

async fn run(tool: &EditorTool, input: Value) -> ToolOutput {
    tool.run(
        &input,
        &ToolContext {
            cancel: CancellationToken::new(),
        },
    )
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
        replace.detail["diff"],
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
        create.detail["diff"],
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
        .unwrap_err();
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
