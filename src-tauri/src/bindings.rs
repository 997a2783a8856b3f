//! The window's IPC bindings (`ui/src/lib/commands.ts`): one typed function per
//! `#[tauri::command]` in `src-tauri/src/commands/`, generated from the functions' signatures
//! (read with syn) and the names `typescript` gives their types, so the window cannot call a
//! command by a wrong name, with wrong arguments or expecting another answer. The tests below
//! fail when the file is stale, and when `generate_handler!` or `commands::COMMANDS` do not
//! name exactly these commands; `DESKHAND_BLESS_TYPES=1 cargo test -p deskhand-app --lib
//! typescript` writes it (with `types.ts`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::punctuated::Punctuated;
use syn::visit::Visit;
use syn::{FnArg, GenericArgument, Item, Pat, PathArguments, ReturnType, Token, Type};

/// Arguments Tauri fills in itself: the page never sends them.
const INJECTED: [&str; 5] = ["State", "AppHandle", "Window", "WebviewWindow", "Webview"];

/// One command, as the page calls it.
struct Command {
    /// The file under `commands/` it is in, without `.rs`.
    module: String,
    name: String,
    docs: Vec<String>,
    args: Args,
    /// The TypeScript type the call resolves with.
    answer: String,
}

enum Args {
    /// `(name in JavaScript, TypeScript type)`, in order.
    Named(Vec<(String, String)>),
    /// The request's body is the bytes themselves (a `tauri::ipc::Request` argument).
    Raw,
}

/// What the file imports.
#[derive(Default)]
struct Uses {
    types: BTreeSet<String>,
    channel: bool,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src-tauri/src")
}

/// Every command, file by file (by name), in the order each file has them.
fn commands(uses: &mut Uses) -> Vec<Command> {
    let names = crate::typescript::names();
    let mut files: Vec<PathBuf> = std::fs::read_dir(src().join("commands"))
        .expect("src-tauri/src/commands")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    let mut commands = Vec::new();
    let mut unreadable = Vec::new();
    for file in files {
        let module = file.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&file).unwrap();
        let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        for item in parsed.items {
            let Item::Fn(function) = item else { continue };
            if !function.attrs.iter().any(is_command) {
                continue;
            }
            match command(&module, &function, &names, uses) {
                Ok(command) => commands.push(command),
                Err(why) => unreadable.push(format!("{module}::{}: {why}", function.sig.ident)),
            }
        }
    }
    assert!(unreadable.is_empty(), "{}", unreadable.join("\n"));
    commands
}

/// `#[tauri::command]`, without options: one (`rename_all`, `async`) would change how the
/// page calls it, which this generator would have to learn first.
fn is_command(attr: &syn::Attribute) -> bool {
    let path = attr.path();
    let is = path.segments.len() == 2
        && path.segments[0].ident == "tauri"
        && path.segments[1].ident == "command";
    assert!(
        !is || matches!(attr.meta, syn::Meta::Path(_)),
        "a #[tauri::command] with options: teach src-tauri/src/bindings.rs what they do"
    );
    is
}

fn command(
    module: &str,
    function: &syn::ItemFn,
    names: &BTreeMap<String, Option<String>>,
    uses: &mut Uses,
) -> Result<Command, String> {
    let mut named = Vec::new();
    let mut raw = false;
    for input in &function.sig.inputs {
        let FnArg::Typed(arg) = input else {
            return Err("a command takes no `self`".into());
        };
        let ident = last_ident(&arg.ty);
        if ident.as_deref().is_some_and(|i| INJECTED.contains(&i)) {
            continue;
        }
        if ident.as_deref() == Some("Request") {
            raw = true;
            continue;
        }
        let Pat::Ident(name) = &*arg.pat else {
            return Err("an argument that is not a plain name".into());
        };
        let name = camel_case(&name.ident.to_string());
        named.push((name, typescript(&arg.ty, names, uses)?));
    }
    let args = match (raw, named.is_empty()) {
        (false, _) => Args::Named(named),
        (true, true) => Args::Raw,
        (true, false) => return Err("a raw body and named arguments at once".into()),
    };
    let answer = match &function.sig.output {
        ReturnType::Default => "void".to_string(),
        ReturnType::Type(_, ty) => {
            let ok = match last_ident(ty).as_deref() {
                Some("IpcResult" | "Result") => generic(ty, 0)?,
                _ => ty,
            };
            match ok {
                Type::Tuple(unit) if unit.elems.is_empty() => "void".to_string(),
                ty => typescript(ty, names, uses)?,
            }
        }
    };
    let docs = function
        .attrs
        .iter()
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(doc) if doc.path.is_ident("doc") => match &doc.value {
                syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(text),
                    ..
                }) => Some(text.value()),
                _ => None,
            },
            _ => None,
        })
        .collect();
    Ok(Command {
        module: module.to_string(),
        name: function.sig.ident.to_string(),
        docs,
        args,
        answer,
    })
}

fn last_ident(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(path) => path.path.segments.last().map(|s| s.ident.to_string()),
        Type::Reference(reference) => last_ident(&reference.elem),
        _ => None,
    }
}

/// The `index`th type argument of `ty` (`T` of `Option<T>`).
fn generic(ty: &Type, index: usize) -> Result<&Type, String> {
    let Type::Path(path) = ty else {
        return Err("a type without arguments".into());
    };
    let Some(PathArguments::AngleBracketed(args)) = path.path.segments.last().map(|s| &s.arguments)
    else {
        return Err("a type without arguments".into());
    };
    args.args
        .iter()
        .filter_map(|arg| match arg {
            GenericArgument::Type(ty) => Some(ty),
            _ => None,
        })
        .nth(index)
        .ok_or_else(|| "a type argument missing".into())
}

/// The TypeScript of a Rust type as it crosses the IPC: serde's JSON, named as in
/// `types.ts`, or raw bytes.
fn typescript(
    ty: &Type,
    names: &BTreeMap<String, Option<String>>,
    uses: &mut Uses,
) -> Result<String, String> {
    if let Type::Reference(reference) = ty {
        return typescript(&reference.elem, names, uses);
    }
    let ident = last_ident(ty).ok_or("a type that is not a name")?;
    Ok(match ident.as_str() {
        "String" | "str" | "PathBuf" => "string".into(),
        "bool" => "boolean".into(),
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" | "f32"
        | "f64" => "number".into(),
        "Value" => "unknown".into(),
        "Option" => format!("{} | null", typescript(generic(ty, 0)?, names, uses)?),
        "Vec" => match typescript(generic(ty, 0)?, names, uses)? {
            union if union.contains(' ') => format!("({union})[]"),
            item => format!("{item}[]"),
        },
        "Channel" => {
            uses.channel = true;
            format!("Channel<{}>", typescript(generic(ty, 0)?, names, uses)?)
        }
        // Bytes, sent without JSON: the page gets an ArrayBuffer.
        "InvokeResponseBody" | "Response" => "ArrayBuffer".into(),
        _ => match names.get(&ident) {
            Some(Some(name)) => {
                uses.types.insert(name.clone());
                name.clone()
            }
            Some(None) => return Err(format!("two types in types.ts are named `{ident}`")),
            None => {
                return Err(format!(
                    "`{ident}` is not in ui/src/lib/types.ts: add it to the roots in \
                     src-tauri/src/typescript.rs"
                ));
            }
        },
    })
}

/// `session_id` → `sessionId`, as Tauri names a command's arguments by default.
fn camel_case(snake: &str) -> String {
    let mut words = snake.trim_start_matches("r#").split('_');
    let first = words.next().unwrap_or_default().to_string();
    words.fold(first, |mut camel, word| {
        let mut chars = word.chars();
        if let Some(c) = chars.next() {
            camel.extend(c.to_uppercase());
            camel.push_str(chars.as_str());
        }
        camel
    })
}

const HEADER: &str = "\
// Generated from the #[tauri::command] functions in src-tauri/src/commands by
// src-tauri/src/bindings.rs: do not edit. To change a command, change it in Rust and run
// `DESKHAND_BLESS_TYPES=1 cargo test -p deskhand-app --lib typescript`. The page calls these
// through ipc.ts.
";

/// The whole file.
fn commands_ts() -> String {
    let mut uses = Uses::default();
    let commands = commands(&mut uses);
    let mut out = String::from(HEADER);
    let core = if uses.channel {
        "invoke, type Channel"
    } else {
        "invoke"
    };
    out.push_str(&format!(
        "import {{ {core} }} from '@tauri-apps/api/core';\n"
    ));
    if !uses.types.is_empty() {
        let types: Vec<&str> = uses.types.iter().map(String::as_str).collect();
        out.push_str(&format!(
            "import type {{ {} }} from './types';\n",
            types.join(", ")
        ));
    }
    for command in &commands {
        out.push('\n');
        if !command.docs.is_empty() {
            out.push_str("/**\n");
            for line in &command.docs {
                let line = line.replace("*/", "*\\/");
                out.push_str(format!(" *{line}").trim_end());
                out.push('\n');
            }
            out.push_str(" */\n");
        }
        let (params, sent) = match &command.args {
            Args::Raw => (
                "body: ArrayBuffer | Uint8Array".to_string(),
                ", body".to_string(),
            ),
            Args::Named(args) if args.is_empty() => (String::new(), String::new()),
            Args::Named(args) => (
                args.iter()
                    .map(|(name, ty)| format!("{name}: {ty}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                format!(
                    ", {{ {} }}",
                    args.iter()
                        .map(|(name, _)| name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
        };
        let answer = &command.answer;
        out.push_str(&format!(
            "export function {}({params}): Promise<{answer}> {{\n  return invoke<{answer}>('{}'{sent});\n}}\n",
            camel_case(&command.name),
            command.name,
        ));
    }
    out
}

/// The handlers `generate_handler!` registers, as written (`run::send_message`).
#[derive(Default)]
struct Registered(Vec<String>);

impl<'ast> Visit<'ast> for Registered {
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        if mac
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "generate_handler")
        {
            let paths = mac
                .parse_body_with(Punctuated::<syn::Path, Token![,]>::parse_terminated)
                .expect("generate_handler! takes paths");
            self.0.extend(paths.iter().map(|path| {
                path.segments
                    .iter()
                    .map(|s| s.ident.to_string())
                    .collect::<Vec<_>>()
                    .join("::")
            }));
        }
        syn::visit::visit_macro(self, mac);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_windows_typescript_commands_are_generated_from_the_rust_commands() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("ui/src/lib/commands.ts");
        let generated = commands_ts();
        deskhand_test_support::assert_generated(
            &path,
            &generated,
            "DESKHAND_BLESS_TYPES",
            "cargo test -p deskhand-app --lib typescript",
        );
    }

    /// `generate_handler!` registers every command and nothing else, and the permissions
    /// (`commands::COMMANDS`, which build.rs turns into `allow-<name>`) name the same ones.
    #[test]
    fn every_command_is_registered_and_every_registered_one_is_generated() {
        let commands = commands(&mut Uses::default());
        let mut generated: Vec<String> = commands
            .iter()
            .map(|c| format!("{}::{}", c.module, c.name))
            .collect();
        generated.sort();
        let lib = syn::parse_file(&std::fs::read_to_string(src().join("lib.rs")).unwrap())
            .expect("src-tauri/src/lib.rs");
        let mut registered = Registered::default();
        registered.visit_file(&lib);
        let mut registered = registered.0;
        registered.sort();
        assert_eq!(registered, generated);

        let mut permitted: Vec<&str> = crate::commands::COMMANDS.to_vec();
        permitted.sort_unstable();
        let mut names: Vec<&str> = commands.iter().map(|c| c.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(permitted, names);
    }

    #[test]
    fn arguments_are_named_as_tauri_names_them() {
        assert_eq!(camel_case("session_id"), "sessionId");
        assert_eq!(camel_case("on_event"), "onEvent");
        assert_eq!(camel_case("id"), "id");
        assert_eq!(camel_case("max_width"), "maxWidth");
    }
}
