//! `docs/endpoints.md`, generated from the endpoint table (`svc endpoints --format markdown`),
//! with the examples the handlers own (crates.io style: a handler carries its own metadata,
//! its example among it, and the group hands it over by endpoint).

use crate::server::endpoints::{ENDPOINTS, Group, Status};
use std::fmt::Write;

pub use crate::server::example::{EXAMPLE_ROOT, Example, ExampleBody, FormPart};

pub fn endpoints_markdown() -> String {
    let mut out = String::new();
    out.push_str("# Endpoints\n\n");
    out.push_str(
        "Generated from `src/server/endpoints.rs` by `svc endpoints --format markdown`; \
         do not edit by hand (`just docs` regenerates it, and a test fails when it is stale).\n\n",
    );
    let _ = writeln!(
        out,
        "{} endpoints. Default state: `on` unless the group is opt-in (agents, browser, \
         dev_tools). Status `pending` answers a typed 501 `not_implemented` until the named \
         issue builds it.\n",
        ENDPOINTS.len()
    );
    for group in Group::ALL {
        let rows: Vec<_> = ENDPOINTS.iter().filter(|e| e.group == group).collect();
        let _ = writeln!(out, "## {} ({})\n", group.name(), rows.len());
        out.push_str("| id | method | path | scopes | access | transport | default | status |\n");
        out.push_str("|---|---|---|---|---|---|---|---|\n");
        for e in rows {
            let status = match e.status {
                Status::Implemented => "implemented".to_owned(),
                Status::Refusal(_) => "refusal".to_owned(),
                Status::Pending(by) => format!("pending: {by}"),
            };
            let transport = match (e.transport, e.port) {
                (
                    crate::server::endpoints::Transport::Websocket,
                    crate::server::endpoints::Port::Terminal,
                ) => "websocket (terminal port)".to_owned(),
                (t, _) => serde_json::to_value(t)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            };
            let access = serde_json::to_value(e.access)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let scopes = if e.scopes.is_empty() {
                "-".to_owned()
            } else {
                e.scopes
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | `{}` | {} | {} | {} | {} | {} |",
                e.id,
                e.method.as_str(),
                e.path,
                scopes,
                access,
                transport,
                if e.default_enabled() { "on" } else { "opt-in" },
                status
            );
        }
        out.push('\n');
        let examples: Vec<_> = ENDPOINTS
            .iter()
            .filter(|e| e.group == group && e.status == Status::Implemented)
            .filter_map(|e| crate::server::registry::example(e).map(|x| (e, x)))
            .collect();
        if !examples.is_empty() {
            let _ = writeln!(out, "### Examples ({})\n", group.name());
            for (e, x) in examples {
                // The terminal WebSocket is served on its own port (9001 by default).
                let curl = match e.port {
                    crate::server::endpoints::Port::Terminal => {
                        x.curl().replace("localhost:9000", "localhost:9001")
                    }
                    crate::server::endpoints::Port::Main => x.curl(),
                };
                let _ = writeln!(
                    out,
                    "#### `{}`\n\n```sh\n{}\n```\n\n```http\n{}```\n",
                    e.id,
                    curl,
                    x.answer_text()
                );
            }
        }
    }
    out
}
