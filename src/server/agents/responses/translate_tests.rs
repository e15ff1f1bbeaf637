//! The translation from session events to `response.*` events, driven by hand so that the
//! session can be made to run ahead of it, as it does when the runtime prints faster than
//! the translation is scheduled.

use super::request::ResponseRequest;
use super::{ResponseHandle, Responses, shape};
use crate::server::agents::agent_spec::{self, AgentSpec};
use crate::server::agents::model::{Turn, TurnStatus};
use crate::server::agents::runtimes::{RUNTIMES, Selection};
use crate::server::agents::session_handle::SessionHandle;
use crate::server::agents::sessions::Agents;
use crate::services::event_log::EventLog;
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

fn spec() -> AgentSpec {
    let selection = Selection {
        runtime: &RUNTIMES[1],
        model: None,
    };
    agent_spec::build(&Map::new(), "", selection, None, None).expect("an empty agent is valid")
}

fn request() -> ResponseRequest {
    ResponseRequest {
        model: "rt-two".into(),
        prompt: "hi".into(),
        system: Vec::new(),
        items: Vec::new(),
        instructions: None,
        metadata: Map::new(),
        store: true,
        background: false,
        stream: true,
        previous_response_id: None,
        tools: Vec::new(),
        reasoning_effort: None,
        ignored: Vec::new(),
    }
}

fn handle(session: Arc<SessionHandle>, turn_id: &str) -> Arc<ResponseHandle> {
    Arc::new(ResponseHandle {
        id: "resp_test".into(),
        owner: "owner".into(),
        created_at: 0,
        session,
        turn_id: turn_id.into(),
        request: request(),
        log: EventLog::plain(1_000),
        done: watch::channel(false).0,
        conversation: Arc::new(Mutex::new(String::new())),
    })
}

/// A conversation's session, as a response opens one.
fn session() -> Arc<SessionHandle> {
    Agents::new(Default::default()).open("owner", spec(), Map::new(), Default::default())
}

/// The response's translation follows its session from `from`, as a created response's does.
fn follow(handle: &Arc<ResponseHandle>, from: u64) {
    let translation = shape::Translation::new(Arc::new(Responses::default()), handle.clone());
    handle.session.log.follow(from, Box::new(translation));
}

/// A session and the response of its turn `turn_id`, translated from now on.
fn translated(turn_id: &str) -> (Arc<SessionHandle>, Arc<ResponseHandle>) {
    let session = session();
    let handle = handle(session.clone(), turn_id);
    follow(&handle, session.log.newest());
    (session, handle)
}

/// Waits for the response's terminal event, written by a task once the session's lock
/// is let go.
async fn ended(handle: &ResponseHandle) {
    tokio::time::timeout(std::time::Duration::from_secs(10), handle.finished())
        .await
        .expect("the terminal event is written");
}

fn turn(id: &str, status: TurnStatus) -> Turn {
    Turn {
        id: id.into(),
        prompt: "hi".into(),
        created_at: 0,
        started_at: None,
        completed_at: None,
        status,
        usage: None,
        error: None,
        queued_not_steered: false,
        exit_code: None,
        output_truncated: false,
    }
}

/// A whole turn as the worker and the mapper leave it: one message, in the state and in
/// the log.
fn run_turn(session: &SessionHandle, turn_id: &str) {
    begin_turn(session, turn_id);
    end_turn(session, turn_id);
}

fn message(turn_id: &str) -> Value {
    json!({"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
           "content": [{"type": "text", "text": "hello"}], "turn_id": turn_id})
}

/// The turn up to its first text delta: in progress, its message in the state.
fn begin_turn(session: &SessionHandle, turn_id: &str) {
    {
        let mut state = session.lock();
        state.turns.push(turn(turn_id, TurnStatus::InProgress));
        state.items.push(message(turn_id));
    }
    let log = &session.log;
    log.push(
        "agent.session.turn.in_progress",
        json!({"turn_id": turn_id}),
    );
    log.push(
        "agent.session.turn.item.added",
        json!({"turn_id": turn_id, "item": message(turn_id), "output_index": 1}),
    );
    log.push(
        "agent.session.turn.output_text.delta",
        json!({"turn_id": turn_id, "item_id": "msg_1", "output_index": 1, "delta": "hello"}),
    );
}

/// The rest of the turn: its text and message done, the turn completed (in the state
/// first, under the lock the push is made under, as the worker does).
fn end_turn(session: &SessionHandle, turn_id: &str) {
    let log = &session.log;
    log.push(
        "agent.session.turn.output_text.done",
        json!({"turn_id": turn_id, "item_id": "msg_1", "output_index": 1, "text": "hello"}),
    );
    log.push(
        "agent.session.turn.item.done",
        json!({"turn_id": turn_id, "item": message(turn_id), "output_index": 1}),
    );
    let mut state = session.lock();
    let turn = state.turn_mut(turn_id).expect("begun");
    turn.status = TurnStatus::Completed;
    turn.completed_at = Some(0);
    log.push(
        "agent.session.turn.completed",
        json!({"turn_id": turn_id, "turn": {}}),
    );
}

fn events(handle: &ResponseHandle) -> Vec<(String, Value)> {
    handle
        .log
        .after(0)
        .events
        .iter()
        .map(|e| {
            (
                e.kind.clone(),
                serde_json::from_str(e.data()).expect("JSON"),
            )
        })
        .collect()
}

/// A conversation's session is reached through its responses alone (no list, route or
/// webhook follows it), so it records no `agent.session.created`, which would be made in
/// the request before the runtime starts: its log begins with its first turn.
#[test]
fn a_conversation_session_records_nothing_before_its_first_turn() {
    let session = session();
    assert_eq!(session.log.newest(), 0);
    assert!(session.log.after(0).events.is_empty());
}

/// The OpenAI SDKs' stream helpers refuse an `output_item.added` whose index a
/// `response.created` already showed ("Duplicate response output index 0"), and take a
/// `created` that says `completed` as the response's state. So the opening events show the
/// response as it opened, whatever the session holds by the time they are written.
#[tokio::test]
async fn the_opening_events_show_no_output_when_the_session_ran_ahead() {
    let session = session();
    let from = session.log.newest();
    run_turn(&session, "turn_1");
    let handle = handle(session, "turn_1");

    follow(&handle, from);
    ended(&handle).await;

    let events = events(&handle);
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds[..3],
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added"
        ]
    );
    for (kind, data) in &events[..2] {
        assert_eq!(data["response"]["status"], "in_progress", "{kind}: {data}");
        assert_eq!(data["response"]["output"], json!([]), "{kind}: {data}");
        assert_eq!(data["response"]["usage"], Value::Null, "{kind}: {data}");
    }
    let (kind, last) = events.last().expect("a terminal event");
    assert_eq!(kind, "response.completed");
    assert_eq!(last["response"]["status"], "completed");
    assert_eq!(last["response"]["output"][0]["id"], "msg_1", "{last}");
}

/// The response's events are written as the session's are pushed, by the pusher: the
/// first text delta is in the response's log when the push returns, with no task to wait
/// for (before, a task of the translation's own woke to write it: one more hop between
/// the runtime's line and the client's frame). The terminal push is made under the
/// session's lock, as the worker makes it: the translation must not need that lock.
#[tokio::test]
async fn a_session_delta_is_a_response_delta_when_its_push_returns() {
    let (session, handle) = translated("turn_1");

    begin_turn(&session, "turn_1");
    let kinds: Vec<String> = events(&handle).into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        kinds,
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta"
        ],
        "written with no await between the pushes and this check"
    );

    end_turn(&session, "turn_1");
    ended(&handle).await;
    let (kind, last) = events(&handle).pop().expect("a terminal event");
    assert_eq!(kind, "response.completed", "{last}");
    assert_eq!(last["response"]["output"][0]["id"], "msg_1", "{last}");
}

/// A turn cancelled while still queued never ran: its stream still opens with `created`,
/// showing the response queued, and ends with `failed` whose response says `cancelled`.
#[tokio::test]
async fn a_response_cancelled_while_queued_opens_queued_and_ends_cancelled() {
    let (session, handle) = translated("turn_1");
    {
        let mut state = session.lock();
        state.turns.push(turn("turn_1", TurnStatus::Cancelled));
        session.log.push(
            "agent.session.turn.cancelled",
            json!({"turn_id": "turn_1", "turn": {}}),
        );
    }
    ended(&handle).await;
    let events = events(&handle);
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["response.created", "response.failed"]);
    assert_eq!(events[0].1["response"]["status"], "queued");
    assert_eq!(events[0].1["response"]["output"], json!([]));
    assert_eq!(events[1].1["response"]["status"], "cancelled");
}
