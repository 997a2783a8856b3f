//! Where a piece of a run's context came from, and what the gate says of an action whose
//! decisive arguments came from untrusted content (issue 34). The gate's check itself is the
//! engine's (`agent::provenance`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who wrote a piece of context. Only the person's words are trusted: everything a tool, the
/// screen or the model produced is data. Anything stored before sources were recorded reads
/// as `unknown`, which is untrusted too.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The person: prompts, attachments, answers to questions.
    Person,
    /// The model's own text and calls.
    Model,
    /// A screenshot.
    Screenshot,
    /// Words read off the screen by OCR.
    Ocr,
    /// Accessible names and text of the screen's elements.
    Accessibility,
    /// The output of a bash command.
    Bash,
    /// A file read (or shown) by the editor.
    File,
    /// A plugin (MCP) tool's result.
    Plugin,
    /// A delegated child task's answer.
    Delegate,
    /// A past session read back by recall.
    Recall,
    /// A memory note.
    Note,
    #[default]
    Unknown,
}

impl Source {
    /// The person's words are the only ones that may choose what the agent does.
    pub fn trusted(self) -> bool {
        self == Self::Person
    }

    /// The source of a tool's result, by the tool's name and its input's `action` (the
    /// names are the tools' own; a plugin tool's is `server__tool`). What a session stored
    /// says which tool answered, so an old session's results have their source too.
    pub fn of_tool(name: &str, action: Option<&str>) -> Self {
        match (name, action.unwrap_or_default()) {
            ("bash", _) => Self::Bash,
            ("str_replace_based_edit_tool", _) => Self::File,
            ("ui", "find") => Self::Ocr,
            ("ui", _) => Self::Accessibility,
            ("computer", _) => Self::Screenshot,
            ("delegate", _) => Self::Delegate,
            ("memory", "search" | "recall") => Self::Recall,
            ("memory", _) => Self::Note,
            (name, _) if name.contains("__") => Self::Plugin,
            _ => Self::Unknown,
        }
    }

    /// The source's wire name, which also names it inside the model's delimiters.
    pub fn name(self) -> &'static str {
        match self {
            Self::Person => "person",
            Self::Model => "model",
            Self::Screenshot => "screenshot",
            Self::Ocr => "ocr",
            Self::Accessibility => "accessibility",
            Self::Bash => "bash",
            Self::File => "file",
            Self::Plugin => "plugin",
            Self::Delegate => "delegate",
            Self::Recall => "recall",
            Self::Note => "note",
            Self::Unknown => "unknown",
        }
    }
}

/// The dangerous classes of action: one whose decisive arguments came from untrusted content
/// asks the person in every mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ActionClass {
    RunCommand,
    NetworkTransfer,
    Install,
    Send,
    Credentials,
    Delete,
    WriteOutside,
    /// A memory note, which every later run's prompt carries.
    Remember,
}

/// Why the gate asks about an action: a decisive argument of it first appeared in untrusted
/// content of this run, not in anything the person wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
pub struct Derivation {
    pub class: ActionClass,
    /// Which argument: `command`, `typed text`, `plugin call`, `task`.
    pub argument: String,
    pub source: Source,
    /// Where the content was read, e.g. "the output of `cat README.md` at step 4".
    pub origin: String,
    /// The untrusted text the argument appears in, shortened around it.
    pub text: String,
}

impl Derivation {
    /// One line for the card's summary and the terminal, e.g. "this command appears in the
    /// output of `cat README.md` at step 4".
    pub fn sentence(&self) -> String {
        format!("this {} appears in {}", self.argument, self.origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_person_is_trusted_and_old_content_is_unknown() {
        assert!(Source::Person.trusted());
        for source in [Source::Model, Source::Bash, Source::Unknown, Source::Ocr] {
            assert!(!source.trusted());
        }
        assert_eq!(Source::default(), Source::Unknown);
        assert_eq!(
            serde_json::to_value(Source::Accessibility).unwrap(),
            serde_json::json!(Source::Accessibility.name())
        );
    }
}
