//! `shell_stream`: POST /shell/stream runs a command and streams it as server-sent events:
//! `stdout` and `stderr` (`{data}`, or `{data_b64}` when the bytes are not UTF-8; a
//! character cut between two reads is held back until it is whole), each stream in order
//! and the two in the order they were read; then `exit` (`{exit_code, duration_ms,
//! timed_out}`) and `end`. A failure inside the stream is an `error` event with the flat
//! error body, then `end`.
//!
//! The command is judged and started before the stream opens, so a refusal is a normal
//! typed answer. The program waits for a slow reader (nothing is dropped); a reader that
//! hangs up ends the command.

use super::Route;
use super::command::{CommandBody, DEFAULT_TIMEOUT, Mode, prepare};
use super::render::{Utf8Carry, chunk_data};
use crate::error::{ApiError, ApiResult, Code};
use crate::server::SharedState;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Json;
use crate::server::route::on;
use crate::services::supervisor::{Chunk, Process, Stream};
use axum::Extension;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use serde_json::{Value, json};
use std::time::Instant;
use tokio::sync::mpsc;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, shell_stream),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/shell/stream",
    body: ExampleBody::Json(r#"{"cmd": "echo one; exit 2", "cwd": "/workspace"}"#),
    files: &[],
    status: 200,
    headers: &[("content-type", "text/event-stream")],
    answer: "event: stdout\ndata: {\"data\":\"one\\n\"}\n\nevent: exit\ndata: {\"exit_code\":2,\"duration_ms\":3,\"timed_out\":false}\n\nevent: end\ndata: {}\n\n",
};

/// The stream's events (the module's comment says when each comes), for the OpenAPI document.
pub(super) const DOC: crate::server::openapi::op::Doc = {
    use crate::server::openapi::op::{Answer, Doc, Event, LAUNCH, json_schema};
    fn chunk(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        json_schema!({
            "type": "object",
            "properties": {
                "data": {"type": "string", "description": "The bytes, when they are UTF-8."},
                "data_b64": {"type": "string", "contentEncoding": "base64", "description": "The bytes, when they are not."},
            },
            "minProperties": 1,
            "maxProperties": 1,
            "additionalProperties": false,
        })
    }
    Doc::new(EndpointId::ShellStream, "Run a command, streamed")
        .describe("The command body of `/shell`, its output as server-sent events. The command is judged and started before the stream opens, so a refusal is a normal typed answer; the program waits for a slow reader, and a reader that hangs up ends the command.")
        .json(|g| g.subschema_for::<CommandBody>())
        .answers(&[Answer::events("Output, then `exit` and `end`.", &[
            Event::new("stdout", "Output, in order (a character cut between two reads is held back until it is whole).", chunk),
            Event::new("stderr", "Output, in order.", chunk),
            Event::new("exit", "How it ended.", |_| {
                json_schema!({
                    "type": "object",
                    "required": ["exit_code", "duration_ms", "timed_out"],
                    "properties": {
                        "exit_code": {"type": ["integer", "null"]},
                        "duration_ms": {"type": "integer", "minimum": 0},
                        "timed_out": {"type": "boolean"},
                    },
                    "additionalProperties": false,
                })
            }),
            Event::new("error", "A failure inside the stream: the flat error body (then `end`).", |_| {
                json_schema!({"$ref": "#/components/schemas/Error"})
            }),
            Event::new("end", "The last event.", |_| {
                json_schema!({"type": "object", "maxProperties": 0})
            }),
        ])])
        .errors(&[LAUNCH])
};

async fn shell_stream(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Json(body): Json<CommandBody>,
) -> ApiResult<Response> {
    let mode = Mode {
        default_timeout: Some(DEFAULT_TIMEOUT),
        keep_stdin_open: false,
    };
    let prepared = prepare(&app, &identity, body, None, mode)?;
    let started = Instant::now();
    let (process, chunks) = Process::spawn_followed(&prepared.spec).map_err(|e| {
        ApiError::new(
            Code::ProcessInvalid,
            format!("cannot start the command: {e}"),
        )
    })?;
    let follow = Follow {
        process,
        chunks,
        started,
        stdout: Utf8Carry::default(),
        stderr: Utf8Carry::default(),
        state: State_::Output,
    };
    let body = futures::stream::unfold(follow, |mut follow| async move {
        follow
            .next()
            .await
            .map(|frame| (Ok::<_, std::convert::Infallible>(frame), follow))
    });
    Ok((
        [
            (http::header::CONTENT_TYPE, "text/event-stream"),
            (http::header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response())
}

enum State_ {
    Output,
    Exit,
    End,
    Done,
}

/// The stream's source: owns the process, so a reader that goes away ends it.
struct Follow {
    process: Process,
    chunks: mpsc::Receiver<Chunk>,
    started: Instant,
    stdout: Utf8Carry,
    stderr: Utf8Carry,
    state: State_,
}

impl Follow {
    async fn next(&mut self) -> Option<Bytes> {
        loop {
            match self.state {
                State_::Output => match self.chunks.recv().await {
                    Some(chunk) => {
                        let carry = match chunk.stream {
                            Stream::Stdout => &mut self.stdout,
                            Stream::Stderr => &mut self.stderr,
                        };
                        let bytes = carry.push(&chunk.bytes);
                        if !bytes.is_empty() {
                            return Some(frame(name(chunk.stream), &chunk_data(&bytes)));
                        }
                    }
                    None => {
                        self.state = State_::Exit;
                        // What a stream ended with that never became a whole character.
                        let mut out = Vec::new();
                        for (stream, rest) in [
                            (Stream::Stdout, self.stdout.finish()),
                            (Stream::Stderr, self.stderr.finish()),
                        ] {
                            if !rest.is_empty() {
                                out.extend_from_slice(&frame(name(stream), &chunk_data(&rest)));
                            }
                        }
                        if !out.is_empty() {
                            return Some(Bytes::from(out));
                        }
                    }
                },
                State_::Exit => {
                    self.state = State_::End;
                    let exit = self.process.wait().await;
                    return Some(match exit.status {
                        Some(status) => frame(
                            "exit",
                            &json!({
                                "exit_code": status.code(),
                                "duration_ms": self.started.elapsed().as_millis() as u64,
                                "timed_out": exit.timed_out,
                            }),
                        ),
                        None => frame(
                            "error",
                            &ApiError::new(
                                Code::Internal,
                                format!(
                                    "the command's exit could not be read: {}",
                                    exit.wait_error.unwrap_or_default()
                                ),
                            )
                            .flat_body(),
                        ),
                    });
                }
                State_::End => {
                    self.state = State_::Done;
                    return Some(frame("end", &json!({})));
                }
                State_::Done => return None,
            }
        }
    }
}

fn name(stream: Stream) -> &'static str {
    match stream {
        Stream::Stdout => "stdout",
        Stream::Stderr => "stderr",
    }
}

fn frame(event: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {event}\ndata: {data}\n\n"))
}
