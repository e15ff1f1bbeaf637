//! One call to a plugin: its request, the messages that answer it, the idle limit (the
//! plugin must say something about a call at least every `idle`, or the call is answered
//! E9002 and cancelled), and the cancel sent when the caller lets go before the answer.
//! Unary calls here; event streams (`stream.rs`) and byte bodies (`body.rs`) on it.

use super::child::{Conn, failed, lock};
use super::protocol::{self, Delivery, FromPlugin};
use crate::error::engine::{Code, EngineError};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use std::sync::Arc;
use tokio::sync::mpsc;

/// Where a request goes: the connection's account and the sandbox it is about.
pub struct Target<'a> {
    pub connection: &'a crate::wire::Connection,
    pub sandbox_id: Option<&'a str>,
}

pub struct Call {
    conn: Arc<Conn>,
    pub(super) id: u64,
    pub(super) op: &'static str,
    pub(super) rx: mpsc::Receiver<Delivery>,
    /// The plugin gave its last word: no cancel is owed.
    pub(super) finished: bool,
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

    pub(super) fn gone(&self) -> EngineError {
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

    pub(super) fn unexpected(&self, message: &FromPlugin) -> EngineError {
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
            // The queue is full while another call's body streams to the plugin (or the
            // plugin is slow to read): the cancel then waits its turn on a task of its own,
            // as a drop cannot wait. Dropped, it would leave the plugin holding the call's
            // state for ever (a cut-off write's temp file). The task ends when the plugin's
            // writer does.
            if let Err(mpsc::error::TrySendError::Full(line)) = self.conn.writer.try_send(line)
                && let Ok(runtime) = tokio::runtime::Handle::try_current()
            {
                let writer = self.conn.writer.clone();
                runtime.spawn(async move {
                    let _ = writer.send(line).await;
                });
            }
        }
    }
}
