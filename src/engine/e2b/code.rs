//! The code interpreter's server (port 49999, `e2b-code-interpreter`) over the engine's
//! code contexts: `POST /execute` answers JSON lines (`stdout`, `stderr`, `result`,
//! `error`, `number_of_executions`, `end_of_execution`), each sent as it happens (the run
//! is followed through `Sandbox::code_run_stream`), and `/contexts` creates, lists,
//! restarts and deletes contexts. Python follows Jupyter's rule for the last expression:
//! a cell ending in `x + 1` has that value as its main result, in the formats of IPython's
//! rich repr protocol (`display(obj)` gives more results), told apart from the cell's own
//! output by a marker new for every run. A run without a context uses the sandbox's
//! default one for its language, so its state carries over from run to run, as in E2B's.

use super::super::provider::{Event, EventStream, Sandbox};
use super::super::routes::RouteId;
use super::Front;
use super::cell::{Marked, Piece, marked_line, python_cell};
use super::errors::ApiError;
use super::routes::{At, Door, Op};
use crate::error::engine::Code;
use crate::wire::{CodeRunBody, ContextRecord, CreateContext};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use futures::StreamExt;
use http::{HeaderMap, StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

pub const OPS: &[Op] = &[
    Op {
        id: "e2b_code_execute",
        door: Door::Code,
        method: "POST",
        at: At::Path("/execute"),
        summary: "run code in a context: JSON lines of logs, results and errors",
        bind: || post(execute),
    },
    Op {
        id: "e2b_code_contexts_list",
        door: Door::Code,
        method: "GET",
        at: At::Path("/contexts"),
        summary: "the sandbox's code contexts",
        bind: || get(list),
    },
    Op {
        id: "e2b_code_contexts_create",
        door: Door::Code,
        method: "POST",
        at: At::Path("/contexts"),
        summary: "a code context of a language, in a directory",
        bind: || post(create),
    },
    Op {
        id: "e2b_code_contexts_delete",
        door: Door::Code,
        method: "DELETE",
        at: At::Path("/contexts/{id}"),
        summary: "end a code context",
        bind: || delete(remove),
    },
    Op {
        id: "e2b_code_contexts_restart",
        door: Door::Code,
        method: "POST",
        at: At::Path("/contexts/{id}/restart"),
        summary: "restart a code context (its state is lost)",
        bind: || post(restart),
    },
];

/// How long a cell may run: the code interpreter SDK's default execution timeout.
const RUN_BOUND_S: u64 = 300;

/// An E2B language name as the engine names it.
fn engine_language(name: Option<&str>) -> Result<&'static str, ApiError> {
    match name.unwrap_or("python") {
        "python" | "python3" => Ok("python3"),
        "bash" => Ok("bash"),
        "sh" => Ok("sh"),
        "js" | "javascript" | "node" => Ok("node"),
        other => Err(ApiError::new(
            400,
            format!("language `{other}` is not available in a local engine: python, bash, sh, js"),
        )),
    }
}

/// The E2B name of an engine language.
fn e2b_language(name: &str) -> &str {
    match name {
        "python3" => "python",
        "node" => "javascript",
        other => other,
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Execute {
    code: String,
    context_id: Option<String>,
    language: Option<String>,
    /// Refused when not empty: see [`execute`].
    env_vars: Option<BTreeMap<String, String>>,
}

fn now() -> String {
    crate::services::files::rfc3339(std::time::SystemTime::now())
}

/// The sandbox's default context for `language`, made on first use (and again once the
/// one it had is gone).
async fn default_context(
    front: &Front,
    id: &str,
    sandbox: &Arc<dyn Sandbox>,
    language: &str,
) -> Result<String, ApiError> {
    if let Some(default) = front.code.default_of(id, language) {
        return Ok(default);
    }
    let made = sandbox
        .context_create(CreateContext {
            language: Some(language.to_owned()),
            cwd: None,
        })
        .await
        .map_err(|e| ApiError::envd(id, e))?;
    front.code.saw(id, &made.context_id, language);
    let settled = front
        .code
        .settle_default(id, language, made.context_id.clone());
    if settled != made.context_id {
        // Another first run settled its default first: this one's interpreter would live
        // on unused, so it goes (a failure leaves only an idle context behind).
        if let Err(e) = sandbox.context_delete(&made.context_id).await {
            tracing::debug!(sandbox = %id, error = %e.message, "a spare default context stays");
        }
        front.code.forget(id, &made.context_id);
    }
    Ok(settled)
}

/// The engine language of a named context: noted when the front saw it, else listed once.
async fn language_of(
    front: &Front,
    id: &str,
    sandbox: &Arc<dyn Sandbox>,
    context: &str,
) -> Option<String> {
    if let Some(language) = front.code.language_of(id, context) {
        return Some(language);
    }
    let all = sandbox.context_list().await.ok()?;
    front.code.listed(id, &all);
    all.into_iter()
        .find(|c| c.context_id == context)
        .map(|c| c.language)
}

/// The JSON lines of a run as its events come: `stdout` and `stderr` as printed, results
/// and errors as the cell writes them, then the count and `end_of_execution`.
struct Lines {
    events: Option<EventStream>,
    /// Python's: its stdout holds the marked lines.
    marked: Option<Marked>,
    timed_out: bool,
    front: Arc<Front>,
    sandbox: String,
    context: String,
    queue: std::collections::VecDeque<Value>,
}

impl Lines {
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(line) = self.queue.pop_front() {
                return Some(line);
            }
            let events = self.events.as_mut()?;
            match events.next().await {
                Some(Ok(event)) => self.event(event),
                Some(Err(e)) => {
                    let e = ApiError::envd(&self.sandbox, e);
                    self.queue.push_back(json!({"type": "error", "name": "EngineError", "value": e.message, "traceback": ""}));
                    self.end();
                }
                None => self.end(),
            }
        }
    }

    fn event(&mut self, event: Event) {
        let text = || event.data["data"].as_str().unwrap_or_default().to_owned();
        match event.name {
            "stdout" => {
                let pieces = match &mut self.marked {
                    Some(marked) => marked.push(&text()),
                    None => vec![Piece::Output(text())],
                };
                // In the order they came: a `display` between two prints stays there.
                for piece in pieces {
                    match piece {
                        Piece::Output(stdout) => self.stdout(stdout),
                        Piece::Marked(found) => self.queue.extend(marked_line(&found)),
                    }
                }
            }
            "stderr" => {
                let stderr = text();
                if !stderr.is_empty() {
                    self.queue
                        .push_back(json!({"type": "stderr", "text": stderr, "timestamp": now()}));
                }
            }
            "exit" => self.timed_out = event.data["timed_out"] == true,
            _ => {}
        }
    }

    fn stdout(&mut self, text: String) {
        if !text.is_empty() {
            self.queue
                .push_back(json!({"type": "stdout", "text": text, "timestamp": now()}));
        }
    }

    /// The last lines, once the run has ended.
    fn end(&mut self) {
        self.events = None;
        if let Some(rest) = self.marked.as_mut().map(Marked::finish) {
            self.stdout(rest);
        }
        if self.timed_out {
            self.queue.push_back(json!({"type": "error", "name": "TimeoutError", "value": "the execution timed out", "traceback": ""}));
        }
        let count = self.front.code.count(&self.sandbox, &self.context);
        self.queue
            .push_back(json!({"type": "number_of_executions", "execution_count": count}));
        self.queue.push_back(json!({"type": "end_of_execution"}));
    }
}

async fn execute(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let asked: Execute = serde_json::from_slice(&body)
        .map_err(|e| ApiError::new(400, format!("a bad body: {e}")))?;
    let (id, sandbox) = front
        .envd_sandbox(&headers, RouteId::CodeRun, ApiError::envd)
        .await?;
    let named_language = match &asked.context_id {
        Some(context) => language_of(&front, &id, &sandbox, context).await,
        None => None,
    };
    let language = engine_language(named_language.as_deref().or(asked.language.as_deref()))?;
    // It begins with a control character, so output held back as a possible start of it
    // (see `Marked`) is output that ends in that character, which text hardly does.
    let marker = format!("\u{1e}e2b-result-marker-{}", uuid::Uuid::new_v4().simple());
    let code = if language == "python3" {
        python_cell(&marker, &asked.code)
    } else {
        asked.code
    };
    let run = |context: String| {
        sandbox.code_run_stream(CodeRunBody {
            code: code.clone(),
            language: Some(language.to_owned()),
            context_id: Some(context),
            // This run's only, as the code interpreter's `env_vars` are.
            envs: asked.env_vars.clone().filter(|e| !e.is_empty()),
            // The SDK bounds a run itself (`timeout`, 300 s by default, sent nowhere): the
            // engine's own bound is that default, not the engine's 60 s, so a cell the cloud
            // runs for five minutes runs here too.
            timeout: Some(RUN_BOUND_S),
        })
    };
    let (context, outcome) = match asked.context_id {
        Some(named) => {
            let outcome = run(named.clone()).await;
            if outcome
                .as_ref()
                .is_err_and(|e| e.code == Code::ContextNotFound)
            {
                front.code.forget(&id, &named);
            }
            (named, outcome)
        }
        None => {
            let default = default_context(&front, &id, &sandbox, language).await?;
            match run(default.clone()).await {
                // The default was deleted behind the front's back (`/v1`): a new one.
                Err(e) if e.code == Code::ContextNotFound => {
                    front.code.forget(&id, &default);
                    let fresh = default_context(&front, &id, &sandbox, language).await?;
                    (fresh.clone(), run(fresh).await)
                }
                outcome => (default, outcome),
            }
        }
    };
    let events = outcome.map_err(|e| ApiError::envd(&id, e))?;
    let lines = Lines {
        events: Some(events),
        marked: (language == "python3").then(|| Marked::new(&marker)),
        timed_out: false,
        front: front.clone(),
        sandbox: id,
        context,
        queue: Default::default(),
    };
    // One JSON line per chunk of the body, sent as soon as it is made.
    let body = futures::stream::unfold(lines, |mut lines| async move {
        let line = lines.next().await?;
        Some((Ok::<_, std::io::Error>(format!("{line}\n")), lines))
    });
    Ok((
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        axum::body::Body::from_stream(body),
    )
        .into_response())
}

fn shown(record: &ContextRecord) -> Value {
    json!({"id": record.context_id, "language": e2b_language(&record.language), "cwd": record.cwd})
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NewContext {
    language: Option<String>,
    cwd: Option<String>,
}

async fn create(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let asked: NewContext = if body.is_empty() {
        NewContext::default()
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::new(400, format!("a bad body: {e}")))?
    };
    let language = engine_language(asked.language.as_deref())?;
    let (id, sandbox) = front
        .envd_sandbox(&headers, RouteId::CodeContextsCreate, ApiError::envd)
        .await?;
    let record = sandbox
        .context_create(CreateContext {
            language: Some(language.to_owned()),
            cwd: asked.cwd,
        })
        .await
        .map_err(|e| ApiError::envd(&id, e))?;
    front.code.saw(&id, &record.context_id, &record.language);
    Ok(axum::Json(shown(&record)).into_response())
}

async fn list(State(front): State<Arc<Front>>, headers: HeaderMap) -> Result<Response, ApiError> {
    let (id, sandbox) = front
        .envd_sandbox(&headers, RouteId::CodeContextsList, ApiError::envd)
        .await?;
    let all = sandbox
        .context_list()
        .await
        .map_err(|e| ApiError::envd(&id, e))?;
    front.code.listed(&id, &all);
    Ok(axum::Json(all.iter().map(shown).collect::<Vec<_>>()).into_response())
}

async fn remove(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    Path(context): Path<String>,
) -> Result<StatusCode, ApiError> {
    let (id, sandbox) = front
        .envd_sandbox(&headers, RouteId::CodeContextsDelete, ApiError::envd)
        .await?;
    let deleted = sandbox.context_delete(&context).await;
    // Deleted now or already gone: either way the front forgets it.
    if !matches!(&deleted, Err(e) if e.code != Code::ContextNotFound) {
        front.code.forget(&id, &context);
    }
    deleted.map_err(|e| ApiError::envd(&id, e))?;
    Ok(StatusCode::NO_CONTENT)
}

async fn restart(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    Path(context): Path<String>,
) -> Result<StatusCode, ApiError> {
    let (id, sandbox) = front
        .envd_sandbox(&headers, RouteId::CodeContextsRestart, ApiError::envd)
        .await?;
    sandbox
        .context_restart(&context)
        .await
        .map_err(|e| ApiError::envd(&id, e))?;
    // A new interpreter counts its runs from one again, as a restarted Jupyter kernel does.
    front.code.restarted(&id, &context);
    Ok(StatusCode::NO_CONTENT)
}
