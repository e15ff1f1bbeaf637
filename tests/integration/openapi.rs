//! `docs/openapi.json` is the document `svc openapi` generates (a test fails when it is
//! stale, like `docs/endpoints.md`), and it documents every error code the conformance
//! cases see a route answer.

use serde_json::Value;
use std::path::Path;
use svc::error::Code;
use svc::server::endpoints::by_id;

fn committed() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/openapi.json");
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn openapi_json_is_generated_from_the_table_and_the_handlers() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/openapi.json");
    let expected = svc::server::openapi::document_json();
    if std::env::var_os("SVC_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &expected).unwrap();
    }
    assert!(
        committed() == expected,
        "docs/openapi.json is out of date: run `just docs` (or SVC_UPDATE_DOCS=1 cargo test)"
    );
}

#[test]
fn svc_openapi_prints_the_committed_document() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_svc"))
        .arg("openapi")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout) == svc::server::openapi::document_json(),
        "`svc openapi` prints another document than the generator's"
    );
}

/// The codes one route's documentation lists for one status.
fn documented(doc: &Value, endpoint: &str, status: u16) -> Vec<String> {
    let e = by_id(endpoint).unwrap();
    let op = &doc["paths"][e.path][e.method.as_str().to_ascii_lowercase()];
    let Some(mut r) = op["responses"].get(status.to_string()) else {
        return Vec::new();
    };
    if let Some(reference) = r.get("$ref").and_then(Value::as_str) {
        r = doc.pointer(reference.trim_start_matches('#')).unwrap();
    }
    let schema = &r["content"]["application/json"]["schema"]["allOf"][1]["properties"];
    let codes = schema
        .get("code")
        .or_else(|| schema.pointer("/error/properties/code"))
        .and_then(|c| c["enum"].as_array())
        .cloned()
        .unwrap_or_default();
    codes
        .iter()
        .filter_map(|c| c.as_str().map(str::to_owned))
        .collect()
}

/// Whether a route's success answers name `code` (`capabilities_check` answers a verdict
/// that names the code a call would be refused with).
fn answered(doc: &Value, endpoint: &str, code: &str) -> bool {
    let e = by_id(endpoint).unwrap();
    let op = &doc["paths"][e.path][e.method.as_str().to_ascii_lowercase()];
    op["responses"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(status, _)| status.starts_with('2'))
        .any(|(_, r)| r.to_string().contains(&format!("\"{code}\"")))
}

/// What a case sees that is no route's answer: the router's 404 for a path no row has.
const NOT_A_ROUTE: &[(&str, &str)] = &[("pipeline/local/001", "not_found")];

#[test]
fn every_code_a_conformance_case_sees_is_documented_on_one_of_its_routes() {
    let doc = svc::server::openapi::document();
    let mut missing = Vec::new();
    for case in conformance::all_cases() {
        let endpoints: Vec<&str> = case
            .endpoints
            .iter()
            .copied()
            .filter(|e| by_id(e).is_some())
            .collect();
        if endpoints.is_empty() {
            continue;
        }
        for code in case.codes.iter().filter_map(|c| Code::parse(c)) {
            if code.stream_only() || NOT_A_ROUTE.contains(&(case.id, code.as_str())) {
                continue;
            }
            let status = code.status().as_u16();
            if !endpoints.iter().any(|e| {
                documented(&doc, e, status)
                    .iter()
                    .any(|c| c == code.as_str())
                    || answered(&doc, e, code.as_str())
            }) {
                missing.push(format!("{}: {} on {:?}", case.id, code.as_str(), endpoints));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "codes the cases see that no route of theirs documents (add them to the route's `DOC` errors): {missing:#?}"
    );
}
