//! The engine's route table (spec 4.4): the single source of truth for what the engine
//! serves, in the style of the server's endpoint table. The router binds a handler to every
//! row and to nothing else, the feature gate answers 501 `E8004` for a route whose feature
//! the provider did not declare, and `docs/engine.md`'s route list and the conformance
//! coverage gate are built from [`ROUTES`].

use crate::wire::Feature;
use serde::Serialize;

/// What the route answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Json,
    /// Raw bytes (`application/octet-stream`).
    Bytes,
    /// Server-sent events.
    Sse,
    /// A WebSocket.
    WebSocket,
}

/// One route of the engine. The router binds its handler to `method` (the handler file does
/// not say it again, so the two cannot disagree).
#[derive(Debug, Clone)]
pub struct Route {
    pub id: RouteId,
    pub method: http::Method,
    /// Under `/v1`, in axum's syntax (`{id}`).
    pub path: &'static str,
    /// The provider feature it needs; `None`: served by the engine itself.
    pub feature: Option<Feature>,
    pub answer: Answer,
    pub summary: &'static str,
}

macro_rules! routes {
    ($( $variant:ident $id:literal $method:ident $path:literal $feature:expr, $answer:ident, $summary:literal; )*) => {
        /// A row of the table, by name: what a handler file binds and documents.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum RouteId {
            $($variant,)*
        }

        impl RouteId {
            /// The route's id: its OpenAPI operationId, its name in the docs and the
            /// plugin protocol's op.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(RouteId::$variant => $id,)*
                }
            }
        }

        pub const ROUTES: &[Route] = &[
            $(Route { id: RouteId::$variant, method: http::Method::$method, path: $path, feature: $feature, answer: Answer::$answer, summary: $summary },)*
        ];
    };
}

impl std::fmt::Display for RouteId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for RouteId {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

use Feature::*;

routes! {
    Health "health"                 GET    "/health"                                         None, Json, "the health record; no connection needed";
    Shutdown "shutdown"               POST   "/shutdown"                                       None, Json, "stops the engine after answering";
    ProvidersList "providers_list"         GET    "/providers"                                      None, Json, "the installed providers";
    SandboxesCreate "sandboxes_create"       POST   "/sandboxes"                                      Some(Sandboxes), Json, "creates a sandbox (201 and its record)";
    SandboxesList "sandboxes_list"         GET    "/sandboxes"                                      Some(Sandboxes), Json, "this account's sandboxes, `?status=&limit=&offset=`";
    SandboxesConnect "sandboxes_connect"      POST   "/sandboxes/{id}/connect"                         Some(Sandboxes), Json, "attaches to an existing sandbox";
    SandboxesInfo "sandboxes_info"         GET    "/sandboxes/{id}"                                 Some(Sandboxes), Json, "the sandbox record";
    SandboxesKill "sandboxes_kill"         DELETE "/sandboxes/{id}"                                 Some(Sandboxes), Json, "ends the sandbox and everything in it";
    SandboxesRunning "sandboxes_running"      GET    "/sandboxes/{id}/running"                         Some(Sandboxes), Json, "`{running}`";
    SandboxesTimeout "sandboxes_timeout"      POST   "/sandboxes/{id}/timeout"                         Some(Timeout), Json, "sets the remaining lifetime, `{timeout}` seconds";
    SandboxesPause "sandboxes_pause"        POST   "/sandboxes/{id}/pause"                           Some(Pause), Json, "stops every process of the sandbox";
    SandboxesResume "sandboxes_resume"       POST   "/sandboxes/{id}/resume"                          Some(Pause), Json, "continues them";
    SandboxesPortUrl "sandboxes_port_url"     GET    "/sandboxes/{id}/ports/{port}/url"                Some(Ports), Json, "`{url, headers}` for a port";
    CommandsRun "commands_run"           POST   "/sandboxes/{id}/commands/run"                    Some(Commands), Json, "runs a command to completion";
    CommandsStream "commands_stream"        POST   "/sandboxes/{id}/commands/stream"                 Some(Commands), Sse, "runs a command, its output as events";
    ProcessesList "processes_list"         GET    "/sandboxes/{id}/processes"                       Some(Processes), Json, "the sandbox's processes";
    ProcessesSignal "processes_signal"       POST   "/sandboxes/{id}/processes/{pid}/signal"          Some(Processes), Json, "sends 15 or 9";
    ProcessesStdin "processes_stdin"        POST   "/sandboxes/{id}/processes/{pid}/stdin"           Some(Processes), Json, "writes to a process's stdin";
    ProcessesKill "processes_kill"         DELETE "/sandboxes/{id}/processes/{pid}"                 Some(Processes), Json, "kills a process";
    FilesRead "files_read"             GET    "/sandboxes/{id}/files/content"                   Some(Files), Bytes, "a file's bytes";
    FilesWrite "files_write"            PUT    "/sandboxes/{id}/files/content"                   Some(Files), Json, "writes a file atomically from the raw body (a `local` sandbox over HTTP/1: a body over 8 MiB closes the connection after the answer)";
    FilesList "files_list"             GET    "/sandboxes/{id}/files/list"                      Some(Files), Json, "a directory's entries, `depth` 1-10";
    FilesInfo "files_info"             GET    "/sandboxes/{id}/files/info"                      Some(Files), Json, "entry info";
    FilesExists "files_exists"           GET    "/sandboxes/{id}/files/exists"                    Some(Files), Json, "`{exists}`";
    FilesMkdir "files_mkdir"            POST   "/sandboxes/{id}/files/mkdir"                     Some(Files), Json, "makes a directory";
    FilesMove "files_move"             POST   "/sandboxes/{id}/files/move"                      Some(Files), Json, "renames";
    FilesRemove "files_remove"           DELETE "/sandboxes/{id}/files"                           Some(Files), Json, "removes a file or directory";
    FilesWatch "files_watch"            GET    "/sandboxes/{id}/files/watch"                     Some(Watch), Sse, "file changes as events";
    CodeRun "code_run"               POST   "/sandboxes/{id}/code/run"                        Some(Code), Json, "runs a snippet, in a context when one is named";
    CodeContextsCreate "code_contexts_create"   POST   "/sandboxes/{id}/code/contexts"                   Some(CodeContexts), Json, "starts a context (201)";
    CodeContextsList "code_contexts_list"     GET    "/sandboxes/{id}/code/contexts"                   Some(CodeContexts), Json, "the contexts";
    CodeContextsRestart "code_contexts_restart"  POST   "/sandboxes/{id}/code/contexts/{context_id}/restart" Some(CodeContexts), Json, "restarts a context's interpreter (its state is lost)";
    CodeContextsDelete "code_contexts_delete"   DELETE "/sandboxes/{id}/code/contexts/{context_id}"      Some(CodeContexts), Json, "ends a context";
    Terminal "terminal"               GET    "/sandboxes/{id}/terminal"                        Some(Terminal), WebSocket, "an interactive terminal";
}

pub fn route(id: &str) -> Option<&'static Route> {
    ROUTES.iter().find(|r| r.id.as_str() == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_and_method_paths_are_unique() {
        let ids: HashSet<_> = ROUTES.iter().map(|r| r.id).collect();
        assert_eq!(ids.len(), ROUTES.len());
        let paths: HashSet<_> = ROUTES.iter().map(|r| (r.method.clone(), r.path)).collect();
        assert_eq!(paths.len(), ROUTES.len());
    }
}
