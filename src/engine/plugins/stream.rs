//! Event streams of a plugin (`commands_stream`, `files_watch`): open at the first event or
//! `alive`, then each event shaped for the engine as it comes, until the response ends it
//! (well, or with the `error` event of its error).

use super::call::Call;
use super::protocol::{self, FromPlugin};
use crate::engine::provider::{Event, EventStream};
use crate::error::engine::EngineError;
use crate::services::utf8_carry::Utf8Carry;
use crate::wire::{CommandEvent, ERROR_EVENT, OutputChunk, WATCH_EVENTS};
use serde_json::Value;

/// The events an op may stream, by name (the engine's events are named statically).
pub fn event_name(op: &str, name: &str) -> Option<&'static str> {
    match op {
        "commands_stream" => CommandEvent::NAMES.iter().copied().find(|n| *n == name),
        "files_watch" if name == ERROR_EVENT => Some(ERROR_EVENT),
        "files_watch" => WATCH_EVENTS.iter().copied().find(|n| *n == name),
        _ => None,
    }
}

/// Shapes the events of a stream: the plugin's `(name, data)` into the engine's events.
pub trait Render: Send + 'static {
    fn event(
        &mut self,
        call: &Call,
        name: &'static str,
        data: Value,
    ) -> Result<Vec<Event>, EngineError>;

    /// What is still held back when the stream ends well.
    fn finish(&mut self) -> Vec<Event> {
        Vec::new()
    }
}

/// Waits until a stream is open (its first event or `alive`); an error response before
/// that is the call's answer. The events follow, shaped by `render`.
pub async fn open_stream(mut call: Call, render: impl Render) -> Result<EventStream, EngineError> {
    let mut stream = Stream {
        call: None,
        queue: std::collections::VecDeque::new(),
        render,
    };
    match call.next().await? {
        FromPlugin::Alive { .. } => stream.call = Some(call),
        FromPlugin::Event { name, data, .. } => {
            let events = stream_event(&call, &mut stream.render, &name, data)?;
            stream.queue.extend(events.into_iter().map(Ok));
            stream.call = Some(call);
        }
        FromPlugin::Response { error, .. } => {
            call.finished = true;
            if let Some(error) = error {
                return Err(protocol::engine_error(call.plugin(), error));
            }
        }
        other => return Err(call.unexpected(&other)),
    }
    Ok(Box::pin(futures::stream::unfold(
        stream,
        |mut stream| async move {
            let item = stream.next().await;
            item.map(|item| (item, stream))
        },
    )))
}

struct Stream<R> {
    /// `None` once the plugin's part is over.
    call: Option<Call>,
    queue: std::collections::VecDeque<Result<Event, EngineError>>,
    render: R,
}

impl<R: Render> Stream<R> {
    async fn next(&mut self) -> Option<Result<Event, EngineError>> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            let call = self.call.as_mut()?;
            let ended = match call.next().await {
                Ok(FromPlugin::Alive { .. }) => false,
                Ok(FromPlugin::Event { name, data, .. }) => {
                    match stream_event(call, &mut self.render, &name, data) {
                        Ok(events) => {
                            self.queue.extend(events.into_iter().map(Ok));
                            false
                        }
                        Err(e) => {
                            self.queue.push_back(Err(e));
                            true
                        }
                    }
                }
                Ok(FromPlugin::Response { error, .. }) => {
                    call.finished = true;
                    self.queue.extend(self.render.finish().into_iter().map(Ok));
                    if let Some(error) = error {
                        self.queue
                            .push_back(Err(protocol::engine_error(call.plugin(), error)));
                    }
                    true
                }
                Ok(other) => {
                    self.queue.push_back(Err(call.unexpected(&other)));
                    true
                }
                Err(e) => {
                    self.queue.push_back(Err(e));
                    true
                }
            };
            if ended {
                // The call is over: its cancel (when owed) goes now, not when the client goes.
                self.call = None;
            }
        }
    }
}

fn stream_event(
    call: &Call,
    render: &mut impl Render,
    name: &str,
    data: Value,
) -> Result<Vec<Event>, EngineError> {
    let name = event_name(call.op, name).ok_or_else(|| {
        call.fault(&format!(
            "an event `{name}`, which `{}` does not stream",
            call.op
        ))
    })?;
    render.event(call, name, data)
}

/// Command output events: `{data_b64}` from the plugin; text kept whole across events and
/// shown as the engine shows output (`data`, and `data_b64` when not UTF-8).
#[derive(Default)]
pub struct Output {
    stdout: Utf8Carry,
    stderr: Utf8Carry,
}

/// Which output event a stream's bytes become.
type Make = fn(OutputChunk) -> CommandEvent;

fn output_event(make: Make, bytes: &[u8]) -> Event {
    make(OutputChunk::new(bytes)).into()
}

impl Render for Output {
    fn event(
        &mut self,
        call: &Call,
        name: &'static str,
        data: Value,
    ) -> Result<Vec<Event>, EngineError> {
        let (carry, make): (_, Make) = match name {
            "stdout" => (&mut self.stdout, CommandEvent::Stdout),
            "stderr" => (&mut self.stderr, CommandEvent::Stderr),
            _ => return Ok(vec![Event { name, data }]),
        };
        let b64 = data["data_b64"]
            .as_str()
            .ok_or_else(|| call.fault(&format!("a `{name}` event without `data_b64`")))?;
        let bytes = carry.push(&protocol::bytes(call.plugin(), "data_b64", b64)?);
        Ok(if bytes.is_empty() {
            Vec::new()
        } else {
            vec![output_event(make, &bytes)]
        })
    }

    fn finish(&mut self) -> Vec<Event> {
        [
            (CommandEvent::Stdout as Make, self.stdout.finish()),
            (CommandEvent::Stderr, self.stderr.finish()),
        ]
        .into_iter()
        .filter(|(_, rest)| !rest.is_empty())
        .map(|(make, rest)| output_event(make, &rest))
        .collect()
    }
}

/// Watch events as they come; an `error` event's data is the plugin's error, shown as the
/// engine's error body.
pub struct Changes;

impl Render for Changes {
    fn event(
        &mut self,
        call: &Call,
        name: &'static str,
        data: Value,
    ) -> Result<Vec<Event>, EngineError> {
        if name != "error" {
            return Ok(vec![Event { name, data }]);
        }
        let error: protocol::PluginError = serde_json::from_value(data)
            .map_err(|e| call.fault(&format!("an `error` event that is not an error ({e})")))?;
        Ok(vec![Event {
            name,
            data: protocol::engine_error(call.plugin(), error).body(),
        }])
    }
}
