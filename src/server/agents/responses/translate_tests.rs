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

/// A whole turn as the worker and the mapper leave it: one message, in the state and in
/// the log.
fn run_turn(session: &SessionHandle, turn_id: &str) {
    let item = json!({"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                      "content": [{"type": "text", "text": "hello"}], "turn_id": turn_id});
    {
        let mut state = session.lock();
        state.turns.push(Turn {
            id: turn_id.into(),
            prompt: "hi".into(),
            created_at: 0,
            started_at: Some(0),
            completed_at: Some(0),
            status: TurnStatus::Completed,
            usage: None,
            error: None,
            queued_not_steered: false,
            exit_code: Some(0),
            output_truncated: false,
        });
        state.items.push(item.clone());
    }
    let log = &session.log;
    log.push(
        "agent.session.turn.in_progress",
        json!({"turn_id": turn_id}),
    );
    log.push(
        "agent.session.turn.item.added",
        json!({"turn_id": turn_id, "item": item, "output_index": 1}),
    );
    log.push(
        "agent.session.turn.output_text.delta",
        json!({"turn_id": turn_id, "item_id": "msg_1", "output_index": 1, "delta": "hello"}),
    );
    log.push(
        "agent.session.turn.output_text.done",
        json!({"turn_id": turn_id, "item_id": "msg_1", "output_index": 1, "text": "hello"}),
    );
    log.push(
        "agent.session.turn.item.done",
        json!({"turn_id": turn_id, "item": item, "output_index": 1}),
    );
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

/// The OpenAI SDKs' stream helpers refuse an `output_item.added` whose index a
/// `response.created` already showed ("Duplicate response output index 0"), and take a
/// `created` that says `completed` as the response's state. So the opening events show the
/// response as it opened, whatever the session holds by the time they are written.
#[tokio::test]
async fn the_opening_events_show_no_output_when_the_session_ran_ahead() {
    let agents = Agents::new(Default::default());
    let session = agents.open("owner", spec(), Map::new(), Default::default());
    let from = session.log.newest();
    run_turn(&session, "turn_1");
    let handle = handle(session, "turn_1");

    shape::translate(Arc::new(Responses::default()), handle.clone(), from).await;

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
