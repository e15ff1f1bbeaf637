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
        if let Some(ct) = req.headers().get(http::header::CONTENT_TYPE) {
            let ct = ct.to_str().unwrap_or_default().to_ascii_lowercase();
            let essence = ct.split(';').next().unwrap_or_default().trim();
            if essence != "application/json" && !essence.ends_with("+json") {
                return Err(ApiError::invalid(
                    "Content-Type",
                    format!(
                        "the body must be JSON (Content-Type: application/json), not `{essence}`"
                    ),
                ));
            }
        }
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == http::StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::new(
                    Code::PayloadTooLarge,
                    "the request body is over the size limit",
                )
            } else {
                ApiError::new(Code::InvalidRequest, rejection.body_text())
            }
        })?;
        let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        let de = &mut serde_json::Deserializer::from_slice(bytes);
        serde_path_to_error::deserialize(de).map(Json).map_err(|e| {
            let param = e.path().to_string();
            let message = format!("invalid JSON body: {}", e.inner());
            match param.as_str() {
                "." | "" => ApiError::new(Code::InvalidRequest, message),
                _ => ApiError::invalid(param, message),
            }
        })
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
