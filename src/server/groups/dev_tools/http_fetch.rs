//! `http_fetch`: POST /http/fetch `{url, method?, headers?, body?, timeout?, max_bytes?}`
//! sends one request and answers `{status, headers, body, body_b64?, truncated}`: the
//! status and headers of the final answer (redirects followed, at most 10), the body as
//! text (`body_b64` beside it when it is not UTF-8), cut at `max_bytes` (default 1 MiB, at
//! most 10 MiB) with `truncated: true`. `timeout` covers the whole exchange (seconds,
//! default 30, at most 300).
//!
//! `url_invalid` (400): not an http or https URL. `url_denied` (403): `dev_tools.url_deny`
//! lists the host, `dev_tools.url_allow` does not, or the host is private, loopback,
//! link-local or a metadata address in any spelling, whether written in the URL, reached
//! by a redirect, or resolved from a name (judged on the addresses connected to,
//! `services::fetch`). `fetch_failed` (502): nothing answered, TLS failed, or time ran out.

use super::Route;
use crate::error::{ApiError, Code};
use crate::server::SharedState;
use crate::server::endpoints::EndpointId;
use crate::server::example::{Example, ExampleBody};
use crate::server::extract::Json;
use crate::server::openapi::op::{Answer, Doc, json_schema};
use crate::server::route::on;
use crate::services::fetch::{self, Refusal};
use crate::services::output_json::put_bytes;
use axum::extract::State;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::time::Duration;

pub(super) const ROUTE: Route = Route {
    bind: |f| on(f, fetch_url),
    example: &EXAMPLE,
    doc: &DOC,
};

const EXAMPLE: Example = Example {
    method: "POST",
    target: "/http/fetch",
    body: ExampleBody::Json(r#"{"url": "http://169.254.169.254/latest/meta-data/"}"#),
    files: &[],
    status: 403,
    headers: &[("content-type", "application/json")],
    answer: r#"{"error":"`http://169.254.169.254/latest/meta-data/` points to a private, loopback, link-local or metadata address (an exact `dev_tools.url_allow` entry opens one)","type":"UrlDeniedError","code":"url_denied","endpoint":"http_fetch","param":"url"}"#,
};

const DEFAULT_TIMEOUT_S: f64 = 30.0;
const MAX_TIMEOUT_S: f64 = 300.0;
const DEFAULT_MAX_BYTES: u64 = 1024 * 1024;
const MAX_MAX_BYTES: u64 = 10 * 1024 * 1024;

pub(super) const DOC: Doc = Doc::new(EndpointId::HttpFetch, "Fetch a URL")
    .describe("One request under the operator's URL rules: never a private, loopback, link-local or metadata address they do not admit, judged on the addresses connected to (redirects included, at most 10). The final answer's status and headers, the body as text (`body_b64` beside it when it is not UTF-8), cut at `max_bytes` with `truncated: true`.")
    .json(|g| g.subschema_for::<FetchBody>())
    .answers(&[Answer::json("The final answer.", |_| {
        json_schema!({
            "type": "object",
            "required": ["status", "headers", "body", "truncated"],
            "properties": {
                "status": {"type": "integer", "minimum": 100, "maximum": 999},
                "headers": {"type": "object", "additionalProperties": {"type": "string"}},
                "body": {"type": "string"},
                "body_b64": {"type": "string", "contentEncoding": "base64"},
                "truncated": {"type": "boolean"},
            },
            "additionalProperties": false,
        })
    })])
    .errors(&[&[Code::UrlInvalid, Code::UrlDenied, Code::FetchFailed]]);

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "HttpFetchBody")]
#[serde(deny_unknown_fields)]
struct FetchBody {
    /// An http or https URL.
    #[schemars(required, with = "String", length(min = 1))]
    url: Option<String>,
    /// Default `GET`.
    #[schemars(extend("enum" = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", null]))]
    method: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    body: Option<String>,
    /// Seconds.
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 300))]
    timeout: Option<f64>,
    /// Default 1 MiB.
    #[schemars(range(min = 1, max = 10485760))]
    max_bytes: Option<u64>,
}

fn invalid(param: &str, message: impl Into<String>) -> ApiError {
    ApiError::new(Code::InvalidRequest, message).with_param(param)
}

async fn fetch_url(
    State(app): State<SharedState>,
    Json(body): Json<FetchBody>,
) -> Result<axum::Json<Value>, ApiError> {
    let url = body
        .url
        .ok_or_else(|| ApiError::new(Code::UrlInvalid, "`url` is required").with_param("url"))?;
    let timeout = match body.timeout.unwrap_or(DEFAULT_TIMEOUT_S) {
        t if t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_S => Duration::from_secs_f64(t),
        t => {
            return Err(invalid(
                "timeout",
                format!("`timeout` {t} is out of range: seconds, more than 0 and at most 300"),
            ));
        }
    };
    let max_bytes = match body.max_bytes.unwrap_or(DEFAULT_MAX_BYTES) {
        n @ 1..=MAX_MAX_BYTES => n as usize,
        n => {
            return Err(invalid(
                "max_bytes",
                format!("`max_bytes` {n} is out of range: 1 to {MAX_MAX_BYTES}"),
            ));
        }
    };
    let request = fetch::Request {
        url,
        method: body.method.unwrap_or_else(|| "GET".into()),
        headers: body.headers.into_iter().collect(),
        body: body.body.map(String::into_bytes),
        timeout,
        max_bytes,
    };
    let answer = app.fetcher.fetch(request).await.map_err(|e| match e {
        fetch::Error::Refused(Refusal::Invalid(m)) => {
            ApiError::new(Code::UrlInvalid, m).with_param("url")
        }
        fetch::Error::Refused(Refusal::Denied(m)) => {
            ApiError::new(Code::UrlDenied, m).with_param("url")
        }
        fetch::Error::BadRequest { param, message } => invalid(param, message),
        fetch::Error::TimedOut(m) | fetch::Error::Failed(m) => {
            ApiError::new(Code::FetchFailed, m).with_param("url")
        }
    })?;
    let headers: Map<String, Value> = answer
        .headers
        .into_iter()
        .map(|(k, v)| (k, Value::from(v)))
        .collect();
    let mut map = Map::new();
    map.insert("status".into(), Value::from(answer.status));
    map.insert("headers".into(), Value::Object(headers));
    put_bytes(&mut map, "body", &answer.body);
    map.insert("truncated".into(), Value::from(answer.truncated));
    Ok(axum::Json(Value::Object(map)))
}
