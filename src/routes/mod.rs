//! The router, built from the endpoint table and nothing else: one route per row, each
//! behind its own admission pipeline. Unmatched paths and methods get the typed 404.

mod agents;
mod commands;
mod core;

use crate::endpoints::{ENDPOINTS, Endpoint, Method, Port, Status};
use crate::error::{ApiError, Code};
use crate::pipeline::{RouteState, admit, finish};
use crate::server::SharedState;
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
    match implemented(endpoint.id) {
        Some(router) => router,
        None if endpoint.status == Status::Refusal => on(f, move || agents::refusal(endpoint)),
        None => on(f, move || not_implemented(endpoint)),
    }
}

/// Every `Implemented` row must have a handler here (a unit test checks it).
fn implemented(id: &str) -> Option<MethodRouter<SharedState>> {
    Some(match id {
        "health" => on(MethodFilter::GET, core::health),
        "capabilities" => on(MethodFilter::GET, core::capabilities),
        "capabilities_check" => on(MethodFilter::POST, core::check),
        "commands_list" => on(MethodFilter::GET, commands::list),
        "commands_run" => on(MethodFilter::POST, commands::run),
        "agents_runtimes_list" => on(MethodFilter::GET, agents::runtimes_list),
        "agents_definitions_create" => on(MethodFilter::POST, agents::definitions_create),
        "agents_definitions_list" => on(MethodFilter::GET, agents::definitions_list),
        "agents_definitions_get" => on(MethodFilter::GET, agents::definitions_get),
        "agents_definitions_update" => on(MethodFilter::POST, agents::definitions_update),
        "agents_definitions_delete" => on(MethodFilter::DELETE, agents::definitions_delete),
        "agents_models_list" => on(MethodFilter::GET, agents::models_list),
        "agents_models_get" => on(MethodFilter::GET, agents::models_get),
        "agents_files_create" => on(MethodFilter::POST, agents::files_create),
        "agents_responses_create" => on(MethodFilter::POST, agents::responses_create),
        "agents_responses_get" => on(MethodFilter::GET, agents::responses_get),
        "agents_responses_delete" => on(MethodFilter::DELETE, agents::responses_delete),
        "agents_responses_cancel" => on(MethodFilter::POST, agents::responses_cancel),
        "agents_responses_input_items" => on(MethodFilter::GET, agents::responses_input_items),
        "agents_responses_compact" => on(MethodFilter::POST, agents::responses_compact),
        "agents_responses_connect" => on(MethodFilter::GET, agents::responses_connect),
        "agents_vaults_create" => on(MethodFilter::POST, agents::vaults_create),
        "agents_vaults_list" => on(MethodFilter::GET, agents::vaults_list),
        "agents_vaults_get" => on(MethodFilter::GET, agents::vaults_get),
        "agents_vaults_update" => on(MethodFilter::POST, agents::vaults_update),
        "agents_vaults_delete" => on(MethodFilter::DELETE, agents::vaults_delete),
        "agents_vault_credentials_create" => on(MethodFilter::POST, agents::credentials_create),
        "agents_vault_credentials_list" => on(MethodFilter::GET, agents::credentials_list),
        "agents_vault_credentials_get" => on(MethodFilter::GET, agents::credentials_get),
        "agents_vault_credentials_update" => on(MethodFilter::POST, agents::credentials_update),
        "agents_vault_credentials_delete" => on(MethodFilter::DELETE, agents::credentials_delete),
        "agents_environments_create" => on(MethodFilter::POST, agents::environments_create),
        "agents_environments_list" => on(MethodFilter::GET, agents::environments_list),
        "agents_environments_get" => on(MethodFilter::GET, agents::environments_get),
        "agents_environment_files_create" => {
            on(MethodFilter::POST, agents::environment_files_create)
        }
        "agents_environment_files_list" => on(MethodFilter::GET, agents::environment_files_list),
        "agents_environment_templates_create" => on(MethodFilter::POST, agents::templates_create),
        "agents_environment_templates_list" => on(MethodFilter::GET, agents::templates_list),
        "agents_environment_templates_get" => on(MethodFilter::GET, agents::templates_get),
        "agents_environment_templates_update" => on(MethodFilter::POST, agents::templates_update),
        "agents_environment_templates_delete" => on(MethodFilter::DELETE, agents::templates_delete),
        "agents_webhooks_create" => on(MethodFilter::POST, agents::webhooks_create),
        "agents_webhooks_list" => on(MethodFilter::GET, agents::webhooks_list),
        "agents_webhooks_get" => on(MethodFilter::GET, agents::webhooks_get),
        "agents_webhooks_update" => on(MethodFilter::POST, agents::webhooks_update),
        "agents_webhooks_delete" => on(MethodFilter::DELETE, agents::webhooks_delete),
        "agents_webhooks_rotate_secret" => on(MethodFilter::POST, agents::webhooks_rotate_secret),
        "agents_webhooks_test" => on(MethodFilter::POST, agents::webhooks_test),
        "agents_webhook_event_types" => on(MethodFilter::GET, agents::webhook_event_types),
        "agents_sessions_create" => on(MethodFilter::POST, agents::create),
        "agents_sessions_list" => on(MethodFilter::GET, agents::list),
        "agents_sessions_get" => on(MethodFilter::GET, agents::get),
        "agents_sessions_update" => on(MethodFilter::POST, agents::update),
        "agents_sessions_delete" => on(MethodFilter::DELETE, agents::delete),
        "agents_sessions_events_create" => on(MethodFilter::POST, agents::events_create),
        "agents_sessions_events_stream" => on(MethodFilter::GET, agents::events_stream),
        "agents_sessions_items_list" => on(MethodFilter::GET, agents::items_list),
        "agents_sessions_turns_list" => on(MethodFilter::GET, agents::turns_list),
        "agents_sessions_turns_get" => on(MethodFilter::GET, agents::turns_get),
        "agents_sessions_turns_items_list" => on(MethodFilter::GET, agents::turns_items_list),
        "agents_artifacts_list" => on(MethodFilter::GET, agents::artifacts_list),
        "agents_artifacts_get" => on(MethodFilter::GET, agents::artifacts_get),
        "agents_artifacts_delete" => on(MethodFilter::DELETE, agents::artifacts_delete),
        "agents_artifacts_content" => on(MethodFilter::GET, agents::artifacts_content),
        "agents_traces_list" => on(MethodFilter::GET, agents::traces_list),
        "agents_subagents_list" => on(MethodFilter::GET, agents::subagents_list),
        "agents_subagents_get" => on(MethodFilter::GET, agents::subagents_get),
        "agents_subagents_items_list" => on(MethodFilter::GET, agents::subagents_items_list),
        "agents_subagents_turns_list" => on(MethodFilter::GET, agents::subagents_turns_list),
        "agents_subagents_turns_get" => on(MethodFilter::GET, agents::subagents_turns_get),
        "agents_subagents_turns_items_list" => {
            on(MethodFilter::GET, agents::subagents_turns_items_list)
        }
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
                implemented(endpoint.id).is_some(),
                endpoint.status == Status::Implemented,
                "{}",
                endpoint.id
            );
        }
    }
}
