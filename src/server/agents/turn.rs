//! Running turns: one worker per session takes queued turns in order, starts the runtime
//! through its adapter in its own process group, maps what it prints to items and events,
//! and settles the turn (completed, failed with exit code and stderr, or cancelled).

use crate::error::ApiError;
use crate::server::agents::adapters::{Adapter, McpServer, TurnRequest, Usage};
use crate::server::agents::agent_spec::McpTool;
use crate::server::agents::injection;
use crate::server::agents::mapper::{Mapper, Terminal};
use crate::server::agents::model::{SessionStatus, TurnStatus, add_usage, turn_usage, usage_json};
use crate::server::agents::session_handle::SessionHandle;
use crate::services::ids;
use crate::services::supervisor::{self, Spec, Streaming};
use serde_json::json;
use std::sync::Arc;
use std::time::Instant;

/// A turn whose runtime was started (or its reason not to be), by the worker or by the
/// request that queued it on an idle session ([`launch_now`]).
struct Launched {
    started: Instant,
    spawned: Result<Streaming, String>,
    adapter: &'static dyn Adapter,
    stop: tokio::sync::watch::Receiver<bool>,
    limits: Limits,
    user: serde_json::Value,
}

/// A turn taken off the queue; `launched` is `None` when launching it panicked.
pub struct Taken {
    turn_id: String,
    launched: Option<Box<Launched>>,
}

/// Launches the turn, a panic while doing so caught; `None` when the session went away.
fn take(handle: &Arc<SessionHandle>, turn_id: &str) -> Option<Taken> {
    let launched =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| launch(handle, turn_id)));
    let launched = match launched {
        Ok(None) => return None,
        Ok(Some(launched)) => Some(Box::new(launched)),
        Err(_) => None,
    };
    Some(Taken {
        turn_id: turn_id.to_owned(),
        launched,
    })
}

/// Takes the turn just queued off an idle session's queue and starts its runtime now, in the
/// request: the runtime's own start-up (milliseconds before it prints anything) then runs
/// while the request is answered and the turn's start is told, instead of after them. The
/// caller holds the session's `worker_active` and hands the result to [`work`].
pub fn launch_now(handle: &Arc<SessionHandle>, turn_id: &str) -> Option<Taken> {
    {
        let mut state = handle.lock();
        let position = state.queue.iter().position(|id| id == turn_id)?;
        state.queue.remove(position);
    }
    take(handle, turn_id)
}

/// Takes queued turns until none is left, then settles the session; `first`, when the
/// request that queued a turn already took it, before them.
pub async fn work(handle: Arc<SessionHandle>, mut first: Option<Taken>) {
    loop {
        if let Some(taken) = first.take() {
            guarded(&handle, taken).await;
            continue;
        }
        let next = {
            let mut state = handle.lock();
            if state.deleted {
                state.worker_active = false;
                return;
            }
            match state.queue.pop_front() {
                Some(id) => id,
                None => {
                    state.worker_active = false;
                    if state.status == SessionStatus::InProgress {
                        let failed = state
                            .turns
                            .last()
                            .is_some_and(|t| t.status == TurnStatus::Failed);
                        state.status = if failed {
                            SessionStatus::Failed
                        } else {
                            SessionStatus::Idle
                        };
                        let kind = if failed {
                            "agent.session.failed"
                        } else {
                            "agent.session.idle"
                        };
                        handle
                            .log
                            .push(kind, json!({"session": state.to_json(&handle.id)}));
                    }
                    return;
                }
            }
        };
        if let Some(taken) = take(&handle, &next) {
            guarded(&handle, taken).await;
        }
    }
}

/// Runs a taken turn. A bug while launching it or mapping its runtime's output must not
/// leave the session running forever: the turn fails, and the queue goes on.
async fn guarded(handle: &Arc<SessionHandle>, taken: Taken) {
    let Taken { turn_id, launched } = taken;
    let turn_id = turn_id.as_str();
    let panicked = match launched {
        None => true,
        Some(launched) => {
            let turn = std::panic::AssertUnwindSafe(run(handle, turn_id, *launched));
            futures::FutureExt::catch_unwind(turn).await.is_err()
        }
    };
    if panicked {
        tracing::error!(session = %handle.id, turn = %turn_id, "the turn's worker panicked");
        let mapper = Mapper::new(handle.clone(), turn_id.to_owned());
        let message = "internal error while running the turn (see the server log)".to_owned();
        finish(
            handle,
            turn_id,
            Outcome::Failed(message),
            mapper,
            Instant::now(),
        );
    }
}

enum Outcome {
    Completed(Option<Usage>),
    Failed(String),
    Cancelled,
}

/// Marks the turn running and starts its runtime; `None` when the session went away.
fn launch(handle: &Arc<SessionHandle>, turn_id: &str) -> Option<Launched> {
    let started = Instant::now();
    // Read now, not when the turn was queued: a credential updated meanwhile applies.
    let tokens = credential_tokens(handle);
    let injected = tokens.as_deref().unwrap_or_default();
    let Begun {
        request,
        child_env,
        adapter,
        runtime,
        stop,
        limits,
        user,
    } = begin(handle, turn_id, injected)?;
    // The runtime is started before the turn's start is told: its own start-up, which
    // takes milliseconds before it prints anything, then runs while the events are
    // rendered, instead of after them. Its output is read only once they are told.
    let spawned = match tokens {
        Err(e) => Err(format!("{} ({})", e.message, e.code.as_str())),
        Ok(_) => start(&request, child_env, adapter, runtime, limits),
    };
    Some(Launched {
        started,
        spawned,
        adapter,
        stop,
        limits,
        user,
    })
}

/// Tells the launched turn's start, maps what its runtime prints, and settles it.
async fn run(handle: &Arc<SessionHandle>, turn_id: &str, launched: Launched) {
    let Launched {
        started,
        spawned,
        adapter,
        mut stop,
        limits,
        user,
    } = launched;
    tell_started(handle, turn_id, user);
    let mut mapper = Mapper::new(handle.clone(), turn_id.to_owned());
    let outcome = match spawned {
        Err(message) => Outcome::Failed(message),
        Ok(child) => follow(child, adapter, &mut stop, &mut mapper, limits).await,
    };
    finish(handle, turn_id, outcome, mapper, started);
}

/// What a turn starts from, read under the one lock that marks it running.
struct Begun {
    request: TurnRequest,
    child_env: Vec<(String, String)>,
    adapter: &'static dyn Adapter,
    runtime: &'static crate::server::agents::runtimes::Runtime,
    /// Set when the turn is cancelled or its session deleted.
    stop: tokio::sync::watch::Receiver<bool>,
    limits: Limits,
    /// What the user said, as the turn's first item (told by `tell_started`).
    user: serde_json::Value,
}

/// How long a turn may run and how long one line of its output may be.
#[derive(Debug, Clone, Copy)]
struct Limits {
    timeout: std::time::Duration,
    max_line_bytes: usize,
}

/// `(server_label, token)` of the session's bound credentials, read from the vaults now.
pub fn credential_tokens(handle: &SessionHandle) -> Result<Vec<(String, String)>, ApiError> {
    let (vaults, bindings) = {
        let state = handle.lock();
        (state.setup.vaults.clone(), state.setup.bindings.clone())
    };
    match vaults {
        Some(vaults) if !bindings.is_empty() => {
            injection::tokens(&vaults, &handle.owner, &bindings)
        }
        _ => Ok(Vec::new()),
    }
}

/// MCP servers for the adapter, and the header values they need as environment variables
/// of the child: a secret never appears in a command line (`/proc/<pid>/cmdline`). A bound
/// credential becomes the `Authorization` header of its server.
fn mcp_servers(
    tools: &[McpTool],
    tokens: &[(String, String)],
) -> (Vec<McpServer>, Vec<(String, String)>) {
    let mut servers = Vec::new();
    let mut env = Vec::new();
    for (n, tool) in tools.iter().enumerate() {
        let label: String = tool
            .server_label
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_uppercase()
                } else {
                    '_'
                }
            })
            .collect();
        let mut headers = tool.headers.clone();
        if let Some((_, token)) = tokens.iter().find(|(l, _)| *l == tool.server_label) {
            headers.push(("Authorization".to_owned(), format!("Bearer {token}")));
        }
        let mut headers_from_env = Vec::new();
        for (i, (name, value)) in headers.iter().enumerate() {
            // The tool's position keeps names apart: `a-b` and `a_b` both read as `A_B`, and
            // one server's token must never reach the other.
            let var = format!("SVC_MCP_{n}_{label}_HEADER_{i}");
            headers_from_env.push((name.clone(), var.clone()));
            env.push((var, value.clone()));
        }
        servers.push(McpServer {
            name: tool.server_label.clone(),
            url: tool.server_url.clone(),
            headers_from_env,
        });
    }
    (servers, env)
}

/// Marks the turn running (the one a cancel stops) and builds its request; `None` when the
/// session went away. The states the caller sees change with the events that tell them,
/// in [`tell_started`], once the runtime is started.
fn begin(handle: &Arc<SessionHandle>, turn_id: &str, tokens: &[(String, String)]) -> Option<Begun> {
    let mut state = handle.lock();
    // Everything that can make this give up comes before `running` is set: a `running`
    // left behind would hold every later turn and make delete wait for nothing.
    let adapter = state.agent.runtime.adapter()?;
    if state.deleted || state.turn(turn_id).is_none() {
        return None;
    }
    let now = ids::now();
    let (tx, rx) = tokio::sync::watch::channel(false);
    state.running = Some((turn_id.to_owned(), tx));
    state.last_active_at = now;
    let prompt = state.turn(turn_id)?.prompt.clone();
    let user = json!({
        "id": ids::new("item"),
        "type": "message",
        "role": "user",
        // The SDKs' message item always has `phase`: null for what the user said.
        "phase": null,
        "status": "completed",
        "content": [{"type": "input_text", "text": prompt}],
        "turn_id": turn_id,
        "created_at": now,
    });
    let agent = &state.agent;
    let (mcp, secrets) = mcp_servers(&agent.tools, tokens);
    // The explicit base (never the server's own environment), then the operator's
    // variables, so a session's own (already checked) come after them.
    let launch = &state.setup.launch;
    let mut child_env = state.setup.child_base.with(launch.env.clone());
    child_env.extend(state.setup.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    child_env.extend(secrets);
    let request = TurnRequest {
        prompt,
        model: agent.model_for_cli.clone(),
        resume: state.thread_id.clone(),
        cwd: state.workspace.clone(),
        instructions: agent.instructions.clone(),
        reasoning_effort: agent.reasoning_effort.clone(),
        mcp_servers: mcp,
        extra_args: launch.args.clone(),
    };
    let limits = Limits {
        timeout: state.setup.turn_timeout,
        max_line_bytes: state.setup.max_output_bytes,
    };
    Some(Begun {
        request,
        child_env,
        adapter,
        runtime: agent.runtime,
        stop: rx,
        limits,
        user,
    })
}

/// Tells that the turn began: the session in progress (when it was not), the turn in
/// progress, and what the user said as its first item, in that order and before anything
/// the runtime printed.
fn tell_started(handle: &Arc<SessionHandle>, turn_id: &str, user: serde_json::Value) {
    // Declared first, so it ends after the lock: readers wake once, to a consistent state.
    let _burst = handle.log.burst();
    let mut state = handle.lock();
    if state.status != SessionStatus::InProgress {
        state.status = SessionStatus::InProgress;
        state.error = None;
        handle.log.push(
            "agent.session.in_progress",
            json!({"session": state.to_json(&handle.id)}),
        );
    }
    let now = ids::now();
    if let Some(turn) = state.turn_mut(turn_id) {
        turn.status = TurnStatus::InProgress;
        turn.started_at = Some(now);
    }
    if let Some(turn) = state.turn(turn_id) {
        let turn_json = turn.to_json(&handle.id, &state.agent);
        handle.log.push(
            "agent.session.turn.in_progress",
            json!({"turn_id": turn_id, "turn": turn_json}),
        );
    }
    state.items.push(user.clone());
    handle.log.push(
        "agent.session.turn.item.added",
        json!({"turn_id": turn_id, "item": user, "output_index": 0}),
    );
}

/// Starts the runtime for the turn; the reason as the turn's failure when it cannot.
fn start(
    request: &TurnRequest,
    child_env: Vec<(String, String)>,
    adapter: &'static dyn Adapter,
    runtime: &'static crate::server::agents::runtimes::Runtime,
    limits: Limits,
) -> Result<Streaming, String> {
    let Some(program) = runtime.locate() else {
        return Err(format!(
            "the runtime `{}` is no longer installed (no `{}` on PATH)",
            runtime.id, runtime.binary
        ));
    };
    // The same link-free walk that checked the workspace creates it: a link swapped in
    // since fails the turn instead of starting the runtime somewhere else.
    if let Err(e) = crate::server::agents::environments::fs::open_dir_nofollow(&request.cwd, true) {
        return Err(format!(
            "cannot use the workspace {}: {}",
            request.cwd.display(),
            e.message
        ));
    }
    let launch = adapter.launch(request);
    let spec = Spec {
        program: program.display().to_string(),
        args: launch.args,
        cwd: Some(request.cwd.clone()),
        env: child_env,
        stdin: launch.stdin.into(),
        limits: supervisor::Limits {
            max_line_bytes: limits.max_line_bytes,
            output_bytes: supervisor::STDERR_TAIL_BYTES,
            ..supervisor::Limits::default()
        },
        join_cgroup: Vec::new(),
        server_tool: false,
        enter: None,
    };
    Streaming::spawn(&spec).map_err(|e| format!("cannot start `{}`: {e}", spec.program))
}

/// Maps what the runtime prints until it ends, is stopped, or runs out of time.
async fn follow(
    mut child: Streaming,
    adapter: &'static dyn Adapter,
    stop: &mut tokio::sync::watch::Receiver<bool>,
    mapper: &mut Mapper,
    limits: Limits,
) -> Outcome {
    let runtime = mapper.runtime();
    let mut parser = adapter.parser();
    let deadline = tokio::time::sleep(limits.timeout);
    tokio::pin!(deadline);
    let ended = loop {
        tokio::select! {
            line = child.next_line() => match line {
                Some(line) => {
                    let text = if line.cut { salvage(line.text, mapper, runtime.id, limits) } else { Some(line.text) };
                    for event in text.iter().flat_map(|text| parser.parse(text)) {
                        mapper.apply(event);
                    }
                }
                None => break Ended::Exited,
            },
            changed = stop.changed() => {
                if changed.is_err() || *stop.borrow() {
                    let _ = child.stop().await;
                    break Ended::Cancelled;
                }
            }
            () = &mut deadline => {
                let _ = child.stop().await;
                break Ended::TimedOut;
            }
        }
    };
    for event in parser.finish() {
        mapper.apply(event);
    }
    match ended {
        Ended::Cancelled => return Outcome::Cancelled,
        Ended::TimedOut => {
            return Outcome::Failed(format!(
                "the turn ran longer than the limit of {} s (SVC_AGENTS_TURN_TIMEOUT); {} was stopped",
                limits.timeout.as_secs(),
                runtime.id
            ));
        }
        Ended::Exited => {}
    }
    let status = child.wait().await;
    let exit = match &status {
        Ok(s) => match (s.code(), std::os::unix::process::ExitStatusExt::signal(s)) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(sig)) => format!("signal {sig}"),
            _ => "an unknown status".to_owned(),
        },
        Err(e) => format!("an error while waiting: {e}"),
    };
    mapper.exit_code = status.as_ref().ok().and_then(|s| s.code());
    let success = status.as_ref().is_ok_and(|s| s.success());
    let stderr = child.stderr_tail();
    let tail = if stderr.is_empty() {
        String::new()
    } else {
        let lines: Vec<&str> = stderr.lines().rev().take(5).collect();
        let lines: Vec<&str> = lines.into_iter().rev().collect();
        format!("; stderr: {}", lines.join(" | "))
    };
    match mapper.terminal.take() {
        Some(Terminal::Completed(usage)) if success => Outcome::Completed(usage),
        Some(Terminal::Failed(message)) => Outcome::Failed(format!(
            "{message} ({} ended with {exit}){tail}",
            runtime.id
        )),
        _ => Outcome::Failed(format!(
            "{} ended with {exit} before finishing the turn{tail}",
            runtime.id
        )),
    }
}

/// How the read loop of a turn ended.
enum Ended {
    Exited,
    Cancelled,
    TimedOut,
}

/// A line over the output cap: the event is kept with its long value shortened to what fit
/// (`close_cut_json`), the turn is marked truncated, and the operator is told in the log.
fn salvage(text: String, mapper: &mut Mapper, runtime: &str, limits: Limits) -> Option<String> {
    mapper.output_truncated = true;
    let closed = crate::server::agents::adapters::close_cut_json(&text);
    tracing::warn!(
        runtime,
        cap = limits.max_line_bytes,
        kept = closed.is_some(),
        "a line of the runtime's output was over SVC_AGENTS_MAX_OUTPUT_BYTES and was cut"
    );
    closed
}

fn finish(
    handle: &Arc<SessionHandle>,
    turn_id: &str,
    outcome: Outcome,
    mapper: Mapper,
    started: Instant,
) {
    let _burst = handle.log.burst();
    let mut state = handle.lock();
    state.running = None;
    let now = ids::now();
    let traces = state.traces_enabled;
    let item_types = mapper.close_open_items(&mut state);
    let cumulative = state
        .agent
        .runtime
        .adapter()
        .is_some_and(|a| a.cumulative_usage());
    let outcome = match outcome {
        Outcome::Completed(Some(reported)) if cumulative => {
            let own = turn_usage(reported, state.runtime_total);
            state.runtime_total = Some(reported);
            Outcome::Completed(Some(own))
        }
        other => other,
    };
    let (status, usage, error, kind) = match outcome {
        Outcome::Completed(usage) => (
            TurnStatus::Completed,
            usage,
            None,
            "agent.session.turn.completed",
        ),
        Outcome::Failed(message) => (
            TurnStatus::Failed,
            None,
            Some(message),
            "agent.session.turn.failed",
        ),
        Outcome::Cancelled => (
            TurnStatus::Cancelled,
            None,
            None,
            "agent.session.turn.cancelled",
        ),
    };
    if let Some(u) = &usage {
        add_usage(&mut state.usage, u);
    }
    if let Some(message) = &error {
        state.error = Some(message.clone());
    }
    state.last_active_at = now;
    for sub in state
        .subagents
        .iter_mut()
        .filter(|s| s["x_svc"]["turn_id"] == turn_id)
    {
        sub["status"] = json!("closed");
        sub["closed_at"] = json!(now);
    }
    let Some(turn) = state.turn_mut(turn_id) else {
        return;
    };
    turn.status = status;
    turn.completed_at = Some(now);
    turn.usage = usage;
    turn.error = error;
    turn.exit_code = mapper.exit_code;
    turn.output_truncated = mapper.output_truncated;
    let turn_json = state
        .turn(turn_id)
        .map(|t| t.to_json(&handle.id, &state.agent));
    if traces {
        let item_count: usize = item_types.values().sum();
        state.traces.push(json!({
            "id": ids::new("trace"),
            "object": "agent.session.trace",
            "session_id": handle.id,
            "turn_id": turn_id,
            "created_at": now,
            "otlp": {
                "duration_ms": started.elapsed().as_millis() as u64,
                "item_count": item_count,
                "items_by_type": item_types,
                "status": status.as_str(),
            },
        }));
    }
    if state.deleted {
        return;
    }
    let mut event = json!({"turn_id": turn_id, "turn": turn_json});
    if let Some(u) = usage {
        event["usage"] = crate::server::agents::wire::to_json(&usage_json(&u));
    }
    handle.log.push(kind, event);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::agents::adapters::{RtOne, RtTwo};

    #[test]
    fn mcp_header_values_go_to_the_environment_never_the_argv() {
        let tools = vec![McpTool {
            server_label: "docs-1".into(),
            server_url: "http://127.0.0.1:9/mcp".into(),
            headers: vec![("Authorization".into(), "Bearer top-secret".into())],
            required: false,
            request_metadata: serde_json::json!({}),
            credential_id: None,
        }];
        let (servers, env) = mcp_servers(&tools, &[]);
        assert_eq!(
            env,
            [(
                "SVC_MCP_0_DOCS_1_HEADER_0".to_owned(),
                "Bearer top-secret".to_owned()
            )]
        );
        let request = TurnRequest {
            prompt: "hi".into(),
            mcp_servers: servers,
            ..TurnRequest::default()
        };
        for adapter in [&RtOne as &dyn Adapter, &RtTwo] {
            let launch = adapter.launch(&request);
            let argv = launch.args.join(" ");
            assert!(!argv.contains("top-secret"), "{}: {argv}", adapter.id());
            assert!(
                argv.contains("SVC_MCP_0_DOCS_1_HEADER_0"),
                "{}: {argv}",
                adapter.id()
            );
            assert!(launch.stdin.is_none_or(|s| !s.contains("top-secret")));
        }
    }

    #[test]
    fn labels_that_read_alike_get_their_own_variables() {
        let tool = |label: &str, token: &str| McpTool {
            server_label: label.into(),
            server_url: "http://127.0.0.1:9/mcp".into(),
            headers: vec![("Authorization".into(), token.into())],
            required: false,
            request_metadata: serde_json::json!({}),
            credential_id: None,
        };
        let (servers, env) = mcp_servers(
            &[tool("a-b", "for-dash"), tool("a_b", "for-underscore")],
            &[],
        );
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["SVC_MCP_0_A_B_HEADER_0", "SVC_MCP_1_A_B_HEADER_0"]);
        assert_ne!(servers[0].headers_from_env, servers[1].headers_from_env);
    }
}

#[cfg(test)]
mod launch_tests {
    use crate::server::agents::model::{SessionStatus, TurnStatus};
    use crate::server::agents::test_support::{agents_state, open_session};
    use std::time::Duration;

    // One thread: nothing spawned runs until the test yields, so what `enqueue` did is
    // what the request did before its answer.
    #[tokio::test(flavor = "current_thread")]
    async fn an_idle_session_s_turn_is_running_when_the_request_that_queued_it_returns() {
        let dir = tempfile::tempdir().unwrap();
        let state = agents_state(dir.path());
        let handle = open_session(&state);

        let first = state.agents.enqueue(&handle, "first".into());
        {
            let session = handle.lock();
            let running = session.running.as_ref().map(|(id, _)| id.as_str());
            assert_eq!(running, Some(first.as_str()), "launched in the request");
            assert!(session.queue.is_empty());
            // Its start is told by the worker, with the events that tell it.
            assert_eq!(session.turn(&first).unwrap().status, TurnStatus::Queued);
        }
        // A turn queued behind a running one waits in the queue for the worker.
        let second = state.agents.enqueue(&handle, "second".into());
        {
            let session = handle.lock();
            let running = session.running.as_ref().map(|(id, _)| id.as_str());
            assert_eq!(running, Some(first.as_str()));
            assert_eq!(session.queue.iter().collect::<Vec<_>>(), [&second]);
        }
        // The worker runs both (with or without the runtime on PATH) and settles the session.
        tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                {
                    let session = handle.lock();
                    if !session.worker_active && session.status != SessionStatus::InProgress {
                        break;
                    }
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the worker settles the session");
        let session = handle.lock();
        for turn in [&first, &second] {
            let status = session.turn(turn).unwrap().status;
            assert!(
                matches!(status, TurnStatus::Completed | TurnStatus::Failed),
                "{turn}: {status:?}"
            );
        }
    }
}
