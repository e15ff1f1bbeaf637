//! Code runs (`POST /code/run`): a snippet in one of a few interpreters, run as a child of
//! the supervisor. A run without a context is one interpreter reading the snippet from its
//! stdin and ending; a run in a context goes to a long-lived interpreter that keeps its
//! state between runs (see `contexts.rs` for its driver protocol). This service knows the
//! languages and how to drive them; the route judges the program and its environment.

pub mod contexts;
mod run_env;

use crate::services::supervisor::{self, Limits, Spec, Stdin};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// One language a snippet may be written in.
#[derive(Debug)]
pub struct Language {
    pub name: &'static str,
    /// The interpreter, found on the child's `PATH`.
    pub program: &'static str,
    /// Arguments that make it read the program from stdin.
    pub stdin_args: &'static [&'static str],
    /// Arguments that print its version (`None`: it has no such option).
    pub version_args: Option<&'static [&'static str]>,
    /// The driver of a context: arguments that run the driver loop.
    pub driver_args: &'static [&'static str],
}

/// Every language `code_run` knows, in the order `GET /code/languages` lists them.
pub const LANGUAGES: &[Language] = &[
    Language {
        name: "python3",
        program: "python3",
        stdin_args: &["-"],
        version_args: Some(&["--version"]),
        driver_args: &["-u", "-c", contexts::PYTHON_DRIVER],
    },
    Language {
        name: "bash",
        program: "bash",
        stdin_args: &["-s"],
        version_args: Some(&["--version"]),
        driver_args: &["-c", contexts::SHELL_DRIVER],
    },
    Language {
        name: "sh",
        program: "sh",
        stdin_args: &["-s"],
        version_args: None,
        driver_args: &["-c", contexts::SHELL_DRIVER],
    },
    Language {
        name: "node",
        program: "node",
        stdin_args: &["-"],
        version_args: Some(&["--version"]),
        driver_args: &["-e", contexts::NODE_DRIVER],
    },
];

pub fn language(name: &str) -> Option<&'static Language> {
    LANGUAGES.iter().find(|l| l.name == name)
}

pub fn names() -> impl Iterator<Item = &'static str> {
    LANGUAGES.iter().map(|l| l.name)
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunOutcome {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    /// `None` when the run timed out (or its context's interpreter died by a signal).
    pub exit_code: Option<i32>,
    pub duration: Duration,
    pub timed_out: bool,
    /// Output past the cap was dropped.
    pub truncated: bool,
}

/// What a run needs besides the snippet: the interpreter's full path, where it runs,
/// its environment and its limits.
#[derive(Debug, Clone)]
pub struct Launch {
    pub program: PathBuf,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub output_bytes: usize,
    /// How the interpreter is started where it must run (a sandbox's machine and cgroup);
    /// `None`: as it is, in `cwd`.
    pub confine: Option<Confine>,
}

/// Given the interpreter and its arguments, what to spawn instead: a spec with its program,
/// arguments, folder (`None`: the program sets its own) and the cgroup it joins; the rest
/// is filled in by the caller.
#[derive(Clone)]
pub struct Confine(pub Arc<dyn Fn(String, Vec<String>) -> Spec + Send + Sync>);

impl std::fmt::Debug for Confine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Confine")
    }
}

impl Launch {
    /// The interpreter run with `args`, in its environment: the spec without stdin and
    /// limits.
    pub fn command(&self, args: Vec<String>) -> Spec {
        let program = self.program.display().to_string();
        let spawned = match &self.confine {
            Some(confine) => (confine.0)(program, args),
            None => Spec {
                program,
                args,
                cwd: Some(self.cwd.clone()),
                ..Spec::default()
            },
        };
        Spec {
            env: self.env.clone(),
            ..spawned
        }
    }
}

/// The supervisor's spec of [`run_once`], for a caller that adjusts it before it runs
/// (the engine makes it join its sandbox's cgroup first).
pub fn once_spec(lang: &Language, launch: &Launch, code: &str) -> Spec {
    Spec {
        stdin: Stdin::Bytes(code.as_bytes().to_vec()),
        limits: Limits {
            timeout: Some(launch.timeout),
            output_bytes: launch.output_bytes,
            ..Limits::default()
        },
        ..launch.command(lang.stdin_args.iter().map(|a| a.to_string()).collect())
    }
}

/// Runs `code` once: the interpreter reads it from stdin and exits.
pub async fn run_once(lang: &Language, launch: &Launch, code: &str) -> std::io::Result<RunOutcome> {
    let outcome = supervisor::run(&once_spec(lang, launch, code)).await?;
    Ok(RunOutcome {
        truncated: outcome.stdout.truncated || outcome.stderr.truncated,
        stdout: outcome.stdout.bytes,
        stderr: outcome.stderr.bytes,
        exit_code: outcome.exit_code,
        duration: outcome.duration,
        timed_out: outcome.timed_out,
    })
}

/// The interpreter's version line (`Python 3.11.7`, `v20.20.2`, the first line of
/// `bash --version`), or `None` when it prints none within 5 s.
pub async fn version(lang: &Language, launch: &Launch) -> Option<String> {
    let args = lang.version_args?;
    let spec = Spec {
        stdin: Stdin::None,
        limits: Limits {
            timeout: Some(Duration::from_secs(5)),
            output_bytes: 4096,
            ..Limits::default()
        },
        ..launch.command(args.iter().map(|a| a.to_string()).collect())
    };
    let outcome = supervisor::run(&spec).await.ok()?;
    // Old Pythons print their version on stderr.
    [outcome.stdout.text(), outcome.stderr.text()]
        .iter()
        .find_map(|text| {
            text.lines()
                .next()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_owned)
        })
}

#[cfg(test)]
mod tests;
