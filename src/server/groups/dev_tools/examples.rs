//! What the dev_tools examples need of their own (the runner is `server::example_run`): a
//! fresh server per example with the group switched on. `duration_ms` varies by run; the
//! interpreters' versions vary by machine, so `code_languages` must list the documented
//! languages with the same members (and a version string wherever one is installed that
//! prints one).

use crate::server::AppState;
use crate::server::config::{LoadOptions, Settings};
use crate::server::endpoints::EndpointId;
use crate::server::example_run::{Answer, Call, Harness};
use crate::server::route::Route;
use serde_json::Value;
use std::collections::BTreeMap;

pub(crate) struct Examples;

/// The server's own environment for the child base (the interpreters are on its `PATH`),
/// with the group switched on.
fn settings() -> Settings {
    let mut env: BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| !k.starts_with("SVC_"))
        .collect();
    env.insert("SVC_SERVER_ENABLED_GROUPS".into(), "dev_tools".into());
    Settings::load_with_env(&LoadOptions::default(), &env).unwrap()
}

impl Harness for Examples {
    const VOLATILE: &'static [&'static str] = &["duration_ms"];

    async fn start() -> Result<Self, String> {
        Ok(Self)
    }

    async fn prepare(&mut self, _: &Route) -> Call {
        Call {
            app: crate::server::router::app(AppState::with_settings(settings())),
            swaps: Vec::new(),
        }
    }

    /// The languages: the documented names, in order, each with the documented members.
    fn compare(&self, route: &Route, _: &Call, answer: &Answer, what: &str) -> bool {
        if route.id() != EndpointId::CodeLanguages {
            return false;
        }
        let served = answer.json(what);
        let documented: Value = serde_json::from_str(route.example.answer).unwrap();
        let names = |v: &Value| -> Vec<Value> {
            v["languages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["name"].clone())
                .collect()
        };
        assert_eq!(names(&served), names(&documented), "{what}");
        for l in served["languages"].as_array().unwrap() {
            let keys: Vec<&String> = l.as_object().unwrap().keys().collect();
            assert_eq!(keys, ["name", "version", "installed", "allowed"], "{what}");
            if l["installed"] == true && l["name"] != "sh" {
                assert!(l["version"].is_string(), "{what}: {l}");
            }
        }
        true
    }
}
