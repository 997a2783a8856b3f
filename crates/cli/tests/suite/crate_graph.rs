//! The crate graph in `docs/architecture.md`, generated from `cargo metadata`, and the rules
//! the seams keep: native libraries in `deskhand-platform` only, Tauri in the app only, the
//! protocol and the store low in the graph. The test fails when the document is stale;
//! `DESKHAND_BLESS_DOCS=1` rewrites it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

const START: &str = "<!-- crate graph: generated from `cargo metadata` by crates/cli/tests/suite/crate_graph.rs; \
                     DESKHAND_BLESS_DOCS=1 cargo test -p deskhand --test all crate_graph:: rewrites it -->";
const END: &str = "<!-- end of the crate graph -->";

/// Crates that link a native library or speak to one platform's desktop: only the platform
/// crate may depend on them (the app has Tauri's own).
const NATIVE: &[&str] = &[
    "xcap",
    "enigo",
    "x11rb",
    "wayland-client",
    "atspi",
    "ashpd",
    "pipewire",
    "xkbcommon",
    "seccompiler",
    "zbus",
];

struct Crate {
    description: String,
    /// Workspace crates it uses (normal dependencies only).
    uses: BTreeSet<String>,
    /// Every other crate it uses.
    external: BTreeSet<String>,
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn crates() -> BTreeMap<String, Crate> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(workspace())
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let names: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    packages
        .iter()
        // The test-only crates: the stand-in server and what every crate's tests share.
        .filter(|p| {
            !["deskhand-standin", "deskhand-test-support"].contains(&p["name"].as_str().unwrap())
        })
        .map(|p| {
            let (mut uses, mut external) = (BTreeSet::new(), BTreeSet::new());
            for dep in p["dependencies"].as_array().unwrap() {
                if !dep["kind"].is_null() {
                    continue;
                }
                let name = dep["name"].as_str().unwrap().to_string();
                if names.contains(&name) {
                    uses.insert(name);
                } else {
                    external.insert(name);
                }
            }
            let description = p["description"].as_str().unwrap_or_default().to_string();
            let name = p["name"].as_str().unwrap().to_string();
            (
                name,
                Crate {
                    description,
                    uses,
                    external,
                },
            )
        })
        .collect()
}

/// Each crate's layer: 0 for a crate that uses no other, else one above the highest it uses.
fn layers(crates: &BTreeMap<String, Crate>) -> BTreeMap<String, usize> {
    fn layer(name: &str, crates: &BTreeMap<String, Crate>, seen: &mut Vec<String>) -> usize {
        assert!(
            !seen.iter().any(|s| s == name),
            "a circle of crates: {seen:?} -> {name}"
        );
        seen.push(name.to_string());
        let depth = crates[name]
            .uses
            .iter()
            .map(|u| layer(u, crates, seen) + 1)
            .max()
            .unwrap_or(0);
        seen.pop();
        depth
    }
    crates
        .keys()
        .map(|name| (name.clone(), layer(name, crates, &mut Vec::new())))
        .collect()
}

fn section(crates: &BTreeMap<String, Crate>) -> String {
    let layers = layers(crates);
    let mut order: Vec<&String> = crates.keys().collect();
    order.sort_by_key(|name| (layers[*name], (*name).clone()));
    let mut out = format!("{START}\n\n| layer | crate | what it is | uses |\n|---|---|---|---|\n");
    for name in &order {
        let krate = &crates[*name];
        let uses: Vec<String> = krate.uses.iter().map(|u| format!("`{u}`")).collect();
        out.push_str(&format!(
            "| {} | `{name}` | {} | {} |\n",
            layers[*name],
            krate.description,
            if uses.is_empty() {
                "—".to_string()
            } else {
                uses.join(", ")
            }
        ));
    }
    out.push_str("\n```mermaid\ngraph BT\n");
    for name in &order {
        for used in &crates[*name].uses {
            out.push_str(&format!("  {name} --> {used}\n"));
        }
    }
    out.push_str("```\n\n");
    out.push_str(END);
    out
}

#[test]
fn the_architecture_document_shows_the_crate_graph_as_it_is() {
    let path = workspace().join("docs/architecture.md");
    let document = std::fs::read_to_string(&path).unwrap();
    let (Some(start), Some(end)) = (document.find(START), document.find(END)) else {
        panic!("docs/architecture.md has no crate graph section (between `{START}` and `{END}`)");
    };
    let now = section(&crates());
    let written = &document[start..end + END.len()];
    if std::env::var_os("DESKHAND_BLESS_DOCS").is_some() {
        let updated = format!(
            "{}{now}{}",
            &document[..start],
            &document[end + END.len()..]
        );
        std::fs::write(&path, updated).unwrap();
        return;
    }
    assert_eq!(
        written, now,
        "docs/architecture.md's crate graph is stale: run \
         `DESKHAND_BLESS_DOCS=1 cargo test -p deskhand --test all crate_graph::`"
    );
}

#[test]
fn native_libraries_and_tauri_stay_behind_their_seams() {
    let crates = crates();
    for (name, krate) in &crates {
        for native in NATIVE {
            if krate.external.contains(*native) {
                assert!(
                    name == "deskhand-platform" || name == "deskhand-app",
                    "{name} depends on {native}: native parts belong in deskhand-platform"
                );
            }
        }
        if krate.external.iter().any(|e| e.starts_with("tauri")) {
            assert_eq!(name, "deskhand-app", "{name} depends on Tauri");
        }
    }
    let only = |name: &str, allowed: &[&str]| {
        let uses: Vec<&str> = crates[name].uses.iter().map(String::as_str).collect();
        assert!(
            uses.iter().all(|u| allowed.contains(u)),
            "{name} uses {uses:?}; it may use only {allowed:?}"
        );
    };
    only("deskhand-protocol", &[]);
    only("deskhand-host", &[]);
    only("deskhand-store", &["deskhand-protocol", "deskhand-host"]);
    only("deskhand-llm", &["deskhand-protocol", "deskhand-host"]);
    only("deskhand-platform", &["deskhand-protocol", "deskhand-host"]);
    // The protocol does no I/O: no runtime, no HTTP, no database.
    for io in ["tokio", "reqwest", "rusqlite", "hyper", "axum"] {
        assert!(
            !crates["deskhand-protocol"].external.contains(io),
            "deskhand-protocol depends on {io}"
        );
    }
}

/// Inside each crate no module may reach back to one that uses it: `scripts/module-graph.py`
/// resolves every `crate::` and `super::` path to its file and lists the circles it finds.
#[test]
fn no_crate_has_a_circle_of_modules() {
    let output = Command::new("python3")
        .arg(workspace().join("scripts/module-graph.py"))
        .arg("--quiet")
        .output()
        .expect("python3 runs scripts/module-graph.py");
    assert!(output.status.success(), "{output:?}");
    let report = String::from_utf8_lossy(&output.stdout);
    let total = report.lines().last().unwrap_or_default();
    assert!(
        total.starts_with("total: ") && total.ends_with(" 0 circles"),
        "circles of modules:\n{report}"
    );
}
