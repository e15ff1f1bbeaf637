//! The shape of a CLI's JSONL output and how two shapes differ: what `shapes` compares and
//! what `just real-drift` reports per scenario.

use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

const KEYED_BY_NAME: &[&str] = &["modelUsage", "model_usage_since_last_result"];

/// Values that are not part of a format: ids, times, counts, texts.
fn shape(value: &Value) -> Value {
    match value {
        Value::Null => json!("null"),
        Value::Bool(_) => json!("bool"),
        Value::Number(_) => json!("number"),
        Value::String(_) => json!("string"),
        // Elements are alike in these formats: the union of their shapes stands for all.
        Value::Array(list) => {
            let mut merged: BTreeMap<String, Value> = BTreeMap::new();
            for v in list {
                let s = shape(v);
                merged.insert(s.to_string(), s);
            }
            Value::Array(merged.into_values().collect())
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    // Maps keyed by a name (model usage per model) have one shape per value.
                    if KEYED_BY_NAME.contains(&k.as_str()) {
                        let values: Map<String, Value> = v
                            .as_object()
                            .into_iter()
                            .flatten()
                            .map(|(_, inner)| ("<name>".to_owned(), shape(inner)))
                            .collect();
                        (k.clone(), Value::Object(values))
                    } else {
                        (k.clone(), shape(v))
                    }
                })
                .collect::<Map<String, Value>>(),
        ),
    }
}

/// A line's kind: its `type` (and `subtype`), and the type of the item or content it carries.
fn kind(line: &Value) -> String {
    let mut parts = vec![line["type"].as_str().unwrap_or("?").to_owned()];
    for key in ["subtype"] {
        if let Some(s) = line[key].as_str() {
            parts.push(s.to_owned());
        }
    }
    if let Some(t) = line["item"]["type"].as_str() {
        parts.push(t.to_owned());
    }
    if let Some(t) = line["event"]["type"].as_str() {
        parts.push(t.to_owned());
        if let Some(d) = line["event"]["delta"]["type"].as_str() {
            parts.push(d.to_owned());
        }
        if let Some(b) = line["event"]["content_block"]["type"].as_str() {
            parts.push(b.to_owned());
        }
    }
    if let Some(content) = line["message"]["content"].as_array() {
        for c in content {
            parts.push(c["type"].as_str().unwrap_or("?").to_owned());
        }
    }
    parts.join("/")
}

/// Lines in order, runs of the same kind collapsed (how many deltas a reply takes is the
/// model's choice), each kind with the union of its shapes.
pub(super) fn outline(stdout: &str) -> (Vec<String>, BTreeMap<String, Value>) {
    let mut order: Vec<String> = Vec::new();
    let mut shapes: BTreeMap<String, Value> = BTreeMap::new();
    for line in stdout.lines().filter(|l| l.starts_with('{')) {
        let value: Value = serde_json::from_str(line).unwrap_or(Value::Null);
        let k = kind(&value);
        if order.last() != Some(&k) {
            order.push(k.clone());
        }
        let s = shape(&value);
        let entry = shapes.entry(k).or_insert_with(|| s.clone());
        merge(entry, &s);
    }
    (order, shapes)
}

fn merge(into: &mut Value, other: &Value) {
    if let (Value::Object(a), Value::Object(b)) = (into, other) {
        for (k, v) in b {
            match a.get_mut(k) {
                Some(existing) => merge(existing, v),
                None => {
                    a.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

/// How the real CLI's format differs from the fake's at one path.
pub(super) enum Change {
    /// Only the real CLI has it (a field, or a whole kind of line).
    Added,
    /// Only the fake has it.
    Removed,
    /// Both have it, with values of other types.
    Retyped,
    /// The kinds of lines come in another order.
    Reordered,
}

pub(super) struct Difference {
    change: Change,
    path: String,
    detail: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.detail)
    }
}

pub(super) fn difference(change: Change, path: &str, detail: String) -> Difference {
    Difference {
        change,
        path: path.to_owned(),
        detail,
    }
}

/// Every difference between two shapes.
pub(super) fn diff(path: &str, fake: &Value, real: &Value, out: &mut Vec<Difference>) {
    match (fake, real) {
        (Value::Object(f), Value::Object(r)) => {
            for (k, v) in r {
                let at = format!("{path}.{k}");
                match f.get(k) {
                    Some(fv) => diff(&at, fv, v, out),
                    None => out.push(difference(
                        Change::Added,
                        &at,
                        format!("only the real CLI has it ({v})"),
                    )),
                }
            }
            for k in f.keys().filter(|k| !r.contains_key(*k)) {
                out.push(difference(
                    Change::Removed,
                    &format!("{path}.{k}"),
                    "only the fake has it".into(),
                ));
            }
        }
        (Value::Array(f), Value::Array(r)) if !f.is_empty() && !r.is_empty() => {
            diff(&format!("{path}[]"), &f[0], &r[0], out)
        }
        (Value::Array(_), Value::Array(_)) => {}
        _ if fake != real => out.push(difference(
            Change::Retyped,
            path,
            format!("fake {fake}, real {real}"),
        )),
        _ => {}
    }
}

/// With `SVC_SHAPES_REPORT` set (by `just real-drift`), each comparison appends one JSON
/// line to that file: the test, and the paths added, removed and retyped in the real CLI.
pub(super) fn report(problems: &[Difference]) {
    let Some(file) = std::env::var_os("SVC_SHAPES_REPORT") else {
        return;
    };
    let paths = |wanted: fn(&Change) -> bool| -> Vec<String> {
        problems
            .iter()
            .filter(|p| wanted(&p.change))
            .map(|p| p.path.clone())
            .collect()
    };
    // The test thread carries the test's name (`real::shapes::text_reply::rt_two`).
    let test = std::thread::current().name().unwrap_or("?").to_owned();
    let line = json!({
        "test": test,
        "added": paths(|c| matches!(c, Change::Added)),
        "removed": paths(|c| matches!(c, Change::Removed)),
        "retyped": paths(|c| matches!(c, Change::Retyped)),
        "reordered": problems.iter().any(|p| matches!(p.change, Change::Reordered)),
    });
    use std::io::Write;
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
        .and_then(|mut f| writeln!(f, "{line}"));
    if let Err(e) = written {
        panic!("cannot append to {}: {e}", file.to_string_lossy());
    }
}
