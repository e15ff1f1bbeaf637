//! The engine's handlers, one file per resource; [`handler`] binds a row of the route table
//! to its handler (the router asks for every row, and a test checks none is missing).

mod code;
mod commands;
mod engine;
mod files;
mod sandboxes;
mod terminal;

use super::app::{OpenGuard, Shared};
use super::provider::{EventStream, ProviderResult, Sandbox};
use super::routes::Route;
use super::wire::Connection;
use crate::error::engine::EngineError;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, delete, get, post, put};
use futures::StreamExt;
use std::future::Future;
use std::sync::Arc;

pub fn handler(id: &str) -> Option<MethodRouter<Shared>> {
    Some(match id {
        "health" => get(engine::health),
        "shutdown" => post(engine::shutdown),
        "providers_list" => get(engine::providers),
        "sandboxes_create" => post(sandboxes::create),
        "sandboxes_list" => get(sandboxes::list),
        "sandboxes_connect" => post(sandboxes::connect),
        "sandboxes_info" => get(sandboxes::info),
        "sandboxes_kill" => delete(sandboxes::kill),
        "sandboxes_running" => get(sandboxes::running),
        "sandboxes_timeout" => post(sandboxes::timeout),
        "sandboxes_pause" => post(sandboxes::pause),
        "sandboxes_resume" => post(sandboxes::resume),
        "sandboxes_port_url" => get(sandboxes::port_url),
        "commands_run" => post(commands::run),
        "commands_stream" => post(commands::stream),
        "processes_list" => get(commands::processes),
        "processes_signal" => post(commands::signal),
        "processes_stdin" => post(commands::stdin),
        "processes_kill" => delete(commands::kill),
        "files_read" => get(files::read),
        "files_write" => put(files::write),
        "files_list" => get(files::list),
        "files_info" => get(files::info),
        "files_exists" => get(files::exists),
        "files_mkdir" => post(files::mkdir),
        "files_move" => post(files::rename),
        "files_remove" => delete(files::remove),
        "files_watch" => get(files::watch),
        "code_run" => post(code::run),
        "code_contexts_create" => post(code::create_context),
        "code_contexts_list" => get(code::list_contexts),
        "code_contexts_restart" => post(code::restart_context),
        "code_contexts_delete" => delete(code::delete_context),
        "terminal" => get(terminal::connect),
        _ => return None,
    })
}

/// Runs `op` on sandbox `id` of the connection's provider, through its session.
async fn on<T, F, Fut>(
    state: &Shared,
    route: &Route,
    conn: &Connection,
    id: &str,
    op: F,
) -> Result<T, EngineError>
where
    F: Fn(Arc<dyn Sandbox>) -> Fut,
    Fut: Future<Output = ProviderResult<T>>,
{
    let provider = state.provider(route, conn)?;
    state.sessions.call(&*provider, conn, id, op).await
}

/// A provider's event stream as SSE: each event as it comes, an `error` event (the engine
/// body) that ends it, then `end` when `close_with_end` (command streams); keep-alive
/// comments while it is quiet. The stream holds the engine open while a client reads it.
fn sse(events: EventStream, open: OpenGuard, close_with_end: bool) -> Response {
    let stream = futures::stream::unfold(Some(events), move |events| async move {
        let mut events = events?;
        let event = match events.next().await {
            Some(Ok(event)) => {
                let frame = SseEvent::default()
                    .event(event.name)
                    .data(event.data.to_string());
                return Some((frame, Some(events)));
            }
            Some(Err(e)) => SseEvent::default()
                .event("error")
                .data(e.body().to_string()),
            None if close_with_end => SseEvent::default().event("end").data("{}"),
            None => return None,
        };
        Some((event, None))
    })
    .map(move |event| {
        let _held = &open;
        Ok::<_, std::convert::Infallible>(event)
    });
    Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(std::time::Duration::from_secs(15)))
        .into_response()
}
