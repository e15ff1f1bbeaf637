//! The agents routes' JSON bodies: the server's typed reader (`extract::read_json`), its
//! refusals in the words the agents domain has always used ("unknown or unsupported
//! parameter `x`", "`x` must be a string"), so a body that became a type answers a bad
//! input exactly as its hand reader did. The SDKs' strict checks pin those answers.

use crate::error::{ApiError, ApiResult, Code};
use crate::server::agents::wire::{Object, refusal};
use crate::server::extract::{BodyRefusal, read_json};
use crate::services::paging::Page;
use axum::extract::{FromRequest, Request};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A typed agents body (requests derive `Deserialize` with `deny_unknown_fields`), a JSON
/// object only.
pub struct Body<T>(pub T);

impl<T, S> FromRequest<S> for Body<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        read_json::<Object<T>, S>(req, state)
            .await
            .map(|Object(body)| Body(body))
            .map_err(|why| match why {
                BodyRefusal::Request(e) => e,
                BodyRefusal::Json(e) => refusal(&e, ""),
            })
    }
}

/// A page of typed answers (the pager reads each item's `id` from its JSON).
pub fn paged<T: Serialize>(page: Page, items: Vec<T>) -> ApiResult<axum::Json<Value>> {
    let items = items
        .into_iter()
        .map(serde_json::to_value)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ApiError::new(Code::Internal, format!("an answer did not serialize: {e}")))?;
    Ok(axum::Json(page.apply(items)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::agents::vaults::wire::{CredentialCreate, VaultBody};
    use crate::server::agents::webhooks::wire::RotateSecret;

    async fn refusal<T: DeserializeOwned>(body: &str) -> (Option<String>, String) {
        let req = http::Request::builder()
            .header("content-type", "application/json")
            .body(axum::body::Body::from(body.to_owned()))
            .unwrap();
        match Body::<T>::from_request(req, &()).await {
            Ok(_) => panic!("{body} was accepted"),
            Err(e) => (e.param, e.message),
        }
    }

    /// The words the hand readers (`input::only_keys`, `opt_str`, `object`) answered.
    #[tokio::test]
    async fn typed_bodies_refuse_in_the_domains_words() {
        let cases: [(_, &str, &str); 4] = [
            (
                refusal::<VaultBody>(r#"{"name": "x", "kind": "y"}"#).await,
                "kind",
                "unknown or unsupported parameter `kind`",
            ),
            (
                refusal::<VaultBody>(r#"{"name": 5}"#).await,
                "name",
                "`name` must be a string",
            ),
            (
                refusal::<VaultBody>("[1]").await,
                "body",
                "`body` must be an object",
            ),
            (
                refusal::<RotateSecret>(r#"{"keep_old_secret_active_for_24_hours": "yes"}"#).await,
                "keep_old_secret_active_for_24_hours",
                "`keep_old_secret_active_for_24_hours` must be a boolean",
            ),
        ];
        for ((param, message), want_param, want) in cases {
            assert_eq!(param.as_deref(), Some(want_param));
            assert_eq!(message, want);
        }
        let nested = [
            (
                r#"{"name": "c", "auth": {"type": "environment_variable", "secret_name": "X"}}"#,
                "auth.type",
                "`environment_variable` credentials are refused: secrets reach runtimes only as MCP headers",
            ),
            (
                r#"{"name": "c", "auth": {"type": "x"}}"#,
                "auth.type",
                "`auth.type` is `static_bearer` or `mcp_oauth`",
            ),
            (
                r#"{"name": "c", "auth": {"type": "static_bearer", "scope": 1}}"#,
                "auth.scope",
                "unknown or unsupported parameter `auth.scope`",
            ),
            (
                r#"{"name": "c", "auth": {"type": "static_bearer", "networking": "open"}}"#,
                "auth.networking",
                "`auth.networking` must be an object",
            ),
        ];
        for (body, want_param, want) in nested {
            let (param, message) = refusal::<CredentialCreate>(body).await;
            assert_eq!(
                (param.as_deref(), message.as_str()),
                (Some(want_param), want),
                "{body}"
            );
        }
        // Not JSON at all: the server's own wording.
        let (param, message) = refusal::<VaultBody>("{").await;
        assert!(
            message.starts_with("invalid JSON body: "),
            "{param:?} {message}"
        );
    }
}
