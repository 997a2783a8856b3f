//! Schedules in a real `deskhand serve` (this build's binary) against the stand-in model: the
//! CPU and resident memory of the daemon idle with 100 schedules, and how late a schedule's
//! run starts after its due time (the run's recorded start minus its due time).
//!
//! Run: `cargo bench -p deskhand --bench schedules --profile dev`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod support;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use deskhand_standin::{StandIn, Turn};
use serde_json::{Value, json};
use support::median;

const SCHEDULES: usize = 100;
const IDLE: Duration = Duration::from_secs(60);
const FIRES: usize = 15;

fn curl(socket: &Path, method: &str, path: &str, body: Option<&Value>) -> Value {
    let mut command = Command::new("curl");
    command.args(["-s", "--unix-socket"]).arg(socket).args([
        "-X",
        method,
        "-H",
        "content-type: application/json",
    ]);
    if let Some(body) = body {
        command.args(["--data", &body.to_string()]);
    }
    let output = command
        .arg(format!("http://deskhand{path}"))
        .output()
        .unwrap();
    serde_json::from_slice(&output.stdout).unwrap()
}

/// Clock ticks of CPU (user + system) the process has used.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap()
        / 1024.0
}

fn start(api: &StandIn, dir: &Path) -> (Child, std::path::PathBuf) {
    let socket = dir.join("api.sock");
    let child = Command::new(env!("CARGO_BIN_EXE_deskhand"))
        .arg("serve")
        .env("DESKHAND_DATA_DIR", dir)
        .env("DESKHAND_CONFIG_DIR", dir)
        .env("DESKHAND_SOCKET", &socket)
        .env("ANTHROPIC_API_KEY", "sk-ant-bench")
        .env("ANTHROPIC_BASE_URL", api.url())
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Command::new("curl")
        .args(["-sf", "--unix-socket"])
        .arg(&socket)
        .arg("http://deskhand/v1/schedules")
        .stdout(Stdio::null())
        .status()
        .map(|s| !s.success())
        .unwrap_or(true)
    {
        assert!(Instant::now() < deadline, "serve never answered");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, socket)
}

fn ms(text: &Value) -> i64 {
    text.as_str()
        .unwrap()
        .parse::<jiff::Timestamp>()
        .unwrap()
        .as_millisecond()
}

fn main() {
    let api = StandIn::spawn(vec![Turn::text("Done."); FIRES + 5]);
    let dir = tempfile::tempdir().unwrap();
    let (mut child, socket) = start(&api, dir.path());
    let pid = child.id();
    std::thread::sleep(Duration::from_secs(2));
    println!(
        "VmRSS with no schedule, 2 s after start: {:.1} MB",
        rss_mb(pid)
    );
    for i in 0..SCHEDULES {
        let trigger = if i % 2 == 0 {
            json!({"kind": "every", "seconds": 3600 + i})
        } else {
            json!({"kind": "cron", "expr": format!("{} 3 * * *", i % 60), "tz": "Europe/Paris"})
        };
        let made = curl(
            &socket,
            "POST",
            "/v1/schedules",
            Some(&json!({"name": format!("idle-{i}"), "trigger": trigger, "prompt": "p"})),
        );
        assert!(made["id"].is_string(), "{made}");
    }
    // Settle, then measure the idle daemon.
    std::thread::sleep(Duration::from_secs(2));
    let ticks_per_sec = 100.0; // USER_HZ on Linux
    let before = cpu_ticks(pid);
    let began = Instant::now();
    std::thread::sleep(IDLE);
    let used = (cpu_ticks(pid) - before) as f64 / ticks_per_sec;
    let cpu = used / began.elapsed().as_secs_f64() * 100.0;
    println!(
        "idle with {SCHEDULES} schedules over {} s: CPU {cpu:.3}% of a core ({used:.2} s), VmRSS {:.1} MB",
        IDLE.as_secs(),
        rss_mb(pid)
    );

    // Fire latency: a schedule every 2 s among the 100.
    curl(
        &socket,
        "POST",
        "/v1/schedules",
        Some(&json!({"name": "fast", "trigger": {"kind": "every", "seconds": 2}, "prompt": "p"})),
    );
    let deadline = Instant::now() + Duration::from_secs(FIRES as u64 * 2 + 30);
    let runs = loop {
        let report = curl(&socket, "GET", "/v1/schedules/fast", None);
        let total: u64 = report["totals"]
            .as_object()
            .unwrap()
            .values()
            .map(|n| n.as_u64().unwrap())
            .sum();
        if total as usize >= FIRES.min(10) {
            break report["runs"].as_array().unwrap().clone();
        }
        assert!(Instant::now() < deadline, "{report}");
        std::thread::sleep(Duration::from_millis(200));
    };
    let late: Vec<Duration> = runs
        .iter()
        .map(|run| {
            Duration::from_millis((ms(&run["started_at"]) - ms(&run["due_at"])).max(0) as u64)
        })
        .collect();
    let worst = late.iter().max().copied().unwrap();
    println!(
        "fire latency (due time to the run's task started and recorded), {} runs: median {:?}, worst {worst:?}",
        late.len(),
        median(late.clone())
    );
    println!("VmRSS after the runs: {:.1} MB", rss_mb(pid));
    let _ = child.kill();
    let _ = child.wait();
}
