//! `deskhand sessions`: list, show, search, rename, export, import, delete and prune the
//! local history.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use deskhand_engine::store::{ExportFormat, SessionSummary};
use deskhand_engine::visible;

#[derive(Args)]
pub struct SessionsArgs {
    /// Where history is kept (default: the OS data directory).
    #[arg(long, env = "DESKHAND_DATA_DIR", global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: SessionsCommand,
}

#[derive(Subcommand)]
enum SessionsCommand {
    /// Every session, most recent first.
    List {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// A session's transcript (ID may be the first characters of the id).
    Show {
        id: String,
        /// The session, its messages, events and action log as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Sessions whose messages contain every word of QUERY, best match first.
    Search {
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    Rename {
        id: String,
        title: String,
    },
    /// Write a session out: JSON (with its images; re-importable) or Markdown.
    Export {
        id: String,
        #[arg(long, default_value = "json", value_parser = ["json", "md"])]
        format: String,
        /// Write to this file instead of stdout.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Read a JSON export back in, under its original id.
    Import {
        file: PathBuf,
    },
    /// Delete a session, and its screenshots unless another session uses them.
    Delete {
        id: String,
    },
    /// Delete every session not updated in the last DAYS days.
    Prune {
        #[arg(long, value_name = "DAYS")]
        older_than: f64,
    },
}

pub fn run(args: SessionsArgs) -> Result<()> {
    let store = crate::open_store(args.data_dir)?;
    match args.command {
        SessionsCommand::List { json } => {
            for session in store.sessions()? {
                if json {
                    println!("{}", visible::json(&serde_json::to_string(&session)?));
                } else {
                    println!("{}", line(&session));
                }
            }
        }
        SessionsCommand::Show { id, json } => {
            let id = store.resolve_id(&id)?;
            if json {
                let mut loaded = serde_json::to_value(store.load_session(&id)?)?;
                loaded["actions"] = serde_json::to_value(store.actions(&id)?)?;
                println!("{}", visible::json(&serde_json::to_string_pretty(&loaded)?));
            } else {
                print!(
                    "{}",
                    visible::text(&store.export(&id, ExportFormat::Markdown)?)
                );
            }
        }
        SessionsCommand::Search { query, json } => {
            for hit in store.search(&query.join(" "))? {
                if json {
                    println!("{}", visible::json(&serde_json::to_string(&hit)?));
                } else {
                    println!(
                        "{}\n    {}",
                        line(&hit.session),
                        visible::line(&hit.snippet.replace('\n', " "))
                    );
                }
            }
        }
        SessionsCommand::Rename { id, title } => {
            let id = store.resolve_id(&id)?;
            store.rename(&id, &title)?;
        }
        SessionsCommand::Export { id, format, output } => {
            let id = store.resolve_id(&id)?;
            let format = match format.as_str() {
                "md" => ExportFormat::Markdown,
                _ => ExportFormat::Json,
            };
            let text = store.export(&id, format)?;
            match output {
                // Private (0600): an export holds the whole transcript and its images.
                Some(path) => deskhand_engine::files::write_private(&path, text.as_bytes(), false)
                    .with_context(|| format!("cannot write {}", path.display()))?,
                // Into a file or a pipe it is the data itself; on a terminal it is shown, and
                // JSON stays the same JSON.
                None if !std::io::stdout().is_terminal() => print!("{text}"),
                None if format == ExportFormat::Json => print!("{}", visible::json(&text)),
                None => print!("{}", visible::text(&text)),
            }
        }
        SessionsCommand::Import { file } => {
            let id = store.import_file(&file)?;
            println!("{}", visible::line(id.as_str()));
        }
        SessionsCommand::Delete { id } => {
            let id = store.resolve_id(&id)?;
            store.delete(&id)?;
            eprintln!("deleted {}", visible::line(id.as_str()));
        }
        SessionsCommand::Prune { older_than } => {
            anyhow::ensure!(
                older_than.is_finite() && older_than >= 0.0,
                "--older-than takes a number of days, 0 or more"
            );
            let age = Duration::from_secs_f64(older_than * 86_400.0);
            let deleted = store.prune(age)?;
            eprintln!("deleted {} session(s)", deleted.len());
        }
    }
    Ok(())
}

/// One line of a session list: id, last update (to the minute), messages, title (an import
/// brings the id and title, so the line is shown escaped).
fn line(session: &SessionSummary) -> String {
    let updated: String = session.updated_at.chars().take(16).collect();
    let line = format!(
        "{}  {}  {:>4} msgs  {}",
        session.id,
        updated.replace('T', " "),
        session.message_count,
        session.title
    );
    visible::line(&line).into_owned()
}
