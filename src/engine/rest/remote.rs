//! The remote engine a connection names: its base URL (`api_url` plus `/v1`), its token
//! (`api_key`, sent as `Authorization: Bearer` and marked sensitive so no log prints it) and
//! the connection the remote gets in its own `X-Svc-Connection` (`provider_options.remote`,
//! else the remote's default provider). Every field is checked here, so a bad connection is
//! one `E4002` naming the field before anything is sent.

use super::failure::Failure;
use super::timeouts::Timeouts;
use crate::engine::provider::ProviderResult;
use crate::error::engine::{Code, EngineError};
use crate::wire::{CONNECTION_HEADER, Connection, DEFAULT_PROVIDER};
use http::HeaderValue;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::time::Duration;

/// The keys `provider_options` may hold: the remote's connection, and the limit of a call.
const REMOTE_OPTION: &str = "remote";
const TIMEOUT_OPTION: &str = "timeout_ms";
/// The longest `timeout_ms`: a day, the longest a sandbox lives.
const TIMEOUT_MS_MAX: u64 = 86_400_000;

fn configuration(message: impl Into<String>) -> EngineError {
    EngineError::new(Code::Configuration, message)
}

pub struct Remote {
    http: reqwest::Client,
    /// `http(s)://host:port[/prefix]/v1`.
    base: url::Url,
    /// What errors call the remote: `api_url` as given, without `/v1` (it holds no secret:
    /// a URL with credentials is refused).
    pub failure: Failure,
    authorization: HeaderValue,
    connection: HeaderValue,
    pub timeouts: Timeouts,
}

impl Remote {
    /// The remote of `conn`, or `E4002` naming the missing or bad field.
    pub fn of(
        conn: &Connection,
        http: reqwest::Client,
        timeouts: Timeouts,
    ) -> ProviderResult<Remote> {
        let base = base_url(conn.api_url.as_deref())?;
        let key = conn
            .api_key
            .as_deref()
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                configuration(
                    "`api_key` is required: the remote engine's token (its descriptor's `token`)",
                )
            })?;
        let mut authorization = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
            configuration("`api_key` must be printable ASCII: it is sent as a bearer token")
        })?;
        authorization.set_sensitive(true);
        let mut timeouts = timeouts;
        if let Some(call) = call_limit(conn)? {
            timeouts.call = call;
        }
        let connection = HeaderValue::from_str(&remote_connection(conn)?.header_value())
            .map_err(|_| configuration("`provider_options.remote` cannot be sent as a header"))?;
        let shown = base.as_str().trim_end_matches("/v1").to_owned();
        Ok(Remote {
            http,
            base,
            failure: Failure::new(shown),
            authorization,
            connection,
            timeouts,
        })
    }

    /// The URL of a route: the base, then `segments` each percent-encoded, then `query`.
    pub fn url(&self, segments: &[&str], query: &[(&str, String)]) -> url::Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.extend(segments);
        }
        if !query.is_empty() {
            url.query_pairs_mut()
                .extend_pairs(query.iter().map(|(k, v)| (*k, v.as_str())));
        }
        url
    }

    /// The two headers every call to the remote carries.
    pub fn headers(&self) -> [(&'static str, HeaderValue); 2] {
        [
            ("authorization", self.authorization.clone()),
            (CONNECTION_HEADER, self.connection.clone()),
        ]
    }

    pub fn request(
        &self,
        method: reqwest::Method,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> reqwest::RequestBuilder {
        let mut request = self.http.request(method, self.url(segments, query));
        for (name, value) in self.headers() {
            request = request.header(name, value);
        }
        request
    }

    /// A call without a body (GET, DELETE), its answer read as `T`.
    pub async fn call<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        segments: &[&str],
        query: &[(&str, String)],
    ) -> ProviderResult<T> {
        let request = self.request(method, segments, query);
        self.exchange(request, segments, Some(self.timeouts.call))
            .await
    }

    /// A call with `body` as JSON, its answer read as `T` within `limit` (`None`: no limit,
    /// for a command that asked for none).
    pub async fn send<T: DeserializeOwned>(
        &self,
        method: reqwest::Method,
        segments: &[&str],
        body: &impl Serialize,
        limit: Option<Duration>,
    ) -> ProviderResult<T> {
        let json = serde_json::to_vec(body).map_err(|e| {
            EngineError::new(Code::Internal, format!("cannot write the request: {e}"))
        })?;
        let request = self
            .request(method, segments, &[])
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(json);
        self.exchange(request, segments, limit).await
    }

    /// One round trip: the whole answer within `limit`, a success read as `T`, an error
    /// passed through.
    async fn exchange<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        segments: &[&str],
        limit: Option<Duration>,
    ) -> ProviderResult<T> {
        let exchange = async {
            let response = request
                .send()
                .await
                .map_err(|e| self.failure.transport(&e))?;
            let status = response.status();
            let bytes = response
                .bytes()
                .await
                .map_err(|e| self.failure.transport(&e))?;
            Ok::<_, EngineError>((status, bytes))
        };
        let (status, bytes) = match limit {
            Some(limit) => tokio::time::timeout(limit, exchange)
                .await
                .map_err(|_| self.failure.no_answer(limit))??,
            None => exchange.await?,
        };
        if !status.is_success() {
            return Err(self.failure.answer(status.as_u16(), &bytes));
        }
        self.failure.parse(segments, &bytes)
    }

    /// The head of a streamed answer (an event stream, a file's bytes) within the call
    /// limit; an error answer is read whole (it is small) and passed through.
    pub async fn open(
        &self,
        request: reqwest::RequestBuilder,
    ) -> ProviderResult<reqwest::Response> {
        let limit = self.timeouts.call;
        let response = tokio::time::timeout(limit, request.send())
            .await
            .map_err(|_| self.failure.no_answer(limit))?
            .map_err(|e| self.failure.transport(&e))?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status().as_u16();
        let bytes = tokio::time::timeout(limit, response.bytes())
            .await
            .map_err(|_| self.failure.no_answer(limit))?
            .map_err(|e| self.failure.transport(&e))?;
        Err(self.failure.answer(status, &bytes))
    }
}

/// An empty JSON object, the body of the POSTs that take no fields.
#[derive(Serialize)]
pub struct Empty {}

/// `api_url` checked and made the base of the routes: `http` or `https`, a host, no
/// credentials, query or fragment; a trailing `/` or `/v1` is accepted and `/v1` added.
fn base_url(api_url: Option<&str>) -> ProviderResult<url::Url> {
    let given = api_url
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .ok_or_else(|| {
            configuration("`api_url` is required: the remote engine's base URL, `http://HOST:PORT`")
        })?;
    let mut url = url::Url::parse(given)
        .map_err(|e| configuration(format!("`api_url` `{given}` is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(configuration(format!(
            "`api_url` `{given}` must be an http:// or https:// URL"
        )));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(configuration(format!("`api_url` `{given}` names no host")));
    }
    if !url.username().is_empty() || url.password().is_some() {
        // Not echoed: the credentials are in it.
        return Err(configuration(
            "`api_url` must not carry credentials: the remote's token goes in `api_key`",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(configuration(format!(
            "`api_url` `{given}` must have no query or fragment"
        )));
    }
    let path = url.path().trim_end_matches('/');
    let prefix = path.strip_suffix("/v1").unwrap_or(path).to_owned();
    url.set_path(&format!("{prefix}/v1"));
    Ok(url)
}

/// The connection the remote gets: `provider_options.remote` (a whole connection, so a
/// `rest` provider can front another `rest`), else the remote's default provider.
fn remote_connection(conn: &Connection) -> ProviderResult<Connection> {
    let Some(options) = &conn.provider_options else {
        return Ok(default_remote());
    };
    if let Some(unknown) = options
        .keys()
        .find(|k| *k != REMOTE_OPTION && *k != TIMEOUT_OPTION)
    {
        return Err(configuration(format!(
            "`provider_options.{unknown}` is not an option of the `rest` provider: its options are `{REMOTE_OPTION}` (the connection the remote engine gets) and `{TIMEOUT_OPTION}` (how long a call may take)"
        )));
    }
    match options.get(REMOTE_OPTION) {
        None => Ok(default_remote()),
        Some(value @ serde_json::Value::Object(_)) => {
            serde_path_to_error::deserialize::<_, Connection>(value.clone()).map_err(|e| {
                // The path only: the message of a wrong type would quote the value, which
                // may be a secret.
                configuration(format!(
                    "`provider_options.remote` is not a connection (at `{}`)",
                    e.path()
                ))
            })
        }
        Some(_) => Err(configuration(
            "`provider_options.remote` must be a connection object, like {\"provider\": \"local\"}",
        )),
    }
}

/// `provider_options.timeout_ms`: how long a call (a JSON answer, a stream's head, an
/// upload standing still) may take, 1 ms to a day.
fn call_limit(conn: &Connection) -> ProviderResult<Option<Duration>> {
    let Some(value) = conn
        .provider_options
        .as_ref()
        .and_then(|o| o.get(TIMEOUT_OPTION))
    else {
        return Ok(None);
    };
    match value.as_u64() {
        Some(ms @ 1..=TIMEOUT_MS_MAX) => Ok(Some(Duration::from_millis(ms))),
        _ => Err(configuration(format!(
            "`provider_options.{TIMEOUT_OPTION}` must be a whole number of milliseconds, 1 to {TIMEOUT_MS_MAX}"
        ))),
    }
}

pub(super) fn default_remote() -> Connection {
    Connection {
        provider: Some(DEFAULT_PROVIDER.to_owned()),
        ..Connection::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_takes_a_trailing_slash_or_v1_and_refuses_the_rest() {
        for given in [
            "http://127.0.0.1:9",
            "http://127.0.0.1:9/",
            "http://127.0.0.1:9/v1",
            "http://127.0.0.1:9/v1/",
        ] {
            assert_eq!(
                base_url(Some(given)).unwrap().as_str(),
                "http://127.0.0.1:9/v1",
                "{given}"
            );
        }
        assert_eq!(
            base_url(Some("https://h/engine/")).unwrap().as_str(),
            "https://h/engine/v1"
        );
        for bad in [
            None,
            Some(""),
            Some("127.0.0.1:9"),
            Some("ftp://h/"),
            Some("http://u:secret@h/"),
            Some("http://h/?a=1"),
        ] {
            let e = base_url(bad).unwrap_err();
            assert_eq!(e.code, Code::Configuration);
            assert!(e.message.contains("api_url"), "{}", e.message);
            assert!(!e.message.contains("secret"), "{}", e.message);
        }
    }

    #[test]
    fn the_remote_connection_is_the_option_or_the_default() {
        let mut conn = Connection::default();
        assert_eq!(remote_connection(&conn).unwrap(), default_remote());
        let chained =
            serde_json::json!({"provider": "rest", "api_url": "http://h", "api_key": "k"});
        conn.provider_options = Some(serde_json::Map::from_iter([(
            "remote".to_owned(),
            chained.clone(),
        )]));
        let remote = remote_connection(&conn).unwrap();
        assert_eq!(serde_json::to_value(remote).unwrap(), chained);
        for bad in [
            serde_json::json!({"remote": "local"}),
            serde_json::json!({"remote": {"api_key": 5}}),
            serde_json::json!({"remote": {}, "other": 1}),
        ] {
            conn.provider_options = bad.as_object().cloned();
            let e = remote_connection(&conn).unwrap_err();
            assert_eq!(e.code, Code::Configuration);
            assert!(!e.message.contains('5'), "{}", e.message);
        }
    }

    #[test]
    fn timeout_ms_sets_the_call_limit() {
        let with = |options: serde_json::Value| Connection {
            provider_options: options.as_object().cloned(),
            ..Connection::default()
        };
        assert_eq!(call_limit(&with(serde_json::json!({}))).unwrap(), None);
        let limit = call_limit(&with(serde_json::json!({"timeout_ms": 300}))).unwrap();
        assert_eq!(limit, Some(Duration::from_millis(300)));
        assert!(remote_connection(&with(serde_json::json!({"timeout_ms": 300}))).is_ok());
        for bad in [0, -1]
            .map(serde_json::Value::from)
            .into_iter()
            .chain(["5".into(), 1.5.into()])
        {
            let e = call_limit(&with(serde_json::json!({"timeout_ms": bad}))).unwrap_err();
            assert_eq!(e.code, Code::Configuration);
        }
    }
}
