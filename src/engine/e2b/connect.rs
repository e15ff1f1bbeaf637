//! The Connect protocol as envd speaks it, JSON codec only: a unary call is a JSON body
//! answered by a JSON body (an error: the code's HTTP status and `{code, message}`); a
//! stream is `application/connect+json` in envelopes of a flag byte and a big-endian u32
//! length, the answer's last envelope the end frame (flag 2) with `{}` or `{"error": ...}`.
//! A quiet stream gets the service's keep-alive message at the interval the client asks
//! for in `Keepalive-Ping-Interval`, so proxies and the SDKs' read timeouts see traffic.

use super::errors::{ConnectCode, RpcError};
use crate::engine::state::OpenGuard;
use axum::body::Body;
use axum::response::{IntoResponse, Response};
use bytes::{BufMut, Bytes, BytesMut};
use futures::stream::{BoxStream, StreamExt};
use http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::time::Duration;

const FLAG_COMPRESSED: u8 = 0x01;
const FLAG_END: u8 = 0x02;
/// The largest message this front reads (a stdin chunk, a path): envd's own limit is far
/// above what its callers send, and the body is held whole.
pub const MAX_MESSAGE: usize = 16 * 1024 * 1024;

/// A Connect call's route: its message is held whole, so its body may be as large as the
/// framing accepts (one envelope header more), no larger.
pub fn call<S: Clone + Send + Sync + 'static>(
    route: axum::routing::MethodRouter<S>,
) -> axum::routing::MethodRouter<S> {
    route.layer(axum::extract::DefaultBodyLimit::max(MAX_MESSAGE + 5))
}
/// The fewest seconds between keep-alives, whatever a client asks.
const MIN_KEEPALIVE: Duration = Duration::from_millis(100);

pub const STREAM_TYPE: &str = "application/connect+json";
const UNARY_TYPE: &str = "application/json";

/// The messages of a stream, each one envelope, and whether the envelope was the end one.
pub fn decode(mut bytes: &[u8]) -> Result<Vec<Bytes>, RpcError> {
    let mut messages = Vec::new();
    while !bytes.is_empty() {
        if bytes.len() < 5 {
            return Err(RpcError::invalid(format!(
                "a truncated envelope: {} bytes where a 5-byte prefix was due",
                bytes.len()
            )));
        }
        let flags = bytes[0];
        let length = u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]) as usize;
        if length > MAX_MESSAGE {
            return Err(RpcError::new(
                ConnectCode::InvalidArgument,
                format!("a message of {length} bytes is over the limit of {MAX_MESSAGE}"),
            ));
        }
        let rest = &bytes[5..];
        if rest.len() < length {
            return Err(RpcError::invalid(format!(
                "a truncated envelope: {length} bytes announced, {} sent",
                rest.len()
            )));
        }
        if flags & FLAG_COMPRESSED != 0 {
            return Err(RpcError::new(
                ConnectCode::Unimplemented,
                "compressed messages are not accepted: send them uncompressed",
            ));
        }
        if flags & FLAG_END == 0 {
            messages.push(Bytes::copy_from_slice(&rest[..length]));
        }
        bytes = &rest[length..];
    }
    Ok(messages)
}

/// One envelope of `json`.
pub fn envelope(flags: u8, json: &[u8]) -> Bytes {
    let mut out = BytesMut::with_capacity(5 + json.len());
    out.put_u8(flags);
    out.put_u32(json.len() as u32);
    out.put_slice(json);
    out.freeze()
}

/// The end frame: `{}`, or the error.
pub fn end_frame(error: Option<&RpcError>) -> Bytes {
    let body = match error {
        Some(e) => serde_json::json!({"error": e.body()}),
        None => serde_json::json!({}),
    };
    envelope(FLAG_END, body.to_string().as_bytes())
}

fn content_type(headers: &HeaderMap) -> &str {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim())
        .unwrap_or("")
}

/// A message as proto3 JSON reads it: unknown fields ignored, absent ones their defaults.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, RpcError> {
    let bytes = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}".as_slice()
    } else {
        bytes
    };
    serde_json::from_slice(bytes).map_err(|e| RpcError::invalid(format!("a bad message: {e}")))
}

/// The request of a unary call.
pub fn unary_request<T: DeserializeOwned>(headers: &HeaderMap, body: &[u8]) -> Result<T, RpcError> {
    match content_type(headers) {
        UNARY_TYPE => parse(body),
        other => Err(codec_refused(other)),
    }
}

/// The one request message of a server stream.
pub fn stream_request<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: &[u8],
) -> Result<T, RpcError> {
    match content_type(headers) {
        STREAM_TYPE => match decode(body)?.as_slice() {
            [one] => parse(one),
            [] => parse(b"{}"),
            more => Err(RpcError::invalid(format!(
                "a server stream takes one request message, not {}",
                more.len()
            ))),
        },
        other => Err(codec_refused(other)),
    }
}

/// The messages of a client stream.
pub fn client_stream<T: DeserializeOwned>(
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Vec<T>, RpcError> {
    match content_type(headers) {
        STREAM_TYPE => decode(body)?.iter().map(|m| parse(m)).collect(),
        other => Err(codec_refused(other)),
    }
}

fn codec_refused(content_type: &str) -> RpcError {
    RpcError::new(
        ConnectCode::Unimplemented,
        format!(
            "content type `{content_type}` is not served: this envd speaks the Connect protocol \
             with the JSON codec (`{UNARY_TYPE}` unary, `{STREAM_TYPE}` streams)"
        ),
    )
}

/// The interval of `Keepalive-Ping-Interval` (seconds), when the client asked for one.
pub fn keepalive_interval(headers: &HeaderMap) -> Option<Duration> {
    let seconds: f64 = headers
        .get("keepalive-ping-interval")?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    (seconds.is_finite() && seconds > 0.0)
        .then(|| Duration::from_secs_f64(seconds.min(3600.0)).max(MIN_KEEPALIVE))
}

/// A stream's messages as they come, or the error that ends it.
pub type Messages = BoxStream<'static, Result<Value, RpcError>>;

/// The answer of a server stream: each message an envelope, `keepalive` whenever the
/// stream was quiet for `interval`, then the end frame. Holds the engine open while read.
pub fn stream_response(
    messages: Messages,
    keepalive: Option<(Duration, Value)>,
    open: OpenGuard,
) -> Response {
    struct State {
        messages: Option<Messages>,
        keepalive: Option<(Duration, Value)>,
        _open: OpenGuard,
    }
    let state = State {
        messages: Some(messages),
        keepalive,
        _open: open,
    };
    let body = futures::stream::unfold(state, |mut state| async move {
        let messages = state.messages.as_mut()?;
        let next = match &state.keepalive {
            Some((interval, ping)) => {
                match tokio::time::timeout(*interval, messages.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        let frame = envelope(0, ping.to_string().as_bytes());
                        return Some((Ok::<_, std::io::Error>(frame), state));
                    }
                }
            }
            None => messages.next().await,
        };
        let frame = match next {
            Some(Ok(message)) => envelope(0, message.to_string().as_bytes()),
            Some(Err(error)) => {
                state.messages = None;
                end_frame(Some(&error))
            }
            None => {
                state.messages = None;
                end_frame(None)
            }
        };
        Some((Ok(frame), state))
    });
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, STREAM_TYPE)],
        Body::from_stream(body),
    )
        .into_response()
}

/// A stream that failed before its first message: still a 200 with the error in its end
/// frame, as Connect streams answer.
pub fn stream_error(error: RpcError) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, STREAM_TYPE)],
        end_frame(Some(&error)),
    )
        .into_response()
}

/// The answer of a unary call.
pub fn unary(result: Result<Value, RpcError>) -> Response {
    match result {
        Ok(value) => axum::Json(value).into_response(),
        Err(e) => e.into_response(),
    }
}

/// int64 fields are strings in proto3 JSON (a JavaScript number cannot hold them all).
pub fn int64(n: impl Into<i64>) -> Value {
    Value::String(n.into().to_string())
}

/// Reads an int64 that came as a string or a number.
pub fn read_int64(value: &Value) -> Option<i64> {
    match value {
        Value::String(s) => s.parse().ok(),
        Value::Number(n) => n.as_i64(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn envelopes_round_trip_and_bad_ones_are_typed_errors() {
        let mut wire = envelope(0, b"{\"a\":1}").to_vec();
        wire.extend_from_slice(&envelope(0, b"{}"));
        let messages = decode(&wire).unwrap();
        assert_eq!(messages, vec![Bytes::from("{\"a\":1}"), Bytes::from("{}")]);
        assert_eq!(
            decode(&wire[..3]).unwrap_err().code,
            ConnectCode::InvalidArgument
        );
        assert_eq!(
            decode(&wire[..8]).unwrap_err().code,
            ConnectCode::InvalidArgument
        );
        let compressed = envelope(FLAG_COMPRESSED, b"{}");
        assert_eq!(
            decode(&compressed).unwrap_err().code,
            ConnectCode::Unimplemented
        );
        let end = end_frame(Some(&RpcError::new(ConnectCode::NotFound, "gone")));
        assert_eq!(end[0], FLAG_END);
        let json: Value = serde_json::from_slice(&end[5..]).unwrap();
        assert_eq!(json["error"]["code"], "not_found");
    }

    #[test]
    fn unknown_fields_are_ignored_and_int64_reads_both_forms() {
        #[derive(serde::Deserialize)]
        struct M {
            #[serde(default)]
            path: String,
        }
        let m: M = parse(br#"{"path":"/x","futureField":3}"#).unwrap();
        assert_eq!(m.path, "/x");
        assert_eq!(read_int64(&int64(7)), Some(7));
        assert_eq!(read_int64(&serde_json::json!(7)), Some(7));
    }
}
