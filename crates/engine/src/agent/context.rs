//! Context shaping: what of the history is sent. Screenshots are most of the tokens, so only
//! the newest few are sent, old ones are dropped in chunks (so the cached prompt prefix stays
//! the same between turns), cache breakpoints sit on the newest turns, and near the context
//! window the older turns are replaced by a summary. The stored history keeps everything.

use crate::llm::estimate::estimate_message;
use crate::llm::{ContentBlock, Message, Role, ToolResultContent};

/// Replaces a screenshot that is no longer sent.
pub const PRUNED_SCREENSHOT: &str = "[older screenshot removed to save context]";

#[derive(Clone, Debug, PartialEq)]
pub struct ContextPolicy {
    /// Screenshots (images in tool results) sent at most; `None` sends all.
    pub keep_screenshots: Option<usize>,
    /// Old screenshots go in chunks of this many, so the prefix changes once per chunk.
    pub prune_chunk: usize,
    /// Place prompt-cache breakpoints (providers that cannot cache ignore them).
    pub cache: bool,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// Summarize older turns once a request would fill this share of the window.
    pub summarize_at: f64,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        Self {
            keep_screenshots: Some(3),
            prune_chunk: 2,
            cache: true,
            context_window: 200_000,
            summarize_at: 0.8,
        }
    }
}

/// The messages of one request, and where its cache breakpoints go.
#[derive(Debug, PartialEq)]
pub struct Shaped {
    pub messages: Vec<Message>,
    pub cache_breakpoints: Vec<usize>,
}

/// A summary standing in for `history[..upto]`; `history[upto]` is an assistant message, so no
/// `tool_use` is separated from its `tool_result`.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    pub upto: usize,
    pub text: String,
}

impl ContextPolicy {
    /// The request view of `history`: summary first (if any), old screenshots pruned.
    pub fn shape(&self, history: &[Message], summary: Option<&Summary>) -> Shaped {
        let (summary_message, rest) = match summary {
            Some(summary) => (
                Some(Message::user(vec![ContentBlock::text(format!(
                    "[Summary of the earlier part of this conversation]\n{}",
                    summary.text
                ))])),
                &history[summary.upto..],
            ),
            None => (None, history),
        };
        let total: usize = rest.iter().map(screenshot_count).sum();
        let mut remove = match self.keep_screenshots {
            Some(keep) if total > keep => {
                // A chunk larger than what is kept would drop the newest screenshot too.
                let chunk = self.prune_chunk.clamp(1, keep.max(1));
                (total - keep).div_ceil(chunk) * chunk
            }
            _ => 0,
        };
        let mut messages = Vec::with_capacity(rest.len() + 1);
        messages.extend(summary_message);
        // Copy block by block so pruned screenshots are never copied at all.
        messages.extend(rest.iter().map(|message| {
            Message {
                role: message.role,
                content: message
                    .content
                    .iter()
                    .map(|block| pruned_copy(block, &mut remove))
                    .collect(),
            }
        }));
        let cache_breakpoints = if self.cache {
            breakpoints(&messages)
        } else {
            Vec::new()
        };
        Shaped {
            messages,
            cache_breakpoints,
        }
    }

    /// Whether a request of about `tokens` should first be summarized.
    pub fn needs_summary(&self, tokens: u64) -> bool {
        tokens as f64 >= self.context_window as f64 * self.summarize_at
    }

    /// Where to cut `history` for a summary: the earliest assistant message after which the
    /// kept turns fit in a third of the window. `None` when there is nothing worth cutting.
    pub fn summary_cut(&self, history: &[Message], from: usize) -> Option<usize> {
        let budget = self.context_window / 3;
        let mut kept = 0;
        let mut cut = None;
        for index in (from + 1..history.len()).rev() {
            kept += estimate_message(&history[index]);
            if kept > budget {
                break;
            }
            if history[index].role == Role::Assistant {
                cut = Some(index);
            }
        }
        // Keep at least the newest exchange, and cut something.
        cut.filter(|&c| c > from + 1 && c < history.len())
    }
}

/// Copies a block, turning its images into a placeholder while `remove` is above zero. The
/// number removed only changes every `prune_chunk` screenshots, which keeps the prefix stable.
fn pruned_copy(block: &ContentBlock, remove: &mut usize) -> ContentBlock {
    match block {
        ContentBlock::ToolResult {
            tool_use_id,
            content,
            is_error,
            toolset_name,
        } if *remove > 0 => ContentBlock::ToolResult {
            tool_use_id: tool_use_id.clone(),
            is_error: *is_error,
            toolset_name: toolset_name.clone(),
            content: content
                .iter()
                .map(|part| match part {
                    ToolResultContent::Image { .. } if *remove > 0 => {
                        *remove -= 1;
                        ToolResultContent::Text {
                            text: PRUNED_SCREENSHOT.into(),
                        }
                    }
                    other => other.clone(),
                })
                .collect(),
        },
        other => other.clone(),
    }
}

fn screenshot_count(message: &Message) -> usize {
    message
        .content
        .iter()
        .map(|block| match block {
            ContentBlock::ToolResult { content, .. } => content
                .iter()
                .filter(|p| matches!(p, ToolResultContent::Image { .. }))
                .count(),
            _ => 0,
        })
        .sum()
}

/// Where cached prefixes end: the newest two user turns (the next request reads the first,
/// this one writes the second), and the last message whose screenshots are already pruned.
/// That one matters: every newer message still holds a screenshot that a later chunk will
/// prune, so without it each chunk would leave no cached prefix to read.
fn breakpoints(messages: &[Message]) -> Vec<usize> {
    let mut points: Vec<usize> = messages
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, m)| m.role == Role::User)
        .map(|(i, _)| i)
        .take(2)
        .collect();
    let pruned_boundary = messages.iter().rposition(|m| {
        m.content.iter().any(|block| match block {
            ContentBlock::ToolResult { content, .. } => content.iter().any(
                |part| matches!(part, ToolResultContent::Text { text } if text == PRUNED_SCREENSHOT),
            ),
            _ => false,
        })
    });
    points.extend(pruned_boundary.filter(|b| !points.contains(b)));
    points.sort_unstable();
    points
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::llm::ImageSource;

    fn screenshot_step(i: usize) -> [Message; 2] {
        let id = crate::ids::ToolUseId::from(format!("t{i}"));
        [
            Message::assistant(vec![ContentBlock::ToolUse {
                id: id.clone(),
                name: "computer".into(),
                input: json!({}),
                toolset_name: None,
            }]),
            Message::user(vec![ContentBlock::ToolResult {
                tool_use_id: id,
                content: vec![ToolResultContent::Image {
                    source: ImageSource::Base64 {
                        media_type: "image/png".into(),
                        data: format!("img{i}"),
                    },
                }],
                is_error: false,
                toolset_name: None,
            }]),
        ]
    }

    fn session(steps: usize) -> Vec<Message> {
        let mut history = vec![Message::user(vec![ContentBlock::text("go")])];
        for i in 0..steps {
            history.extend(screenshot_step(i));
        }
        history
    }

    fn images(messages: &[Message]) -> usize {
        messages.iter().map(screenshot_count).sum()
    }

    #[test]
    fn keeps_at_most_n_screenshots_and_prunes_in_chunks() {
        let policy = ContextPolicy {
            keep_screenshots: Some(3),
            prune_chunk: 2,
            ..Default::default()
        };
        let mut previous_prefix_changes = 0;
        let mut last: Option<Vec<Message>> = None;
        for steps in 1..=40 {
            let shaped = policy.shape(&session(steps), None);
            let kept = images(&shaped.messages);
            assert!(
                kept <= 3 && kept >= 2.min(steps),
                "{steps} steps kept {kept}"
            );
            // The newest screenshot is always sent.
            assert!(screenshot_count(shaped.messages.last().unwrap()) == 1);
            if let Some(last) = &last {
                let stable = shaped.messages[..last.len()] == last[..];
                if !stable {
                    previous_prefix_changes += 1;
                }
            }
            last = Some(shaped.messages);
        }
        // The prefix changes once per chunk of two screenshots, not on every step.
        assert!(previous_prefix_changes <= 19, "{previous_prefix_changes}");
        assert!(previous_prefix_changes >= 15, "{previous_prefix_changes}");
    }

    #[test]
    fn keeping_fewer_than_a_chunk_still_sends_the_newest() {
        for keep in [1, 2] {
            let policy = ContextPolicy {
                keep_screenshots: Some(keep),
                prune_chunk: 2,
                ..Default::default()
            };
            for steps in 1..=10 {
                let shaped = policy.shape(&session(steps), None);
                let kept = images(&shaped.messages);
                assert!(
                    kept <= keep && kept >= 1,
                    "keep {keep}, {steps} steps: {kept}"
                );
                assert_eq!(screenshot_count(shaped.messages.last().unwrap()), 1);
            }
        }
        let none = ContextPolicy {
            keep_screenshots: Some(0),
            ..Default::default()
        };
        assert_eq!(images(&none.shape(&session(5), None).messages), 0);
    }

    #[test]
    fn breakpoints_go_on_the_newest_user_turns_and_the_pruning_boundary() {
        let shaped = ContextPolicy::default().shape(&session(3), None);
        assert_eq!(shaped.cache_breakpoints, vec![4, 6]);
        // Six screenshots: the oldest four are pruned, and the last of them (message 8) ends
        // a prefix that the next chunk leaves untouched.
        let shaped = ContextPolicy::default().shape(&session(6), None);
        assert_eq!(shaped.cache_breakpoints, vec![8, 10, 12]);
        let uncached = ContextPolicy {
            cache: false,
            ..Default::default()
        }
        .shape(&session(3), None);
        assert!(uncached.cache_breakpoints.is_empty());
    }

    #[test]
    fn a_summary_replaces_the_older_turns_without_splitting_tool_pairs() {
        let history = session(10);
        // Unreadable test images count 1600 tokens each: a third of this window keeps two steps.
        let policy = ContextPolicy {
            context_window: 10_000,
            ..Default::default()
        };
        let cut = policy.summary_cut(&history, 0).expect("a cut");
        assert_eq!(history[cut].role, Role::Assistant);
        assert_eq!(cut, history.len() - 4);
        let shaped = policy.shape(
            &history,
            Some(&Summary {
                upto: cut,
                text: "earlier: clicked things".into(),
            }),
        );
        assert_eq!(shaped.messages[0].role, Role::User);
        assert!(shaped.messages[0].text().contains("clicked things"));
        assert_eq!(shaped.messages[1], history[cut]);
        assert_eq!(shaped.messages.len(), history.len() - cut + 1);
    }
}
