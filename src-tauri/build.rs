//! Generates the Tauri context. The repository root is the Tauri directory, so the window's
//! capabilities live in `src-tauri/capabilities`; every IPC command gets an `allow-<name>`
//! permission, and a command no capability grants cannot be called.

include!("src/commands/list.rs");

fn main() {
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .capabilities_path_pattern("./src-tauri/capabilities/**/*")
            .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri-build failed");
}
