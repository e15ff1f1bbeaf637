//! The document covers the table exactly, is well formed, and agrees with what the handlers
//! answer: every documented example (run against the real router by the groups' own tests)
//! validates against the schema of its route and status.

use super::document;
use crate::server::docs::Example;
use crate::server::endpoints::{ENDPOINTS, Status};
use crate::server::registry::{self, doc, example};
use serde_json::{Value, json};
use std::collections::HashSet;

/// The value at a `#/...` reference of the document.
fn resolve<'a>(doc: &'a Value, reference: &str) -> Option<&'a Value> {
    doc.pointer(reference.strip_prefix('#')?)
}

/// Every `$ref` under `value`.
fn refs<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get("$ref") {
                out.push(r);
            }
            map.values().for_each(|v| refs(v, out));
        }
        Value::Array(list) => list.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// A response object, its `$ref` followed.
fn response<'a>(doc: &'a Value, op: &'a Value, status: u16) -> Option<&'a Value> {
    let r = op["responses"].get(status.to_string())?;
    match r.get("$ref").and_then(Value::as_str) {
        Some(reference) => resolve(doc, reference),
        None => Some(r),
    }
}

/// `instance` against `schema`, with the document's components reachable by its `$ref`s.
fn check(doc: &Value, schema: &Value, instance: &Value) -> Result<(), String> {
    let root = json!({"components": doc["components"], "allOf": [schema]});
    let validator = jsonschema::draft202012::new(&root).map_err(|e| e.to_string())?;
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

#[test]
fn every_row_is_one_operation_with_its_method_path_and_group() {
    let doc = document();
    let mut seen = HashSet::new();
    let operations: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| item.as_object().unwrap().len())
        .sum();
    assert_eq!(operations, ENDPOINTS.len());
    assert_eq!(ENDPOINTS.len(), 118);
    for e in ENDPOINTS {
        let op = &doc["paths"][e.path][e.method.as_str().to_ascii_lowercase()];
        assert_eq!(op["operationId"], e.id, "{} {}", e.method.as_str(), e.path);
        assert_eq!(op["tags"], json!([e.group.name()]), "{}", e.id);
        assert!(seen.insert(e.id), "{} twice", e.id);
        let in_path: Vec<&str> = op["parameters"]
            .as_array()
            .map(|p| {
                p.iter()
                    .filter(|p| p["in"] == "path")
                    .filter_map(|p| p["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(
            in_path,
            super::operation::path_names(e.path),
            "{}: path parameters",
            e.id
        );
    }
}

#[test]
fn every_row_but_the_refusals_is_declared_by_its_handler() {
    for e in ENDPOINTS {
        match (e.status, doc(e)) {
            (Status::Refusal(_), None) => {}
            (Status::Refusal(_), Some(_)) => {
                panic!("{}: a refusal row is documented from the table", e.id)
            }
            (_, Some(d)) => assert_eq!(
                d.id, e.key,
                "{}: its group answers another row's declaration",
                e.id
            ),
            (_, None) => panic!(
                "{}: no declaration beside its handler (a `DOC` the group lists)",
                e.id
            ),
        }
    }
}

#[test]
fn the_document_is_openapi_3_1_and_every_ref_resolves() {
    let doc = document();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());
    assert!(doc["paths"].is_object() && doc["components"]["schemas"].is_object());
    let mut all = Vec::new();
    refs(&doc, &mut all);
    assert!(!all.is_empty());
    for r in all {
        assert!(resolve(&doc, r).is_some(), "`{r}` does not resolve");
    }
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().unwrap();
            assert!(!responses.is_empty(), "{method} {path}: no responses");
            for (status, r) in responses {
                let r = match r.get("$ref").and_then(Value::as_str) {
                    Some(reference) => resolve(&doc, reference).unwrap(),
                    None => r,
                };
                assert!(
                    r["description"].is_string(),
                    "{method} {path} {status}: no description"
                );
            }
        }
    }
}

#[test]
fn every_schema_is_valid_json_schema_2020_12() {
    let doc = document();
    let mut schemas: Vec<(String, &Value)> = doc["components"]["schemas"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(name, s)| (name.clone(), s))
        .collect();
    fn media_schemas<'a>(at: String, value: &'a Value, out: &mut Vec<(String, &'a Value)>) {
        if let Some(content) = value.get("content").and_then(Value::as_object) {
            for (media, m) in content {
                if let Some(s) = m.get("schema") {
                    out.push((format!("{at} {media}"), s));
                }
                for event in m
                    .get("x-events")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    out.push((format!("{at} event {}", event["event"]), &event["data"]));
                }
            }
        }
    }
    for (name, r) in doc["components"]["responses"].as_object().unwrap() {
        media_schemas(name.clone(), r, &mut schemas);
    }
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let at = format!("{method} {path}");
            media_schemas(format!("{at} body"), &op["requestBody"], &mut schemas);
            for (status, r) in op["responses"].as_object().unwrap() {
                media_schemas(format!("{at} {status}"), r, &mut schemas);
            }
            for p in op["parameters"].as_array().into_iter().flatten() {
                schemas.push((format!("{at} parameter {}", p["name"]), &p["schema"]));
            }
        }
    }
    for (at, schema) in schemas {
        if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
            panic!("{at}: not a valid schema: {e}");
        }
        let root = json!({"components": doc["components"], "allOf": [schema]});
        if let Err(e) = jsonschema::draft202012::new(&root) {
            panic!("{at}: {e}");
        }
    }
}

/// The example's answer media type, as its headers say (JSON when they say none).
fn media(example: &Example) -> &'static str {
    example
        .headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        .map_or("application/json", |(_, value)| value)
}

/// The `event:` and `data:` of each event of an SSE text.
fn events(text: &str) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|frame| !frame.trim().is_empty())
        .map(|frame| {
            let field = |name: &str| {
                frame
                    .lines()
                    .find_map(|l| l.strip_prefix(name))
                    .unwrap_or_default()
                    .trim()
                    .to_owned()
            };
            let data = serde_json::from_str(&field("data:")).expect("an event's data is JSON");
            (field("event:"), data)
        })
        .collect()
}

#[test]
fn every_documented_example_matches_its_route_and_status() {
    let doc = document();
    let mut checked = 0;
    for e in ENDPOINTS {
        let Some(example) = example(e) else { continue };
        let op = &doc["paths"][e.path][e.method.as_str().to_ascii_lowercase()];
        let at = format!("{} example ({})", e.id, example.status);
        let r = response(&doc, op, example.status)
            .unwrap_or_else(|| panic!("{at}: the status is not documented"));
        if example.status == 101 {
            assert!(r.get("content").is_none(), "{at}: an upgrade has no body");
            checked += 1;
            continue;
        }
        let media = media(example);
        let content = r["content"]
            .get(media)
            .unwrap_or_else(|| panic!("{at}: `{media}` is not documented: {}", r["content"]));
        match media {
            "application/json" => {
                let answer: Value = serde_json::from_str(example.answer).expect("a JSON answer");
                if let Err(e) = check(&doc, &content["schema"], &answer) {
                    panic!("{at}: the answer does not match the schema: {e}");
                }
            }
            "text/event-stream" => {
                let documented = content["x-events"].as_array().unwrap();
                for (name, data) in events(example.answer) {
                    let event = documented
                        .iter()
                        .find(|d| d["event"] == name.as_str())
                        .unwrap_or_else(|| panic!("{at}: event `{name}` is not documented"));
                    if let Err(e) = check(&doc, &event["data"], &data) {
                        panic!("{at}: event `{name}` does not match: {e}");
                    }
                }
            }
            _ => {}
        }
        checked += 1;
    }
    assert!(checked >= 40, "only {checked} examples were checked");
}

#[test]
fn every_code_a_route_documents_renders_a_body_its_schema_accepts() {
    use crate::error::{ApiError, Shape};
    let doc = document();
    for e in ENDPOINTS {
        let op = &doc["paths"][e.path][e.method.as_str().to_ascii_lowercase()];
        let shape = crate::server::router::shape_of(e);
        let codes = super::errors::codes(e, registry::doc(e).map_or(&[][..], |d| d.errors));
        for code in codes {
            let error = ApiError::new(code, "refused")
                .with_endpoint(e.id)
                .with_param("x");
            let body = match shape {
                Shape::OpenAi => error.v1_body(),
                _ => error.flat_body(),
            };
            let r = response(&doc, op, code.status().as_u16()).unwrap();
            let schema = &r["content"]["application/json"]["schema"];
            if let Err(err) = check(&doc, schema, &body) {
                panic!("{} {}: {err}", e.id, code.as_str());
            }
        }
    }
}
