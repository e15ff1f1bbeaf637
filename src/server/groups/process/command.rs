//! The command body of `shell`, `shell_stream` and `process_start`:
//! `{cmd, args?, cwd?, env?, timeout?, stdin?}` (plus `tag?` to start a process). `cmd`
//! alone is a shell line run by `/bin/sh -c`; `cmd` with `args` (possibly empty) runs the
//! program directly, never through a shell. Read, judged by the guards of `launch.rs`, and
//! turned into the supervisor's spec here, once for the three routes.

use crate::error::{ApiError, Code};
use crate::server::AppState;
use crate::server::auth::Identity;
use crate::server::launch;
use crate::services::exec_rules::CommandLine;
use crate::services::supervisor::{Label, Limits, Spec, Stdin};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// A shell's time limit unless the body gives one.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest time limit a body may ask for.
pub const MAX_TIMEOUT_S: f64 = 3600.0;
/// The shell that runs a `cmd` given without `args`.
const SHELL: &str = "/bin/sh";

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CommandBody {
    /// A shell line (run by `/bin/sh -c`), or the program when `args` is given.
    #[schemars(required, with = "String", length(min = 1))]
    pub cmd: Option<String>,
    /// The program's arguments: with them `cmd` runs directly, never through a shell.
    pub args: Option<Vec<String>>,
    /// The working directory (default: the server's).
    #[schemars(length(min = 1))]
    pub cwd: Option<String>,
    /// Variables over the child's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Seconds.
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 3600))]
    pub timeout: Option<f64>,
    /// Written to the program's stdin.
    pub stdin: Option<String>,
}

/// `process_start`'s body: the command body and a label.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[schemars(rename = "ProcessStartBody")]
#[serde(deny_unknown_fields)]
pub struct StartBody {
    /// A shell line (run by `/bin/sh -c`), or the program when `args` is given.
    #[schemars(required, with = "String", length(min = 1))]
    pub cmd: Option<String>,
    /// The program's arguments: with them `cmd` runs directly, never through a shell.
    pub args: Option<Vec<String>>,
    /// The working directory (default: the server's).
    #[schemars(length(min = 1))]
    pub cwd: Option<String>,
    /// Variables over the child's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Seconds (default: no limit).
    #[schemars(extend("exclusiveMinimum" = 0, "maximum" = 3600))]
    pub timeout: Option<f64>,
    /// Written to stdin first; stdin stays open for `process_stdin`.
    pub stdin: Option<String>,
    /// A label kept with the record.
    pub tag: Option<String>,
}

impl StartBody {
    pub fn split(self) -> (CommandBody, Option<String>) {
        let StartBody {
            cmd,
            args,
            cwd,
            env,
            timeout,
            stdin,
            tag,
        } = self;
        (
            CommandBody {
                cmd,
                args,
                cwd,
                env,
                timeout,
                stdin,
            },
            tag,
        )
    }
}

/// A judged command, ready to start.
pub struct Prepared {
    pub spec: Spec,
    pub label: Label,
    /// Written to stdin before anything else (a process keeps its stdin open after it).
    pub stdin: Option<String>,
}

/// How the starting route treats the time limit and stdin.
pub struct Mode {
    /// The limit when the body gives none (`None`: no limit).
    pub default_timeout: Option<Duration>,
    /// Stdin stays open after the body's `stdin` (for `process_stdin`).
    pub keep_stdin_open: bool,
}

/// Reads `body`, judges it for `identity` (cwd, env, program) and builds the spec.
pub fn prepare(
    app: &AppState,
    identity: &Identity,
    body: CommandBody,
    tag: Option<String>,
    mode: Mode,
) -> Result<Prepared, ApiError> {
    let Some(cmd) = body.cmd else {
        return Err(ApiError::new(
            Code::CommandInvalid,
            "`cmd` is required: a shell line, or a program with `args`",
        )
        .with_param("cmd"));
    };
    let timeout = match body.timeout {
        None => mode.default_timeout,
        Some(t) if t.is_finite() && t > 0.0 && t <= MAX_TIMEOUT_S => {
            Some(Duration::from_secs_f64(t))
        }
        Some(t) => {
            return Err(ApiError::new(
                Code::InvalidRequest,
                format!("`timeout` {t} is out of range: seconds, more than 0 and at most 3600"),
            )
            .with_param("timeout"));
        }
    };
    let cwd = launch::working_dir(app, body.cwd.as_deref())?;
    let env = launch::child_env(app, &body.env)?;
    let command = match &body.args {
        Some(args) => CommandLine::Direct {
            program: cmd.clone(),
            args: args.clone(),
        },
        None => CommandLine::Shell(cmd.clone()),
    };
    launch::admit_command(app, identity, &command, &env, &cwd)?;
    let (program, args) = match command {
        // The file the guard judged, by its full path: what is judged is what runs, and a
        // full path lets the spawn skip the `PATH` search (a faster spawn, too).
        CommandLine::Direct { program, args } => {
            let full = launch::program_path(&program, &env, &cwd).unwrap_or_else(|| program.into());
            (full.display().to_string(), args)
        }
        CommandLine::Shell(line) => (SHELL.to_owned(), vec!["-c".to_owned(), line]),
    };
    let stdin = match (&body.stdin, mode.keep_stdin_open) {
        (_, true) => Stdin::Stream,
        (Some(text), false) => Stdin::Bytes(text.clone().into_bytes()),
        (None, false) => Stdin::None,
    };
    let spec = Spec {
        program,
        args,
        cwd: Some(cwd),
        env,
        stdin,
        limits: Limits {
            timeout,
            output_bytes: app.settings.exec.output_bytes(),
            ..Limits::default()
        },
        join_cgroup: Vec::new(),
        server_tool: false,
        enter: None,
    };
    let label = Label {
        tag: tag.unwrap_or_default(),
        cmd,
        args: body.args,
    };
    Ok(Prepared {
        spec,
        label,
        stdin: body.stdin.filter(|_| mode.keep_stdin_open),
    })
}
