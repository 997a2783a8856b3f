//! `docs/openapi.json` (OpenAPI 3.1), generated from the route table that also mounts the
//! routes (`routes::routes`) and from the types each route reads and answers (schemars), so
//! the document cannot drift from the server. The test below fails when the file is stale;
//! `DESKHAND_BLESS_DOCS=1 cargo test -p deskhand-api openapi` writes it.

use axum::http::Method;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use schemars::transform::RecursiveTransform;
use schemars::{JsonSchema, Schema};
use serde_json::{Map, Value, json};

use super::connections::{BODY_TIMEOUT, HEADER_TIMEOUT};
use super::error::ErrorBody;

/// A type's schema, from the generator of requests or of answers.
type SchemaOf = fn(&mut SchemaGenerator) -> Schema;

/// How one route is described: its name, what it takes and what it answers. Every route
/// also answers 401 and 403 (the TCP token, a run's own programs) and 500 (the history
/// cannot be read, unless it says otherwise); one with a body answers 408 and 413 too.
pub(crate) struct Operation {
    id: &'static str,
    summary: &'static str,
    query: Option<SchemaOf>,
    headers: Vec<Value>,
    body: Option<(SchemaOf, bool)>,
    answers: Vec<(u16, String, Content)>,
}

/// What an answer carries.
enum Content {
    Json(SchemaOf),
    Error,
    /// Server-Sent Events: one per stored event, or a notice.
    Events,
    /// An image's bytes, in its own media type.
    Image,
}

/// `T`'s schema in `components/schemas` (with every named type it uses), and a `$ref` to it.
fn referenced<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}

/// `T`'s own schema, to be taken apart (a query's fields).
fn inline<T: JsonSchema>(generator: &mut SchemaGenerator) -> Schema {
    T::json_schema(generator)
}

impl Operation {
    pub(crate) fn new(id: &'static str, summary: &'static str) -> Self {
        Self {
            id,
            summary,
            query: None,
            headers: Vec::new(),
            body: None,
            answers: Vec::new(),
        }
    }

    /// The query string's parameters: the fields of `T`.
    pub(crate) fn query<T: JsonSchema>(mut self) -> Self {
        self.query = Some(inline::<T>);
        self
    }

    /// A request header the route reads, with its schema.
    pub(crate) fn header(mut self, name: &str, schema: Value) -> Self {
        self.headers
            .push(json!({"name": name, "in": "header", "required": false, "schema": schema}));
        self
    }

    /// A JSON body of type `T`; `required: false` when an empty body means `{}`.
    pub(crate) fn body<T: JsonSchema>(mut self, required: bool) -> Self {
        self.body = Some((referenced::<T>, required));
        self
    }

    /// An answer with a JSON body of type `T`.
    pub(crate) fn answers<T: JsonSchema>(mut self, status: u16, description: &str) -> Self {
        self.answers
            .push((status, description.into(), Content::Json(referenced::<T>)));
        self
    }

    /// A refusal, `{"error": {"kind", "message"}}`.
    pub(crate) fn refuses(mut self, status: u16, description: impl Into<String>) -> Self {
        self.answers
            .push((status, description.into(), Content::Error));
        self
    }

    /// The answer is an event stream.
    pub(crate) fn streams(mut self, status: u16, description: &str) -> Self {
        self.answers
            .push((status, description.into(), Content::Events));
        self
    }

    /// The answer is an image's bytes.
    pub(crate) fn image(mut self, status: u16, description: &str) -> Self {
        self.answers
            .push((status, description.into(), Content::Image));
        self
    }

    fn describe(&self, path: &str, generators: &mut Generators) -> Value {
        let mut parameters: Vec<Value> = path
            .split('/')
            .filter_map(|part| part.strip_prefix('{')?.strip_suffix('}'))
            .map(|name| {
                json!({"name": name, "in": "path", "required": true,
                       "schema": {"type": "string"}})
            })
            .collect();
        if let Some(query) = self.query {
            parameters.extend(query_parameters(query(&mut generators.requests)));
        }
        parameters.extend(self.headers.iter().cloned());
        let mut operation = json!({"operationId": self.id, "summary": self.summary});
        if !parameters.is_empty() {
            operation["parameters"] = parameters.into();
        }
        let mut answers = Map::new();
        if let Some((body, required)) = self.body {
            operation["requestBody"] = json!({
                "required": required,
                "content": {"application/json": {"schema": body(&mut generators.requests)}},
            });
            let late = format!(
                "timeout: the request body did not arrive within {} s of its head; nothing is \
                 done.",
                BODY_TIMEOUT.as_secs()
            );
            answers.insert("408".into(), generators.error(&late));
            answers.insert(
                "413".into(),
                generators
                    .error("The request body is larger than the server takes; nothing is done."),
            );
        }
        for (status, description) in [
            (401, "No or a wrong bearer token (TCP only)."),
            (
                403,
                "forbidden: the client is one of a run's own programs (its shell, plugins, \
                 checks and what they started), or a socket peer the kernel cannot name.",
            ),
            (500, "The history cannot be read."),
        ] {
            answers.insert(status.to_string(), generators.error(description));
        }
        for (status, description, content) in &self.answers {
            let answer = match content {
                Content::Error => generators.error(description),
                Content::Json(schema) => json!({
                    "description": description,
                    "content": {"application/json": {"schema": schema(&mut generators.answers)}},
                }),
                Content::Events => json!({
                    "description": description,
                    "content": {"text/event-stream": {"schema": event_schema()}},
                }),
                Content::Image => {
                    let bytes = json!({"schema": {"type": "string", "format": "binary"}});
                    let content: Map<String, Value> = IMAGE_TYPES
                        .iter()
                        .map(|media_type| (media_type.to_string(), bytes.clone()))
                        .collect();
                    json!({"description": description, "content": content})
                }
            };
            answers.insert(status.to_string(), answer);
        }
        operation["responses"] = answers.into();
        operation
    }
}

/// A query struct's fields as parameters: each is left out rather than null.
fn query_parameters(schema: Schema) -> Vec<Value> {
    let schema = schema.to_value();
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    let Some(properties) = schema["properties"].as_object() else {
        return Vec::new();
    };
    properties
        .iter()
        .map(|(name, property)| {
            let mut property = property.clone();
            let description = property
                .as_object_mut()
                .and_then(|p| p.remove("description"));
            let kept: Option<Vec<Value>> = property["type"]
                .as_array()
                .map(|types| types.iter().filter(|t| *t != "null").cloned().collect());
            if let Some(mut kept) = kept {
                property["type"] = match kept.len() {
                    1 => kept.remove(0),
                    _ => kept.into(),
                };
            }
            let mut parameter = json!({
                "name": name,
                "in": "query",
                "required": required.contains(&Value::from(name.as_str())),
                "schema": property,
            });
            if let Some(description) = description {
                parameter["description"] = description;
            }
            parameter
        })
        .collect()
}

/// The media types an image is stored with: those `images::media_type_of` knows, and bytes
/// of a type it does not.
const IMAGE_TYPES: [&str; 5] = [
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/octet-stream",
];

/// One event of a task's stream, as the SSE lines carry it.
fn event_schema() -> Value {
    let names: Vec<&str> = deskhand_engine::agent::AgentEvent::KINDS
        .iter()
        .copied()
        .chain(["notice"])
        .collect();
    json!({
        "description": "One event of the stream. `data` is JSON: the AgentEvent (for `notice`, \
                        a string). A `tool_result` carries `status` (`ok`, `error`, \
                        `cancelled`, `denied`); `retrying` and `error` carry `kind` (the \
                        failure's kind, docs/cli.md). Events stored before these fields lack \
                        them.",
        "type": "object",
        "required": ["event", "data"],
        "properties": {
            "event": {
                "type": "string",
                "enum": names,
                "description": "The AgentEvent's type, or `notice`: a message about the task \
                                that is not part of its run.",
            },
            "id": {
                "type": "string",
                "pattern": "^[0-9]+$",
                "description": "The event's sequence number in the store; absent for notices.",
            },
            "data": {"type": "string", "contentMediaType": "application/json"},
        },
    })
}

/// What is read and what is written can differ for one type (a field with a default is
/// optional in a request and always present in an answer), so each has its own generator.
struct Generators {
    requests: SchemaGenerator,
    answers: SchemaGenerator,
    error: Schema,
}

impl Generators {
    fn new() -> Self {
        let settings = SchemaSettings::draft2020_12()
            .with(|settings| {
                settings.definitions_path = "/components/schemas".into();
                settings.meta_schema = None;
            })
            .with_transform(RecursiveTransform(unwrap_lines));
        let mut answers = settings.clone().for_serialize().into_generator();
        let error = answers.subschema_for::<ErrorBody>();
        Self {
            requests: settings.for_deserialize().into_generator(),
            answers,
            error,
        }
    }

    fn error(&self, description: &str) -> Value {
        json!({
            "description": description,
            "content": {"application/json": {"schema": self.error}},
        })
    }

    /// Every named schema. One name read and written alike is one schema; a type whose two
    /// shapes differ must not be used both ways.
    fn schemas(mut self) -> Map<String, Value> {
        let mut schemas = self.answers.take_definitions(true);
        for (name, schema) in self.requests.take_definitions(true) {
            if let Some(written) = schemas.get(&name) {
                assert_eq!(
                    written, &schema,
                    "`{name}` is read and answered in different shapes"
                );
            }
            schemas.insert(name, schema);
        }
        schemas
    }
}

/// A description from doc comments, which are wrapped: each paragraph on one line.
fn unwrap_lines(schema: &mut Schema) {
    if let Some(Value::String(text)) = schema.get_mut("description") {
        *text = text
            .split("\n\n")
            .map(|paragraph| paragraph.replace('\n', " "))
            .collect::<Vec<_>>()
            .join("\n\n");
    }
}

fn description() -> String {
    format!(
        "The task engine of `deskhand serve` (see docs/api.md). On the Unix socket no \
         authentication is needed (the file system guards it); on a TCP listener every \
         request needs `Authorization: Bearer TOKEN`, a `Host` that is a loopback name or one \
         the listener was given (else 421 wrong_host), and no `Origin` unless allowed (else \
         403 forbidden_origin). A connection past the service's caps is answered 503 \
         too_many_connections; one that sends no request head within {} s is closed.",
        HEADER_TIMEOUT.as_secs()
    )
}

/// The document for these routes.
pub(crate) fn document<'a>(
    routes: impl IntoIterator<Item = (&'a Method, &'a str, &'a Operation)>,
) -> Value {
    let mut generators = Generators::new();
    let mut paths = Map::new();
    for (method, path, operation) in routes {
        let item = paths.entry(path).or_insert_with(|| json!({}));
        item[method.as_str().to_ascii_lowercase()] = operation.describe(path, &mut generators);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Deskhand local API",
            "version": deskhand_engine::delegate::API_VERSION,
            "description": description(),
        },
        "servers": [{"url": "http://localhost"}],
        "security": [{}, {"bearer": []}],
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
            "schemas": generators.schemas(),
        },
        "paths": paths,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn docs_openapi_json_is_generated_from_the_routes() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
        let generated = format!(
            "{}\n",
            serde_json::to_string_pretty(&crate::openapi()).unwrap()
        );
        deskhand_test_support::assert_generated(
            &path,
            &generated,
            "DESKHAND_BLESS_DOCS",
            "cargo test -p deskhand-api openapi",
        );
    }
}
