//! A scripted model server on loopback: the Anthropic Messages streaming API (what Claude
//! Code calls) and the OpenAI Responses streaming API (what the Codex CLI calls). Each model
//! request takes the next reply of the script; every request is recorded so tests can check
//! what the CLI sent (model, system prompt or instructions, tools, tool results, history).

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the model answers to one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Text in these deltas, `delay_ms` apart.
    Text { deltas: Vec<String>, delay_ms: u64 },
    /// A shell command the CLI runs (codex: `exec_command` through its `exec` tool; claude:
    /// `Bash`).
    Shell(String),
    /// A new file (codex: `apply_patch` with a path relative to the working directory;
    /// claude: `Write`, which wants the absolute path).
    WriteFile {
        relative: String,
        absolute: String,
        content: String,
    },
    /// A tool of an MCP server the CLI was given.
    Mcp {
        server: String,
        tool: String,
        arguments: Value,
    },
    /// Reasoning (codex: a reasoning item with a summary; claude: a thinking block), then
    /// the text.
    Reasoning { summary: String, text: String },
    /// An HTTP error from the API.
    Error { status: u16, message: String },
    /// The stream starts, then the connection ends without a terminal event.
    Cut,
}

impl Reply {
    pub fn text(text: &str) -> Reply {
        Reply::Text {
            deltas: vec![text.to_owned()],
            delay_ms: 0,
        }
    }

    /// `text` split into `n` deltas, `delay_ms` apart.
    pub fn streamed(text: &str, n: usize, delay_ms: u64) -> Reply {
        let words: Vec<&str> = text.split_inclusive(' ').collect();
        let per = words.len().div_ceil(n.max(1)).max(1);
        Reply::Text {
            deltas: words.chunks(per).map(|c| c.concat()).collect(),
            delay_ms,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    Messages,
    Responses,
}

#[derive(Debug, Clone)]
pub struct Recorded {
    pub api: Api,
    pub body: Value,
}

#[derive(Clone, Default)]
struct Shared {
    script: Arc<Mutex<VecDeque<Reply>>>,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

pub struct ModelSim {
    pub url: String,
    shared: Shared,
}

impl ModelSim {
    pub async fn start(script: Vec<Reply>) -> ModelSim {
        let shared = Shared {
            script: Arc::new(Mutex::new(script.into())),
            requests: Arc::default(),
        };
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/responses", post(responses))
            .fallback(|uri: Uri| async move { (StatusCode::NOT_FOUND, format!("no route {uri}")) })
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        ModelSim { url, shared }
    }

    /// Replies for the next requests, after those already queued.
    pub fn push(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.script.lock().unwrap().extend(replies);
    }

    /// Drops the replies not yet used.
    pub fn clear(&self) {
        self.shared.script.lock().unwrap().clear();
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }
}

fn next(shared: &Shared, api: Api, body: Value) -> Reply {
    shared.requests.lock().unwrap().push(Recorded { api, body });
    shared
        .script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or_else(|| Reply::text("done"))
}

fn frame(name: &str, data: &Value) -> bytes::Bytes {
    format!("event: {name}\ndata: {data}\n\n").into()
}

/// An SSE body of `frames`, each after its delay; the connection ends after the last.
fn stream(frames: Vec<(u64, bytes::Bytes)>) -> Response {
    let body = futures::stream::unfold(frames.into_iter(), |mut rest| async move {
        let (delay, bytes) = rest.next()?;
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        Some((Ok::<_, std::io::Error>(bytes), rest))
    });
    Response::builder()
        .header("content-type", "text/event-stream")
        // Both APIs name the request; Claude Code copies it into its lines as `request_id`.
        .header(
            "request-id",
            format!("req_sim_{}", uuid::Uuid::new_v4().simple()),
        )
        .header(
            "x-request-id",
            format!("req_sim_{}", uuid::Uuid::new_v4().simple()),
        )
        .body(Body::from_stream(body))
        .unwrap()
}

fn error(status: u16, message: &str, api: Api) -> Response {
    let body = match api {
        Api::Messages => {
            json!({"type": "error", "error": {"type": "authentication_error", "message": message}})
        }
        Api::Responses => {
            json!({"error": {"type": "server_error", "message": message, "code": "sim_error"}})
        }
    };
    (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        axum::Json(body),
    )
        .into_response()
}

async fn messages(State(shared): State<Shared>, axum::Json(body): axum::Json<Value>) -> Response {
    let model = body["model"].as_str().unwrap_or("claude-sim").to_owned();
    let n = shared.requests.lock().unwrap().len();
    let reply = next(&shared, Api::Messages, body);
    let start = json!({"type": "message_start", "message": {"id": format!("msg_sim_{n}"), "type": "message", "role": "assistant", "content": [], "model": model, "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}}});
    let mut frames = vec![(0, frame("message_start", &start))];
    let block = |content: Value| {
        frame(
            "content_block_start",
            &json!({"type": "content_block_start", "index": 0, "content_block": content}),
        )
    };
    let delta = |delta: Value| {
        frame(
            "content_block_delta",
            &json!({"type": "content_block_delta", "index": 0, "delta": delta}),
        )
    };
    let tool = |name: &str, input: Value| {
        vec![
            (
                0,
                block(
                    json!({"type": "tool_use", "id": format!("toolu_sim_{n}"), "name": name, "input": {}}),
                ),
            ),
            (
                0,
                delta(json!({"type": "input_json_delta", "partial_json": input.to_string()})),
            ),
        ]
    };
    let stop_reason = match reply {
        Reply::Error { status, message } => return error(status, &message, Api::Messages),
        Reply::Cut => {
            frames.push((0, block(json!({"type": "text", "text": ""}))));
            frames.push((0, delta(json!({"type": "text_delta", "text": "cut he"}))));
            return stream(frames);
        }
        Reply::Text { deltas, delay_ms } => {
            frames.push((0, block(json!({"type": "text", "text": ""}))));
            for d in deltas {
                frames.push((delay_ms, delta(json!({"type": "text_delta", "text": d}))));
            }
            "end_turn"
        }
        Reply::Reasoning { summary, text } => {
            let at = |index: u64, kind: &str, body: Value| {
                let mut data = body;
                data["type"] = json!(kind);
                data["index"] = json!(index);
                frame(kind, &data)
            };
            frames.push((
                0,
                at(
                    0,
                    "content_block_start",
                    json!({"content_block": {"type": "thinking", "thinking": "", "signature": ""}}),
                ),
            ));
            frames.push((
                0,
                at(
                    0,
                    "content_block_delta",
                    json!({"delta": {"type": "thinking_delta", "thinking": summary}}),
                ),
            ));
            frames.push((0, at(0, "content_block_delta", json!({"delta": {"type": "signature_delta", "signature": "c2ltLXNpZ25hdHVyZQ=="}}))));
            frames.push((0, at(0, "content_block_stop", json!({}))));
            frames.push((
                0,
                at(
                    1,
                    "content_block_start",
                    json!({"content_block": {"type": "text", "text": ""}}),
                ),
            ));
            frames.push((
                0,
                at(
                    1,
                    "content_block_delta",
                    json!({"delta": {"type": "text_delta", "text": text}}),
                ),
            ));
            frames.push((0, at(1, "content_block_stop", json!({}))));
            frames.push((0, frame("message_delta", &json!({"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": null}, "usage": {"output_tokens": 7}}))));
            frames.push((0, frame("message_stop", &json!({"type": "message_stop"}))));
            return stream(frames);
        }
        Reply::Shell(command) => {
            frames.extend(tool(
                "Bash",
                json!({"command": command, "description": "run a command"}),
            ));
            "tool_use"
        }
        Reply::WriteFile {
            absolute, content, ..
        } => {
            frames.extend(tool(
                "Write",
                json!({"file_path": absolute, "content": content}),
            ));
            "tool_use"
        }
        Reply::Mcp {
            server,
            tool: name,
            arguments,
        } => {
            frames.extend(tool(&format!("mcp__{server}__{name}"), arguments));
            "tool_use"
        }
    };
    frames.push((
        0,
        frame(
            "content_block_stop",
            &json!({"type": "content_block_stop", "index": 0}),
        ),
    ));
    frames.push((0, frame("message_delta", &json!({"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": null}, "usage": {"output_tokens": 7}}))));
    frames.push((0, frame("message_stop", &json!({"type": "message_stop"}))));
    stream(frames)
}

/// Codex 0.169 runs every tool through its `exec` tool: JavaScript that calls the nested
/// tools (`tools.exec_command`, `tools.apply_patch`, `tools.mcp__<server>__<tool>`).
fn exec_call(n: usize, source: String) -> Value {
    json!({"type": "custom_tool_call", "id": format!("ctc_sim_{n}"), "call_id": format!("call_sim_{n}"), "name": "exec", "input": source, "status": "completed"})
}

async fn responses(State(shared): State<Shared>, axum::Json(body): axum::Json<Value>) -> Response {
    let n = shared.requests.lock().unwrap().len();
    let model = body["model"].as_str().unwrap_or("gpt-sim").to_owned();
    let reply = next(&shared, Api::Responses, body);
    let id = format!("resp_sim_{n}");
    let created = json!({"id": id, "object": "response", "created_at": 1, "status": "in_progress", "model": model, "output": []});
    let mut frames = vec![(
        0,
        frame(
            "response.created",
            &json!({"type": "response.created", "response": created}),
        ),
    )];
    let added = |item: &Value| {
        frame(
            "response.output_item.added",
            &json!({"type": "response.output_item.added", "output_index": 0, "item": item}),
        )
    };
    let item = match reply {
        Reply::Error { status, message } => return error(status, &message, Api::Responses),
        Reply::Cut => {
            let partial = json!({"type": "message", "id": format!("msg_sim_{n}"), "role": "assistant", "status": "in_progress", "content": []});
            frames.push((0, added(&partial)));
            return stream(frames);
        }
        Reply::Text { deltas, delay_ms } => {
            let msg_id = format!("msg_sim_{n}");
            let text: String = deltas.concat();
            frames.push((0, added(&json!({"type": "message", "id": msg_id, "role": "assistant", "status": "in_progress", "content": []}))));
            for d in deltas {
                frames.push((delay_ms, frame("response.output_text.delta", &json!({"type": "response.output_text.delta", "output_index": 0, "content_index": 0, "item_id": msg_id, "delta": d}))));
            }
            json!({"type": "message", "id": msg_id, "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]})
        }
        Reply::Reasoning { summary, text } => {
            let reasoning = json!({"type": "reasoning", "id": format!("rs_sim_{n}"), "summary": [{"type": "summary_text", "text": summary}], "encrypted_content": null});
            let message = json!({"type": "message", "id": format!("msg_sim_{n}"), "role": "assistant", "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]});
            for (index, item) in [&reasoning, &message].into_iter().enumerate() {
                frames.push((0, frame("response.output_item.added", &json!({"type": "response.output_item.added", "output_index": index, "item": item}))));
                frames.push((0, frame("response.output_item.done", &json!({"type": "response.output_item.done", "output_index": index, "item": item}))));
            }
            let done = json!({"id": id, "object": "response", "created_at": 1, "status": "completed", "model": model, "output": [reasoning, message], "usage": usage()});
            frames.push((
                0,
                frame(
                    "response.completed",
                    &json!({"type": "response.completed", "response": done}),
                ),
            ));
            return stream(frames);
        }
        Reply::Shell(command) => exec_call(
            n,
            format!(
                "const r = await tools.exec_command({{cmd: {}}});\ntext(r);",
                json!(command)
            ),
        ),
        Reply::WriteFile {
            relative, content, ..
        } => {
            let added_lines: String = content.lines().map(|l| format!("+{l}\n")).collect();
            let patch =
                format!("*** Begin Patch\n*** Add File: {relative}\n{added_lines}*** End Patch\n");
            exec_call(
                n,
                format!(
                    "const r = await tools.apply_patch({});\ntext(r);",
                    json!(patch)
                ),
            )
        }
        Reply::Mcp {
            server,
            tool,
            arguments,
        } => exec_call(
            n,
            format!(
                "const r = await tools.mcp__{server}__{tool}({arguments});\ntext(JSON.stringify(r));"
            ),
        ),
    };
    if item["type"] != "message" {
        frames.push((0, added(&item)));
    }
    frames.push((
        0,
        frame(
            "response.output_item.done",
            &json!({"type": "response.output_item.done", "output_index": 0, "item": item}),
        ),
    ));
    let done = json!({"id": id, "object": "response", "created_at": 1, "status": "completed", "model": model, "output": [item], "usage": usage()});
    frames.push((
        0,
        frame(
            "response.completed",
            &json!({"type": "response.completed", "response": done}),
        ),
    ));
    stream(frames)
}

fn usage() -> Value {
    json!({"input_tokens": 12, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 19})
}
