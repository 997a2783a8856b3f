//! `deskhand tasks`: list, show, watch, approve, deny and cancel the tasks of a running
//! `deskhand serve`, through its socket.

use std::io::IsTerminal;

use anyhow::Result;
use clap::{Args, Subcommand};
use deskhand_engine::agent::Decision;
use deskhand_engine::tasks::TaskInfo;
use deskhand_engine::visible;
use reqwest::Method;
use serde_json::{Value, json};

use crate::ask::{Reply, follow, outcome};
use crate::printer;
use crate::service::{Service, ServiceArgs};

#[derive(Args)]
pub struct TasksArgs {
    #[command(flatten)]
    service: ServiceArgs,
    #[command(subcommand)]
    command: TasksCommand,
}

#[derive(Subcommand)]
enum TasksCommand {
    /// Running and waiting tasks, and the latest finished ones, newest first.
    List {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// One task: its state and what it waits for.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Follow a task live, answering its approvals and stall questions on the terminal as
    /// `ask` does; exits with the task's status, as `ask` would.
    Watch {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Approve the action the task waits for.
    Approve {
        id: String,
        /// Also every later action of this kind in the session.
        #[arg(long)]
        always: bool,
    },
    /// Deny the action the task waits for; REASON is told to the model.
    Deny { id: String, reason: Option<String> },
    /// Stop a task (open calls are answered "cancelled by the user").
    Cancel { id: String },
}

/// Runs the subcommand; the exit status is that of the task for `watch`, else 0.
pub async fn run(args: TasksArgs) -> Result<i32> {
    let service = Service::new(&args.service)?;
    match args.command {
        TasksCommand::List { json } => {
            let listed = service.call(Method::GET, "/v1/tasks", None).await?;
            let tasks: Vec<TaskInfo> = serde_json::from_value(listed["tasks"].clone())?;
            for task in tasks {
                print_task(&task, json);
            }
        }
        TasksCommand::Show { id, json } => print_task(&task(&service, &id).await?, json),
        TasksCommand::Watch { id, json } => {
            let events = service.events(&id).await?;
            let path = format!("/v1/tasks/{id}");
            let verification = follow(events, json, async |reply| {
                let (verb, body) = match reply {
                    Reply::Approval {
                        call,
                        decision: Decision::Deny { reason },
                    } => ("deny", json!({"tool_use_id": call, "reason": reason})),
                    Reply::Approval { call, decision } => (
                        "approve",
                        json!({"tool_use_id": call, "always": decision == Decision::ApproveKind}),
                    ),
                    Reply::Stall(answer) => ("stall", json!(answer)),
                };
                let answered = service
                    .call(Method::POST, &format!("{path}/{verb}"), Some(&body))
                    .await;
                if let Err(e) = answered {
                    eprintln!("deskhand: {}", visible::line(&format!("{e:#}")));
                }
            })
            .await?;
            let status = outcome(&task(&service, &id).await?)?;
            return Ok(verification.exit_code(status, false));
        }
        TasksCommand::Approve { id, always } => {
            let call = answer(&service, &id, "approve", json!({"always": always})).await?;
            eprintln!("deskhand: approved action {call}");
        }
        TasksCommand::Deny { id, reason } => {
            let call = answer(&service, &id, "deny", json!({"reason": reason})).await?;
            eprintln!("deskhand: denied action {call}");
        }
        TasksCommand::Cancel { id } => {
            let path = format!("/v1/tasks/{id}/cancel");
            let task: TaskInfo =
                serde_json::from_value(service.call(Method::POST, &path, None).await?)?;
            print_task(&task, false);
        }
    }
    Ok(0)
}

async fn task(service: &Service, id: &str) -> Result<TaskInfo> {
    let task = service
        .call(Method::GET, &format!("/v1/tasks/{id}"), None)
        .await?;
    Ok(serde_json::from_value(task)?)
}

/// Answers the action the task waits for; returns its call's id, fit for the terminal.
async fn answer(service: &Service, id: &str, verb: &str, body: Value) -> Result<String> {
    let path = format!("/v1/tasks/{id}/{verb}");
    let answered = service.call(Method::POST, &path, Some(&body)).await?;
    let call = answered["tool_use_id"].as_str().unwrap_or_default();
    Ok(visible::line(call).into_owned())
}

fn print_task(task: &TaskInfo, json: bool) {
    if json {
        if let Ok(line) = serde_json::to_string(task) {
            println!("{}", visible::json(&line));
        }
        return;
    }
    let waiting = task
        .waiting_for
        .as_ref()
        .map(|request| {
            let tty = std::io::stdout().is_terminal();
            format!(
                "  waiting for: {}",
                printer::emphasized(&request.plan.summary, tty, visible::line)
            )
        })
        .unwrap_or_default();
    let error = task
        .error
        .as_ref()
        .map(|e| format!("  ({e})"))
        .unwrap_or_default();
    let line = format!(
        "{}  {}  {}  session {}  {}",
        task.id,
        task.state.name(),
        task.origin.name(),
        task.session_id,
        task.prompt
    );
    let error = visible::line(&error);
    println!("{}{waiting}{error}", visible::line(&line));
}
