//! The CLI as a client of `deskhand serve`, over its Unix socket: `ask --background` and
//! `deskhand tasks`.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use deskhand_engine::llm::SseParser;
use deskhand_engine::tasks::{TaskUpdate, Watch};
use futures_util::StreamExt;
use reqwest::Method;
use serde_json::Value;

/// Where the CLI finds the service: `--socket` or `$DESKHAND_SOCKET`, else the default path
/// for the data directory.
#[derive(clap::Args, Clone)]
pub struct ServiceArgs {
    /// The service's Unix socket (default: $XDG_RUNTIME_DIR/deskhand/api.sock, else
    /// api.sock in the data directory).
    #[arg(long, env = "DESKHAND_SOCKET", global = true)]
    pub socket: Option<PathBuf>,
    /// Where history is kept (default: the OS data directory).
    #[arg(long, env = "DESKHAND_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
}

impl ServiceArgs {
    pub fn socket_path(&self) -> PathBuf {
        self.socket.clone().unwrap_or_else(|| {
            deskhand_api::default_socket_path(
                &self
                    .data_dir
                    .clone()
                    .unwrap_or_else(deskhand_engine::paths::data_dir),
            )
        })
    }
}

pub struct Service {
    client: reqwest::Client,
    socket: PathBuf,
}

impl Service {
    pub fn new(args: &ServiceArgs) -> Result<Self> {
        let socket = args.socket_path();
        let client = reqwest::Client::builder()
            .unix_socket(socket.clone())
            .build()
            .context("cannot make the HTTP client")?;
        Ok(Self { client, socket })
    }

    fn unreachable(&self, error: &reqwest::Error) -> anyhow::Error {
        anyhow::anyhow!(
            "no Deskhand service answers at {} ({}): start one with `deskhand serve`",
            self.socket.display(),
            if error.is_connect() {
                "nothing listens there"
            } else {
                "the connection failed"
            }
        )
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<reqwest::Response> {
        let mut request = self
            .client
            .request(method, format!("http://deskhand{path}"));
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.map_err(|e| self.unreachable(&e))?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        let error: Value = response.json().await.unwrap_or_default();
        match error["error"]["message"].as_str() {
            Some(message) => bail!("{message}"),
            None => bail!("the service answered HTTP {status}"),
        }
    }

    pub async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value> {
        Ok(self.send(method, path, body).await?.json().await?)
    }

    /// Follows a task's events.
    pub async fn events(&self, task: &str) -> Result<Events> {
        let response = self
            .send(Method::GET, &format!("/v1/tasks/{task}/events"), None)
            .await?;
        Ok(Events {
            stream: Box::pin(response.bytes_stream()),
            parser: SseParser::default(),
            pending: Vec::new(),
        })
    }
}

/// A task's SSE stream as the updates `ask` prints.
pub struct Events {
    stream:
        std::pin::Pin<Box<dyn futures_util::Stream<Item = reqwest::Result<bytes::Bytes>> + Send>>,
    parser: SseParser,
    pending: Vec<TaskUpdate>,
}

/// What a front end reads updates from: the engine in this process, or `deskhand serve`.
pub trait TaskUpdates {
    async fn next_update(&mut self) -> Result<Option<TaskUpdate>>;
}

impl TaskUpdates for Watch {
    async fn next_update(&mut self) -> Result<Option<TaskUpdate>> {
        Ok(self.next().await)
    }
}

impl TaskUpdates for Events {
    async fn next_update(&mut self) -> Result<Option<TaskUpdate>> {
        loop {
            if !self.pending.is_empty() {
                return Ok(Some(self.pending.remove(0)));
            }
            let Some(chunk) = self.stream.next().await else {
                return Ok(None);
            };
            let chunk = chunk.context("the service's event stream broke off")?;
            let events = self
                .parser
                .push(&chunk)
                .context("the service's event stream cannot be read")?;
            for sse in events {
                // What this version cannot read is left out, as the printer would skip it.
                let update = match sse.event.as_str() {
                    "notice" => serde_json::from_str(&sse.data).map(TaskUpdate::Notice),
                    _ => serde_json::from_str(&sse.data).map(|event| TaskUpdate::Event {
                        id: sse.id.as_deref().and_then(|id| id.parse().ok()),
                        event,
                    }),
                };
                self.pending.extend(update.ok());
            }
        }
    }
}
