//! The code interpreter's server (port 49999, `e2b-code-interpreter`) over the engine's
//! code contexts: `POST /execute` answers JSON lines (`stdout`, `stderr`, `result`,
//! `error`, `number_of_executions`, `end_of_execution`), and `/contexts` creates, lists,
//! restarts and deletes contexts. Python follows Jupyter's rule for the last expression:
//! a cell ending in `x + 1` has that value as its main result, told apart from the cell's
//! own output by a marker new for every run. A run without a context uses the sandbox's
//! default one, so its state carries over from run to run, as in E2B's.

use super::super::provider::Sandbox;
use super::super::routes::RouteId;
use super::errors::ApiError;
use super::files::envd_error;
use super::{Front, sandbox_id};
use crate::wire::{CodeRunBody, ContextRecord, CreateContext};
use axum::Router;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use base64::Engine as _;
use http::{HeaderMap, StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

pub fn router() -> Router<Arc<Front>> {
    Router::new()
        .route("/execute", post(execute))
        .route("/contexts", get(list).post(create))
        .route("/contexts/{id}", delete(remove))
        .route("/contexts/{id}/restart", post(restart))
}

/// Each sandbox's default context, and how many runs each context has had.
#[derive(Default)]
pub struct Contexts {
    defaults: Mutex<HashMap<String, String>>,
    counts: Mutex<HashMap<String, u64>>,
}

impl Contexts {
    fn default_of(&self, sandbox: &str) -> Option<String> {
        lock(&self.defaults).get(sandbox).cloned()
    }

    fn count(&self, context: &str) -> u64 {
        let mut counts = lock(&self.counts);
        let n = counts.entry(context.to_owned()).or_default();
        *n += 1;
        *n
    }

    pub fn forget_sandbox(&self, sandbox: &str) {
        lock(&self.defaults).remove(sandbox);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

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

/// Runs the cell in the context's namespace, then evaluates its last expression and writes
/// the value's `repr`, or the error, after the marker.
const PYTHON_CELL: &str = r#"
def __e2b_cell(__marker, __source):
    import ast, base64, json, sys, traceback
    __source = base64.b64decode(__source).decode()
    __g = globals()
    try:
        __tree = ast.parse(__source, "<cell>")
        __last = None
        if __tree.body and isinstance(__tree.body[-1], ast.Expr):
            __last = ast.Expression(__tree.body.pop().value)
        exec(compile(__tree, "<cell>", "exec"), __g)
        if __last is not None:
            __value = eval(compile(__last, "<cell>", "eval"), __g)
            if __value is not None:
                sys.stdout.flush()
                print(__marker + " result " + json.dumps(repr(__value)), flush=True)
    except BaseException as __e:
        __tb = "".join(traceback.format_exception(type(__e), __e, __e.__traceback__.tb_next))
        sys.stdout.flush()
        print(__marker + " error " + json.dumps({"name": type(__e).__name__, "value": str(__e), "traceback": __tb}), flush=True)
"#;

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Execute {
    code: String,
    context_id: Option<String>,
    language: Option<String>,
    env_vars: Option<BTreeMap<String, String>>,
}

fn line(value: Value) -> String {
    format!("{value}\n")
}

fn now() -> String {
    crate::services::files::rfc3339(std::time::SystemTime::now())
}

async fn handle(
    front: &Front,
    headers: &HeaderMap,
) -> Result<(String, Arc<dyn Sandbox>), ApiError> {
    let id = sandbox_id(headers);
    match front.sandbox(&id, RouteId::CodeRun).await {
        Ok(sandbox) => Ok((id, sandbox)),
        Err(e) => Err(envd_error(&id, e)),
    }
}

/// The context a run uses: the one named, else the sandbox's default (made on first use).
async fn context_of(
    front: &Front,
    id: &str,
    sandbox: &Arc<dyn Sandbox>,
    named: Option<String>,
    language: &str,
) -> Result<String, ApiError> {
    if let Some(named) = named {
        return Ok(named);
    }
    if language == "python3"
        && let Some(default) = front.code.default_of(id)
    {
        return Ok(default);
    }
    let made = sandbox
        .context_create(CreateContext {
            language: Some(language.to_owned()),
            cwd: None,
        })
        .await
        .map_err(|e| envd_error(id, e))?;
    if language == "python3" {
        lock(&front.code.defaults).insert(id.to_owned(), made.context_id.clone());
    }
    Ok(made.context_id)
}

async fn execute(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let asked: Execute = serde_json::from_slice(&body)
        .map_err(|e| ApiError::new(400, format!("a bad body: {e}")))?;
    let (id, sandbox) = handle(&front, &headers).await?;
    let named_language = match &asked.context_id {
        Some(context) => sandbox
            .context_list()
            .await
            .ok()
            .and_then(|all| all.into_iter().find(|c| &c.context_id == context))
            .map(|c| c.language),
        None => None,
    };
    let language = engine_language(named_language.as_deref().or(asked.language.as_deref()))?;
    let context = context_of(&front, &id, &sandbox, asked.context_id, language).await?;
    let marker = format!("e2b-result-marker-{}", uuid::Uuid::new_v4().simple());
    let code = if language == "python3" {
        let source = base64::engine::general_purpose::STANDARD.encode(&asked.code);
        // Both are ASCII without quotes or backslashes: each a literal as written.
        format!("{PYTHON_CELL}\n__e2b_cell(\"{marker}\", \"{source}\")\ndel __e2b_cell\n")
    } else {
        asked.code
    };
    let outcome = sandbox
        .code_run(CodeRunBody {
            code,
            language: Some(language.to_owned()),
            context_id: Some(context.clone()),
            envs: asked.env_vars.filter(|e| !e.is_empty()),
            timeout: None,
        })
        .await
        .map_err(|e| envd_error(&id, e))?;
    let mut lines = String::new();
    let mut stdout = String::new();
    let mut found = Vec::new();
    for piece in String::from_utf8_lossy(&outcome.stdout).split_inclusive('\n') {
        match piece.strip_prefix(marker.as_str()) {
            Some(rest) => found.push(rest.trim().to_owned()),
            None => stdout.push_str(piece),
        }
    }
    if !stdout.is_empty() {
        lines.push_str(&line(
            json!({"type": "stdout", "text": stdout, "timestamp": now()}),
        ));
    }
    let stderr = String::from_utf8_lossy(&outcome.stderr);
    if !stderr.is_empty() {
        lines.push_str(&line(
            json!({"type": "stderr", "text": stderr, "timestamp": now()}),
        ));
    }
    for rest in found {
        if let Some(value) = rest.strip_prefix("result ") {
            let text: String = serde_json::from_str(value).unwrap_or_default();
            lines.push_str(&line(
                json!({"type": "result", "text": text, "is_main_result": true}),
            ));
        } else if let Some(error) = rest.strip_prefix("error ") {
            let mut error: Value = serde_json::from_str(error).unwrap_or_else(|_| json!({}));
            error["type"] = json!("error");
            lines.push_str(&line(error));
        }
    }
    if outcome.timed_out {
        lines.push_str(&line(json!({"type": "error", "name": "TimeoutError", "value": "the execution timed out", "traceback": ""})));
    }
    let count = front.code.count(&context);
    lines.push_str(&line(
        json!({"type": "number_of_executions", "execution_count": count}),
    ));
    lines.push_str(&line(json!({"type": "end_of_execution"})));
    Ok(([(header::CONTENT_TYPE, "application/x-ndjson")], lines).into_response())
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
    let (id, sandbox) = handle(&front, &headers).await?;
    let record = sandbox
        .context_create(CreateContext {
            language: Some(language.to_owned()),
            cwd: asked.cwd,
        })
        .await
        .map_err(|e| envd_error(&id, e))?;
    Ok(axum::Json(shown(&record)).into_response())
}

async fn list(State(front): State<Arc<Front>>, headers: HeaderMap) -> Result<Response, ApiError> {
    let (id, sandbox) = handle(&front, &headers).await?;
    let all = sandbox
        .context_list()
        .await
        .map_err(|e| envd_error(&id, e))?;
    Ok(axum::Json(all.iter().map(shown).collect::<Vec<_>>()).into_response())
}

async fn remove(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    Path(context): Path<String>,
) -> Result<StatusCode, ApiError> {
    let (id, sandbox) = handle(&front, &headers).await?;
    sandbox
        .context_delete(&context)
        .await
        .map_err(|e| envd_error(&id, e))?;
    Ok(StatusCode::NO_CONTENT)
}

async fn restart(
    State(front): State<Arc<Front>>,
    headers: HeaderMap,
    Path(context): Path<String>,
) -> Result<StatusCode, ApiError> {
    let (id, sandbox) = handle(&front, &headers).await?;
    sandbox
        .context_restart(&context)
        .await
        .map_err(|e| envd_error(&id, e))?;
    Ok(StatusCode::NO_CONTENT)
}
