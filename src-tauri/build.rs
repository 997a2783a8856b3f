//! Generates the Tauri context. The repository root is the Tauri directory, so the window's
//! capabilities live in `src-tauri/capabilities`; every IPC command gets an `allow-<name>`
//! permission, and a command no capability grants cannot be called.

include!("src/commands/list.rs");

#[expect(clippy::expect_used, reason = "a build script fails by panicking")]
fn main() {
    // The built app embeds the frontend: a rebuilt `ui/dist` must rebuild the app, which
    // tauri-build does not ask cargo for (a warm build kept embedding the old page).
    println!("cargo:rerun-if-changed=ui/dist");
    tauri_build::try_build(
        tauri_build::Attributes::new()
            .capabilities_path_pattern("./src-tauri/capabilities/**/*")
            .app_manifest(tauri_build::AppManifest::new().commands(COMMANDS)),
    )
    .expect("tauri-build failed");
}
