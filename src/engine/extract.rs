//! How a request becomes typed input, with every failure a row of the engine table (never
//! axum's plain-text rejections): the connection (header `X-Svc-Connection`, or the same
//! fields in a POST body, spec 5.4), typed bodies that deny unknown fields, queries and
//! path parameters.

use super::routes::Route;
use crate::error::engine::{Code, EngineError};
use crate::wire::{CONNECTION_HEADER, Connection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use base64::Engine as _;
use http::request::Parts;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

/// The most a JSON body may be (file content is streamed, never read through this).
const JSON_BODY_LIMIT: usize = 10 * 1024 * 1024;

fn invalid(message: impl Into<String>) -> EngineError {
    EngineError::new(Code::InvalidArgument, message)
}

/// The route a request matched: every row's handler is layered with its own row.
#[derive(Clone, Copy)]
pub struct Matched(pub &'static Route);

impl<S: Send + Sync> FromRequestParts<S> for Matched {
    type Rejection = EngineError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, EngineError> {
        parts
            .extensions
            .get::<Matched>()
            .copied()
            .ok_or_else(|| EngineError::new(Code::Internal, "a route without its table row"))
    }
}

/// The connection of the header (empty when there is none).
pub struct Conn(pub Connection);

impl<S: Send + Sync> FromRequestParts<S> for Conn {
    type Rejection = EngineError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, EngineError> {
        header_connection(&parts.headers).map(Conn)
    }
}

fn header_connection(headers: &http::HeaderMap) -> Result<Connection, EngineError> {
    let Some(value) = headers.get(CONNECTION_HEADER) else {
        return Ok(Connection::default());
    };
    let bad =
        |why: String| EngineError::new(Code::Configuration, format!("`X-Svc-Connection` {why}"));
    let text = value
        .to_str()
        .map_err(|_| bad("is not ASCII".into()))?
        .trim();
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .map_err(|e| bad(format!("is not base64url: {e}")))?;
    // An object only: serde would read a JSON array as the fields in order.
    match serde_json::from_slice::<Value>(&json) {
        Ok(object @ Value::Object(_)) => {
            serde_json::from_value(object).map_err(|e| bad(format!("is not a connection: {e}")))
        }
        Ok(_) => Err(bad("must be a JSON object".into())),
        Err(e) => Err(bad(format!("is not JSON: {e}"))),
    }
}

/// A JSON body of type `T` and the connection: the header's, with the body's connection
/// fields over it (a field given both ways with two values is refused). An empty body is
/// `{}`.
pub struct Body<T>(pub Connection, pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for Body<T> {
    type Rejection = EngineError;

    async fn from_request(req: Request, _: &S) -> Result<Self, EngineError> {
        let header = header_connection(req.headers())?;
        let bytes = axum::body::to_bytes(req.into_body(), JSON_BODY_LIMIT)
            .await
            .map_err(|e| invalid(format!("cannot read the body: {e}")))?;
        let mut object = if bytes.iter().all(u8::is_ascii_whitespace) {
            Map::new()
        } else {
            match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(map)) => map,
                Ok(_) => return Err(invalid("the body must be a JSON object")),
                Err(e) => return Err(invalid(format!("the body is not JSON: {e}"))),
            }
        };
        let conn = merge(header, &mut object)?;
        let value = serde_path_to_error::deserialize(Value::Object(object))
            .map_err(|e| invalid(describe(&e)))?;
        Ok(Body(conn, value))
    }
}

fn describe(e: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = e.path().to_string();
    if path == "." || path.is_empty() {
        format!("the body: {}", e.inner())
    } else {
        format!("`{path}`: {}", e.inner())
    }
}

/// Takes the connection fields out of `body` and lays them over `header`.
fn merge(header: Connection, body: &mut Map<String, Value>) -> Result<Connection, EngineError> {
    let mut fields = Map::new();
    for name in Connection::FIELDS {
        if let Some(v) = body.remove(name) {
            fields.insert(name.to_owned(), v);
        }
    }
    if fields.is_empty() {
        return Ok(header);
    }
    let mut merged = serde_json::to_value(&header)
        .ok()
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    for (name, value) in fields {
        if let Some(old) = merged.get(&name)
            && *old != value
        {
            return Err(EngineError::new(
                Code::Configuration,
                format!("`{name}` differs between the body and `X-Svc-Connection`"),
            ));
        }
        merged.insert(name, value);
    }
    serde_json::from_value(Value::Object(merged)).map_err(|e| {
        EngineError::new(
            Code::Configuration,
            format!("the connection in the body: {e}"),
        )
    })
}

pub use crate::wire::NoFields;

/// A query of type `T` (unknown or repeated parameters refused).
pub struct Query<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for Query<T> {
    type Rejection = EngineError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, EngineError> {
        let raw = parts.uri.query().unwrap_or("");
        let mut seen = std::collections::HashSet::new();
        for (k, _) in form_urlencoded::parse(raw.as_bytes()) {
            if !seen.insert(k.to_string()) {
                return Err(invalid(format!("query parameter `{k}` is repeated")));
            }
        }
        let deserializer =
            serde_urlencoded::Deserializer::new(form_urlencoded::parse(raw.as_bytes()));
        serde_path_to_error::deserialize(deserializer)
            .map(Query)
            .map_err(|e| invalid(format!("query: {}", e.inner())))
    }
}

/// Path parameters (`{id}`, `{pid}`, `{port}`, `{context_id}`).
pub struct PathParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for PathParams<T> {
    type Rejection = EngineError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, EngineError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| PathParams(p.0))
            .map_err(|e| invalid(e.body_text()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn body_fields_lay_over_the_header_and_conflicts_are_refused() {
        let header = Connection {
            provider: Some("local".into()),
            ..Connection::default()
        };
        let mut body = serde_json::json!({"api_key": "k", "timeout": 5})
            .as_object()
            .cloned()
            .unwrap();
        let conn = merge(header.clone(), &mut body).unwrap();
        assert_eq!(conn.api_key.as_deref(), Some("k"));
        assert_eq!(conn.provider.as_deref(), Some("local"));
        assert!(!body.contains_key("api_key") && body.contains_key("timeout"));
        let mut clash = serde_json::json!({"provider": "other"})
            .as_object()
            .cloned()
            .unwrap();
        assert_eq!(
            merge(header, &mut clash).unwrap_err().code,
            Code::Configuration
        );
    }
}
