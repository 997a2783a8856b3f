//! `deskhand plugins list`: starts every configured MCP server and shows its state and tools.

use anyhow::Result;
use clap::{Args, Subcommand};
use deskhand_engine::tools::plugins::{PluginConfig, PluginTimeouts, Plugins, ServerState};
use deskhand_engine::visible;
use serde_json::json;

#[derive(Args)]
pub struct PluginsArgs {
    #[command(subcommand)]
    command: PluginsCommand,
}

#[derive(Subcommand)]
enum PluginsCommand {
    /// Start each server in the plugin config and show its state and its tools.
    List {
        /// One JSON object per server on stdout.
        #[arg(long)]
        json: bool,
    },
}

pub async fn run(args: PluginsArgs) -> Result<()> {
    let PluginsCommand::List { json } = args.command;
    let path = PluginConfig::default_path();
    let config = PluginConfig::load(&path)?;
    if config.servers.is_empty() && !json {
        println!("No plugin servers are configured in {}.", path.display());
        return Ok(());
    }
    let names: Vec<String> = config.servers.keys().cloned().collect();
    let plugins = Plugins::start(&config, &names, PluginTimeouts::default()).await;
    for server in plugins.servers() {
        let state = server.state().await;
        let tools = server.tools().await;
        let tokens = Plugins::definition_tokens(server).await;
        let notes = server.notes().await;
        if json {
            let line = json!({
                "server": server.name(),
                "command": server.config().command_line(),
                "status": state,
                "tools": tools,
                "definition_tokens": tokens,
                "notes": notes,
            });
            println!("{}", visible::json(&line.to_string()));
            continue;
        }
        let shown = match &state {
            ServerState::Disabled => "disabled".to_string(),
            ServerState::Running => format!(
                "running, {} tool(s), about {tokens} tokens of definitions in every request",
                tools.len()
            ),
            ServerState::Failed { error } => format!("failed: {error}"),
        };
        // The failure quotes the server's stderr and the descriptions are its own words.
        let line = format!(
            "{} ({}): {shown}",
            server.name(),
            server.config().command_line()
        );
        println!("{}", visible::line(&line));
        for note in notes {
            println!("  note: {}", visible::line(&note));
        }
        for tool in tools {
            let read_only = if tool.read_only { " [read-only]" } else { "" };
            let description = tool.description.lines().next().unwrap_or_default();
            let line = format!("{}{read_only}  {description}", tool.name);
            println!("  {}", visible::line(&line));
        }
    }
    plugins.shutdown().await;
    Ok(())
}
