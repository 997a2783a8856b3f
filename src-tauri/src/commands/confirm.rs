//! What the person confirms in a native dialog (`desktop::Desktop`) before a command widens
//! what the agent may do, or where a key or the person goes: the questions, and the answer
//! as an IPC result.

use crate::desktop::Confirmation;
use crate::error::{ErrorKind, IpcError, IpcResult};
use crate::state::AppState;

/// Asks the person natively; `declined` unless they said yes.
pub async fn confirmed(state: &AppState, question: Confirmation) -> IpcResult<()> {
    if state.desktop.confirm(question).await {
        Ok(())
    } else {
        Err(IpcError::new(
            ErrorKind::Declined,
            "not done: it was not confirmed in the dialog",
        ))
    }
}

/// Before the agent may act without asking.
pub fn auto_mode() -> Confirmation {
    Confirmation {
        title: "Switch to Auto?".into(),
        message: "In Auto the agent clicks, types and runs commands without asking you first. \
                  Switch to Auto?"
            .into(),
        accept: "Switch to Auto".into(),
    }
}

/// Before "always allow" for bash: every later command of the session runs unasked.
pub fn allow_all_commands() -> Confirmation {
    Confirmation {
        title: "Allow every command?".into(),
        message: "Let the agent run any bash command, without asking, for the rest of this \
                  session?"
            .into(),
        accept: "Allow all commands".into(),
    }
}

/// Before the API key of `provider` goes to `url` (a base URL the settings change).
pub fn key_destination(provider: &str, url: &str) -> Confirmation {
    Confirmation {
        title: "Send the API key to a new address?".into(),
        message: format!(
            "From now on your {provider} API key will be sent to\n\n{url}\n\nOnly confirm if \
             you set this address yourself."
        ),
        accept: "Use this address".into(),
    }
}

/// Before a link from a reply opens in the system browser: its full address.
pub fn open_link(url: &str) -> Confirmation {
    Confirmation {
        title: "Open this link?".into(),
        message: format!("Open in your web browser:\n\n{url}"),
        accept: "Open in browser".into(),
    }
}
