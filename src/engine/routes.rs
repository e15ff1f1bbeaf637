//! The engine's route table (spec 4.4): the single source of truth for what the engine
//! serves, in the style of the server's endpoint table. The router binds a handler to every
//! row and to nothing else, the feature gate answers 501 `E8004` for a route whose feature
//! the provider did not declare, and `docs/engine.md`'s route list and the conformance
//! coverage gate are built from [`ROUTES`].

use super::wire::Feature;
use serde::Serialize;

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

/// One route of the engine.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Route {
    pub id: &'static str,
    pub method: Method,
    /// Under `/v1`, in axum's syntax (`{id}`).
    pub path: &'static str,
    /// The provider feature it needs; `None`: served by the engine itself.
    pub feature: Option<Feature>,
    pub answer: Answer,
    pub summary: &'static str,
}

macro_rules! routes {
    ($( $id:literal $method:ident $path:literal $feature:expr, $answer:ident, $summary:literal; )*) => {
        pub const ROUTES: &[Route] = &[
            $(Route { id: $id, method: Method::$method, path: $path, feature: $feature, answer: Answer::$answer, summary: $summary },)*
        ];
    };
}

use Feature::*;

routes! {
    "health"                 Get    "/health"                                         None, Json, "the health record; no connection needed";
    "shutdown"               Post   "/shutdown"                                       None, Json, "stops the engine after answering";
    "providers_list"         Get    "/providers"                                      None, Json, "the installed providers";
    "sandboxes_create"       Post   "/sandboxes"                                      Some(Sandboxes), Json, "creates a sandbox (201 and its record)";
    "sandboxes_list"         Get    "/sandboxes"                                      Some(Sandboxes), Json, "this account's sandboxes, `?status=&limit=&offset=`";
    "sandboxes_connect"      Post   "/sandboxes/{id}/connect"                         Some(Sandboxes), Json, "attaches to an existing sandbox";
    "sandboxes_info"         Get    "/sandboxes/{id}"                                 Some(Sandboxes), Json, "the sandbox record";
    "sandboxes_kill"         Delete "/sandboxes/{id}"                                 Some(Sandboxes), Json, "ends the sandbox and everything in it";
    "sandboxes_running"      Get    "/sandboxes/{id}/running"                         Some(Sandboxes), Json, "`{running}`";
    "sandboxes_timeout"      Post   "/sandboxes/{id}/timeout"                         Some(Timeout), Json, "sets the remaining lifetime, `{timeout}` seconds";
    "sandboxes_pause"        Post   "/sandboxes/{id}/pause"                           Some(Pause), Json, "stops every process of the sandbox";
    "sandboxes_resume"       Post   "/sandboxes/{id}/resume"                          Some(Pause), Json, "continues them";
    "sandboxes_port_url"     Get    "/sandboxes/{id}/ports/{port}/url"                Some(Ports), Json, "`{url, headers}` for a port";
    "commands_run"           Post   "/sandboxes/{id}/commands/run"                    Some(Commands), Json, "runs a command to completion";
    "commands_stream"        Post   "/sandboxes/{id}/commands/stream"                 Some(Commands), Sse, "runs a command, its output as events";
    "processes_list"         Get    "/sandboxes/{id}/processes"                       Some(Processes), Json, "the sandbox's processes";
    "processes_signal"       Post   "/sandboxes/{id}/processes/{pid}/signal"          Some(Processes), Json, "sends 15 or 9";
    "processes_stdin"        Post   "/sandboxes/{id}/processes/{pid}/stdin"           Some(Processes), Json, "writes to a process's stdin";
    "processes_kill"         Delete "/sandboxes/{id}/processes/{pid}"                 Some(Processes), Json, "kills a process";
    "files_read"             Get    "/sandboxes/{id}/files/content"                   Some(Files), Bytes, "a file's bytes";
    "files_write"            Put    "/sandboxes/{id}/files/content"                   Some(Files), Json, "writes a file atomically from the raw body";
    "files_list"             Get    "/sandboxes/{id}/files/list"                      Some(Files), Json, "a directory's entries, `depth` 1-10";
    "files_info"             Get    "/sandboxes/{id}/files/info"                      Some(Files), Json, "entry info";
    "files_exists"           Get    "/sandboxes/{id}/files/exists"                    Some(Files), Json, "`{exists}`";
    "files_mkdir"            Post   "/sandboxes/{id}/files/mkdir"                     Some(Files), Json, "makes a directory";
    "files_move"             Post   "/sandboxes/{id}/files/move"                      Some(Files), Json, "renames";
    "files_remove"           Delete "/sandboxes/{id}/files"                           Some(Files), Json, "removes a file or directory";
    "files_watch"            Get    "/sandboxes/{id}/files/watch"                     Some(Watch), Sse, "file changes as events";
    "code_run"               Post   "/sandboxes/{id}/code/run"                        Some(Code), Json, "runs a snippet, in a context when one is named";
    "code_contexts_create"   Post   "/sandboxes/{id}/code/contexts"                   Some(CodeContexts), Json, "starts a context (201)";
    "code_contexts_list"     Get    "/sandboxes/{id}/code/contexts"                   Some(CodeContexts), Json, "the contexts";
    "code_contexts_restart"  Post   "/sandboxes/{id}/code/contexts/{context_id}/restart" Some(CodeContexts), Json, "restarts a context's interpreter (its state is lost)";
    "code_contexts_delete"   Delete "/sandboxes/{id}/code/contexts/{context_id}"      Some(CodeContexts), Json, "ends a context";
    "terminal"               Get    "/sandboxes/{id}/terminal"                        Some(Terminal), WebSocket, "an interactive terminal";
}

pub fn route(id: &str) -> Option<&'static Route> {
    ROUTES.iter().find(|r| r.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn ids_and_method_paths_are_unique() {
        let ids: HashSet<_> = ROUTES.iter().map(|r| r.id).collect();
        assert_eq!(ids.len(), ROUTES.len());
        let paths: HashSet<_> = ROUTES.iter().map(|r| (r.method, r.path)).collect();
        assert_eq!(paths.len(), ROUTES.len());
    }
}
