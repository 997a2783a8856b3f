//! The desktop app. Until its window lands, it points at the CLI, which runs the same core.

fn main() {
    eprintln!(
        "deskhand-app {}: the desktop window is not built yet; run `deskhand ask PROMPT` \
         (target/release/deskhand), which drives the same core.",
        deskhand::VERSION
    );
    std::process::exit(2);
}
