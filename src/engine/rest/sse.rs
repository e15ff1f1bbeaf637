//! The remote's event streams read as they arrive: the shared event-stream parser
//! ([`crate::services::sse_parser`]) and the adapter that turns its events into the
//! provider's [`Event`]s.
//!
//! The remote's `end` ends the stream (this engine adds its own). Its `error` event ends
//! the stream with that error when nothing follows it (the protocol's rule); an `error`
//! event the remote sends and then goes on (a `files/watch` notice) is passed on as an
//! event, once the next bytes show the stream goes on. A command stream that stops before
//! its `end` was cut: `E9001`.

use super::failure::Failure;
use super::streams::Chunks;
use crate::engine::provider::{Event, EventStream};
use crate::error::engine::EngineError;
use crate::services::sse_parser::{SseEvent, SseParser};
use crate::wire::{CommandEvent, WATCH_EVENTS};
use futures::StreamExt;
use std::collections::VecDeque;

/// The event name of the protocol's streams that `name` is (`Event::name` is `&'static str`).
fn known(name: &str) -> Option<&'static str> {
    CommandEvent::NAMES
        .iter()
        .chain(WATCH_EVENTS.iter())
        .copied()
        .find(|known| *known == name)
}

struct Reader {
    chunks: Chunks,
    parser: SseParser,
    queue: VecDeque<SseEvent>,
    /// An `error` event not yet known to be the last.
    held: Option<String>,
    /// A command stream: it ends with `end`, and stopping before it is a cut.
    ends_with_end: bool,
    failure: Failure,
    done: bool,
}

/// The remote's event stream as the provider's events.
pub fn events(chunks: Chunks, ends_with_end: bool, failure: Failure) -> EventStream {
    let reader = Reader {
        chunks,
        parser: SseParser::new(),
        queue: VecDeque::new(),
        held: None,
        ends_with_end,
        failure,
        done: false,
    };
    futures::stream::unfold(reader, |mut reader| async move {
        reader.next().await.map(|event| (event, reader))
    })
    .boxed()
}

impl Reader {
    async fn next(&mut self) -> Option<Result<Event, EngineError>> {
        if self.done {
            return None;
        }
        let outcome = self.step().await;
        if !matches!(outcome, Some(Ok(_))) {
            self.done = true;
        }
        outcome
    }

    async fn step(&mut self) -> Option<Result<Event, EngineError>> {
        loop {
            if let Some(raw) = self.queue.pop_front() {
                if let Some(held) = self.held.take() {
                    // More came after the error event: it was a notice.
                    self.queue.push_front(raw);
                    return Some(self.notice(&held));
                }
                match raw.event.as_str() {
                    "end" => return None,
                    "error" => self.held = Some(raw.data),
                    name => return Some(self.event(name, &raw.data)),
                }
                continue;
            }
            match self.chunks.next().await {
                Some(Ok(bytes)) => {
                    self.queue.extend(self.parser.push(&bytes));
                    if let Some(held) = self.held.take_if(|_| !bytes.is_empty()) {
                        return Some(self.notice(&held));
                    }
                }
                // A cut right after an error event: the error is what ended it.
                Some(Err(e)) => {
                    return Some(Err(self.held.take().map_or(e, |h| self.failure.event(&h))));
                }
                None => {
                    if let Some(held) = self.held.take() {
                        return Some(Err(self.failure.event(&held)));
                    }
                    if self.ends_with_end {
                        return Some(Err(self
                            .failure
                            .garbled("its event stream ended before its `end` event")));
                    }
                    return None;
                }
            }
        }
    }

    fn event(&self, name: &str, data: &str) -> Result<Event, EngineError> {
        let name = known(name).ok_or_else(|| {
            self.failure
                .garbled(format_args!("an event named `{name}`"))
        })?;
        let data = serde_json::from_str(data).map_err(|e| {
            self.failure.garbled(format_args!(
                "the data of a `{name}` event is not JSON ({e})"
            ))
        })?;
        Ok(Event { name, data })
    }

    /// An `error` event the remote went on after, passed on as it came.
    fn notice(&self, data: &str) -> Result<Event, EngineError> {
        let data = serde_json::from_str(data).map_err(|e| {
            self.failure.garbled(format_args!(
                "the data of an `error` event is not JSON ({e})"
            ))
        })?;
        Ok(Event {
            name: "error",
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::engine::Code;
    use bytes::Bytes;

    async fn read(chunks: &[&'static [u8]], ends_with_end: bool) -> Vec<Result<Event, Code>> {
        let chunks: Vec<Result<Bytes, EngineError>> =
            chunks.iter().map(|c| Ok(Bytes::from_static(c))).collect();
        let failure = Failure::new("http://127.0.0.1:9".into());
        events(
            futures::stream::iter(chunks).boxed(),
            ends_with_end,
            failure,
        )
        .map(|e| e.map_err(|e| e.code))
        .collect()
        .await
    }

    #[tokio::test]
    async fn end_ends_an_error_ends_a_cut_is_e9001() {
        let got = read(
            &[
                b"event: stdout\ndata: {\"data\":\"hi\"}\n\n",
                b"event: end\ndata: {}\n\n",
                b"event: stdout\ndata: {}\n\n",
            ],
            true,
        )
        .await;
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].as_ref().unwrap().name, "stdout");

        let error = Code::SandboxNotFound.body("ended", None).to_string();
        let last = format!("event: error\ndata: {error}\n\n")
            .into_bytes()
            .leak();
        let got = read(&[b"event: start\ndata: {\"pid\":3}\n\n", last], true).await;
        assert_eq!(got[1], Err(Code::SandboxNotFound));

        let got = read(&[b"event: start\ndata: {\"pid\":3}\n\n"], true).await;
        assert_eq!(got[1], Err(Code::ProviderFailed));
        assert_eq!(
            read(&[b"event: create\ndata: {}\n\n"], false).await.len(),
            1
        );
    }

    #[tokio::test]
    async fn an_error_the_remote_goes_on_after_is_a_notice() {
        let error = Code::Internal.body("unwatched", None).to_string();
        let notice = format!("event: error\ndata: {error}\n\n")
            .into_bytes()
            .leak();
        let got = read(
            &[notice, b": keep-alive\n\n", b"event: modify\ndata: {}\n\n"],
            false,
        )
        .await;
        let names: Vec<_> = got.iter().map(|e| e.as_ref().unwrap().name).collect();
        assert_eq!(names, ["error", "modify"]);
    }

    #[tokio::test]
    async fn unknown_names_and_bad_data_are_e9001() {
        for text in [
            &b"event: surprise\ndata: {}\n\n"[..],
            b"data: {}\n\n",
            b"event: exit\ndata: {\n\n",
        ] {
            let got = read(&[text], false).await;
            assert_eq!(got, vec![Err(Code::ProviderFailed)]);
        }
    }
}
