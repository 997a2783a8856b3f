//! `mcp.json`: which MCP servers to start, in the shape Claude Desktop uses, so that
//! existing entries can be pasted as they are:
//! `{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"], "env": {}}}}`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::PluginError;

/// The file's name in the config directory.
pub const CONFIG_FILE: &str = "mcp.json";

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct PluginConfig {
    #[serde(rename = "mcpServers", default)]
    pub servers: BTreeMap<String, ServerConfig>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
pub struct ServerConfig {
    /// The program to start; servers reached by URL instead are not supported.
    #[serde(default)]
    pub command: Option<String>,
    #[serde(default)]
    pub args: Vec<String>,
    /// Added to the environment the server inherits.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub enabled: Option<bool>,
    /// The spelling some other MCP clients use.
    #[serde(default)]
    pub disabled: Option<bool>,
    /// The person trusts this server's `readOnlyHint`: only then do its tools that declare
    /// it (and no `destructiveHint: true`) pass the gate without asking. A server is a
    /// program the model's input reaches; its own word is not enough.
    #[serde(rename = "trustReadOnlyHint", default)]
    pub trust_read_only_hint: bool,
}

impl ServerConfig {
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true) && !self.disabled.unwrap_or(false)
    }

    /// The command line, for people.
    pub fn command_line(&self) -> String {
        let mut parts = vec![self.command.clone().unwrap_or_default()];
        parts.extend(self.args.iter().cloned());
        parts.join(" ")
    }
}

/// Which built-in tools and which plugin servers a run asked for.
#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    /// `None`: every built-in tool that works here.
    pub builtin: Option<Vec<String>>,
    pub servers: Vec<String>,
    /// The servers were named, so each must start.
    pub explicit: bool,
}

impl PluginConfig {
    /// Reads the file; a missing file means no plugins.
    pub fn load(path: &Path) -> Result<PluginConfig, PluginError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(PluginConfig::default());
            }
            Err(e) => return Err(PluginError::config(path, e)),
        };
        serde_json::from_str(&text).map_err(|e| PluginError::config(path, e))
    }

    /// `mcp.json` in Deskhand's config directory.
    pub fn default_path() -> PathBuf {
        deskhand_host::paths::config_dir().join(CONFIG_FILE)
    }

    /// Splits the names given to `--tools` into built-in tools and plugin servers (a server
    /// is named by its key in `mcpServers`). Without names: every enabled server.
    pub fn select(&self, requested: Option<&[String]>) -> Result<Selection, PluginError> {
        let Some(names) = requested else {
            return Ok(Selection {
                builtin: None,
                servers: self
                    .servers
                    .iter()
                    .filter(|(_, server)| server.is_enabled())
                    .map(|(name, _)| name.clone())
                    .collect(),
                explicit: false,
            });
        };
        let mut builtin = Vec::new();
        let mut servers = Vec::new();
        for name in names {
            match self.servers.get(name) {
                Some(server) if !server.is_enabled() => {
                    return Err(PluginError::Disabled(name.clone()));
                }
                Some(_) if !super::super::catalog::BUILTIN.contains(&name.as_str()) => {
                    servers.push(name.clone());
                }
                _ => builtin.push(name.clone()),
            }
        }
        Ok(Selection {
            builtin: Some(builtin),
            servers,
            explicit: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_claude_desktops_shape() {
        let config: PluginConfig = serde_json::from_str(
            r#"{"mcpServers": {
                "time": {"command": "uvx", "args": ["mcp-server-time", "--local-timezone=UTC"]},
                "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                          "env": {"DEBUG": "1"}, "enabled": false},
                "web": {"url": "https://example.com/mcp", "disabled": true}
            }, "globalShortcut": "Ctrl+Space"}"#,
        )
        .unwrap();
        let time = &config.servers["time"];
        assert!(time.is_enabled());
        assert_eq!(
            time.command_line(),
            "uvx mcp-server-time --local-timezone=UTC"
        );
        assert!(!config.servers["files"].is_enabled());
        assert_eq!(config.servers["files"].env["DEBUG"], "1");
        assert!(!config.servers["web"].is_enabled());
        assert_eq!(config.servers["web"].command, None);

        let all = config.select(None).unwrap();
        assert_eq!(all.builtin, None);
        assert_eq!(all.servers, ["time"]);
        let picked = config
            .select(Some(&["bash".into(), "time".into()]))
            .unwrap();
        assert_eq!(picked.builtin, Some(vec!["bash".to_string()]));
        assert_eq!(picked.servers, ["time"]);
        assert!(picked.explicit);
        assert!(matches!(
            config.select(Some(&["files".into()])),
            Err(PluginError::Disabled(name)) if name == "files"
        ));
    }

    #[test]
    fn a_missing_file_is_no_plugins_and_a_broken_one_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(CONFIG_FILE);
        assert_eq!(PluginConfig::load(&path).unwrap(), PluginConfig::default());
        std::fs::write(&path, "{\"mcpServers\": {\"x\": {\"args\": 3}}}").unwrap();
        let error = PluginConfig::load(&path).unwrap_err().to_string();
        assert!(error.contains(&path.display().to_string()), "{error}");
        assert!(error.contains("line 1"), "{error}");
    }
}
