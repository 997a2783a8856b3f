//! The window's TypeScript types (`ui/src/lib/types.ts`), generated from the Rust types that
//! cross the IPC boundary, so the two cannot drift. The test below fails when the file is
//! stale; `DESKHAND_BLESS_TYPES=1 cargo test -p deskhand-app --lib typescript` writes it.

use std::any::TypeId;
use std::collections::{BTreeMap, HashSet};

use ts_rs::{TS, TypeVisitor};

/// Every type in the file, found from these by what they use.
fn roots(visit: &mut Declarations) {
    use deskhand_engine::agent::stall::StallAnswer;
    use deskhand_engine::agent::verify::SavedCheck;
    use deskhand_engine::agent::{AgentEvent, ApprovalPolicy, Decision};
    use deskhand_engine::desktop::DesktopChoice;
    use deskhand_engine::desktop::takeover::TakeOverInput;
    use deskhand_engine::memory::Note;
    use deskhand_engine::store::{LoadedSession, SessionHit};
    use deskhand_engine::tasks::{TaskInfo, WindowUpdate};
    visit.visit::<AgentEvent>();
    visit.visit::<WindowUpdate>();
    visit.visit::<deskhand_engine::tools::ActionPlan>();
    visit.visit::<ApprovalPolicy>();
    visit.visit::<Decision>();
    visit.visit::<SavedCheck>();
    visit.visit::<StallAnswer>();
    visit.visit::<DesktopChoice>();
    visit.visit::<TakeOverInput>();
    visit.visit::<Note>();
    visit.visit::<LoadedSession>();
    visit.visit::<SessionHit>();
    visit.visit::<TaskInfo>();
    visit.visit::<deskhand_engine::schedules::Schedule>();
    visit.visit::<crate::config::WindowSettings>();
    visit.visit::<crate::config::ProviderInfo>();
    visit.visit::<crate::commands::settings::MonitorInfo>();
    visit.visit::<crate::keys::KeyInfo>();
    visit.visit::<crate::error::IpcError>();
    visit.visit::<crate::images::AttachedImage>();
    visit.visit::<crate::images::AttachmentRef>();
    visit.visit::<crate::commands::agent_desktop::Watching>();
}

/// The declarations of the types visited and of every type they use, by name.
#[derive(Default)]
struct Declarations {
    seen: HashSet<TypeId>,
    by_name: BTreeMap<String, String>,
    /// Each type's name in the file by its Rust name (`Origin` is `TaskOrigin`); `None` for
    /// a Rust name two of the types share.
    names: BTreeMap<String, Option<String>>,
}

impl TypeVisitor for Declarations {
    fn visit<T: TS + 'static + ?Sized>(&mut self) {
        if T::output_path().is_none() || !self.seen.insert(TypeId::of::<T>()) {
            return;
        }
        let path = std::any::type_name::<T>();
        let rust = path.split('<').next().unwrap_or(path).rsplit("::").next();
        self.names
            .entry(rust.unwrap_or(path).to_string())
            .and_modify(|name| *name = None)
            .or_insert_with(|| Some(T::ident()));
        let docs = T::docs()
            .map(|docs| format!("{docs}\n"))
            .unwrap_or_default();
        let previous = self
            .by_name
            .insert(T::ident(), format!("{docs}export {}", T::decl()));
        assert!(previous.is_none(), "two types are named {}", T::ident());
        T::visit_dependencies(self);
    }
}

const HEADER: &str = "\
// Generated from the Rust types by src-tauri/src/typescript.rs: do not edit. To change a type,
// change it in Rust and run `DESKHAND_BLESS_TYPES=1 cargo test -p deskhand-app --lib typescript`.
// Integers are numbers: the values the window sees stay far below 2^53.
";

/// The name in the file of each Rust type it declares, by the Rust type's own name
/// (`None`: two types have that name).
pub(crate) fn names() -> BTreeMap<String, Option<String>> {
    let mut declarations = Declarations::default();
    roots(&mut declarations);
    declarations.names
}

/// The whole file.
fn types_ts() -> String {
    let mut declarations = Declarations::default();
    roots(&mut declarations);
    let body = declarations
        .by_name
        .into_values()
        .collect::<Vec<_>>()
        .join("\n\n")
        .replace("bigint", "number");
    format!("{HEADER}\n{body}\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_windows_typescript_types_are_generated_from_the_rust_types() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/src/lib/types.ts");
        let generated = types_ts();
        deskhand_test_support::assert_generated(
            &path,
            &generated,
            "DESKHAND_BLESS_TYPES",
            "cargo test -p deskhand-app --lib typescript",
        );
    }
}
