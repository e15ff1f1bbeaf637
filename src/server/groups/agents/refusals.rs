//! The agents group's refusals: routes that exist only to say, in a typed way, that the
//! local server cannot do what the hosted platform does.

use crate::error::{ApiError, Code};
use crate::server::endpoints::Endpoint;
use serde_json::json;

pub async fn refusal(endpoint: &'static Endpoint) -> ApiError {
    let why = match endpoint.id {
        "agents_cannot_executor_registration" => {
            "registering an external executor needs the hosted platform; sessions run local runtimes"
        }
        "agents_cannot_executor_channel" => {
            "an executor channel needs the hosted platform; use the session events stream"
        }
        "agents_cannot_responses_input_tokens" => {
            "token counting needs the hosted model; local runtimes report usage after a turn"
        }
        "agents_cannot_models_delete" => {
            "models are not deletable here; delete a saved definition with DELETE /v1/agents/{agent_id}"
        }
        _ => "this route has no local implementation",
    };
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
