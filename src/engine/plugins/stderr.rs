//! A plugin process's stderr, into the engine log under a budget: a plugin writing without
//! end (64 MB once grew `engine.log`) costs the log at most [`STDERR_LOGGED`] bytes.

use super::lines::{Read, read_capped_line};
use super::protocol;
use tokio::io::AsyncBufRead;

/// Bytes of one plugin process's stderr messages that reach the engine log; the rest is
/// read and dropped.
const STDERR_LOGGED: usize = 1024 * 1024;
/// Bytes of one stderr line held: the log shows its first 200 (`protocol::shown`) anyway,
/// and a line without end must not grow a buffer of the engine.
const STDERR_LINE: usize = 1024;

/// What reaches the log: a line's message, or the one note that the rest is dropped.
#[derive(Debug, PartialEq, Eq)]
enum Logged {
    Line(String),
    RestDropped,
}

/// The share of [`STDERR_LOGGED`] one plugin process has left, counted in the bytes of the
/// messages logged (label included), not the bytes read: an empty line is a whole log
/// message, so it costs one too.
struct StderrBudget {
    left: usize,
}

impl StderrBudget {
    const fn new() -> StderrBudget {
        StderrBudget {
            left: STDERR_LOGGED,
        }
    }

    /// Hands `message` to `log` while the budget lasts; the one that spends the last of it
    /// is logged, and the note follows it.
    fn spend(&mut self, message: String, log: &mut impl FnMut(Logged)) {
        if self.left == 0 {
            return;
        }
        self.left = self.left.saturating_sub(message.len());
        log(Logged::Line(message));
        if self.left == 0 {
            log(Logged::RestDropped);
        }
    }
}

pub(super) async fn log_stderr<R: AsyncBufRead + Unpin>(stderr: R, label: String) {
    relay(stderr, &label, |logged| match logged {
        Logged::Line(message) => tracing::info!(target: "svc::plugin", "{message}"),
        Logged::RestDropped => tracing::warn!(
            target: "svc::plugin",
            "[plugin {label}] stderr past {STDERR_LOGGED} bytes is dropped from now on"
        ),
    })
    .await;
}

/// Reads `stderr` to its end (the plugin never blocks on a full pipe), handing `log` what
/// the budget lets through.
async fn relay<R: AsyncBufRead + Unpin>(mut stderr: R, label: &str, mut log: impl FnMut(Logged)) {
    let mut budget = StderrBudget::new();
    let mut line = Vec::new();
    loop {
        let read = read_capped_line(&mut stderr, &mut line, STDERR_LINE).await;
        if !matches!(read, Ok(Read::Line | Read::Eof { partial: true })) {
            break;
        }
        let message = format!("[plugin {label}] {}", protocol::shown(&line));
        budget.spend(message, &mut log);
        line.clear();
        if matches!(read, Ok(Read::Eof { .. })) {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Logged, STDERR_LOGGED, relay};

    /// What `relay` logs of `stderr`: the bytes of its messages, their count, the notes.
    async fn logged(stderr: &[u8]) -> (usize, usize, usize) {
        let (mut bytes, mut lines, mut notes) = (0, 0, 0);
        relay(stderr, "p", |logged| match logged {
            Logged::Line(message) => {
                bytes += message.len();
                lines += 1;
            }
            Logged::RestDropped => notes += 1,
        })
        .await;
        (bytes, lines, notes)
    }

    /// 64 MB of stderr lines, as a plugin once wrote: at most [`STDERR_LOGGED`] bytes (and one
    /// message) reach the log, one note says the rest is dropped.
    #[tokio::test]
    async fn a_plugin_writing_without_end_logs_a_bounded_share() {
        let line = [vec![b'x'; 999], vec![b'\n']].concat();
        let (bytes, _, notes) = logged(&line.repeat(64 * 1024)).await;
        assert!(bytes <= STDERR_LOGGED + 300, "{bytes}");
        assert_eq!(notes, 1);
    }

    /// Empty lines read one byte each but are a message each in the log: they spend the
    /// budget as they are logged, so 16 million of them log no more than the budget.
    #[tokio::test]
    async fn empty_lines_spend_the_budget_as_logged() {
        let (bytes, lines, notes) = logged(&vec![b'\n'; 16 * 1024 * 1024]).await;
        assert!(bytes <= STDERR_LOGGED + 300, "{bytes}");
        assert!(lines <= STDERR_LOGGED / "[plugin p] ".len() + 1, "{lines}");
        assert_eq!(notes, 1);
    }

    /// A line without end (no newline for 64 MB) is held no longer than its cap and logged
    /// once, cut; the line after it is its own.
    #[tokio::test]
    async fn a_line_without_end_is_cut() {
        let mut stderr = vec![b'y'; 64 * 1024 * 1024];
        stderr.extend_from_slice(b"\nnext\n");
        let mut messages = Vec::new();
        relay(stderr.as_slice(), "p", |logged| messages.push(logged)).await;
        assert_eq!(messages.len(), 2, "{messages:?}");
        let Logged::Line(first) = &messages[0] else {
            panic!("{messages:?}")
        };
        assert!(first.len() < 300 && first.ends_with('…'), "{first}");
        assert_eq!(messages[1], Logged::Line("[plugin p] next".into()));
    }
}
