//! Named commands declared in `template.yaml`: typed arguments fill an argv template and
//! the program runs directly (never through a shell), so an argument can never become
//! shell syntax.

use crate::error::{ApiError, Code};
use crate::server::config::ConfigError;
use crate::server::config::template::{ArgKind, CommandArgEntry, CommandEntry};
use crate::services::child_env::ChildEnv;
use crate::services::supervisor;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Duration;

pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
pub const OUTPUT_CAP_BYTES: usize = 1024 * 1024;

#[derive(Debug, Clone, Serialize)]
pub struct CommandSpec {
    pub name: String,
    pub description: String,
    pub args: Vec<ArgSpec>,
    #[serde(skip)]
    pub argv: Vec<String>,
    #[serde(skip)]
    pub timeout: Duration,
    #[serde(skip)]
    pub cwd: Option<PathBuf>,
    #[serde(skip)]
    pub env: BTreeMap<String, String>,
    #[serde(skip)]
    pub scopes: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ArgSpec {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ArgKind,
    pub required: bool,
    pub description: String,
    pub default: Option<Value>,
    #[serde(rename = "enum", skip_serializing_if = "Option::is_none")]
    pub choices: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_length: Option<usize>,
}

#[derive(Debug, Default)]
pub struct CommandRegistry {
    commands: Vec<CommandSpec>,
}

impl CommandRegistry {
    pub fn from_entries(entries: Vec<CommandEntry>) -> Result<CommandRegistry, ConfigError> {
        let mut names = HashSet::new();
        let mut commands = Vec::new();
        for (i, entry) in entries.into_iter().enumerate() {
            let spec = CommandSpec::from_entry(&format!("commands[{i}]"), entry)?;
            if !names.insert(spec.name.clone()) {
                return Err(ConfigError(format!(
                    "commands[{i}].name: `{}` is declared twice",
                    spec.name
                )));
            }
            commands.push(spec);
        }
        Ok(CommandRegistry { commands })
    }

    pub fn list(&self) -> &[CommandSpec] {
        &self.commands
    }

    pub fn get(&self, name: &str) -> Option<&CommandSpec> {
        self.commands.iter().find(|c| c.name == name)
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl CommandSpec {
    fn from_entry(key: &str, entry: CommandEntry) -> Result<CommandSpec, ConfigError> {
        let fail = |m: String| Err(ConfigError(m));
        if !valid_name(&entry.name) {
            return fail(format!(
                "{key}.name: `{}` must be 1-64 letters, digits, `_` or `-`",
                entry.name
            ));
        }
        if entry.argv.is_empty() || entry.argv[0].trim().is_empty() {
            return fail(format!("{key}.argv: needs at least the program"));
        }
        let mut args = Vec::new();
        let mut arg_names = HashSet::new();
        for (j, arg) in entry.args.into_iter().enumerate() {
            let arg_key = format!("{key}.args[{j}]");
            let spec = ArgSpec::from_entry(&arg_key, arg)?;
            if !arg_names.insert(spec.name.clone()) {
                return fail(format!("{arg_key}.name: `{}` is declared twice", spec.name));
            }
            args.push(spec);
        }
        for (j, element) in entry.argv.iter().enumerate() {
            for placeholder in placeholders(element) {
                if !arg_names.contains(placeholder) {
                    return fail(format!(
                        "{key}.argv[{j}]: `{{{placeholder}}}` names no declared argument"
                    ));
                }
            }
        }
        if entry.timeout_secs == Some(0) {
            return fail(format!("{key}.timeout_secs: must be greater than 0"));
        }
        Ok(CommandSpec {
            name: entry.name,
            description: entry.description,
            args,
            argv: entry.argv,
            timeout: Duration::from_secs(entry.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS)),
            cwd: entry.cwd,
            env: entry.env,
            scopes: entry.scopes,
        })
    }

    /// Checks the caller's keyword arguments and fills the argv template. An element that
    /// names an optional argument the caller left out (and that has no default) is dropped.
    pub fn render(&self, given: &Map<String, Value>) -> Result<Vec<String>, ApiError> {
        for key in given.keys() {
            if !self.args.iter().any(|a| &a.name == key) {
                return Err(ApiError::invalid(
                    key.clone(),
                    format!("`{}` takes no argument `{key}`", self.name),
                ));
            }
        }
        let mut values: BTreeMap<&str, String> = BTreeMap::new();
        for arg in &self.args {
            match given
                .get(&arg.name)
                .filter(|v| !v.is_null())
                .or(arg.default.as_ref())
            {
                Some(value) => {
                    values.insert(&arg.name, arg.check(value)?);
                }
                None if arg.required => {
                    return Err(ApiError::invalid(
                        arg.name.clone(),
                        format!("`{}` needs the argument `{}`", self.name, arg.name),
                    ));
                }
                None => {}
            }
        }
        let mut argv = Vec::with_capacity(self.argv.len());
        'elements: for element in &self.argv {
            let mut out = element.clone();
            for name in placeholders(element) {
                match values.get(name) {
                    Some(v) => out = out.replace(&format!("{{{name}}}"), v),
                    None => continue 'elements,
                }
            }
            argv.push(out);
        }
        Ok(argv)
    }

    pub async fn run(&self, argv: Vec<String>, base: &ChildEnv) -> Result<Value, ApiError> {
        let mut parts = argv.clone().into_iter();
        let program = parts.next().unwrap_or_default();
        let spec = supervisor::Spec {
            program: program.clone(),
            args: parts.collect(),
            cwd: self.cwd.clone(),
            env: base.with(self.env.clone()),
            stdin: supervisor::Stdin::None,
            limits: supervisor::Limits {
                timeout: Some(self.timeout),
                output_bytes: OUTPUT_CAP_BYTES,
                ..supervisor::Limits::default()
            },
        };
        let outcome = supervisor::run(&spec).await.map_err(|e| {
            ApiError::new(
                Code::CommandUnavailable,
                format!("command `{}` could not start `{program}`: {e}", self.name),
            )
        })?;
        Ok(json!({
            "name": self.name,
            "argv": argv,
            "exit_code": outcome.exit_code,
            "signal": outcome.signal,
            "timed_out": outcome.timed_out,
            "stdout": outcome.stdout.text(),
            "stderr": outcome.stderr.text(),
            "truncated": outcome.stdout.truncated || outcome.stderr.truncated,
            "duration_ms": outcome.duration.as_millis() as u64,
        }))
    }
}

impl ArgSpec {
    fn from_entry(key: &str, entry: CommandArgEntry) -> Result<ArgSpec, ConfigError> {
        if !valid_name(&entry.name) {
            return Err(ConfigError(format!(
                "{key}.name: `{}` must be 1-64 letters, digits, `_` or `-`",
                entry.name
            )));
        }
        let spec = ArgSpec {
            name: entry.name,
            kind: entry.kind,
            required: entry.required,
            description: entry.description,
            default: entry.default,
            choices: entry.choices,
            min: entry.min,
            max: entry.max,
            max_length: entry.max_length,
        };
        if let Some(default) = &spec.default {
            spec.check(default)
                .map_err(|e| ConfigError(format!("{key}.default: {}", e.message)))?;
        }
        Ok(spec)
    }

    /// The argument's text for the argv, or a 400 naming it.
    fn check(&self, value: &Value) -> Result<String, ApiError> {
        let bad = |why: String| ApiError::invalid(self.name.clone(), why);
        let text = match (self.kind, value) {
            (ArgKind::String, Value::String(s)) => {
                if s.contains('\0') {
                    return Err(bad(format!("`{}` must not contain a NUL byte", self.name)));
                }
                if let Some(max) = self.max_length
                    && s.chars().count() > max
                {
                    return Err(bad(format!(
                        "`{}` is longer than {max} characters",
                        self.name
                    )));
                }
                s.clone()
            }
            (ArgKind::Integer, Value::Number(n)) if n.is_i64() || n.is_u64() => n.to_string(),
            (ArgKind::Number, Value::Number(n)) => n.to_string(),
            (ArgKind::Boolean, Value::Bool(b)) => b.to_string(),
            (kind, _) => {
                let want = serde_json::to_value(kind).unwrap_or_default();
                return Err(bad(format!(
                    "`{}` must be of type {}",
                    self.name,
                    want.as_str().unwrap_or("?")
                )));
            }
        };
        if let Some(number) = value.as_f64()
            && (self.min.is_some_and(|min| number < min)
                || self.max.is_some_and(|max| number > max))
        {
            return Err(bad(format!(
                "`{}` must be between {} and {}",
                self.name,
                self.min.map_or("-inf".into(), |v| v.to_string()),
                self.max.map_or("inf".into(), |v| v.to_string())
            )));
        }
        if let Some(choices) = &self.choices
            && !choices.contains(&text)
        {
            return Err(bad(format!(
                "`{}` must be one of: {}",
                self.name,
                choices.join(", ")
            )));
        }
        Ok(text)
    }
}

/// The `{name}` placeholders of one argv element.
fn placeholders(element: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = element;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) => {
                let name = &after[..end];
                if valid_name(name) {
                    out.push(name);
                }
                rest = &after[end + 1..];
            }
            None => break,
        }
    }
    out
}

#[cfg(test)]
mod tests;
