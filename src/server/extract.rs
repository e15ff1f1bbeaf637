//! Extractors whose rejections are our typed errors (axum's error-handling example), so a
//! bad body or path never produces axum's plain-text answer.

use crate::error::{ApiError, Code};
use axum::extract::{FromRequest, FromRequestParts, Request};
use bytes::Bytes;
use http::request::Parts;
use serde::de::DeserializeOwned;

/// A JSON body. An empty body reads as `{}`; a body over the endpoint's limit is 413.
pub struct Json<T>(pub T);

impl<T, S> FromRequest<S> for Json<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        read_json(req, state)
            .await
            .map(Json)
            .map_err(|refusal| match refusal {
                BodyRefusal::Request(e) => e,
                BodyRefusal::Json(e) => json_refusal(&e),
            })
    }
}

/// Why a JSON body was refused: the request (not JSON, over the limit, unreadable), or
/// the JSON itself, with the path to what failed. Kept apart so a group that words its
/// refusals its own way (the agents group) reads bodies through this one reader.
pub enum BodyRefusal {
    Request(ApiError),
    Json(serde_path_to_error::Error<serde_json::Error>),
}

/// Reads a JSON body into `T` (see [`Json`]).
pub async fn read_json<T, S>(req: Request, state: &S) -> Result<T, BodyRefusal>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    if let Some(ct) = req.headers().get(http::header::CONTENT_TYPE) {
        let ct = ct.to_str().unwrap_or_default().to_ascii_lowercase();
        let essence = ct.split(';').next().unwrap_or_default().trim();
        if essence != "application/json" && !essence.ends_with("+json") {
            return Err(BodyRefusal::Request(ApiError::invalid(
                "Content-Type",
                format!("the body must be JSON (Content-Type: application/json), not `{essence}`"),
            )));
        }
    }
    let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
        BodyRefusal::Request(
            if rejection.status() == http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    Code::PayloadTooLarge,
                    "the request body is over the size limit",
                )
            } else {
                ApiError::new(Code::InvalidRequest, rejection.body_text())
            },
        )
    })?;
    let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        &bytes
    };
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).map_err(BodyRefusal::Json)
}

/// The server's wording of a body that is not the JSON `T` reads: the failing `param`
/// when there is one.
pub fn json_refusal(e: &serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let param = e.path().to_string();
    let message = format!("invalid JSON body: {}", e.inner());
    match param.as_str() {
        "." | "" => ApiError::new(Code::InvalidRequest, message),
        _ => ApiError::invalid(param, message),
    }
}

/// Path parameters.
pub struct Path<T>(pub T);

impl<T, S> FromRequestParts<S> for Path<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| Path(p.0))
            .map_err(|e| ApiError::new(Code::InvalidRequest, e.body_text()))
    }
}

/// Query parameters.
pub struct Query<T>(pub T);

impl<T, S> FromRequestParts<S> for Query<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| Query(q.0))
            .map_err(|e| ApiError::new(Code::InvalidRequest, e.body_text()))
    }
}
