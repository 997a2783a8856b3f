//! `deskhand schedule`: add, list, show, pause, resume, delete and run-now the schedules of a
//! running `deskhand serve`, through its socket (the daemon runs them; see docs/cli.md).

use anyhow::{Context, Result};
use clap::{ArgGroup, Args, Subcommand};
use deskhand_engine::schedules::{
    CatchUp, Overlap, Schedule, ScheduleReport, ScheduleSpec, Scope, Trigger,
};
use deskhand_engine::tasks::TaskInfo;
use deskhand_engine::visible;
use jiff::tz::TimeZone;
use reqwest::Method;
use serde::Serialize;

use crate::UsageError;
use crate::service::{Service, ServiceArgs};

#[derive(Args)]
pub struct ScheduleArgs {
    #[command(flatten)]
    service: ServiceArgs,
    #[command(subcommand)]
    command: ScheduleCommand,
}

#[derive(Subcommand)]
enum ScheduleCommand {
    /// Schedule a prompt: one of --cron, --every or --at says when.
    Add(Box<AddArgs>),
    /// Every schedule, by name.
    List {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// A schedule, its newest runs and their outcomes summed up.
    Show {
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Stop running a schedule until it is resumed.
    Pause { name: String },
    /// Run a paused schedule again, from now (what was missed while paused does not run).
    Resume { name: String },
    /// Delete a schedule (its runs' tasks and sessions stay in the history).
    Delete { name: String },
    /// Run a schedule now, outside its times; prints the task's id.
    RunNow { name: String },
}

#[derive(Args)]
#[command(group(ArgGroup::new("when").required(true).args(["cron", "every", "at"])))]
struct AddArgs {
    /// Its name, unique among schedules.
    name: String,
    /// A five-field cron expression ("0 9 * * 1-5": 09:00 on weekdays; Sunday is 0), in
    /// --tz.
    #[arg(long)]
    cron: Option<String>,
    /// The IANA time zone --cron is read in (default: this machine's), DST included.
    #[arg(long, requires = "cron")]
    tz: Option<String>,
    /// Every so long, from now: 30s, 15m, 2h, 1d, 1h30m.
    #[arg(long)]
    every: Option<String>,
    /// Once, at this time: RFC 3339 (2026-05-01T09:00:00+02:00) or a local date and time
    /// (2026-05-01 09:00).
    #[arg(long)]
    at: Option<String>,
    /// The work: what each run is asked.
    #[arg(long, required_unless_present = "skill")]
    prompt: Option<String>,
    /// A skill as the work (skills do not exist yet: refused).
    #[arg(long, conflicts_with = "prompt")]
    skill: Option<String>,
    /// A session every run continues, or `new` (the default) for a new session each run.
    #[arg(long, default_value = "new")]
    session: String,
    /// `agent`: runs work on an agent desktop of their own; `screen`: on the screen.
    #[arg(long, value_parser = ["agent", "screen"], default_value = "screen")]
    desktop: String,
    /// A shell command that proves a run done (exit status 0: verified).
    #[arg(long)]
    check: Option<String>,
    /// Tools a run may use without asking, comma-separated (e.g. bash,editor); any other
    /// action waits for a person until --approval-deadline.
    #[arg(long, value_delimiter = ',')]
    scope: Vec<String>,
    /// Each run's cost limit in US dollars.
    #[arg(long, value_name = "USD")]
    max_cost: Option<f64>,
    /// Missed runs (daemon down, machine asleep): once (one run for all), skip, or each:N
    /// (each, up to the newest N).
    #[arg(long, default_value = "once", value_parser = parse_catch_up)]
    catch_up: CatchUp,
    /// A run due while the previous one still runs: skip it, queue it, or cancel the older.
    #[arg(long, default_value = "skip", value_parser = ["skip", "queue", "cancel"])]
    overlap: String,
    /// How long an action outside --scope waits for a person before the run ends
    /// needs_approval (1s to 7d).
    #[arg(long, default_value = "1h")]
    approval_deadline: String,
    /// Failed runs in a row after which the schedule pauses itself (0: never).
    #[arg(long, default_value_t = 3)]
    pause_after: u32,
    #[arg(long)]
    json: bool,
}

/// Runs the subcommand.
pub async fn run(args: ScheduleArgs) -> Result<i32> {
    // The request is checked before the service is asked, so a mistake is said even with no
    // service running.
    let add = match &args.command {
        ScheduleCommand::Add(add) => Some(spec(add)?),
        _ => None,
    };
    let service = Service::new(&args.service)?;
    let path = |name: &str, verb: &str| format!("/v1/schedules/{}{verb}", encode(name));
    match args.command {
        ScheduleCommand::Add(add_args) => {
            let body = serde_json::to_value(add)?;
            let made: Schedule = serde_json::from_value(
                service
                    .call(Method::POST, "/v1/schedules", Some(&body))
                    .await?,
            )?;
            print_schedule(&made, add_args.json);
        }
        ScheduleCommand::List { json } => {
            let listed = service.call(Method::GET, "/v1/schedules", None).await?;
            let schedules: Vec<Schedule> = serde_json::from_value(listed["schedules"].clone())?;
            for schedule in &schedules {
                print_schedule(schedule, json);
            }
        }
        ScheduleCommand::Show { name, json } => {
            let report: ScheduleReport =
                serde_json::from_value(service.call(Method::GET, &path(&name, ""), None).await?)?;
            print_report(&report, json);
        }
        ScheduleCommand::Pause { name } => {
            let schedule = service
                .call(Method::POST, &path(&name, "/pause"), None)
                .await?;
            print_schedule(&serde_json::from_value(schedule)?, false);
        }
        ScheduleCommand::Resume { name } => {
            let schedule = service
                .call(Method::POST, &path(&name, "/resume"), None)
                .await?;
            print_schedule(&serde_json::from_value(schedule)?, false);
        }
        ScheduleCommand::Delete { name } => {
            let schedule: Schedule = serde_json::from_value(
                service.call(Method::DELETE, &path(&name, ""), None).await?,
            )?;
            eprintln!(
                "deskhand: deleted schedule {}",
                visible::line(&schedule.spec.name)
            );
        }
        ScheduleCommand::RunNow { name } => {
            let task: TaskInfo = serde_json::from_value(
                service
                    .call(Method::POST, &path(&name, "/run"), None)
                    .await?,
            )?;
            println!("{}", task.id);
        }
    }
    Ok(0)
}

/// A name or id as one path segment.
fn encode(name: &str) -> String {
    let mut out = String::new();
    for byte in name.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(byte as char)
            }
            _ => out.push_str(&format!("%{byte:02X}")),
        }
    }
    out
}

/// What `add` asks for, checked as far as the CLI can: the service checks the rest (the
/// cron expression, the time zone) and refuses with the same clear words.
fn spec(args: &AddArgs) -> Result<ScheduleSpec> {
    if args.skill.is_some() {
        return Err(UsageError("skills do not exist yet: give the work as --prompt".into()).into());
    }
    let trigger = if let Some(expr) = &args.cron {
        let tz = match &args.tz {
            Some(tz) => tz.clone(),
            None => TimeZone::system()
                .iana_name()
                .map(str::to_owned)
                .context("this machine's time zone has no IANA name: give one with --tz")?,
        };
        Trigger::Cron {
            expr: expr.clone(),
            tz,
        }
    } else if let Some(every) = &args.every {
        Trigger::Every {
            seconds: seconds(every, "--every")?,
        }
    } else if let Some(at) = &args.at {
        Trigger::At { at: rfc3339(at)? }
    } else {
        return Err(UsageError("say when: --cron, --every or --at".into()).into());
    };
    Ok(ScheduleSpec {
        name: args.name.clone(),
        trigger,
        prompt: args.prompt.clone().unwrap_or_default(),
        session: (args.session != "new").then(|| args.session.as_str().into()),
        agent_desktop: args.desktop == "agent",
        check: args.check.clone(),
        scope: Scope {
            tools: args.scope.clone(),
        },
        max_cost_usd: args.max_cost,
        catch_up: args.catch_up,
        overlap: match args.overlap.as_str() {
            "queue" => Overlap::Queue,
            "cancel" => Overlap::Cancel,
            _ => Overlap::Skip,
        },
        approval_deadline_secs: seconds(&args.approval_deadline, "--approval-deadline")?,
        pause_after_failures: args.pause_after,
    })
}

/// A duration (`90s`, `15m`, `2h`, `1h30m`, `1d`) in whole seconds.
fn seconds(text: &str, flag: &str) -> Result<u64> {
    let bad = |why: String| UsageError(format!("{flag} {text:?}: {why}"));
    let duration: jiff::SignedDuration = match text.trim().strip_suffix('d') {
        // jiff reads days as calendar days; a schedule's day is 24 hours.
        Some(days) if days.chars().all(|c| c.is_ascii_digit()) && !days.is_empty() => {
            let days: i64 = days.parse().map_err(|e| bad(format!("{e}")))?;
            jiff::SignedDuration::from_hours(days.saturating_mul(24))
        }
        _ => text
            .trim()
            .parse()
            .map_err(|_| bad("not a duration (e.g. 30s, 15m, 2h, 1h30m, 1d)".into()))?,
    };
    u64::try_from(duration.as_secs())
        .ok()
        .filter(|&s| s > 0)
        .ok_or_else(|| bad("must be at least one second".into()).into())
}

/// An `--at` time as RFC 3339: one with its offset as given, a local one in this machine's
/// zone.
fn rfc3339(text: &str) -> Result<String> {
    if let Ok(time) = text.parse::<jiff::Timestamp>() {
        return Ok(time.to_string());
    }
    let civil: jiff::civil::DateTime = text.parse().map_err(|_| {
        UsageError(format!(
            "--at {text:?}: not a time (RFC 3339, or a local date and time like \
             2026-05-01 09:00)"
        ))
    })?;
    let zoned = civil
        .to_zoned(TimeZone::system())
        .with_context(|| format!("--at {text:?} does not exist here"))?;
    Ok(zoned.timestamp().to_string())
}

fn parse_catch_up(text: &str) -> Result<CatchUp, String> {
    match text {
        "once" => Ok(CatchUp::Once),
        "skip" => Ok(CatchUp::Skip),
        _ => text
            .strip_prefix("each:")
            .and_then(|n| n.parse().ok())
            .filter(|&n| n > 0)
            .map(CatchUp::Each)
            .ok_or_else(|| "expected once, skip or each:N (N at least 1)".into()),
    }
}

fn print_json(value: &impl Serialize) {
    if let Ok(line) = serde_json::to_string(value) {
        println!("{}", visible::json(&line));
    }
}

fn when(trigger: &Trigger) -> String {
    match trigger {
        Trigger::Cron { expr, tz } => format!("cron \"{expr}\" {tz}"),
        Trigger::Every { seconds } => format!("every {seconds}s"),
        Trigger::At { at } => format!("at {at}"),
    }
}

fn print_schedule(schedule: &Schedule, json: bool) {
    if json {
        return print_json(schedule);
    }
    let state = match &schedule.paused_reason {
        Some(reason) if schedule.paused => format!("paused ({reason})"),
        _ if schedule.paused => "paused".into(),
        _ => format!("next {}", schedule.next_due.as_deref().unwrap_or("never")),
    };
    let line = format!(
        "{}  {}  {}  {}",
        schedule.spec.name,
        schedule.id,
        when(&schedule.spec.trigger),
        state
    );
    println!("{}", visible::line(&line));
}

fn print_report(report: &ScheduleReport, json: bool) {
    if json {
        return print_json(report);
    }
    print_schedule(&report.schedule, false);
    let schedule = &report.schedule;
    let totals = report
        .totals
        .iter()
        .map(|(outcome, n)| format!("{outcome} {n}"))
        .collect::<Vec<_>>()
        .join(", ");
    let lines = [
        format!("  prompt: {}", schedule.spec.prompt),
        format!(
            "  last due: {}  failures in a row: {}",
            schedule.last_due.as_deref().unwrap_or("none yet"),
            schedule.failures_in_a_row
        ),
        format!(
            "  runs: {}",
            if totals.is_empty() {
                "none yet".into()
            } else {
                totals
            }
        ),
    ];
    for line in lines {
        println!("{}", visible::line(&line));
    }
    for run in &report.runs {
        let screenshot = run
            .screenshot
            .as_ref()
            .map(|sha| format!("  screenshot {sha}"))
            .unwrap_or_default();
        let line = format!(
            "  {}  due {}  {}{screenshot}",
            run.task_id,
            run.due_at,
            run.outcome.map_or("running", |o| o.name())
        );
        println!("{}", visible::line(&line));
    }
}
