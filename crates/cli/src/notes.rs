//! `deskhand notes`: the agent's notes, as the person manages them: list, search, add, edit
//! and delete (the same notes the `memory` tool and the window's Notes view change).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use deskhand_engine::memory::Note;
use deskhand_engine::store::Store;
use deskhand_engine::visible;

#[derive(Args)]
pub struct NotesArgs {
    /// Where history and notes are kept (default: the OS data directory).
    #[arg(long, env = "DESKHAND_DATA_DIR", global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: NotesCommand,
}

#[derive(Subcommand)]
enum NotesCommand {
    /// Every note, the most recently changed first.
    List {
        /// One JSON object per line.
        #[arg(long)]
        json: bool,
    },
    /// Notes holding every word of QUERY, best match first.
    Search {
        #[arg(required = true, num_args = 1..)]
        query: Vec<String>,
        #[arg(long)]
        json: bool,
    },
    /// Adds a note (at most 4 KB; never an API key or other secret).
    Add {
        text: String,
    },
    /// Replaces a note's text.
    Edit {
        id: i64,
        text: String,
    },
    Delete {
        id: i64,
    },
}

/// The most notes a search prints.
const SEARCH_LIMIT: usize = 50;

pub fn run(args: NotesArgs) -> Result<()> {
    let store = Store::open_default(args.data_dir)?;
    match args.command {
        NotesCommand::List { json } => print(&store.notes()?, json)?,
        NotesCommand::Search { query, json } => {
            print(&store.search_notes(&query.join(" "), SEARCH_LIMIT)?, json)?;
        }
        NotesCommand::Add { text } => {
            let note = store.add_note(&text, None)?;
            println!("{}", note.id);
        }
        NotesCommand::Edit { id, text } => {
            store.update_note(id, &text)?;
        }
        NotesCommand::Delete { id } => {
            store.delete_note(id)?;
            eprintln!("deleted note {id}");
        }
    }
    Ok(())
}

fn print(notes: &[Note], json: bool) -> Result<()> {
    for note in notes {
        if json {
            println!("{}", visible::json(&serde_json::to_string(note)?));
        } else {
            let updated: String = note.updated_at.chars().take(16).collect();
            let line = format!(
                "{:>5}  {}  {}",
                note.id,
                updated.replace('T', " "),
                note.text.replace('\n', " ")
            );
            println!("{}", visible::line(&line));
        }
    }
    Ok(())
}
