//! `/compact` in Claude Code's stream-json. Since 2.1.332 even one exchange is compacted:
//! a `compact_boundary` line, then the summary the model wrote as a synthetic `user`
//! message that the conversation goes on from. The `result` says success whatever
//! happened (and names `local_command: "compact"`), so a compaction is judged by the
//! boundary: none means the CLI refused (2.1.197's failed `status` line, or 2.1.332's
//! synthetic "No messages to compact" reply).

use super::super::{ItemKind, ItemStatus, RuntimeEvent, RuntimeItem};
use serde_json::{Map, Value};

/// The item key of a compaction's summary: one per turn.
const SUMMARY_KEY: &str = "compact:summary";

/// What the turn's lines said about a compaction so far.
#[derive(Default)]
pub(super) struct Compaction {
    /// `compact_metadata` of the boundary, once one came.
    boundary: Option<Value>,
    /// Why the CLI did not compact, in its own words.
    refusal: Option<String>,
    /// The text of the latest synthetic assistant reply (a local command's answer).
    synthetic: Option<String>,
}

impl Compaction {
    pub(super) fn boundary(&mut self, event: &Map<String, Value>) -> Vec<RuntimeEvent> {
        self.boundary = Some(event.get("compact_metadata").cloned().unwrap_or_default());
        vec![RuntimeEvent::Compacted]
    }

    /// A failed `status` line (2.1.197: "Not enough messages to compact.").
    pub(super) fn refused(&mut self, why: &str) {
        self.refusal = Some(why.to_owned());
    }

    /// An assistant line the CLI wrote itself (`model: "<synthetic>"`), not the model.
    pub(super) fn synthetic_reply(&mut self, message: &Map<String, Value>) {
        let text = message
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        self.synthetic = Some(text);
    }

    /// The synthetic user message after a boundary carries the summary: it becomes the
    /// turn's `compact` item (the boundary's metadata as its arguments).
    pub(super) fn user(&mut self, event: &Map<String, Value>) -> Option<RuntimeEvent> {
        let metadata = self.boundary.as_ref()?;
        if event.get("isSynthetic").and_then(Value::as_bool) != Some(true) {
            return None;
        }
        let content = event.get("message")?.get("content")?.as_str()?;
        Some(RuntimeEvent::ItemCompleted(RuntimeItem {
            key: SUMMARY_KEY.to_owned(),
            kind: ItemKind::ToolCall {
                tool_name: "compact".to_owned(),
                input: metadata.clone(),
                output: Some(Value::String(summary(content).to_owned())),
            },
            status: ItemStatus::Completed,
        }))
    }

    /// The message that fails the turn: the CLI refused, or a `/compact` result came
    /// without any boundary; `None` when nothing was to compact or it was compacted.
    pub(super) fn failure(&mut self, result: &Map<String, Value>) -> Option<String> {
        let compact_command =
            result.get("local_command").and_then(Value::as_str) == Some("compact");
        let why = match self.refusal.take() {
            Some(why) => Some(why),
            None if compact_command && self.boundary.is_none() => {
                Some(self.synthetic.take().unwrap_or_default())
            }
            None => None,
        }?;
        let why = why.trim();
        Some(if why.is_empty() {
            "the conversation could not be compacted".to_owned()
        } else {
            format!("the conversation could not be compacted: {why}")
        })
    }
}

/// The summary inside the synthetic message: between the reminder the CLI puts first and
/// its closing instructions, without the `Summary:` heading it adds when the model wrote
/// `<summary>` tags. A message in another wording is kept whole.
fn summary(message: &str) -> &str {
    let body = message
        .split_once("</system-reminder>\n")
        .map_or(message, |(_, rest)| rest);
    let body = [
        "\n\nIf you need specific details",
        "\n\nContinue the conversation",
    ]
    .iter()
    .filter_map(|end| body.find(end))
    .min()
    .map_or(body, |end| &body[..end]);
    let body = body.strip_prefix("Summary:\n").unwrap_or(body);
    body.trim()
}

#[cfg(test)]
mod tests {
    use super::summary;

    #[test]
    fn the_summary_is_cut_out_of_the_cli_wording() {
        let message = "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\n<system-reminder>\n<tools-used-before-summary></tools-used-before-summary>\n</system-reminder>\nSummary:\nWe talked.\n\nIf you need specific details from before compaction, read the full transcript at: /x.jsonl\nContinue the conversation from where it left off.";
        assert_eq!(summary(message), "We talked.");
        let untagged = message.replace("Summary:\nWe talked.", "Summary: we talked.");
        assert_eq!(summary(&untagged), "Summary: we talked.");
        assert_eq!(summary("another wording"), "another wording");
    }
}
