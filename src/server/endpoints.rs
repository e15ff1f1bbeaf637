//! The endpoint table: the single source of truth for what the server serves.
//!
//! The router, the policy, `/capabilities`, the audit log, `docs/endpoints.md` and the
//! conformance coverage gate are all built from [`ENDPOINTS`]. A route that is not a row
//! here cannot be served.

use serde::Serialize;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Group {
    Core,
    Commands,
    FileOps,
    Process,
    Terminal,
    System,
    DevTools,
    Browser,
    Agents,
}

impl Group {
    pub const ALL: [Group; 9] = [
        Group::Core,
        Group::Commands,
        Group::FileOps,
        Group::Process,
        Group::Terminal,
        Group::System,
        Group::DevTools,
        Group::Browser,
        Group::Agents,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Group::Core => "core",
            Group::Commands => "commands",
            Group::FileOps => "file_ops",
            Group::Process => "process",
            Group::Terminal => "terminal",
            Group::System => "system",
            Group::DevTools => "dev_tools",
            Group::Browser => "browser",
            Group::Agents => "agents",
        }
    }

    pub fn from_name(name: &str) -> Option<Group> {
        Group::ALL.into_iter().find(|g| g.name() == name)
    }

    /// Groups that stay off until something opts them in (spec: agents, browser, dev_tools).
    pub fn opt_in(self) -> bool {
        matches!(self, Group::Agents | Group::Browser | Group::DevTools)
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Method {
    Get,
    Post,
    Put,
    Delete,
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Delete => "DELETE",
        }
    }
}

/// What an endpoint does to the sandbox; presets switch endpoints off by access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Read,
    Write,
    Exec,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    Http,
    Sse,
    Websocket,
}

/// Which listener serves the endpoint: the terminal WebSocket has a port of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Port {
    Main,
    Terminal,
}

/// How far the endpoint is built. `Pending` names the roadmap item that builds it and is
/// answered by one typed 501 from a single place, so nothing pretends to be done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "state", content = "by")]
pub enum Status {
    Implemented,
    /// Exists only to answer a typed refusal (agents spec: "4 are refusals"), saying why.
    Refusal(&'static str),
    Pending(&'static str),
}

/// Whether a caller must present a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Auth {
    /// Answered to anyone (health checks from orchestrators).
    Public,
    Token,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct Endpoint {
    /// The checked name handlers are bound by.
    #[serde(skip)]
    pub key: EndpointId,
    pub id: &'static str,
    pub method: Method,
    pub path: &'static str,
    pub group: Group,
    pub scopes: &'static [&'static str],
    pub access: Access,
    pub transport: Transport,
    pub port: Port,
    /// The endpoint takes filesystem paths, so the path guard applies to it.
    pub uses_paths: bool,
    pub auth: Auth,
    pub status: Status,
}

impl Endpoint {
    pub fn default_enabled(&self) -> bool {
        !self.group.opt_in()
    }

    pub fn is_v1(&self) -> bool {
        self.path.starts_with("/v1/") || self.path == "/v1"
    }
}

use Access::{Exec, Read, Write};
use Group::*;
use Method::{Delete, Get, Post, Put};
use Port::{Main, Terminal as TermPort};
use Transport::{Http, Sse, Websocket};

macro_rules! table {
    ($( $key:ident $id:literal $method:ident $path:literal $group:ident [$($scope:literal),*] $access:ident $transport:ident $port:ident $paths:literal $auth:ident $status:expr ;)*) => {
        /// Every endpoint by name: what a group binds its handlers to, so a handler is
        /// bound by a checked name, never by a string.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
        pub enum EndpointId { $($key,)* }

        /// Every endpoint of the server, in product order.
        pub const ENDPOINTS: &[Endpoint] = &[
            $(Endpoint {
                key: EndpointId::$key,
                id: $id,
                method: $method,
                path: $path,
                group: $group,
                scopes: &[$($scope),*],
                access: $access,
                transport: $transport,
                port: $port,
                uses_paths: $paths,
                auth: Auth::$auth,
                status: $status,
            },)*
        ];
    };
}

const IMPL: Status = Status::Implemented;
const fn refusal(why: &'static str) -> Status {
    Status::Refusal(why)
}

table! {
    Health "health" Get "/health" Core [] Read Http Main false Public IMPL;
    Capabilities "capabilities" Get "/capabilities" Core [] Read Http Main false Token IMPL;
    CapabilitiesCheck "capabilities_check" Post "/capabilities/check" Core [] Read Http Main false Token IMPL;
    CommandsList "commands_list" Get "/commands" Commands ["commands:read"] Read Http Main false Token IMPL;
    CommandsRun "commands_run" Post "/commands/{name}" Commands ["commands:run"] Exec Http Main false Token IMPL;
    FilesRead "files_read" Get "/files/content" FileOps ["files:read"] Read Http Main true Token IMPL;
    FilesWrite "files_write" Put "/files/content" FileOps ["files:write"] Write Http Main true Token IMPL;
    FilesList "files_list" Get "/files/list" FileOps ["files:read"] Read Http Main true Token IMPL;
    FilesInfo "files_info" Get "/files/info" FileOps ["files:read"] Read Http Main true Token IMPL;
    FilesExists "files_exists" Get "/files/exists" FileOps ["files:read"] Read Http Main true Token IMPL;
    FilesMkdir "files_mkdir" Post "/files/mkdir" FileOps ["files:write"] Write Http Main true Token IMPL;
    FilesMove "files_move" Post "/files/move" FileOps ["files:write"] Write Http Main true Token IMPL;
    FilesDelete "files_delete" Delete "/files" FileOps ["files:write"] Write Http Main true Token IMPL;
    FilesUpload "files_upload" Post "/files/upload" FileOps ["files:write"] Write Http Main true Token IMPL;
    FilesDownload "files_download" Get "/files/download" FileOps ["files:read"] Read Http Main true Token IMPL;
    FilesSearch "files_search" Post "/files/search" FileOps ["files:read"] Read Http Main true Token IMPL;
    FilesWatch "files_watch" Get "/files/watch" FileOps ["files:read"] Read Sse Main true Token IMPL;
    Shell "shell" Post "/shell" Process ["process:exec"] Exec Http Main true Token IMPL;
    ShellStream "shell_stream" Post "/shell/stream" Process ["process:exec"] Exec Sse Main true Token IMPL;
    ProcessStart "process_start" Post "/processes" Process ["process:exec"] Exec Http Main true Token IMPL;
    ProcessList "process_list" Get "/processes" Process ["process:read"] Read Http Main false Token IMPL;
    ProcessGet "process_get" Get "/processes/{pid}" Process ["process:read"] Read Http Main false Token IMPL;
    ProcessSignal "process_signal" Post "/processes/{pid}/signal" Process ["process:exec"] Exec Http Main false Token IMPL;
    ProcessStdin "process_stdin" Post "/processes/{pid}/stdin" Process ["process:exec"] Exec Http Main false Token IMPL;
    ProcessKill "process_kill" Delete "/processes/{pid}" Process ["process:exec"] Exec Http Main false Token IMPL;
    PtyCreate "pty_create" Post "/pty" Terminal ["terminal:use"] Exec Http Main true Token IMPL;
    PtyList "pty_list" Get "/pty" Terminal ["terminal:use"] Read Http Main false Token IMPL;
    PtyGet "pty_get" Get "/pty/{id}" Terminal ["terminal:use"] Read Http Main false Token IMPL;
    PtyResize "pty_resize" Post "/pty/{id}/resize" Terminal ["terminal:use"] Exec Http Main false Token IMPL;
    PtyKill "pty_kill" Delete "/pty/{id}" Terminal ["terminal:use"] Exec Http Main false Token IMPL;
    PtyConnect "pty_connect" Get "/pty/{id}/connect" Terminal ["terminal:use"] Exec Websocket TermPort false Token IMPL;
    SystemInfo "system_info" Get "/system/info" System ["system:read"] Read Http Main false Token IMPL;
    SystemMetrics "system_metrics" Get "/system/metrics" System ["system:read"] Read Http Main false Token IMPL;
    SystemDisk "system_disk" Get "/system/disk" System ["system:read"] Read Http Main true Token IMPL;
    SystemPorts "system_ports" Get "/system/ports" System ["system:read"] Read Http Main false Token IMPL;
    SystemEnvGet "system_env_get" Get "/system/env" System ["system:read"] Read Http Main false Token IMPL;
    SystemEnvSet "system_env_set" Post "/system/env" System ["system:write"] Write Http Main false Token IMPL;
    CodeRun "code_run" Post "/code/run" DevTools ["code:run"] Exec Http Main true Token IMPL;
    CodeLanguages "code_languages" Get "/code/languages" DevTools ["code:read"] Read Http Main false Token IMPL;
    HttpFetch "http_fetch" Post "/http/fetch" DevTools ["http:fetch"] Exec Http Main false Token IMPL;
    BrowserStart "browser_start" Post "/browser" Browser ["browser:use"] Exec Http Main false Token IMPL;
    BrowserStatus "browser_status" Get "/browser" Browser ["browser:use"] Read Http Main false Token IMPL;
    BrowserStop "browser_stop" Delete "/browser" Browser ["browser:use"] Exec Http Main false Token IMPL;
    BrowserNavigate "browser_navigate" Post "/browser/navigate" Browser ["browser:use"] Exec Http Main false Token IMPL;
    BrowserClick "browser_click" Post "/browser/click" Browser ["browser:use"] Exec Http Main false Token IMPL;
    BrowserType "browser_type" Post "/browser/type" Browser ["browser:use"] Exec Http Main false Token IMPL;
    BrowserScreenshot "browser_screenshot" Get "/browser/screenshot" Browser ["browser:use"] Read Http Main false Token IMPL;
    BrowserContent "browser_content" Get "/browser/content" Browser ["browser:use"] Read Http Main false Token IMPL;
    AgentsSessionsCreate "agents_sessions_create" Post "/v1/agents/sessions" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsSessionsList "agents_sessions_list" Get "/v1/agents/sessions" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsSessionsGet "agents_sessions_get" Get "/v1/agents/sessions/{id}" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsSessionsUpdate "agents_sessions_update" Post "/v1/agents/sessions/{id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsSessionsDelete "agents_sessions_delete" Delete "/v1/agents/sessions/{id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsSessionsEventsCreate "agents_sessions_events_create" Post "/v1/agents/sessions/{id}/events" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsSessionsEventsStream "agents_sessions_events_stream" Get "/v1/agents/sessions/{id}/events" Agents ["agents:use"] Read Sse Main false Token IMPL;
    AgentsSessionsItemsList "agents_sessions_items_list" Get "/v1/agents/sessions/{id}/items" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsSessionsTurnsList "agents_sessions_turns_list" Get "/v1/agents/sessions/{id}/turns" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsSessionsTurnsGet "agents_sessions_turns_get" Get "/v1/agents/sessions/{id}/turns/{turn_id}" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsSessionsTurnsItemsList "agents_sessions_turns_items_list" Get "/v1/agents/sessions/{id}/turns/{turn_id}/items" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsArtifactsList "agents_artifacts_list" Get "/v1/agents/sessions/{id}/artifacts" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsArtifactsGet "agents_artifacts_get" Get "/v1/agents/sessions/{id}/artifacts/{artifact_id}" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsArtifactsDelete "agents_artifacts_delete" Delete "/v1/agents/sessions/{id}/artifacts/{artifact_id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsArtifactsContent "agents_artifacts_content" Get "/v1/agents/sessions/{id}/artifacts/{artifact_id}/content" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsTracesList "agents_traces_list" Get "/v1/agents/sessions/{id}/traces" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsSubagentsList "agents_subagents_list" Get "/v1/agents/sessions/{id}/subagents" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsSubagentsGet "agents_subagents_get" Get "/v1/agents/sessions/{id}/subagents/{subagent_id}" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsSubagentsItemsList "agents_subagents_items_list" Get "/v1/agents/sessions/{id}/subagents/{subagent_id}/items" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsSubagentsTurnsList "agents_subagents_turns_list" Get "/v1/agents/sessions/{id}/subagents/{subagent_id}/turns" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsSubagentsTurnsGet "agents_subagents_turns_get" Get "/v1/agents/sessions/{id}/subagents/{subagent_id}/turns/{turn_id}" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsSubagentsTurnsItemsList "agents_subagents_turns_items_list" Get "/v1/agents/sessions/{id}/subagents/{subagent_id}/turns/{turn_id}/items" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsRuntimesList "agents_runtimes_list" Get "/v1/agents/runtimes" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsEnvironmentsCreate "agents_environments_create" Post "/v1/agents/environments" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsEnvironmentsList "agents_environments_list" Get "/v1/agents/environments" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsEnvironmentTemplatesCreate "agents_environment_templates_create" Post "/v1/agents/environments/templates" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsEnvironmentTemplatesList "agents_environment_templates_list" Get "/v1/agents/environments/templates" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsEnvironmentTemplatesGet "agents_environment_templates_get" Get "/v1/agents/environments/templates/{environment_template_id}" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsEnvironmentTemplatesUpdate "agents_environment_templates_update" Post "/v1/agents/environments/templates/{environment_template_id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsEnvironmentTemplatesDelete "agents_environment_templates_delete" Delete "/v1/agents/environments/templates/{environment_template_id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsEnvironmentsGet "agents_environments_get" Get "/v1/agents/environments/{environment_id}" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsEnvironmentFilesCreate "agents_environment_files_create" Post "/v1/agents/environments/{environment_id}/files" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsEnvironmentFilesList "agents_environment_files_list" Get "/v1/agents/environments/{environment_id}/files" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsCannotExecutorRegistration "agents_cannot_executor_registration" Post "/v1/agents/environments/{environment_id}/register" Agents ["agents:use"] Write Http Main false Token refusal("registering an external executor needs the hosted platform; sessions run local runtimes");
    AgentsCannotExecutorChannel "agents_cannot_executor_channel" Get "/v1/agents/environments/{environment_id}/connect" Agents ["agents:use"] Read Http Main false Token refusal("an executor channel needs the hosted platform; use the session events stream");
    AgentsDefinitionsCreate "agents_definitions_create" Post "/v1/agents" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsDefinitionsList "agents_definitions_list" Get "/v1/agents" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsDefinitionsGet "agents_definitions_get" Get "/v1/agents/{agent_id}" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsDefinitionsUpdate "agents_definitions_update" Post "/v1/agents/{agent_id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsDefinitionsDelete "agents_definitions_delete" Delete "/v1/agents/{agent_id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsVaultsCreate "agents_vaults_create" Post "/v1/vaults" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsVaultsList "agents_vaults_list" Get "/v1/vaults" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsVaultsGet "agents_vaults_get" Get "/v1/vaults/{vault_id}" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsVaultsUpdate "agents_vaults_update" Post "/v1/vaults/{vault_id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsVaultsDelete "agents_vaults_delete" Delete "/v1/vaults/{vault_id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsVaultCredentialsCreate "agents_vault_credentials_create" Post "/v1/vaults/{vault_id}/credentials" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsVaultCredentialsList "agents_vault_credentials_list" Get "/v1/vaults/{vault_id}/credentials" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsVaultCredentialsGet "agents_vault_credentials_get" Get "/v1/vaults/{vault_id}/credentials/{credential_id}" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsVaultCredentialsUpdate "agents_vault_credentials_update" Post "/v1/vaults/{vault_id}/credentials/{credential_id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsVaultCredentialsDelete "agents_vault_credentials_delete" Delete "/v1/vaults/{vault_id}/credentials/{credential_id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsResponsesCreate "agents_responses_create" Post "/v1/responses" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsResponsesConnect "agents_responses_connect" Get "/v1/responses" Agents ["agents:use"] Write Websocket Main false Token IMPL;
    AgentsCannotResponsesInputTokens "agents_cannot_responses_input_tokens" Post "/v1/responses/input_tokens" Agents ["agents:use"] Read Http Main false Token refusal("token counting needs the hosted model; local runtimes report usage after a turn");
    AgentsResponsesCompact "agents_responses_compact" Post "/v1/responses/compact" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsResponsesGet "agents_responses_get" Get "/v1/responses/{response_id}" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsResponsesDelete "agents_responses_delete" Delete "/v1/responses/{response_id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsResponsesCancel "agents_responses_cancel" Post "/v1/responses/{response_id}/cancel" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsResponsesInputItems "agents_responses_input_items" Get "/v1/responses/{response_id}/input_items" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsModelsList "agents_models_list" Get "/v1/models" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsModelsGet "agents_models_get" Get "/v1/models/{model}" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsCannotModelsDelete "agents_cannot_models_delete" Delete "/v1/models/{model}" Agents ["agents:use"] Write Http Main false Token refusal("models are not deletable here; delete a saved definition with DELETE /v1/agents/{agent_id}");
    AgentsFilesCreate "agents_files_create" Post "/v1/files" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsWebhooksCreate "agents_webhooks_create" Post "/v1/webhook_endpoints" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsWebhooksList "agents_webhooks_list" Get "/v1/webhook_endpoints" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsWebhooksGet "agents_webhooks_get" Get "/v1/webhook_endpoints/{webhook_endpoint_id}" Agents ["agents:use"] Read Http Main false Token IMPL;
    AgentsWebhooksUpdate "agents_webhooks_update" Post "/v1/webhook_endpoints/{webhook_endpoint_id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsWebhooksDelete "agents_webhooks_delete" Delete "/v1/webhook_endpoints/{webhook_endpoint_id}" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsWebhooksRotateSecret "agents_webhooks_rotate_secret" Post "/v1/webhook_endpoints/{webhook_endpoint_id}/rotate_secret" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsWebhooksTest "agents_webhooks_test" Post "/v1/webhook_endpoints/{webhook_endpoint_id}/test" Agents ["agents:use"] Write Http Main false Token IMPL;
    AgentsWebhookEventTypes "agents_webhook_event_types" Get "/v1/webhook_event_types" Agents ["agents:use"] Read Http Main false Token IMPL;
}

pub fn by_id(id: &str) -> Option<&'static Endpoint> {
    ENDPOINTS.iter().find(|e| e.id == id)
}

pub fn in_group(group: Group) -> impl Iterator<Item = &'static Endpoint> {
    ENDPOINTS.iter().filter(move |e| e.group == group)
}

/// Index of an endpoint in [`ENDPOINTS`]; per-endpoint state is kept in vectors indexed by it.
pub fn index_of(endpoint: &Endpoint) -> usize {
    ENDPOINTS
        .iter()
        .position(|e| e.id == endpoint.id)
        .expect("endpoint comes from the table")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn group_sizes_match_the_spec() {
        let expected = [
            (Group::Core, 3),
            (Group::Commands, 2),
            (Group::FileOps, 12),
            (Group::Process, 8),
            (Group::Terminal, 6),
            (Group::System, 6),
            (Group::DevTools, 3),
            (Group::Browser, 8),
            (Group::Agents, 70),
        ];
        for (group, size) in expected {
            assert_eq!(in_group(group).count(), size, "group {group}");
        }
        assert_eq!(ENDPOINTS.len(), 118);
    }

    #[test]
    fn ids_and_routes_are_unique() {
        let ids: HashSet<_> = ENDPOINTS.iter().map(|e| e.id).collect();
        assert_eq!(ids.len(), ENDPOINTS.len());
        let routes: HashSet<_> = ENDPOINTS.iter().map(|e| (e.method, e.path)).collect();
        assert_eq!(routes.len(), ENDPOINTS.len());
    }

    #[test]
    fn agents_has_four_refusals_and_every_agents_path_is_v1() {
        let agents: Vec<_> = in_group(Group::Agents).collect();
        assert_eq!(
            agents
                .iter()
                .filter(|e| matches!(e.status, Status::Refusal(_)))
                .count(),
            4
        );
        assert!(
            agents
                .iter()
                .all(|e| e.is_v1() && e.scopes == ["agents:use"])
        );
        assert!(
            ENDPOINTS
                .iter()
                .filter(|e| !e.is_v1())
                .all(|e| e.group != Group::Agents)
        );
    }
}
