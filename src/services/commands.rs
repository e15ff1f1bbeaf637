//! Named commands declared in `template.yaml`: typed arguments fill an argv template and
//! the program runs directly (never through a shell), so an argument can never become
//! shell syntax.

use crate::services::child_env::ChildEnv;
use crate::services::supervisor;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::path::PathBuf;
use std::time::Duration;

pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
pub const OUTPUT_CAP_BYTES: usize = 1024 * 1024;

/// A named command as declared in `template.yaml` (`commands:`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandEntry {
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The program and its arguments; `{arg}` placeholders are filled per argument, never
    /// through a shell.
    pub argv: Vec<String>,
    #[serde(default)]
    pub args: Vec<CommandArgEntry>,
    pub timeout_secs: Option<u64>,
    pub cwd: Option<PathBuf>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Scopes needed on top of the endpoint's `commands:run`.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// One typed argument of a declared command.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandArgEntry {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: ArgKind,
    #[serde(default)]
    pub required: bool,
    #[serde(default)]
    pub description: String,
    pub default: Option<Value>,
    #[serde(rename = "enum")]
    pub choices: Option<Vec<String>>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub max_length: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ArgKind {
    String,
    Integer,
    Number,
    Boolean,
}

/// Declarations that cannot be used, naming the key (`commands[0].argv: ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeclarationError(pub String);

impl fmt::Display for DeclarationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeclarationError {}

/// Why a call of a named command did not run.
#[derive(Debug)]
pub enum CommandError {
    /// The caller passed an argument the command does not declare.
    UnknownArgument { command: String, arg: String },
    /// A required argument without a default is missing.
    MissingArgument { command: String, arg: String },
    /// An argument's value is refused (type, length, range, choices, NUL byte).
    BadArgument { arg: String, reason: String },
    /// The program could not be started.
    Unavailable {
        command: String,
        program: String,
        source: std::io::Error,
    },
}

impl CommandError {
    /// The argument at fault, when there is one.
    pub fn arg(&self) -> Option<&str> {
        match self {
            CommandError::UnknownArgument { arg, .. }
            | CommandError::MissingArgument { arg, .. }
            | CommandError::BadArgument { arg, .. } => Some(arg),
            CommandError::Unavailable { .. } => None,
        }
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::UnknownArgument { command, arg } => {
                write!(f, "`{command}` takes no argument `{arg}`")
            }
            CommandError::MissingArgument { command, arg } => {
                write!(f, "`{command}` needs the argument `{arg}`")
            }
            CommandError::BadArgument { reason, .. } => f.write_str(reason),
            CommandError::Unavailable {
                command,
                program,
                source,
            } => write!(
                f,
                "command `{command}` could not start `{program}`: {source}"
            ),
        }
    }
}

impl std::error::Error for CommandError {}

/// What a call of a named command did: the argv it ran and how the program ended.
#[derive(Debug)]
pub struct Ran {
    pub name: String,
    pub argv: Vec<String>,
    pub outcome: supervisor::Outcome,
}

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
    pub fn from_entries(entries: Vec<CommandEntry>) -> Result<CommandRegistry, DeclarationError> {
        let mut names = HashSet::new();
        let mut commands = Vec::new();
        for (i, entry) in entries.into_iter().enumerate() {
            let spec = CommandSpec::from_entry(&format!("commands[{i}]"), entry)?;
            if !names.insert(spec.name.clone()) {
                return Err(DeclarationError(format!(
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
    fn from_entry(key: &str, entry: CommandEntry) -> Result<CommandSpec, DeclarationError> {
        let fail = |m: String| Err(DeclarationError(m));
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
    pub fn render(&self, given: &Map<String, Value>) -> Result<Vec<String>, CommandError> {
        for key in given.keys() {
            if !self.args.iter().any(|a| &a.name == key) {
                return Err(CommandError::UnknownArgument {
                    command: self.name.clone(),
                    arg: key.clone(),
                });
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
                    return Err(CommandError::MissingArgument {
                        command: self.name.clone(),
                        arg: arg.name.clone(),
                    });
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

    pub async fn run(&self, argv: Vec<String>, base: &ChildEnv) -> Result<Ran, CommandError> {
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
            join_cgroup: Vec::new(),
            server_tool: false,
            enter: None,
        };
        let outcome = supervisor::run(&spec)
            .await
            .map_err(|source| CommandError::Unavailable {
                command: self.name.clone(),
                program,
                source,
            })?;
        Ok(Ran {
            name: self.name.clone(),
            argv,
            outcome,
        })
    }
}

impl ArgSpec {
    fn from_entry(key: &str, entry: CommandArgEntry) -> Result<ArgSpec, DeclarationError> {
        if !valid_name(&entry.name) {
            return Err(DeclarationError(format!(
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
                .map_err(|e| DeclarationError(format!("{key}.default: {e}")))?;
        }
        Ok(spec)
    }

    /// The argument's text for the argv, or why it is refused.
    fn check(&self, value: &Value) -> Result<String, CommandError> {
        let bad = |reason: String| CommandError::BadArgument {
            arg: self.name.clone(),
            reason,
        };
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
