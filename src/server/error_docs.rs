//! `docs/errors.md`, generated from the error tables (`svc errors --format markdown`): one
//! anchor per code, which the engine's error body links in `docs_url`.

use crate::error::{Availability, RowDoc, anchor, engine, server};
use std::fmt::Write;

pub fn errors_markdown() -> String {
    let server = server::Code::docs();
    let engine = engine::Code::docs();
    let mut out = String::new();
    out.push_str("# Errors\n\n");
    out.push_str(
        "Generated from `src/error/` by `svc errors --format markdown`; do not edit by hand \
         (`just docs` regenerates it, and a test fails when it is stale).\n\n",
    );
    out.push_str(
        "Every error the server (and, next, the local engine) answers is one row below, with \
         an anchor of its own: the code in lower case, `.` written `-` (`#agents-path_refused`, \
         `#e2009`). State `pending` names the issue that makes a route answer it; the coverage \
         gate asks a conformance case of every live code.\n\n",
    );

    let _ = writeln!(out, "## Server ({} codes)\n", server.len());
    out.push_str(
        "Outside `/v1` the body is flat: `{\"error\": message, \"type\", \"code\"}`, plus \
         `endpoint` and `rule` on policy denials and `param` when a field is at fault. The \
         agents group (under `/v1`) answers `{\"error\": {\"message\", \"type\", \"param\", \
         \"code\"}}`, its `type` `not_found_error` for a 404, `server_error` for a 5xx and \
         `invalid_request_error` otherwise, and refusals carry `x-should-retry: false`. Rate \
         and concurrency refusals set `Retry-After`. Inside a stream an error arrives as an \
         `error` event in that stream's own form.\n\n",
    );
    out.push_str("| code | status | type (flat body) | when | state |\n");
    out.push_str("|---|---|---|---|---|\n");
    for row in &server {
        let status = if row.stream_only {
            "event".to_owned()
        } else {
            row.status.to_string()
        };
        let _ = writeln!(
            out,
            "| {} | {status} | `{}` | {} | {} |",
            code_cell(row),
            row.class,
            meaning(row),
            state(row.availability)
        );
    }

    let _ = writeln!(out, "\n## Engine ({} codes)\n", engine.len());
    out.push_str(
        "The local engine answers `{\"error\": {\"type\", \"code\", \"message\", \"suggestion\", \
         \"docs_url\"}}`: `type` is the client's exception class, `docs_url` this page's row. \
         Inside an SSE stream the same object arrives as an `error` event. A failure without \
         a row of its own takes the row of its status: 404 not found, 401 bad token or \
         provider authentication, 501 capability missing, 400 bad value or configuration, 500 \
         anything else.\n\n",
    );
    out.push_str("| code | status | type | when | suggestion | state |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for row in &engine {
        let _ = writeln!(
            out,
            "| {} | {} | `{}` | {} | {} | {} |",
            code_cell(row),
            row.status,
            row.class,
            meaning(row),
            row.suggestion.unwrap_or_default(),
            state(row.availability)
        );
    }
    out
}

fn code_cell(row: &RowDoc) -> String {
    format!("<a id=\"{}\"></a>`{}`", anchor(row.code), row.code)
}

/// The row's doc comment as one line (a table cell).
fn meaning(row: &RowDoc) -> String {
    row.meaning
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace('|', "\\|")
}

fn state(availability: Availability) -> String {
    match availability {
        Availability::Live => "live".to_owned(),
        Availability::Pending(by) => format!("pending: {by}"),
        Availability::Dormant(why) => format!("dormant: {why}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_has_one_anchor() {
        let doc = errors_markdown();
        let rows = server::Code::docs().into_iter().chain(engine::Code::docs());
        for row in rows {
            let id = format!("<a id=\"{}\"></a>", anchor(row.code));
            assert_eq!(doc.matches(&id).count(), 1, "{}", row.code);
            assert!(row.docs_url.ends_with(&format!("#{}", anchor(row.code))));
        }
    }
}
