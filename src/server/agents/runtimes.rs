//! The five declared runtimes and how a request picks one (agents spec 2.5 and 4.2).

use crate::error::{ApiError, Code};
use crate::server::agents::adapters::{Adapter, RtOne, RtTwo};
use serde_json::{Value, json};
use std::path::PathBuf;

#[derive(Debug)]
pub struct Runtime {
    pub id: &'static str,
    pub binary: &'static str,
    pub aliases: &'static [&'static str],
    pub implemented: bool,
    pub install_steps: &'static [&'static [&'static str]],
    /// The variables holding the runtime's API key; only their presence is ever reported.
    pub auth_env: &'static [&'static str],
}

/// Product order: implemented runtimes first.
pub const RUNTIMES: &[Runtime] = &[
    Runtime {
        id: "rt-one",
        binary: "rt-one",
        aliases: &["rt-one-alias"],
        implemented: true,
        install_steps: &[&["npm", "install", "-g", "@openai/codex"]],
        auth_env: &["OPENAI_API_KEY", "CODEX_API_KEY"],
    },
    Runtime {
        id: "rt-two",
        binary: "rt-two",
        aliases: &["rt-two-alias-1", "rt-two-alias-2", "rt-two-alias-3"],
        implemented: true,
        install_steps: &[&["npm", "install", "-g", "@anthropic-ai/claude-code"]],
        auth_env: &["ANTHROPIC_API_KEY"],
    },
    Runtime {
        id: "declared-a",
        binary: "declared-a",
        aliases: &[],
        implemented: false,
        install_steps: &[],
        auth_env: &[],
    },
    Runtime {
        id: "declared-b",
        binary: "declared-b",
        aliases: &[],
        implemented: false,
        install_steps: &[],
        auth_env: &[],
    },
    Runtime {
        id: "command",
        binary: "command",
        aliases: &[],
        implemented: false,
        install_steps: &[],
        auth_env: &[],
    },
];

/// A runtime by id or alias.
pub fn resolve(name: &str) -> Option<&'static Runtime> {
    RUNTIMES
        .iter()
        .find(|r| r.id == name || r.aliases.contains(&name))
}

impl Runtime {
    pub fn adapter(&self) -> Option<&'static dyn Adapter> {
        match self.id {
            "rt-one" => Some(&RtOne),
            "rt-two" => Some(&RtTwo),
            _ => None,
        }
    }

    /// Where the binary is on the server's PATH now (looked up per request: installing a
    /// CLI while the server runs is enough).
    pub fn locate(&self) -> Option<PathBuf> {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join(self.binary))
            .find(|candidate| is_executable(candidate))
    }

    pub fn describe(&self, default_runtime: &str) -> Value {
        let path = self.locate();
        let installed = path.is_some();
        crate::server::agents::wire::to_json(&RuntimeObject {
            id: self.id,
            name: self.id,
            object: "agent.runtime",
            implemented: self.implemented,
            installed,
            default: self.id == default_runtime,
            aliases: self.aliases,
            binary: self.binary,
            path,
            install_steps: self.install_steps,
            auth_env_present: self
                .auth_env
                .iter()
                .any(|v| std::env::var_os(v).is_some_and(|x| !x.is_empty())),
            x_svc: RuntimeLocal {
                compute: "none",
                installed,
                implemented: self.implemented,
            },
        })
    }
}

fn is_executable(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// The runtime a request asked for, and whether its `model` names a real model.
#[derive(Debug)]
pub struct Selection {
    pub runtime: &'static Runtime,
    /// The model for the CLI; `None` when the request named a runtime instead (the CLI's
    /// default model, `model_resolved: false`).
    pub model: Option<String>,
}

/// Spec 4.2, in order: header, body `adapter`/`runtime` (also inside `agent`), a model that
/// is a runtime name or alias, the default.
pub fn select(
    header: Option<&str>,
    explicit: Option<&str>,
    model: Option<&str>,
    default_runtime: &str,
) -> Result<Selection, ApiError> {
    let model_names_runtime = model.and_then(resolve).filter(|r| r.implemented);
    let name = header
        .or(explicit)
        .or(model_names_runtime.map(|r| r.id))
        .unwrap_or(default_runtime);
    let runtime = resolve(name)
        .filter(|r| r.implemented)
        .ok_or_else(|| not_local(name))?;
    // Only an implemented runtime's name or alias means "the CLI's default model"; any
    // other id, a declared runtime's name included, is a model for the CLI.
    let model = match model {
        Some(_) if model_names_runtime.is_some() => None,
        Some(m) => Some(m.to_owned()),
        None => None,
    };
    Ok(Selection { runtime, model })
}

pub fn not_local(name: &str) -> ApiError {
    let what = match resolve(name) {
        Some(r) => format!(
            "the runtime `{}` is declared but has no local backend",
            r.id
        ),
        None => format!("there is no runtime named `{name}`"),
    };
    ApiError::new(
        Code::NotImplementedLocally,
        format!("{what}; implemented runtimes: rt-one, rt-two (GET /v1/agents/runtimes)"),
    )
    .with_extra(
        "x_svc",
        json!({"compute": "none", "runtimes": "/v1/agents/runtimes"}),
    )
}

/// An implemented runtime must be installed before a turn can run.
pub fn require_installed(runtime: &Runtime) -> Result<PathBuf, ApiError> {
    runtime.locate().ok_or_else(|| {
        let steps: Vec<String> = runtime.install_steps.iter().map(|s| s.join(" ")).collect();
        ApiError::new(
            Code::RuntimeNotInstalled,
            format!(
                "the runtime `{}` is not installed: no `{}` on the server's PATH; install it with: {}",
                runtime.id,
                runtime.binary,
                steps.join(" && ")
            ),
        )
        .with_extra("x_svc", json!({"install_steps": runtime.install_steps}))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selection_order() {
        let pick = |h, e, m| select(h, e, m, "rt-one").map(|s| (s.runtime.id, s.model));
        assert_eq!(
            pick(Some("rt-two"), Some("rt-one"), None).unwrap().0,
            "rt-two"
        );
        assert_eq!(
            pick(None, Some("rt-two"), Some("rt-one")).unwrap().0,
            "rt-two"
        );
        assert_eq!(
            pick(None, None, Some("rt-two-alias-2")).unwrap(),
            ("rt-two", None)
        );
        assert_eq!(
            pick(None, None, Some("gpt-x")).unwrap(),
            ("rt-one", Some("gpt-x".into()))
        );
        assert_eq!(pick(None, None, None).unwrap().0, "rt-one");
        assert_eq!(
            select(None, None, None, "rt-two").unwrap().runtime.id,
            "rt-two"
        );
        for refused in ["declared-a", "command", "nope"] {
            let e = pick(Some(refused), None, None).unwrap_err();
            assert_eq!(e.code, Code::NotImplementedLocally);
        }
    }
}

/// A runtime as `GET /v1/agents/runtimes` lists it: where its CLI is, and how to install it.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "AgentRuntime")]
pub struct RuntimeObject {
    pub id: &'static str,
    pub name: &'static str,
    #[schemars(extend("const" = "agent.runtime"))]
    pub object: &'static str,
    pub implemented: bool,
    pub installed: bool,
    pub default: bool,
    pub aliases: &'static [&'static str],
    pub binary: &'static str,
    /// The CLI found on `PATH`.
    pub path: Option<PathBuf>,
    /// Commands that install the CLI, one argv each.
    pub install_steps: &'static [&'static [&'static str]],
    /// Whether a variable the CLI reads its key from is set.
    pub auth_env_present: bool,
    pub x_svc: RuntimeLocal,
}

#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct RuntimeLocal {
    #[schemars(extend("const" = "none"))]
    pub compute: &'static str,
    pub installed: bool,
    pub implemented: bool,
}
