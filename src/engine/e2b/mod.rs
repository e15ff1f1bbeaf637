//! The E2B-compatible front: a second door of the engine process, on a loopback listener
//! of its own, that speaks what the unchanged E2B SDKs speak, over the same providers and
//! sessions as `/v1` (a sandbox made here is an ordinary engine sandbox). One listener
//! serves both of the SDKs' URLs: a request naming a sandbox (`E2b-Sandbox-Id`) goes to
//! that sandbox's envd, any other is the control plane (`docs/e2b.md`).
//!
//! - [`control`]: the control plane (`X-API-KEY`): create, list, info, kill, timeout,
//!   pause, connect, metrics; [`errors`]: its error table and envd's;
//! - [`connect`]: the Connect protocol's framing; [`messages`]: envd's messages;
//! - [`process`]: `process.Process`; [`filesystem`]: `filesystem.Filesystem`;
//!   [`files`]: envd's `/files` and `/health`;
//! - [`code`]: the code interpreter (port 49999); [`code_contexts`]: what it remembers of
//!   each sandbox's contexts;
//! - [`routes`]: the table of every route above, from which the doors' routers are built.

mod cell;
mod code;
mod code_contexts;
pub mod connect;
mod control;
pub mod errors;
mod files;
mod filesystem;
mod messages;
mod process;
pub mod routes;

use super::provider::{Provider, ProviderResult, Sandbox};
use super::routes::{RouteId, route};
use super::state::Shared;
use crate::error::engine::{Code, EngineError};
use crate::wire::{Connection, SandboxRecord};
use axum::Router;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use errors::{ApiError, ConnectCode, RpcError};
use http::HeaderMap;
use routes::Door;
use sha2::{Digest, Sha256};
use std::future::Future;
use std::sync::Arc;

/// The envd port every SDK call names unless it reaches another port of the sandbox.
pub const ENVD_PORT: &str = "49983";
/// The port of the code interpreter's server (`e2b-code-interpreter`).
pub const CODE_PORT: &str = "49999";
/// What the control plane reports as each sandbox's envd version: the SDKs turn features
/// off below the versions they know (0.6.4 is the newest gate of `e2b` 2.63.0).
pub const ENVD_VERSION: &str = "0.6.4";

/// What the front's handlers share.
pub struct Front {
    pub engine: Shared,
    api_key: String,
    pub processes: process::Table,
    pub watchers: filesystem::Watchers,
    pub code: code_contexts::Contexts,
}

/// The API key of the engine whose descriptor token is `token`: a digest of it, so the
/// key lives as long as the engine and `svc e2b env` can print it from the descriptor.
pub fn api_key(token: &str) -> String {
    format!(
        "e2b_{}",
        digest(&["svc e2b api key", token])[..40].to_owned()
    )
}

fn digest(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

impl Front {
    pub fn new(engine: Shared) -> Arc<Front> {
        Arc::new(Front {
            api_key: api_key(&engine.token),
            engine,
            processes: process::Table::default(),
            watchers: filesystem::Watchers::default(),
            code: code_contexts::Contexts::default(),
        })
    }

    /// A sandbox's `envdAccessToken`: derived from the engine's secret and the id, so no
    /// table holds it and no other sandbox's token opens it.
    pub fn access_token(&self, sandbox_id: &str) -> String {
        digest(&["svc envd access token", &self.engine.token, sandbox_id])[..40].to_owned()
    }

    /// The connection every front call uses: the engine's default provider, no account.
    pub fn conn() -> Connection {
        Connection::default()
    }

    /// The provider of the `/v1` route `route_id` for the front's connection: a front call
    /// is policed and recorded as that route is.
    pub fn provider(&self, route_id: RouteId) -> ProviderResult<(Connection, Arc<dyn Provider>)> {
        let row = route(route_id.as_str())
            .ok_or_else(|| EngineError::new(Code::Internal, "a front call without a route"))?;
        let conn = Front::conn();
        let provider = self.engine.provider(row, &conn)?;
        Ok((conn, provider))
    }

    /// Runs `op` on the sandbox through its session, as the `/v1` route `route` would.
    pub async fn on<T, F, Fut>(&self, id: &str, route_id: RouteId, op: F) -> ProviderResult<T>
    where
        F: Fn(Arc<dyn Sandbox>) -> Fut,
        Fut: Future<Output = ProviderResult<T>>,
    {
        let (conn, provider) = self.provider(route_id)?;
        self.engine.sessions.call(&*provider, &conn, id, op).await
    }

    /// The sandbox's handle, for a call that consumes a body or keeps the handle: the
    /// lookup of [`Front::with_record`], its record unused (its `info` is what finds a
    /// stale session).
    pub async fn sandbox(&self, id: &str, route_id: RouteId) -> ProviderResult<Arc<dyn Sandbox>> {
        let (sandbox, _) = self.with_record(id, route_id).await?;
        Ok(sandbox)
    }

    /// The sandbox's handle and its record, read by one `info` through the session.
    pub async fn with_record(
        &self,
        id: &str,
        route_id: RouteId,
    ) -> ProviderResult<(Arc<dyn Sandbox>, SandboxRecord)> {
        self.on(id, route_id, |s| async move {
            let record = s.info().await?;
            Ok((s, record))
        })
        .await
    }

    /// The sandbox an envd request names (`E2b-Sandbox-Id`) and its handle, a failure in
    /// the words of the caller's contract (`answer`).
    pub async fn envd_sandbox<E>(
        &self,
        headers: &HeaderMap,
        route_id: RouteId,
        answer: fn(&str, EngineError) -> E,
    ) -> Result<(String, Arc<dyn Sandbox>), E> {
        let id = sandbox_id(headers);
        match self.sandbox(&id, route_id).await {
            Ok(sandbox) => Ok((id, sandbox)),
            Err(e) => {
                if e.code == Code::SandboxNotFound {
                    self.forget_sandbox(&id);
                }
                Err(answer(&id, e))
            }
        }
    }

    /// Forgets what the front's tables hold of a sandbox that is gone: killed here, or
    /// found gone by an envd call (it timed out, or was killed through `/v1`), so no entry
    /// outlives its sandbox for long.
    pub fn forget_sandbox(&self, id: &str) {
        self.processes.forget_sandbox(id);
        self.watchers.forget_sandbox(id);
        self.code.forget_sandbox(id);
    }
}

/// The router of the front.
/// Every row of the front's route table, door by door.
pub fn ops() -> impl Iterator<Item = &'static routes::Op> + Clone {
    control::OPS
        .iter()
        .chain(process::OPS)
        .chain(filesystem::OPS)
        .chain(files::OPS)
        .chain(code::OPS)
}

pub fn app(front: Arc<Front>) -> Router {
    let control = routes::router(ops(), Door::Control).with_state(front.clone());
    let envd = routes::router(ops(), Door::Envd).with_state(front.clone());
    let code = routes::router(ops(), Door::Code).with_state(front.clone());
    Router::new()
        .fallback(move |request: Request| {
            dispatch(control.clone(), envd.clone(), code.clone(), request)
        })
        .layer(middleware::from_fn_with_state(front, door))
}

/// The header naming the sandbox of an envd request.
const SANDBOX_ID: &str = "e2b-sandbox-id";
const SANDBOX_PORT: &str = "e2b-sandbox-port";
const ACCESS_TOKEN: &str = "x-access-token";

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// What a request is for: the control plane (it names no sandbox), or a sandbox's envd or
/// code-interpreter port. One reading for the door and the dispatch, so neither can take a
/// request for the other side.
enum Side<'a> {
    Control,
    Sandbox { id: &'a str, port: &'a str },
}

/// The request's side, or why it names none clearly: an `E2b-Sandbox-Id` or
/// `E2b-Sandbox-Port` sent twice, empty or not text, or a port the front does not serve.
fn side(headers: &HeaderMap) -> Result<Side<'_>, ApiError> {
    let one = |name: &str| {
        let mut all = headers.get_all(name).iter();
        match (all.next(), all.next()) {
            (None, _) => Ok(None),
            (Some(value), None) => match value.to_str() {
                Ok(text) if !text.is_empty() => Ok(Some(text)),
                _ => Err(format!("`{name}` is empty or not text")),
            },
            (Some(_), Some(_)) => Err(format!("`{name}` is sent more than once")),
        }
    };
    let unclear = |why: String| ApiError::new(400, why);
    let Some(id) = one(SANDBOX_ID).map_err(unclear)? else {
        return Ok(Side::Control);
    };
    let port = one(SANDBOX_PORT).map_err(unclear)?.unwrap_or(ENVD_PORT);
    if port != ENVD_PORT && port != CODE_PORT {
        return Err(ApiError::new(
            502,
            format!(
                "The sandbox {id} port {port} is not open: a local engine serves envd \
                 ({ENVD_PORT}) and the code interpreter ({CODE_PORT})"
            ),
        ));
    }
    Ok(Side::Sandbox { id, port })
}

async fn dispatch(control: Router, envd: Router, code: Router, request: Request) -> Response {
    use tower::ServiceExt as _;
    let router = match side(request.headers()) {
        Ok(Side::Control) => control,
        Ok(Side::Sandbox {
            port: CODE_PORT, ..
        }) => code,
        Ok(Side::Sandbox { .. }) => envd,
        Err(unclear) => return unclear.into_response(),
    };
    match router.oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// The engine door's rules ([`super::guard::check_door`]: no `Origin`, one loopback `Host`,
/// a loopback authority in the request line), then the token of the side the
/// request is for: the API key on the control plane, the sandbox's access token on envd
/// (`/health` needs none, as envd's does not). Counted for the engine's idle exit.
async fn door(State(front): State<Arc<Front>>, request: Request, next: Next) -> Response {
    use super::guard::{Refused, credential};
    let _open = front.engine.activity.open();
    let headers = request.headers();
    if let Some(refused) = super::guard::check_door(request.uri(), headers) {
        return ApiError::from(refused).into_response();
    }
    let side = match side(headers) {
        Ok(side) => side,
        Err(unclear) => return unclear.into_response(),
    };
    match side {
        Side::Control => {
            let message = match credential(headers, "x-api-key", "", &front.api_key) {
                Ok(()) => None,
                Err(Refused::Missing) => {
                    Some("missing `X-API-KEY`: `eval \"$(svc e2b env)\"` sets E2B_API_KEY")
                }
                Err(Refused::Several) => Some("more than one `X-API-KEY`: send the key once"),
                Err(Refused::Wrong) => Some(
                    "wrong API key: the engine was restarted, run `eval \"$(svc e2b env)\"` again",
                ),
            };
            if let Some(message) = message {
                return ApiError::new(401, message).into_response();
            }
        }
        Side::Sandbox { id, port } => {
            // Without a token: envd's `/health`, and the code interpreter's `/contexts` and
            // `/contexts/...`, which `e2b-code-interpreter` 2.11.5 calls with none (E2B guards
            // that port with the sandbox's network; `docs/e2b.md` names the gap). A token
            // that is present must still be the sandbox's own.
            let path = request.uri().path();
            let open = match port {
                CODE_PORT => path == "/contexts" || path.starts_with("/contexts/"),
                _ => path == "/health",
            };
            let message = match credential(headers, ACCESS_TOKEN, "", &front.access_token(id)) {
                Ok(()) => None,
                Err(Refused::Missing) if open => None,
                Err(Refused::Missing) => {
                    Some("missing `X-Access-Token`: the sandbox's envdAccessToken")
                }
                Err(Refused::Several) => {
                    Some("more than one `X-Access-Token`: send the token once")
                }
                Err(Refused::Wrong) => Some("wrong `X-Access-Token` for this sandbox"),
            };
            if let Some(message) = message {
                return refuse(path, ConnectCode::Unauthenticated, 401, message);
            }
        }
    }
    next.run(request).await
}

/// A refusal in the form of the route it refuses: Connect for a service call, `{code,
/// message}` for envd's HTTP routes.
fn refuse(path: &str, code: ConnectCode, status: u16, message: &str) -> Response {
    if is_rpc(path) {
        RpcError::new(code, message).into_response()
    } else {
        errors::envd_http(status, message)
    }
}

fn is_rpc(path: &str) -> bool {
    path.starts_with("/process.") || path.starts_with("/filesystem.")
}

/// The sandbox id of an envd request (the door made sure there is one).
pub fn sandbox_id(headers: &HeaderMap) -> String {
    header(headers, SANDBOX_ID).unwrap_or("").to_owned()
}

/// The user an envd call runs as: `Authorization: Basic base64("name:")`, else `user`.
pub fn user_of(headers: &HeaderMap) -> Result<Option<String>, RpcError> {
    use base64::Engine as _;
    let Some(value) = header(headers, "authorization") else {
        return Ok(None);
    };
    let encoded = value.strip_prefix("Basic ").ok_or_else(|| {
        RpcError::new(
            ConnectCode::Unauthenticated,
            "`Authorization` must be Basic",
        )
    })?;
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(encoded.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or_else(|| {
            RpcError::new(
                ConnectCode::Unauthenticated,
                "`Authorization` is not base64 of `user:`",
            )
        })?;
    let name = decoded.split(':').next().unwrap_or("");
    Ok((!name.is_empty()).then(|| name.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_per_engine_and_tokens_per_sandbox() {
        assert_eq!(api_key("t"), api_key("t"));
        assert_ne!(api_key("t"), api_key("u"));
        assert!(api_key("t").starts_with("e2b_"));
        let mut headers = HeaderMap::new();
        headers.insert("authorization", "Basic cm9vdDo=".parse().unwrap());
        assert_eq!(user_of(&headers).unwrap().as_deref(), Some("root"));
        headers.insert("authorization", "Bearer x".parse().unwrap());
        assert!(user_of(&headers).is_err());
    }
}
