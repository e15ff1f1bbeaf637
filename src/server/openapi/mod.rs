//! The OpenAPI 3.1 document of the server (`svc openapi`, committed as `docs/openapi.json`),
//! generated so it cannot drift: the operations are the rows of the endpoint table, their
//! request and answer schemas what each operation file declares beside its handler
//! ([`op::Doc`], with `schemars` deriving the request types), their errors the rows of the
//! error table the route can answer (`errors.rs`). Nothing serves it: the spec says nothing
//! is served outside the endpoint table.
//!
//! The engine gets a document of its own when its table is done.

mod errors;
pub mod op;
mod operation;
pub mod shared;
#[cfg(test)]
mod tests;

use crate::server::endpoints::{ENDPOINTS, Group};
use crate::server::registry;
use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// Where the named schemas live in the document.
const COMPONENTS: &str = "/components/schemas";

/// The generator every schema of the document is built in: JSON Schema 2020-12 (OpenAPI
/// 3.1's dialect), named types under `#/components/schemas`.
fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.definitions_path = COMPONENTS.into();
            s.meta_schema = None;
        })
        .into_generator()
}

/// The whole document.
pub fn document() -> Value {
    let mut generator = generator();
    let mut paths = Map::new();
    let mut responses = Map::new();
    for endpoint in ENDPOINTS {
        let op = operation::build(
            endpoint,
            registry::doc(endpoint),
            &mut generator,
            &mut responses,
        );
        let item = paths
            .entry(endpoint.path.to_owned())
            .or_insert_with(|| json!({}));
        item[endpoint.method.as_str().to_ascii_lowercase()] = op;
    }
    let mut schemas = errors::components();
    for (name, schema) in generator.take_definitions(true) {
        schemas.insert(name, schema);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "svc",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "The in-sandbox agent server: one policy-guarded HTTP API for coding agents.",
            "description": "Every endpoint of the server's table (docs/endpoints.md), generated from the table and the handlers' types by `svc openapi`. Groups switched off by the operator answer 404 `endpoint_disabled`; agents, browser and dev_tools are opt-in. Errors are rows of the error table (docs/errors.md): the flat body, or the OpenAI-style object under /v1/.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "servers": [{"url": "http://localhost:9000", "description": "The main port (`svc serve --port`)."}],
        "security": [{"bearer": []}, {"access_token": []}],
        "tags": Group::ALL.iter().map(|g| json!({
            "name": g.name(),
            "description": if g.opt_in() { "Opt-in: off until the operator switches it on." } else { "On by default." },
        })).collect::<Vec<_>>(),
        "paths": paths,
        "components": {
            "schemas": schemas,
            "responses": responses,
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "`Authorization: Bearer <token>`: the token of an identity of the configuration."},
                "access_token": {"type": "apiKey", "in": "header", "name": "X-Access-Token", "description": "The same token in a header of its own (send one of the two)."},
            },
        },
    })
}

/// The document as `docs/openapi.json` holds it.
pub fn document_json() -> String {
    let mut text = serde_json::to_string_pretty(&document()).expect("a JSON value serializes");
    text.push('\n');
    text
}

/// `svc openapi [--engine] [--out FILE]`: prints a document (this one, or the engine's),
/// or writes it to `out`.
pub fn main(text: String, out: Option<&std::path::Path>) -> std::process::ExitCode {
    let written = match out {
        Some(path) => std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display())),
        None => {
            use std::io::Write;
            std::io::stdout()
                .write_all(text.as_bytes())
                .map_err(|e| e.to_string())
        }
    };
    match written {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("svc: cannot write the OpenAPI document: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
