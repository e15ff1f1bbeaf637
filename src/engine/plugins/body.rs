//! Byte bodies as chunks of at most 64 KiB: a file read (the plugin's chunks after its
//! `{size}`) and a file written (the engine's chunks after its request).

use super::call::Call;
use super::protocol::Delivery;
use super::protocol::{self, CHUNK_BYTES, FromPlugin};
use crate::engine::provider::ByteStream;
use crate::error::engine::{Code, EngineError};
use crate::wire::EntryInfo;
use bytes::Bytes;
use futures::StreamExt;

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
pub async fn write_body(call: &mut Call, mut body: ByteStream) -> Result<EntryInfo, EngineError> {
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
            return call.answer().await;
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
