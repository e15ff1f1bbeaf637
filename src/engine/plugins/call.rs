//! One call to a plugin: its request, the messages that answer it, the idle limit (the
//! plugin must say something about a call at least every `idle`, or the call is answered
//! E9002 and cancelled), and the cancel sent when the caller lets go before the answer.
//! Unary calls, event streams, byte bodies read and byte bodies written are built on it.

use super::child::{Conn, failed, lock};
use super::protocol::{self, CHUNK_BYTES, FromPlugin};
use crate::engine::provider::{ByteStream, Event, EventStream};
use crate::error::engine::{Code, EngineError};
use bytes::Bytes;
use futures::StreamExt;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::mpsc;

/// What the reader task hands a call.
#[derive(Debug)]
pub enum Delivery {
    Message(FromPlugin),
    Failed(EngineError),
}

/// Where a request goes: the connection's account and the sandbox it is about.
pub struct Target<'a> {
    pub connection: &'a crate::engine::wire::Connection,
    pub sandbox_id: Option<&'a str>,
}

pub struct Call {
    conn: Arc<Conn>,
    id: u64,
    op: &'static str,
    rx: mpsc::Receiver<Delivery>,
    /// The plugin gave its last word: no cancel is owed.
    finished: bool,
}

impl Call {
    /// Sends the request of `op` and answers the call, to read its messages from.
    pub async fn start(
        conn: &Arc<Conn>,
        op: &'static str,
        target: &Target<'_>,
        params: Value,
    ) -> Result<Call, EngineError> {
        let (id, rx) = conn.open_call()?;
        let call = Call {
            conn: conn.clone(),
            id,
            op,
            rx,
            finished: false,
        };
        call.send(json!({
            "type": "request",
            "id": id,
            "op": op,
            "connection": target.connection,
            "account": target.connection.fingerprint(),
            "sandbox_id": target.sandbox_id,
            "params": params,
        }))
        .await?;
        Ok(call)
    }

    /// Writes one message of this call to the plugin (its request, a chunk of a body); a
    /// plugin that does not read its stdin within the idle limit times the call out.
    pub async fn send(&self, message: Value) -> Result<(), EngineError> {
        let mut line = message.to_string();
        line.push('\n');
        match tokio::time::timeout(self.conn.idle, self.conn.writer.send(line)).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(self.gone()),
            Err(_) => Err(self.timed_out("did not read its stdin")),
        }
    }

    /// The next message of the call: E9002 after the idle limit without one, E9001 when
    /// the plugin failed.
    pub async fn next(&mut self) -> Result<FromPlugin, EngineError> {
        match tokio::time::timeout(self.conn.idle, self.rx.recv()).await {
            Err(_) => Err(self.timed_out("said nothing about it")),
            Ok(None) => Err(self.gone()),
            Ok(Some(Delivery::Failed(e))) => {
                self.finished = true;
                Err(e)
            }
            Ok(Some(Delivery::Message(message))) => Ok(message),
        }
    }

    /// The response, skipping `alive`s; anything else before it is a protocol fault.
    pub async fn response(&mut self) -> Result<Value, EngineError> {
        loop {
            match self.next().await? {
                FromPlugin::Alive { .. } => continue,
                FromPlugin::Response { result, error, .. } => {
                    self.finished = true;
                    return match error {
                        Some(error) => Err(protocol::engine_error(&self.conn.plugin, error)),
                        None => Ok(result),
                    };
                }
                other => return Err(self.unexpected(&other)),
            }
        }
    }

    /// The response's result as `T`.
    pub async fn answer<T: DeserializeOwned>(&mut self) -> Result<T, EngineError> {
        let result = self.response().await?;
        serde_json::from_value(result).map_err(|e| {
            self.fault(&format!(
                "a result that is not what `{}` answers: {e}",
                self.op
            ))
        })
    }

    /// The response opened a body (a read): the call goes on until its last chunk, and a
    /// reader that lets go before it owes the plugin a cancel.
    pub fn reopen(&mut self) {
        self.finished = false;
    }

    fn gone(&self) -> EngineError {
        let reason = self
            .conn
            .dead()
            .unwrap_or_else(|| "the call was abandoned".into());
        failed(&self.conn.plugin, &reason)
    }

    fn timed_out(&self, what: &str) -> EngineError {
        EngineError::new(
            Code::ProviderTimeout,
            format!(
                "plugin `{}` {what} for {} ms during `{}`: the call is cancelled",
                self.conn.plugin,
                self.conn.idle.as_millis(),
                self.op
            ),
        )
    }

    /// E9001 for a message the protocol does not allow here.
    pub fn fault(&self, what: &str) -> EngineError {
        failed(
            &self.conn.plugin,
            &format!("it answered call {} with {what}", self.id),
        )
    }

    fn unexpected(&self, message: &FromPlugin) -> EngineError {
        let kind = match message {
            FromPlugin::Response { .. } => "a response",
            FromPlugin::Event { .. } => "an event",
            FromPlugin::Chunk { .. } => "a chunk",
            FromPlugin::Alive { .. } => "`alive`",
        };
        self.fault(&format!("{kind}, which `{}` does not take", self.op))
    }

    pub fn plugin(&self) -> &str {
        &self.conn.plugin
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        lock(&self.conn.routes.calls).remove(&self.id);
        if !self.finished && self.conn.dead().is_none() {
            let mut line = protocol::cancel(self.id).to_string();
            line.push('\n');
            // Best effort: a full queue means the plugin is not reading anyway.
            let _ = self.conn.writer.try_send(line);
        }
    }
}

/// The events an op may stream, by name (the engine's events are named statically).
pub fn event_name(op: &str, name: &str) -> Option<&'static str> {
    let names: &[&'static str] = match op {
        "commands_stream" => &["start", "stdout", "stderr", "exit"],
        "files_watch" => &["create", "modify", "delete", "rename", "overflow", "error"],
        _ => &[],
    };
    names.iter().copied().find(|n| *n == name)
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

/// The bytes of a read, as the plugin sends them after its response: chunks up to the
/// last one. A plugin failure mid-body is an I/O error of the body.
pub fn read_body(call: Call) -> ByteStream {
    Box::pin(futures::stream::unfold(Some(call), |call| async move {
        let mut call = call?;
        loop {
            let message = match call.next().await {
                Ok(message) => message,
                Err(e) => return Some((Err(std::io::Error::other(e.message)), None)),
            };
            match message {
                FromPlugin::Alive { .. } => continue,
                FromPlugin::Chunk {
                    error: Some(error), ..
                } => {
                    call.finished = true;
                    let e = protocol::engine_error(call.plugin(), error);
                    return Some((Err(std::io::Error::other(e.message)), None));
                }
                FromPlugin::Chunk { data, last, .. } => {
                    let bytes = match data
                        .as_deref()
                        .map(|d| protocol::bytes(call.plugin(), "data", d))
                    {
                        Some(Ok(bytes)) => bytes,
                        Some(Err(e)) => return Some((Err(std::io::Error::other(e.message)), None)),
                        None => Vec::new(),
                    };
                    if last {
                        call.finished = true;
                        return (!bytes.is_empty()).then(|| (Ok(Bytes::from(bytes)), None));
                    }
                    if bytes.is_empty() {
                        continue;
                    }
                    return Some((Ok(Bytes::from(bytes)), Some(call)));
                }
                other => {
                    let e = call.unexpected(&other);
                    return Some((Err(std::io::Error::other(e.message)), None));
                }
            }
        }
    }))
}

/// Sends `body` as chunks of at most [`CHUNK_BYTES`] then the last chunk, while listening
/// for the plugin's answer (it may refuse before the body is through: the rest is not
/// sent). The idle limit counts only once the whole body is sent.
pub async fn write_body(call: &mut Call, mut body: ByteStream) -> Result<Value, EngineError> {
    let mut pending: Vec<u8> = Vec::new();
    let mut body_done = false;
    loop {
        while pending.len() >= CHUNK_BYTES || (body_done && !pending.is_empty()) {
            let rest = pending.split_off(pending.len().min(CHUNK_BYTES));
            call.send(protocol::chunk(call.id, &pending)).await?;
            pending = rest;
        }
        if body_done {
            call.send(protocol::last_chunk(call.id)).await?;
            return call.response().await;
        }
        tokio::select! {
            biased;
            // The plugin answered before the end of the body: a refusal (or a fault).
            early = call.rx.recv() => match early {
                Some(Delivery::Message(FromPlugin::Alive { .. })) => {}
                Some(Delivery::Message(FromPlugin::Response { error: Some(error), .. })) => {
                    call.finished = true;
                    return Err(protocol::engine_error(call.plugin(), error));
                }
                Some(Delivery::Message(other)) => return Err(call.unexpected(&other)),
                Some(Delivery::Failed(e)) => return Err(e),
                None => return Err(call.gone()),
            },
            piece = body.next() => match piece {
                Some(Ok(bytes)) => pending.extend_from_slice(&bytes),
                Some(Err(e)) => {
                    return Err(EngineError::new(
                        Code::InvalidArgument,
                        format!("the request body could not be read: {e}"),
                    ));
                }
                None => body_done = true,
            },
        }
    }
}
