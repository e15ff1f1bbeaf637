//! What the system examples need of their own (the runner is `server::example_run`): a
//! fresh server per example, `/workspace` standing for a temp dir, the child base built from
//! a fixed parent environment. The machine's readings differ from machine to machine, so
//! for them the answer must have the documented shape (the same members, of the same
//! types); the environment answers must be the documented ones exactly.

use crate::server::AppState;
use crate::server::config::{LoadOptions, Settings};
use crate::server::endpoints::EndpointId;
use crate::server::example::EXAMPLE_ROOT;
use crate::server::example_run::{Answer, Call, Harness};
use crate::server::route::Route;
use serde_json::Value;
use std::collections::BTreeMap;

/// The routes whose answers are readings of the machine.
const READINGS: &[EndpointId] = &[
    EndpointId::SystemInfo,
    EndpointId::SystemMetrics,
    EndpointId::SystemDisk,
    EndpointId::SystemPorts,
];

pub(crate) struct Examples {
    temp: tempfile::TempDir,
}

fn settings() -> Settings {
    let parent: BTreeMap<String, String> = [
        ("HOME", "/home/agent"),
        ("LANG", "C.UTF-8"),
        ("PATH", "/usr/local/bin:/usr/bin:/bin"),
        ("SVC_SERVER_CHILD_ENV", ""),
        ("AWS_SECRET_ACCESS_KEY", "never shown: not passed on"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    Settings::load_with_env(&LoadOptions::default(), &parent).unwrap()
}

/// The shape of a reading: each value replaced by its type; an array by the distinct
/// shapes of its items, in order of first appearance.
fn shape(v: &Value) -> Value {
    match v {
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), shape(v))).collect())
        }
        Value::Array(items) => {
            let mut seen: Vec<Value> = Vec::new();
            for item in items.iter().map(shape) {
                if !seen.contains(&item) {
                    seen.push(item);
                }
            }
            Value::Array(seen)
        }
        Value::String(_) => Value::from("string"),
        Value::Number(n) if n.is_u64() => Value::from("unsigned"),
        Value::Number(_) => Value::from("number"),
        other => other.clone(),
    }
}

impl Harness for Examples {
    async fn start() -> Result<Self, String> {
        Ok(Self {
            temp: tempfile::tempdir().unwrap(),
        })
    }

    async fn prepare(&mut self, _: &Route) -> Call {
        Call {
            app: crate::server::router::app(AppState::with_settings(settings())),
            swaps: vec![(EXAMPLE_ROOT, self.temp.path().display().to_string())],
        }
    }

    /// A reading: its shape; the listening ports: each one listed of a documented shape.
    fn compare(&self, route: &Route, _: &Call, answer: &Answer, what: &str) -> bool {
        if !READINGS.contains(&route.id()) {
            return false;
        }
        let root = self.temp.path().display().to_string();
        let served = answer.json(what);
        let documented: Value =
            serde_json::from_str(&route.example.answer.replace(EXAMPLE_ROOT, &root)).unwrap();
        let (served_shape, documented_shape) = (shape(&served), shape(&documented));
        if route.id() == EndpointId::SystemPorts {
            // Which sockets listen varies; each one listed has a documented shape.
            let listed = served_shape["ports"].as_array().unwrap();
            let known = documented_shape["ports"].as_array().unwrap();
            assert!(listed.iter().all(|s| known.contains(s)), "{what}: {served}");
            return true;
        }
        assert_eq!(served_shape, documented_shape, "{what}: {served}");
        if route.id() == EndpointId::SystemDisk {
            assert_eq!(served["path"], root.as_str(), "{what}");
        }
        if route.id() == EndpointId::SystemMetrics {
            assert_eq!(served["load"].as_array().unwrap().len(), 3, "{what}");
        }
        true
    }
}
