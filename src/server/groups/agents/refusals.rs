//! The agents group's refusals: routes that exist only to say, in a typed way, that the
//! local server cannot do what the hosted platform does.

use crate::error::{ApiError, Code};
use crate::server::endpoints::Endpoint;
use serde_json::json;

/// The typed refusal of a row whose status is `Refusal(why)`: the reason is the table's.
pub async fn refusal(endpoint: &'static Endpoint, why: &'static str) -> ApiError {
    ApiError::new(
        Code::NotImplementedLocally,
        format!(
            "{} {} is not implemented locally: {why}",
            endpoint.method.as_str(),
            endpoint.path
        ),
    )
    .with_extra(
        "x_svc",
        json!({"compute": "none", "runtimes": "/v1/agents/runtimes"}),
    )
}
