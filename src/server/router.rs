//! The router, built from the endpoint table and nothing else: one route per row, each
//! behind its own admission pipeline. Unmatched paths and methods get the typed 404.

use super::groups::{agents, commands, core};

use crate::error::{ApiError, Code};
use crate::server::SharedState;
use crate::server::endpoints::{ENDPOINTS, Endpoint, Method, Port, Status};
use crate::server::pipeline::{RouteState, admit, finish};
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use axum::response::IntoResponse;
use axum::routing::{MethodFilter, MethodRouter, on};
use http::Uri;

/// The main listener's routes.
pub fn app(state: SharedState) -> Router {
    build(state, Port::Main)
}

/// The terminal listener's routes (the PTY WebSocket).
pub fn terminal_app(state: SharedState) -> Router {
    build(state, Port::Terminal)
}

fn build(state: SharedState, port: Port) -> Router {
    let mut router = Router::new();
    for (index, endpoint) in ENDPOINTS.iter().enumerate().filter(|(_, e)| e.port == port) {
        let route_state = RouteState {
            app: state.clone(),
            endpoint,
            index,
        };
        let method_router = handler(endpoint).layer(from_fn_with_state(route_state, admit));
        router = router.route(endpoint.path, method_router);
    }
    router
        .fallback(unmatched)
        .method_not_allowed_fallback(unmatched)
        .layer(DefaultBodyLimit::disable())
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(|_| {
            ApiError::new(
                Code::Internal,
                "internal error; the server log has the details",
            )
            .into_response()
        }))
        .layer(from_fn_with_state(state.clone(), finish))
        .with_state(state)
}

fn filter(method: Method) -> MethodFilter {
    match method {
        Method::Get => MethodFilter::GET,
        Method::Post => MethodFilter::POST,
        Method::Put => MethodFilter::PUT,
        Method::Delete => MethodFilter::DELETE,
    }
}

/// The handler of a row. Rows that later issues build answer one typed 501 from here.
fn handler(endpoint: &'static Endpoint) -> MethodRouter<SharedState> {
    let f = filter(endpoint.method);
    match implemented(endpoint.id, f) {
        Some(router) => router,
        None if endpoint.status == Status::Refusal => on(f, move || agents::refusal(endpoint)),
        None => on(f, move || not_implemented(endpoint)),
    }
}

/// Every `Implemented` row must have a handler here (a unit test checks it). The method
/// comes from the row, `f`: the table is the one place that says it.
fn implemented(id: &str, f: MethodFilter) -> Option<MethodRouter<SharedState>> {
    Some(match id {
        "health" => on(f, core::health),
        "capabilities" => on(f, core::capabilities),
        "capabilities_check" => on(f, core::check),
        "commands_list" => on(f, commands::list),
        "commands_run" => on(f, commands::run),
        "agents_runtimes_list" => on(f, agents::runtimes_list),
        "agents_definitions_create" => on(f, agents::definitions_create),
        "agents_definitions_list" => on(f, agents::definitions_list),
        "agents_definitions_get" => on(f, agents::definitions_get),
        "agents_definitions_update" => on(f, agents::definitions_update),
        "agents_definitions_delete" => on(f, agents::definitions_delete),
        "agents_models_list" => on(f, agents::models_list),
        "agents_models_get" => on(f, agents::models_get),
        "agents_files_create" => on(f, agents::files_create),
        "agents_responses_create" => on(f, agents::responses_create),
        "agents_responses_get" => on(f, agents::responses_get),
        "agents_responses_delete" => on(f, agents::responses_delete),
        "agents_responses_cancel" => on(f, agents::responses_cancel),
        "agents_responses_input_items" => on(f, agents::responses_input_items),
        "agents_responses_compact" => on(f, agents::responses_compact),
        "agents_responses_connect" => on(f, agents::responses_connect),
        "agents_vaults_create" => on(f, agents::vaults_create),
        "agents_vaults_list" => on(f, agents::vaults_list),
        "agents_vaults_get" => on(f, agents::vaults_get),
        "agents_vaults_update" => on(f, agents::vaults_update),
        "agents_vaults_delete" => on(f, agents::vaults_delete),
        "agents_vault_credentials_create" => on(f, agents::credentials_create),
        "agents_vault_credentials_list" => on(f, agents::credentials_list),
        "agents_vault_credentials_get" => on(f, agents::credentials_get),
        "agents_vault_credentials_update" => on(f, agents::credentials_update),
        "agents_vault_credentials_delete" => on(f, agents::credentials_delete),
        "agents_environments_create" => on(f, agents::environments_create),
        "agents_environments_list" => on(f, agents::environments_list),
        "agents_environments_get" => on(f, agents::environments_get),
        "agents_environment_files_create" => on(f, agents::environment_files_create),
        "agents_environment_files_list" => on(f, agents::environment_files_list),
        "agents_environment_templates_create" => on(f, agents::templates_create),
        "agents_environment_templates_list" => on(f, agents::templates_list),
        "agents_environment_templates_get" => on(f, agents::templates_get),
        "agents_environment_templates_update" => on(f, agents::templates_update),
        "agents_environment_templates_delete" => on(f, agents::templates_delete),
        "agents_webhooks_create" => on(f, agents::webhooks_create),
        "agents_webhooks_list" => on(f, agents::webhooks_list),
        "agents_webhooks_get" => on(f, agents::webhooks_get),
        "agents_webhooks_update" => on(f, agents::webhooks_update),
        "agents_webhooks_delete" => on(f, agents::webhooks_delete),
        "agents_webhooks_rotate_secret" => on(f, agents::webhooks_rotate_secret),
        "agents_webhooks_test" => on(f, agents::webhooks_test),
        "agents_webhook_event_types" => on(f, agents::webhook_event_types),
        "agents_sessions_create" => on(f, agents::create),
        "agents_sessions_list" => on(f, agents::list),
        "agents_sessions_get" => on(f, agents::get),
        "agents_sessions_update" => on(f, agents::update),
        "agents_sessions_delete" => on(f, agents::delete),
        "agents_sessions_events_create" => on(f, agents::events_create),
        "agents_sessions_events_stream" => on(f, agents::events_stream),
        "agents_sessions_items_list" => on(f, agents::items_list),
        "agents_sessions_turns_list" => on(f, agents::turns_list),
        "agents_sessions_turns_get" => on(f, agents::turns_get),
        "agents_sessions_turns_items_list" => on(f, agents::turns_items_list),
        "agents_artifacts_list" => on(f, agents::artifacts_list),
        "agents_artifacts_get" => on(f, agents::artifacts_get),
        "agents_artifacts_delete" => on(f, agents::artifacts_delete),
        "agents_artifacts_content" => on(f, agents::artifacts_content),
        "agents_traces_list" => on(f, agents::traces_list),
        "agents_subagents_list" => on(f, agents::subagents_list),
        "agents_subagents_get" => on(f, agents::subagents_get),
        "agents_subagents_items_list" => on(f, agents::subagents_items_list),
        "agents_subagents_turns_list" => on(f, agents::subagents_turns_list),
        "agents_subagents_turns_get" => on(f, agents::subagents_turns_get),
        "agents_subagents_turns_items_list" => on(f, agents::subagents_turns_items_list),
        _ => return None,
    })
}

async fn not_implemented(endpoint: &'static Endpoint) -> ApiError {
    let by = match endpoint.status {
        Status::Pending(by) => by,
        _ => "a later version",
    };
    ApiError::new(
        Code::NotImplemented,
        format!("`{}` is not implemented yet (planned: {by})", endpoint.id),
    )
    .with_endpoint(endpoint.id)
}

async fn unmatched(uri: Uri) -> ApiError {
    ApiError::not_found(uri.path())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_implemented_row_has_a_handler_and_no_other_does() {
        for endpoint in ENDPOINTS {
            assert_eq!(
                implemented(endpoint.id, filter(endpoint.method)).is_some(),
                endpoint.status == Status::Implemented,
                "{}",
                endpoint.id
            );
        }
    }
}
