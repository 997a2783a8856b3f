//! A built-in tool's input: a type the calls are read into, and the schema the model
//! receives, derived from that type, so the two cannot drift apart.

use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::ToolError;

/// The JSON Schema of `T` as a tool's `input_schema`: every part inline, and only what the
/// model needs. Left out: the root's `$schema`, `title` and `description` (the tool has its
/// own description), the `format` schemars adds to integers (`uint32`), and `null` as a type
/// of an optional field (an absent field says the same).
pub fn schema<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft07().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let Some(root) = schema.as_object_mut() {
        root.remove("title");
        root.remove("description");
    }
    tidy(&mut schema);
    schema
}

/// Reads a call's input (already checked against the schema) into `T`.
pub fn read<T: DeserializeOwned>(tool: &str, input: &Value) -> Result<T, ToolError> {
    T::deserialize(input)
        .map_err(|e| ToolError::InvalidInput(format!("invalid input for `{tool}`: {e}")))
}

fn tidy(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.contains_key("type") {
                tidy_subschema(map);
            }
            map.values_mut().for_each(tidy);
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

fn tidy_subschema(schema: &mut Map<String, Value>) {
    if schema.get("format").is_some_and(Value::is_string) {
        schema.remove("format");
    }
    if let Some(Value::Array(types)) = schema.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            schema.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(allowed)) = schema.get_mut("enum") {
        allowed.retain(|v| !v.is_null());
    }
}
