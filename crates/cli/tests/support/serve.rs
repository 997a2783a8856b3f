//! `deskhand serve` as a process over a temporary history, with a Unix socket and a TCP
//! listener behind a token, and curl to talk to it.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use deskhand_standin::StandIn;
use serde_json::Value;

use super::cli::deskhand_at;

pub const TOKEN: &str = "test-api-token-5f1d";

/// A running `deskhand serve` over the history in `dir`; killed when dropped.
pub struct Serve {
    child: Child,
    pub socket: PathBuf,
    /// The TCP listener's address.
    pub address: String,
}

impl Serve {
    pub fn start(api: &StandIn, dir: &Path) -> Serve {
        Self::start_with_env(api, dir, &[])
    }

    /// [`Serve::start`] with more variables in the server's environment.
    pub fn start_with_env(api: &StandIn, dir: &Path, env: &[(&str, &str)]) -> Serve {
        Self::start_with(api, dir, env, &[])
    }

    /// [`Serve::start`] with more variables in the server's environment and more arguments.
    pub fn start_with(api: &StandIn, dir: &Path, env: &[(&str, &str)], args: &[&str]) -> Serve {
        let socket = dir.join("run").join("api.sock");
        let mut child = deskhand_at(api, dir)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .args(args)
            .envs(env.iter().copied())
            .env("DESKHAND_SOCKET", &socket)
            .env("DESKHAND_API_TOKEN", TOKEN)
            .stderr(Stdio::piped())
            .spawn()
            .expect("deskhand serve starts");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let mut address = None;
        for line in lines.by_ref() {
            let line = line.unwrap();
            if let Some(rest) = line.strip_prefix("deskhand: serving on http://") {
                address = Some(rest.split_whitespace().next().unwrap().to_string());
                break;
            }
            assert!(!line.contains("error"), "{line}");
        }
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        Serve {
            child,
            socket,
            address: address.expect("serve says where it listens"),
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The TCP listener's URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// curl over the Unix socket: the status and the body as JSON (or as a string).
    pub fn curl(&self, method: &str, path: &str, body: Option<&str>) -> (u16, Value) {
        let mut args = vec![
            "--unix-socket".to_string(),
            self.socket.display().to_string(),
        ];
        args.extend(request_args(method, body));
        args.push(format!("http://deskhand{path}"));
        curl(&args)
    }

    pub fn submit(&self, body: Value) -> Value {
        let (status, task) = self.curl("POST", "/v1/tasks", Some(&body.to_string()));
        assert_eq!(status, 202, "{task}");
        task
    }

    pub fn task(&self, id: &str) -> Value {
        self.curl("GET", &format!("/v1/tasks/{id}"), None).1
    }

    /// Waits (at most 20 s) until the task is in `state`.
    pub fn wait_for(&self, id: &str, state: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let task = self.task(id);
            if task["state"] == state {
                return task;
            }
            assert!(Instant::now() < deadline, "never {state}: {task}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The task's SSE stream, read to its end with curl: (id, type, data) of each event.
    pub fn events(
        &self,
        id: &str,
        last_event_id: Option<i64>,
    ) -> Vec<(Option<i64>, String, Value)> {
        let mut args = vec![
            "-sN".to_string(),
            "--max-time".into(),
            "20".into(),
            "--unix-socket".into(),
            self.socket.display().to_string(),
        ];
        if let Some(last) = last_event_id {
            args.extend(["-H".into(), format!("Last-Event-ID: {last}")]);
        }
        args.push(format!("http://deskhand/v1/tasks/{id}/events"));
        let output = Command::new("curl").args(&args).output().unwrap();
        assert!(output.status.success(), "curl: {output:?}");
        parse_sse(&String::from_utf8_lossy(&output.stdout))
    }

    /// The server's resident memory now and at its peak, in MB (`VmRSS`, `VmHWM`).
    pub fn memory_mb(&self) -> (f64, f64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let field = |name: &str| -> f64 {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
                .expect("the field is in /proc/PID/status")
                / 1024.0
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// How long a request over the Unix socket takes to be answered (a task list).
    pub fn socket_answer_time(&self) -> Duration {
        let started = Instant::now();
        let (status, _) = self.curl("GET", "/v1/tasks?limit=1", None);
        assert_eq!(status, 200);
        started.elapsed()
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn request_args(method: &str, body: Option<&str>) -> Vec<String> {
    let mut args = vec![
        "-s".to_string(),
        "--max-time".into(),
        "20".into(),
        "-X".into(),
        method.into(),
        "-w".into(),
        "\n%{http_code}".into(),
    ];
    if let Some(body) = body {
        args.extend([
            "-H".into(),
            "Content-Type: application/json".into(),
            "--data-binary".into(),
            body.into(),
        ]);
    }
    args
}

pub fn curl(args: &[String]) -> (u16, Value) {
    let output = Command::new("curl").args(args).output().expect("curl runs");
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let (body, status) = text.rsplit_once('\n').expect("curl printed the status");
    let body = serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.into()));
    (status.trim().parse().unwrap(), body)
}

pub fn parse_sse(text: &str) -> Vec<(Option<i64>, String, Value)> {
    text.split("\n\n")
        .filter(|block| !block.trim().is_empty() && !block.starts_with(':'))
        .map(|block| {
            let mut id = None;
            let mut kind = String::new();
            let mut data = String::new();
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id: ") {
                    id = Some(v.parse().unwrap());
                } else if let Some(v) = line.strip_prefix("event: ") {
                    kind = v.into();
                } else if let Some(v) = line.strip_prefix("data: ") {
                    data.push_str(v);
                }
            }
            (id, kind, serde_json::from_str(&data).unwrap())
        })
        .collect()
}
