//! The webhook routes' bodies and answers (agents spec 2.11, 4.10). `event_types` stays JSON
//! in the bodies: `events::parse_list` judges the whole list and names `event_types` for any
//! fault in it, as it always has; `#[schemars(...)]` tells the document its shape.

use crate::server::agents::wire::given;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// `POST /v1/webhook_endpoints`: `name`, `url` and `event_types` required.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookEndpointCreate {
    #[schemars(required, with = "String", length(min = 1), regex(pattern = r"\S"))]
    pub name: Option<String>,
    /// https (http to loopback when the operator allows).
    #[schemars(required, with = "String")]
    pub url: Option<String>,
    #[schemars(required, with = "Vec<String>", length(min = 1))]
    pub event_types: Option<Value>,
}

/// The update of a webhook endpoint: what is given replaces.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WebhookEndpointUpdate {
    #[schemars(with = "String", length(min = 1), regex(pattern = r"\S"))]
    pub name: Option<String>,
    /// https (http to loopback when the operator allows).
    #[schemars(with = "String")]
    pub url: Option<String>,
    // Given as `null` it is refused (no list), as an absent key is not.
    #[serde(default, deserialize_with = "given")]
    #[schemars(with = "Vec<String>", length(min = 1))]
    pub event_types: Option<Value>,
}

/// `POST .../rotate_secret`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateSecret {
    /// Not supported: a rotation replaces the secret at once.
    #[schemars(extend("enum" = [false, null]))]
    pub keep_old_secret_active_for_24_hours: Option<bool>,
}

/// `POST .../test`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestEvent {
    #[schemars(required, with = "String")]
    pub event_type: Option<String>,
}

/// A webhook endpoint. The secret is answered only when created or rotated, under both
/// names: the SDK reads `signing_secret`, the spec calls it `secret`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WebhookEndpoint {
    pub id: String,
    #[schemars(extend("const" = "webhook_endpoint"))]
    pub object: &'static str,
    pub name: String,
    pub url: String,
    pub event_types: Vec<&'static str>,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds.
    pub updated_at: i64,
    /// Always `null`: any part of the secret would be a part of the secret.
    pub signing_secret_hint: (),
    pub x_svc: Compute,
    /// Only when created or rotated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<String>,
    /// Only when created or rotated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// `x_svc` of an answer: where the work happened.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "WebhookEndpointXSvc")]
pub struct Compute {
    pub compute: &'static str,
}

/// How a test delivery went.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "WebhookEndpointTest")]
pub struct TestResult {
    #[schemars(extend("const" = "webhook_endpoint.test"))]
    pub object: &'static str,
    pub webhook_endpoint_id: String,
    pub event_type: &'static str,
    pub status_code: u16,
    pub success: bool,
    pub x_svc: TestDelivery,
}

/// `x_svc` of a test: the delivery's message id (`webhook-id`).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "WebhookEndpointTestXSvc")]
pub struct TestDelivery {
    pub compute: &'static str,
    pub webhook_id: String,
}

/// The event types an endpoint may subscribe to.
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(rename = "WebhookEventTypes")]
pub struct EventTypes {
    #[schemars(extend("const" = "list"))]
    pub object: &'static str,
    pub data: &'static [&'static str],
}
