//! `deskhand serve --install`: a systemd user unit that keeps `deskhand serve` (and so the
//! schedules) running, restarted on failure, enabled with `systemctl --user`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::service::ServiceArgs;

/// The unit's name.
pub const UNIT: &str = "deskhand.service";

/// Writes the unit for this `deskhand` with the same data directory, socket and listener,
/// then enables and starts it; a `systemctl --user` that is missing or fails is a clear
/// error that names the unit written.
pub fn install(service: &ServiceArgs, listen: Option<SocketAddr>) -> Result<()> {
    let exe = std::env::current_exe().context("cannot tell where this deskhand is")?;
    let mut args = vec!["serve".to_string()];
    if let Some(address) = listen {
        args.extend(["--listen".into(), address.to_string()]);
    }
    if let Some(dir) = &service.data_dir {
        args.extend(["--data-dir".into(), absolute(dir)?.display().to_string()]);
    }
    if let Some(socket) = &service.socket {
        args.extend(["--socket".into(), absolute(socket)?.display().to_string()]);
    }
    let dir = units_dir().context("cannot find the systemd user unit folder ($HOME is not set)")?;
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let path = dir.join(UNIT);
    std::fs::write(&path, unit_text(&exe, &args))
        .with_context(|| format!("cannot write {}", path.display()))?;
    eprintln!("deskhand: wrote {}", path.display());
    for step in [&["daemon-reload"][..], &["enable", "--now", UNIT]] {
        systemctl(step).with_context(|| {
            format!(
                "the unit is written ({}) but could not be enabled; once systemd's user \
                 instance runs, enable it with `systemctl --user enable --now {UNIT}`",
                path.display()
            )
        })?;
    }
    eprintln!(
        "deskhand: enabled and started {UNIT}; it restarts on failure (`systemctl --user status \
         {UNIT}`, logs: `journalctl --user -u {UNIT}`)"
    );
    Ok(())
}

fn systemctl(args: &[&str]) -> Result<()> {
    let output = Command::new("systemctl")
        .arg("--user")
        .args(args)
        .output()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => {
                anyhow::anyhow!("systemctl is not installed here (no systemd)")
            }
            _ => anyhow::anyhow!("cannot run systemctl: {e}"),
        })?;
    if !output.status.success() {
        bail!(
            "`systemctl --user {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))
}

/// `$XDG_CONFIG_HOME/systemd/user`, else `~/.config/systemd/user`.
fn units_dir() -> Option<PathBuf> {
    let config = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(config.join("systemd").join("user"))
}

/// The unit file: `deskhand serve` restarted on failure, started with the user's session.
pub fn unit_text(exe: &Path, args: &[String]) -> String {
    let command = std::iter::once(exe.display().to_string())
        .chain(args.iter().cloned())
        .map(|word| quoted(&word))
        .collect::<Vec<_>>()
        .join(" ");
    format!(
        "[Unit]\n\
         Description=Deskhand: the task engine, its local API and its schedules\n\
         \n\
         [Service]\n\
         ExecStart={command}\n\
         Restart=on-failure\n\
         RestartSec=5\n\
         \n\
         [Install]\n\
         WantedBy=default.target\n"
    )
}

/// A word of `ExecStart=`, quoted as systemd reads it: in double quotes with `\` and `"`
/// escaped, and `%` doubled (specifiers) and `$` doubled (variables).
fn quoted(word: &str) -> String {
    let mut out = String::from("\"");
    for c in word.chars() {
        match c {
            '\\' | '"' => {
                out.push('\\');
                out.push(c);
            }
            '%' => out.push_str("%%"),
            '$' => out.push_str("$$"),
            _ => out.push(c),
        }
    }
    out.push('"');
    out
}
