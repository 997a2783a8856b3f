//! The ids that name a session, a task and a tool call, each its own type so that one cannot
//! be passed where another is meant. On the wire each is its bare string (`transparent`):
//! events, rows, the local API and the window's types read exactly as before.

use std::borrow::{Borrow, Cow};
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, ts_rs::TS)]
        #[serde(transparent)]
        pub struct $name(String);

        /// The string's own schema, inlined: a schema that named the id would read
        /// differently from the string it always was.
        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> Cow<'static, str> {
                String::schema_name()
            }

            fn json_schema(generator: &mut SchemaGenerator) -> Schema {
                String::json_schema(generator)
            }
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl From<String> for $name {
            fn from(id: String) -> Self {
                Self(id)
            }
        }

        impl From<&str> for $name {
            fn from(id: &str) -> Self {
                Self(id.to_owned())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> Self {
                id.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

string_id! {
    /// A stored session: one conversation and every run that continued it.
    SessionId
}

string_id! {
    /// A task: one run of the agent, submitted by a front end or a `delegate` call.
    TaskId
}

string_id! {
    /// A schedule: a prompt the daemon runs as a task at the times its trigger names.
    ScheduleId
}

string_id! {
    /// A tool call, as the model named it in its `tool_use` block; the result, the approval
    /// and the action log name the call by it.
    ToolUseId
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use ts_rs::TS;

    use super::*;

    #[test]
    fn each_id_is_its_bare_string_on_the_wire() {
        let text = "3f0c9a1e-5b7d-4c1e-9a55-2d8e7f6b1c0a";
        assert_eq!(
            serde_json::to_string(&SessionId::from(text)).unwrap(),
            serde_json::to_string(text).unwrap()
        );
        assert_eq!(
            serde_json::to_value(TaskId::from(text)).unwrap(),
            json!(text)
        );
        assert_eq!(
            serde_json::to_value(ToolUseId::from("toolu_01")).unwrap(),
            json!("toolu_01")
        );
        let read: SessionId = serde_json::from_value(json!(text)).unwrap();
        assert_eq!(read, text);
        let read: TaskId = serde_json::from_str(&format!("\"{text}\"")).unwrap();
        assert_eq!(read.as_str(), text);
        let read: ToolUseId = serde_json::from_value(json!("call_9")).unwrap();
        assert_eq!(read.to_string(), "call_9");
        assert!(serde_json::from_value::<SessionId>(json!(7)).is_err());
    }

    #[test]
    fn the_window_sees_each_id_as_a_string() {
        assert_eq!(SessionId::inline(), "string");
        assert_eq!(TaskId::inline(), "string");
        assert_eq!(ToolUseId::inline(), "string");
        assert_eq!(SessionId::decl(), "type SessionId = string;");
    }

    #[test]
    fn a_schema_reads_each_id_as_the_string_it_was() {
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Typed {
            id: ToolUseId,
            session: Option<SessionId>,
            task: TaskId,
        }
        #[derive(JsonSchema)]
        #[allow(dead_code)]
        struct Plain {
            id: String,
            session: Option<String>,
            task: String,
        }
        let typed = serde_json::to_value(schemars::schema_for!(Typed)).unwrap();
        let plain = serde_json::to_value(schemars::schema_for!(Plain)).unwrap();
        assert_eq!(typed["properties"], plain["properties"]);
        assert_eq!(typed["required"], plain["required"]);
    }
}
