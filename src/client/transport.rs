//! Sending a request to the engine: find it (or start it), add the token and the connection,
//! and recover once when the engine went away (connection refused, its pid gone) or no
//! longer takes the token (a 401 after a restart, spec 5.3): re-read the descriptor, start a
//! new engine when none answers, and send the request again, once.

use super::Client;
use super::error::{ApiError, ClientError, ClientResult};
use super::launch::{engine_program, pid_alive, spawn_engine};
use crate::error::engine::Code;
use crate::wire::{CONNECTION_HEADER, Descriptor, Health, log_path};
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::{Duration, Instant};

/// How often a starting client looks for the new engine: starting takes a few
/// milliseconds, and the cold start's budget is 50 ms.
const POLL: Duration = Duration::from_millis(2);
/// A health check of an engine that should be there: it is on loopback, so this only
/// bounds a hung one.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(2);
/// After the started engine failed, how long another racing engine may still appear.
const FAILED_GRACE: Duration = Duration::from_millis(500);

/// How a request is built for one engine; called again (once) when the request is retried
/// on a new engine.
pub(crate) type Build<'a> =
    dyn Fn(&Client, &Descriptor) -> ClientResult<reqwest::RequestBuilder> + Send + Sync + 'a;

impl Client {
    /// `http://HOST:PORT/v1/<segments>?<query>`, each segment percent-encoded (ids and
    /// paths are the caller's).
    pub(crate) fn url(
        engine: &Descriptor,
        scheme: &str,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> ClientResult<url::Url> {
        let mut url = url::Url::parse(&format!("{scheme}://{}:{}/", engine.host, engine.port))
            .map_err(|e| ClientError::Transport(format!("bad engine address: {e}")))?;
        url.path_segments_mut()
            .map_err(|()| ClientError::Transport("bad engine address".into()))?
            .pop_if_empty()
            .push("v1")
            .extend(segments);
        if !query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        Ok(url)
    }

    /// A request builder for a route, with the token and the connection.
    pub(crate) fn request(
        &self,
        engine: &Descriptor,
        method: Method,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> ClientResult<reqwest::RequestBuilder> {
        let url = Client::url(engine, "http", segments, query)?;
        Ok(self.authorize(self.inner.http.request(method, url), engine))
    }

    fn authorize(
        &self,
        request: reqwest::RequestBuilder,
        engine: &Descriptor,
    ) -> reqwest::RequestBuilder {
        request
            .bearer_auth(&engine.token)
            .header(CONNECTION_HEADER, &self.inner.connection_header)
    }

    pub(crate) fn connection_header(&self) -> &str {
        &self.inner.connection_header
    }

    /// Sends a request (built by `build` for the engine in use), recovering once; answers a
    /// success or the engine's typed error.
    pub(crate) async fn send(&self, build: &Build<'_>) -> ClientResult<reqwest::Response> {
        self.with_recovery(|engine| async move {
            let outcome = build(self, &engine).map_err(|e| (e, false))?.send().await;
            match outcome {
                Ok(response) if response.status().is_success() => Ok(response),
                Ok(response) => {
                    let unauthorized = response.status() == reqwest::StatusCode::UNAUTHORIZED;
                    let error = error_of(response).await;
                    let recoverable = unauthorized && !is_provider_auth(&error);
                    Err((error, recoverable))
                }
                Err(e) => {
                    // Refused: nothing listens there. Otherwise it went away mid-request:
                    // only worth a retry when the engine is really gone.
                    let gone = e.is_connect() || !pid_alive(engine.pid);
                    Err((ClientError::transport(&e), gone))
                }
            }
        })
        .await
    }

    /// Runs `attempt` on the engine in use and, when it fails in a way a new engine might
    /// not (the error's flag: a 401 other than the provider's, the engine gone), once more
    /// on the engine `recover` finds; any other failure, or a second one, is the answer.
    pub(crate) async fn with_recovery<T, F, Fut>(&self, attempt: F) -> ClientResult<T>
    where
        F: Fn(Descriptor) -> Fut,
        Fut: Future<Output = Result<T, (ClientError, bool)>>,
    {
        let engine = self.engine().await?;
        let error = match attempt(engine.clone()).await {
            Ok(answer) => return Ok(answer),
            Err((error, false)) => return Err(error),
            Err((error, true)) => error,
        };
        match self.recover(&engine).await? {
            Some(next) => attempt(next).await.map_err(|(error, _)| error),
            None => Err(error),
        }
    }

    /// Sends and reads a JSON answer.
    pub(crate) async fn send_json<T: DeserializeOwned>(
        &self,
        build: &Build<'_>,
    ) -> ClientResult<T> {
        let response = self.send(build).await?;
        read_json(response).await
    }

    /// `GET` a route and read its JSON answer.
    pub(crate) async fn get<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> ClientResult<T> {
        self.send_json(&|c, e| c.request(e, Method::GET, segments, query))
            .await
    }

    /// `POST` `body` as JSON to a route; the answer unread.
    pub(crate) async fn send_post(
        &self,
        segments: &[&str],
        body: &(impl Serialize + Sync + ?Sized),
    ) -> ClientResult<reqwest::Response> {
        self.send(&|c, e| Ok(c.request(e, Method::POST, segments, &[])?.json(body)))
            .await
    }

    /// `POST` `body` as JSON to a route and read its JSON answer.
    pub(crate) async fn post<T: DeserializeOwned>(
        &self,
        segments: &[&str],
        body: &(impl Serialize + Sync + ?Sized),
    ) -> ClientResult<T> {
        read_json(self.send_post(segments, body).await?).await
    }

    /// `DELETE` a route; the answer unread.
    pub(crate) async fn delete(
        &self,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> ClientResult<reqwest::Response> {
        self.send(&|c, e| c.request(e, Method::DELETE, segments, query))
            .await
    }

    /// The engine in use: the one found before, else the descriptor's when its pid lives
    /// (a dead one's is stale), else a new one (unless the caller asked not to start one).
    pub(crate) async fn engine(&self) -> ClientResult<Descriptor> {
        if let Some(engine) = self.descriptor() {
            return Ok(engine);
        }
        let _one_start = self.inner.starting.lock().await;
        if let Some(engine) = self.descriptor() {
            return Ok(engine);
        }
        let state_dir = &self.inner.options.state_dir;
        if let Some(found) = Descriptor::read(state_dir).filter(|d| pid_alive(d.pid)) {
            self.set_engine(Some(found.clone()));
            return Ok(found);
        }
        self.start_engine().await
    }

    /// After `old` failed: the descriptor now on disk when it names another engine that
    /// answers, else a new engine; `None` when `old` is still there and answering (its
    /// refusal stands).
    pub(crate) async fn recover(&self, old: &Descriptor) -> ClientResult<Option<Descriptor>> {
        let _one_start = self.inner.starting.lock().await;
        // Another call of this client may have recovered already.
        if let Some(current) = self.descriptor()
            && current != *old
        {
            return Ok(Some(current));
        }
        self.set_engine(None);
        if let Some(found) = Descriptor::read(&self.inner.options.state_dir)
            && found != *old
            && pid_alive(found.pid)
            && self.health_of(&found).await.is_ok()
        {
            self.set_engine(Some(found.clone()));
            return Ok(Some(found));
        }
        if pid_alive(old.pid) && self.health_of(old).await.is_ok() {
            self.set_engine(Some(old.clone()));
            return Ok(None);
        }
        self.start_engine().await.map(Some)
    }

    /// Starts an engine and waits until a descriptor's engine answers its health route:
    /// polled every few milliseconds, since the whole cold start should take tens of them.
    /// The engine that answers need not be the one started here: of racing starts, the
    /// lock's winner serves and the rest exit.
    pub(crate) async fn start_engine(&self) -> ClientResult<Descriptor> {
        let options = &self.inner.options;
        let state_dir = &options.state_dir;
        if !options.autostart {
            return Err(no_engine_running(state_dir));
        }
        let program = engine_program(options.program.as_ref())
            .map_err(|e| ClientError::io("cannot find the engine program", e))?;
        let mut started = spawn_engine(&program, state_dir).map_err(|e| {
            ClientError::NoEngine(format!(
                "cannot start the engine (`{} provider engine serve`): {e}",
                program.display()
            ))
        })?;
        let begun = Instant::now();
        let deadline = begun + options.start_timeout;
        let mut failed_at: Option<Instant> = None;
        loop {
            if let Some(found) = Descriptor::read(state_dir)
                && pid_alive(found.pid)
                && self.health_of(&found).await.is_ok()
            {
                self.set_engine(Some(found.clone()));
                return Ok(found);
            }
            let now = Instant::now();
            if failed_at.is_none()
                && let Some(status) = started.exit_status()
                && !status.success()
            {
                failed_at = Some(now);
            }
            if let Some(at) = failed_at
                && now.duration_since(at) > FAILED_GRACE
            {
                return Err(ClientError::NoEngine(format!(
                    "the engine exited ({}) before it answered; see {}",
                    started
                        .exit_status()
                        .map_or_else(String::new, |s| s.to_string()),
                    log_path(state_dir).display()
                )));
            }
            if now >= deadline {
                return Err(ClientError::NoEngine(format!(
                    "no engine answered within {} s of starting one; see {}",
                    options.start_timeout.as_secs_f32(),
                    log_path(state_dir).display()
                )));
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// `GET /v1/health` of one engine, no recovery: the liveness probe.
    pub(crate) async fn health_of(&self, engine: &Descriptor) -> ClientResult<Health> {
        let response = self
            .request(engine, Method::GET, &["health"], &[])?
            .timeout(HEALTH_TIMEOUT)
            .send()
            .await
            .map_err(|e| ClientError::transport(&e))?;
        if !response.status().is_success() {
            return Err(error_of(response).await);
        }
        read_json(response).await
    }

    pub(crate) fn set_engine(&self, engine: Option<Descriptor>) {
        if let Ok(mut slot) = self.inner.engine.lock() {
            *slot = engine;
        }
    }
}

pub(crate) fn no_engine_running(state_dir: &std::path::Path) -> ClientError {
    ClientError::NoEngine(format!(
        "no engine is running (state folder {})",
        state_dir.display()
    ))
}

/// A provider refusing the connection's credentials: no engine change, so no retry.
pub(crate) fn is_provider_auth(error: &ClientError) -> bool {
    error
        .api()
        .is_some_and(|e| e.code == Code::ProviderAuth.as_str())
}

/// The typed error of a failed answer.
pub(crate) async fn error_of(response: reqwest::Response) -> ClientError {
    let status = response.status().as_u16();
    match response.bytes().await {
        Ok(body) => ApiError::from_body(status, &body).into(),
        Err(e) => ClientError::transport(&e),
    }
}

pub(crate) async fn read_json<T: DeserializeOwned>(response: reqwest::Response) -> ClientResult<T> {
    let body = response
        .bytes()
        .await
        .map_err(|e| ClientError::transport(&e))?;
    serde_json::from_slice(&body).map_err(|e| {
        ClientError::Transport(format!(
            "the engine's answer is not what the protocol says: {e}"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor() -> Descriptor {
        Descriptor {
            protocol: crate::wire::PROTOCOL.into(),
            pid: 1,
            host: "127.0.0.1".into(),
            port: 4321,
            token: "t".into(),
            version: "0".into(),
            started_at: "2025-01-01T00:00:00Z".into(),
            e2b_port: None,
            e2b_api_key: None,
        }
    }

    #[test]
    fn urls_encode_each_segment_and_the_query() {
        let url = Client::url(
            &descriptor(),
            "http",
            &["sandboxes", "sb 1/x", "files", "content"],
            &[("path", "/tmp/a b&c".into())],
        )
        .unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:4321/v1/sandboxes/sb%201%2Fx/files/content?path=%2Ftmp%2Fa+b%26c"
        );
        let ws = Client::url(&descriptor(), "ws", &["health"], &[]).unwrap();
        assert_eq!(ws.as_str(), "ws://127.0.0.1:4321/v1/health");
    }
}
