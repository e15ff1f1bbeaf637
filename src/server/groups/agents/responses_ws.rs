//! GET /v1/responses: the WebSocket mode. Each `response.create` message starts a response
//! and its events come back as text frames (the same JSON as the SSE stream), one response
//! after another on the same socket. A bad message gets an `error` frame; the socket stays.

use crate::error::{ApiError, ApiResult, Code, EventForm};
use crate::server::SharedState;
use crate::server::agents::responses::{ResponseHandle, request};
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::openapi::op::{Answer, Doc};
use crate::server::pipeline::ConnectionPermit;
use crate::server::route::{Bound, on};
use axum::Extension;
use axum::extract::State;
use axum::extract::ws::{
    Message, WebSocket, WebSocketUpgrade, rejection::WebSocketUpgradeRejection,
};
use axum::response::Response;
use axum::routing::MethodFilter;
use serde_json::Value;
use std::sync::Arc;

pub async fn responses_connect(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    permit: Option<Extension<ConnectionPermit>>,
    upgrade: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> ApiResult<Response> {
    let upgrade = upgrade.map_err(|_| {
        ApiError::new(
            Code::WebsocketUpgradeRequired,
            "GET /v1/responses is the WebSocket mode: send an upgrade request, or POST /v1/responses",
        )
    })?;
    let permit = permit.map(|Extension(p)| p);
    Ok(upgrade.on_upgrade(move |socket| serve(app, identity, socket, permit)))
}

async fn serve(
    app: SharedState,
    identity: Identity,
    mut socket: WebSocket,
    _permit: Option<ConnectionPermit>,
) {
    while let Some(Ok(message)) = socket.recv().await {
        let text = match message {
            Message::Text(text) => text.to_string(),
            Message::Close(_) => return,
            Message::Ping(_) | Message::Pong(_) => continue,
            Message::Binary(_) => {
                let error = ApiError::new(Code::InvalidRequest, "send JSON text frames");
                if send(&mut socket, error_frame(&error)).await.is_err() {
                    return;
                }
                continue;
            }
        };
        let outcome = match start(&app, &identity, &text) {
            Ok(handle) => forward(&mut socket, handle).await,
            Err(e) => send(&mut socket, error_frame(&e)).await,
        };
        if outcome.is_err() {
            return;
        }
    }
}

/// `{"type": "response.create", ...create parameters}` (or the parameters under `response`).
fn start(
    app: &SharedState,
    identity: &Identity,
    text: &str,
) -> Result<Arc<ResponseHandle>, ApiError> {
    let message: Value = serde_json::from_str(text).map_err(|e| {
        ApiError::new(
            Code::InvalidRequest,
            format!("the message is not JSON: {e}"),
        )
    })?;
    if message["type"] != "response.create" {
        return Err(ApiError::invalid(
            "type",
            "the only message is `{\"type\": \"response.create\", ...}`",
        ));
    }
    let mut params = match message.get("response") {
        Some(inner @ Value::Object(_)) => inner.clone(),
        _ => message.clone(),
    };
    if let Some(obj) = params.as_object_mut() {
        obj.remove("type");
        // The socket is the stream; these two do not apply here.
        obj.remove("stream");
        obj.remove("background");
    }
    let request = request::parse(crate::server::agents::wire::read(&params, "")?)?;
    app.responses
        .create(&app.agents, &identity.id, None, request)
}

/// Sends the response's events until its terminal one.
async fn forward(socket: &mut WebSocket, handle: Arc<ResponseHandle>) -> Result<(), axum::Error> {
    let mut newest = handle.log.subscribe();
    let mut position = 0;
    loop {
        for event in handle.log.after(position).events {
            position = event.seq;
            socket
                .send(Message::Text(event.data().to_owned().into()))
                .await?;
            if matches!(
                event.kind.as_str(),
                "response.completed" | "response.failed" | "response.incomplete"
            ) {
                return Ok(());
            }
        }
        if newest.changed().await.is_err() {
            return Ok(());
        }
    }
}

/// An error frame: the row's Responses `error` event, outside any response's sequence.
fn error_frame(error: &ApiError) -> Value {
    error.event(EventForm::Response { sequence_number: 0 })
}

async fn send(socket: &mut WebSocket, frame: Value) -> Result<(), axum::Error> {
    socket.send(Message::Text(frame.to_string().into())).await
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<Bound> {
    use EndpointId::*;
    Some(match id {
        AgentsResponsesConnect => on(f, responses_connect),
        _ => return None,
    })
}

/// The OpenAPI declarations of this file's rows.
pub(super) fn doc(id: EndpointId) -> Option<&'static Doc> {
    [&CONNECT].into_iter().find(|d| d.id == id)
}

const CONNECT: Doc = Doc::new(EndpointId::AgentsResponsesConnect, "Responses over a WebSocket")
    .describe("Without the upgrade handshake: 400 `agents.websocket_upgrade_required`.")
    .answers(&[Answer::websocket("Each text frame `{\"type\": \"response.create\", ...}` (the body of `POST /v1/responses`) starts a response; its events come back as text frames, the same JSON as the SSE stream, one response after another. A bad message gets an `error` frame and the socket stays.")])
    .errors(&[&[
        Code::WebsocketUpgradeRequired,
        Code::OriginRefused,
        Code::NotImplementedLocally,
        Code::RuntimeNotInstalled,
        Code::ResourceNotFound,
    ]]);
