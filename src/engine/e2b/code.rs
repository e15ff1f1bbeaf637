//! The code interpreter's server (port 49999, `e2b-code-interpreter`) over the engine's
//! code contexts: `POST /execute` answers JSON lines (`stdout`, `stderr`, `result`,
//! `error`, `number_of_executions`, `end_of_execution`), and `/contexts` creates, lists,
//! restarts and deletes contexts. Python follows Jupyter's rule for the last expression:
//! a cell ending in `x + 1` has that value as its main result, told apart from the cell's
//! own output by a marker new for every run. A run without a context uses the sandbox's
//! default one for its language, so its state carries over from run to run, as in E2B's.

use super::super::provider::Sandbox;
use super::super::routes::RouteId;
use super::Front;
use super::errors::ApiError;
use super::routes::{At, Door, Op};
use crate::error::engine::Code;
use crate::wire::{CodeRunBody, ContextRecord, CreateContext};
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use base64::Engine as _;
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
    /// Refused when not empty: see [`execute`].
    env_vars: Option<BTreeMap<String, String>>,
}

fn line(value: Value) -> String {
    format!("{value}\n")
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

/// The Python cell that runs `source` and writes its last expression's value after `marker`.
fn python_cell(marker: &str, source: &str) -> String {
    let source = base64::engine::general_purpose::STANDARD.encode(source);
    // Both are ASCII without quotes or backslashes: each a literal as written.
    format!("{PYTHON_CELL}\n__e2b_cell(\"{marker}\", \"{source}\")\ndel __e2b_cell\n")
}

/// A run's output without the marked lines, and what followed the marker on each.
fn split_marked(output: &str, marker: &str) -> (String, Vec<String>) {
    let mut stdout = String::new();
    let mut found = Vec::new();
    for piece in output.split_inclusive('\n') {
        // The marker ends its line but may follow output that did not (`print(x, end="")`).
        match piece.find(marker) {
            Some(at) => {
                stdout.push_str(&piece[..at]);
                found.push(piece[at + marker.len()..].trim().to_owned());
            }
            None => stdout.push_str(piece),
        }
    }
    (stdout, found)
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
    let marker = format!("e2b-result-marker-{}", uuid::Uuid::new_v4().simple());
    let code = if language == "python3" {
        python_cell(&marker, &asked.code)
    } else {
        asked.code
    };
    let run = |context: String| {
        sandbox.code_run(CodeRunBody {
            code: code.clone(),
            language: Some(language.to_owned()),
            context_id: Some(context),
            // This run's only, as the code interpreter's `env_vars` are.
            envs: asked.env_vars.clone().filter(|e| !e.is_empty()),
            timeout: None,
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
    let outcome = outcome.map_err(|e| ApiError::envd(&id, e))?;
    let mut lines = String::new();
    let (stdout, found) = split_marked(&String::from_utf8_lossy(&outcome.stdout), &marker);
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
    let count = front.code.count(&id, &context);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_is_found_after_output_without_a_final_newline() {
        let (stdout, found) = split_marked("a\nxM result \"1\"\nb", "M");
        assert_eq!(stdout, "a\nxb");
        assert_eq!(found, vec!["result \"1\"".to_owned()]);
        let (stdout, found) = split_marked("plain\n", "M");
        assert_eq!((stdout.as_str(), found.len()), ("plain\n", 0));
    }
}
