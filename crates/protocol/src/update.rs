//! What a task's watchers receive, typed, so every front end (the window, the CLI, the API,
//! a delegating task) matches on it instead of reading JSON. No I/O here: these are the
//! seam's types, and how the window is sent them.

use serde::{Deserialize, Serialize};

use crate::event::AgentEvent;
use crate::task::TaskInfo;

/// What a watcher receives: a task's events, notices along the way, and its end.
#[derive(Clone, Debug, PartialEq)]
pub enum TaskUpdate {
    /// An event of the run as stored (images as refs). `id` is its sequence number in the
    /// store; `None` when it could not be stored.
    Event { id: Option<i64>, event: AgentEvent },
    /// Something to tell the person that is not part of the run (a plugin server that did
    /// not start).
    Notice(String),
    /// The task ended, as it ended (its final state, and why it failed if it did): the last
    /// update of a watch that followed it to its end.
    Ended(TaskInfo),
}

/// A task's update as the window is sent it: an event as it is, or a notice as
/// `{"type": "notice", "message": …}`. The end is not sent: a run's events end with `done`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ts_rs::TS)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WindowUpdate {
    Notice {
        message: String,
    },
    #[serde(untagged)]
    Event(Box<AgentEvent>),
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_window_gets_events_as_they_are_and_notices_by_their_own_type() {
        let event = AgentEvent::TextDelta { text: "hi".into() };
        let sent = serde_json::to_value(WindowUpdate::Event(Box::new(event.clone()))).unwrap();
        assert_eq!(sent, serde_json::to_value(&event).unwrap());
        let notice = WindowUpdate::Notice {
            message: "the plugin server `files` did not start".into(),
        };
        let sent = serde_json::to_value(&notice).unwrap();
        assert_eq!(
            sent,
            json!({"type": "notice", "message": "the plugin server `files` did not start"})
        );
        let read: WindowUpdate = serde_json::from_value(sent).unwrap();
        assert_eq!(read, notice);
        let read: WindowUpdate =
            serde_json::from_value(json!({"type": "text_delta", "text": "hi"})).unwrap();
        assert_eq!(read, WindowUpdate::Event(Box::new(event)));
    }
}
