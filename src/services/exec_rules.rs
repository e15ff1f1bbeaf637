//! The command and process guard: which programs a caller may start (shells, processes,
//! terminals, code runs) and which variables it may hand them. One judge for every route
//! that starts a child; it knows nothing of HTTP and answers with [`ExecRefusal`].
//!
//! A program is judged by the name it is called by *and* by the file that would actually
//! run (the name resolved on the child's `PATH`, links followed), so a link named `x` to
//! `/bin/rm` is `rm`. A shell line is split into the simple commands it runs (after `;`,
//! `&&`, `||`, `|`, `&`, newlines, `(`, `{`, `` ` `` and `$(`), leading assignments and
//! redirections skipped, and wrappers that run their arguments as a command (`env`, `sudo`,
//! `nohup`, `exec`, `command`, `time`, `nice`, `timeout`, `stdbuf`, `xargs`, `sh -c` and the
//! other shells' `-c`) unwrapped, so `env rm`, `sudo rm` and `sh -c 'rm x'` are all `rm`.
//!
//! What a shell line cannot promise: a program name built at run time (`$cmd`, `` `...` ``,
//! `eval`, `source`, a function or alias, a script that runs other programs, a `PATH`
//! changed by the line itself). With an allow list such a line is refused, since the guard
//! cannot see what it runs; with only a deny list it is let through, since a deny list
//! names what is refused and nothing more. Operators who need a hard boundary give an
//! allow list and have clients send `cmd` with `args` (run directly, never through a shell).

use crate::services::search_path::resolve;
use globset::{Glob, GlobMatcher};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// The longest command line, program or argument accepted.
pub const MAX_COMMAND_BYTES: usize = 64 * 1024;

/// Programs refused unless the operator says otherwise (`process.deny_programs`): they leave
/// the process group the server ends a child with, or run as another user than the one the
/// guards judge for.
pub const DEFAULT_DENIED_PROGRAMS: &[&str] = &[
    "setsid",
    "daemonize",
    "start-stop-daemon",
    "sudo",
    "su",
    "doas",
    "pkexec",
];

/// Shell builtins an allow list admits without naming them: they start no program and
/// change nothing outside the shell (a line such as `cd src && make` needs only `make`).
const HARMLESS_BUILTINS: &[&str] = &[
    "cd", "echo", "printf", "true", "false", "test", "[", "pwd", "exit", ":",
];

/// The operator's rules, as written in `template.yaml` (`process:`).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessRules {
    /// When given, only programs matching an entry may run; an entry may ask for scopes.
    pub allow_commands: Option<Vec<AllowEntry>>,
    /// Programs refused (`command_not_allowed`), whatever the allow list says.
    #[serde(default)]
    pub deny_commands: Vec<String>,
    /// Programs the process guard refuses (`process_denied`); default
    /// [`DEFAULT_DENIED_PROGRAMS`].
    pub deny_programs: Option<Vec<String>>,
    /// When given, only variables matching an entry may be set (`env_var_not_allowed`).
    pub allow_env: Option<Vec<String>>,
    /// Variables refused besides the built-in rule (`env_var_denied`).
    #[serde(default)]
    pub deny_env: Vec<String>,
    /// Bytes kept of each of stdout and stderr: a shell's capped answer, a process's
    /// replay ring. Default 1 MiB.
    pub output_bytes: Option<usize>,
    /// The user every child runs as (`nobody`, `65534`, `65534:65534`), so that none can
    /// read the server's files, memory or environment; the server must run as root to use
    /// it. Default: the server's own user. See [`crate::services::child_user`].
    pub run_as: Option<String>,
}

/// An allow-list entry: a pattern, or a pattern and the scopes a caller needs to use it.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum AllowEntry {
    Pattern(String),
    Scoped(ScopedEntry),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScopedEntry {
    pub command: String,
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// A program pattern: a glob on the program's name (`git`, `python3*`), or, when it holds
/// a `/`, on the program's full path (`/usr/bin/*`).
#[derive(Debug, Clone)]
struct Pattern {
    text: String,
    matcher: GlobMatcher,
    on_path: bool,
}

impl Pattern {
    fn new(text: &str, section: &str) -> Result<Pattern, String> {
        let glob = Glob::new(text).map_err(|e| format!("{section}: `{text}`: {e}"))?;
        Ok(Pattern {
            text: text.to_owned(),
            matcher: glob.compile_matcher(),
            on_path: text.contains('/'),
        })
    }

    fn matches(&self, program: &Program) -> bool {
        program.names().any(|(name, path)| {
            if self.on_path {
                path.is_some_and(|p| self.matcher.is_match(p))
            } else {
                self.matcher.is_match(name)
            }
        })
    }
}

#[derive(Debug, Clone)]
struct Allowed {
    pattern: Pattern,
    scopes: Vec<String>,
}

/// The rules, compiled.
#[derive(Debug, Clone)]
pub struct ExecRules {
    allow: Option<Vec<Allowed>>,
    deny: Vec<Pattern>,
    denied_programs: Vec<Pattern>,
    allow_env: Option<Vec<GlobMatcher>>,
    deny_env: Vec<(String, GlobMatcher)>,
    output_bytes: usize,
}

impl Default for ExecRules {
    fn default() -> ExecRules {
        ExecRules::from_section(&ProcessRules::default()).expect("the defaults are valid")
    }
}

/// A command as a caller sends it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandLine {
    /// Run by `/bin/sh -c`.
    Shell(String),
    /// Run directly, never through a shell.
    Direct { program: String, args: Vec<String> },
}

/// What the guard refuses, and why (the layer above maps each to its error row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecRefusal {
    /// A shell line that is empty, too long, has a NUL byte or cannot be parsed.
    CommandInvalid(String),
    /// A program or argument that is empty, too long, has a NUL byte, or names no program.
    ProcessInvalid(String),
    /// `deny_commands`, or an allow list with no entry for the program.
    NotAllowed { program: String, why: String },
    /// Allow entries match the program, but each asks for a scope the caller lacks.
    ScopeRequired {
        program: String,
        scopes: Vec<String>,
    },
    /// `deny_programs` refuses the program.
    ProcessDenied { program: String, why: String },
    /// A variable the built-in rule or `deny_env` refuses.
    EnvDenied { name: String, why: String },
    /// A variable not on `allow_env`.
    EnvNotAllowed { name: String },
    /// A malformed name or value.
    EnvInvalid { name: String, why: String },
}

impl fmt::Display for ExecRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExecRefusal::CommandInvalid(why) => write!(f, "invalid command: {why}"),
            ExecRefusal::ProcessInvalid(why) => write!(f, "invalid program: {why}"),
            ExecRefusal::NotAllowed { program, why } => {
                write!(f, "the command `{program}` is not allowed: {why}")
            }
            ExecRefusal::ScopeRequired { program, scopes } => write!(
                f,
                "the command `{program}` needs one of the scopes {} that the caller does not hold",
                scopes
                    .iter()
                    .map(|s| format!("`{s}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ExecRefusal::ProcessDenied { program, why } => {
                write!(f, "the program `{program}` is refused: {why}")
            }
            ExecRefusal::EnvDenied { name, why } => {
                write!(f, "the variable `{name}` is refused: {why}")
            }
            ExecRefusal::EnvNotAllowed { name } => write!(
                f,
                "the variable `{name}` is not on the operator's allow list (`process.allow_env`)"
            ),
            ExecRefusal::EnvInvalid { name, why } => {
                write!(f, "invalid environment variable `{name}`: {why}")
            }
        }
    }
}

impl std::error::Error for ExecRefusal {}

impl ExecRules {
    pub fn from_section(section: &ProcessRules) -> Result<ExecRules, String> {
        let patterns = |list: &[String], name: &str| -> Result<Vec<Pattern>, String> {
            list.iter().map(|p| Pattern::new(p, name)).collect()
        };
        let allow = match &section.allow_commands {
            None => None,
            Some(entries) => Some(
                entries
                    .iter()
                    .map(|entry| {
                        let (text, scopes) = match entry {
                            AllowEntry::Pattern(p) => (p.as_str(), Vec::new()),
                            AllowEntry::Scoped(s) => (s.command.as_str(), s.scopes.clone()),
                        };
                        Ok(Allowed {
                            pattern: Pattern::new(text, "process.allow_commands")?,
                            scopes,
                        })
                    })
                    .collect::<Result<Vec<_>, String>>()?,
            ),
        };
        let denied_programs = match &section.deny_programs {
            Some(list) => patterns(list, "process.deny_programs")?,
            None => DEFAULT_DENIED_PROGRAMS
                .iter()
                .map(|p| Pattern::new(p, "process.deny_programs"))
                .collect::<Result<_, _>>()?,
        };
        let env_glob = |p: &String, name: &str| {
            Glob::new(&p.to_ascii_uppercase())
                .map(|g| g.compile_matcher())
                .map_err(|e| format!("{name}: `{p}`: {e}"))
        };
        let allow_env = match &section.allow_env {
            None => None,
            Some(list) => Some(
                list.iter()
                    .map(|p| env_glob(p, "process.allow_env"))
                    .collect::<Result<_, _>>()?,
            ),
        };
        let deny_env = section
            .deny_env
            .iter()
            .map(|p| Ok((p.clone(), env_glob(p, "process.deny_env")?)))
            .collect::<Result<_, String>>()?;
        let output_bytes = match section.output_bytes {
            Some(0) => return Err("process.output_bytes: must be at least 1".into()),
            Some(n) => n,
            None => crate::services::supervisor::OUTPUT_BYTES,
        };
        Ok(ExecRules {
            allow,
            deny: patterns(&section.deny_commands, "process.deny_commands")?,
            denied_programs,
            allow_env,
            deny_env,
            output_bytes,
        })
    }

    /// Bytes kept of each output stream.
    pub fn output_bytes(&self) -> usize {
        self.output_bytes
    }

    /// What `/capabilities` shows of the rules (patterns, never variable values).
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "allow_commands": self.allow.as_ref().map(|a| a.iter().map(|e| serde_json::json!({
                "command": e.pattern.text, "scopes": e.scopes,
            })).collect::<Vec<_>>()),
            "deny_commands": self.deny.iter().map(|p| &p.text).collect::<Vec<_>>(),
            "deny_programs": self.denied_programs.iter().map(|p| &p.text).collect::<Vec<_>>(),
            "output_bytes": self.output_bytes,
        })
    }

    /// Judges a command for a caller holding the scopes `holds` admits. `search_path` is the
    /// `PATH` the child will get and `cwd` its working directory (to find the file a name
    /// runs).
    pub fn judge(
        &self,
        command: &CommandLine,
        holds: &dyn Fn(&str) -> bool,
        search_path: &str,
        cwd: &Path,
    ) -> Result<(), ExecRefusal> {
        let seen = match command {
            CommandLine::Shell(line) => {
                check_text(line, "the command line").map_err(ExecRefusal::CommandInvalid)?;
                if line.trim().is_empty() {
                    return Err(ExecRefusal::CommandInvalid(
                        "`cmd` is empty: give a shell line, or a program with `args`".into(),
                    ));
                }
                shell_seen(line).map_err(ExecRefusal::CommandInvalid)?
            }
            CommandLine::Direct { program, args } => {
                check_text(program, "the program").map_err(ExecRefusal::ProcessInvalid)?;
                if program.trim().is_empty() {
                    return Err(ExecRefusal::ProcessInvalid("`cmd` is empty".into()));
                }
                for (i, arg) in args.iter().enumerate() {
                    check_text(arg, &format!("`args[{i}]`"))
                        .map_err(ExecRefusal::ProcessInvalid)?;
                }
                let mut words = vec![program.clone()];
                words.extend(args.iter().cloned());
                let mut seen = Seen::default();
                unwrap_words(&words, &mut seen, 0).map_err(ExecRefusal::ProcessInvalid)?;
                if resolve(program, search_path, cwd).is_none() {
                    return Err(ExecRefusal::ProcessInvalid(format!(
                        "no program `{program}` to run (not an executable file, nor found on PATH)"
                    )));
                }
                seen
            }
        };
        for (word, args) in &seen.programs {
            self.judge_program(word, args, holds, search_path, cwd)?;
        }
        if self.allow.is_some() {
            // A variable the line sets reaches what it runs as surely as a caller's `env`
            // (`MAKEFLAGS=--eval=... make`), so it meets the same rules.
            for (name, value) in &seen.assignments {
                self.judge_env([(name, value)])
                    .map_err(|refusal| ExecRefusal::NotAllowed {
                        program: format!("{name}=…"),
                        why: format!("the line sets a variable for what it runs: {refusal}"),
                    })?;
            }
        }
        Ok(())
    }

    fn judge_program(
        &self,
        word: &Word,
        args: &[String],
        holds: &dyn Fn(&str) -> bool,
        search_path: &str,
        cwd: &Path,
    ) -> Result<(), ExecRefusal> {
        let Word::Literal(name) = word else {
            return match &self.allow {
                Some(_) => Err(ExecRefusal::NotAllowed {
                    program: word.shown().to_owned(),
                    why: "the program is decided when the line runs, so the allow list cannot \
                          judge it; send `cmd` with `args` instead"
                        .into(),
                }),
                None => Ok(()),
            };
        };
        let program = Program::new(name, search_path, cwd);
        if let Some(p) = self.denied_programs.iter().find(|p| p.matches(&program)) {
            return Err(ExecRefusal::ProcessDenied {
                program: name.clone(),
                why: format!(
                    "`process.deny_programs` refuses `{}` (it leaves the process group the server \
                     stops children by, or changes the user the guards judge for)",
                    p.text
                ),
            });
        }
        if let Some(p) = self.deny.iter().find(|p| p.matches(&program)) {
            return Err(ExecRefusal::NotAllowed {
                program: name.clone(),
                why: format!("`process.deny_commands` lists `{}`", p.text),
            });
        }
        let Some(allow) = &self.allow else {
            return Ok(());
        };
        if HARMLESS_BUILTINS.contains(&name.as_str()) {
            return Ok(());
        }
        if let Some(why) = program
            .names()
            .find_map(|(name, _)| code_args::runs_code(name, args))
        {
            return Err(ExecRefusal::NotAllowed {
                program: name.clone(),
                why: why.into(),
            });
        }
        let matching: Vec<&Allowed> = allow
            .iter()
            .filter(|a| a.pattern.matches(&program))
            .collect();
        if matching.is_empty() {
            return Err(ExecRefusal::NotAllowed {
                program: name.clone(),
                why: "`process.allow_commands` has no entry for it".into(),
            });
        }
        if matching.iter().any(|a| a.scopes.iter().all(|s| holds(s))) {
            return Ok(());
        }
        let mut scopes: Vec<String> = matching.iter().flat_map(|a| a.scopes.clone()).collect();
        scopes.dedup();
        Err(ExecRefusal::ScopeRequired {
            program: name.clone(),
            scopes,
        })
    }

    /// Judges the variables a caller hands a child.
    pub fn judge_env<'a>(
        &self,
        vars: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) -> Result<(), ExecRefusal> {
        for (name, value) in vars {
            let invalid = |why: &str| ExecRefusal::EnvInvalid {
                name: name.clone(),
                why: why.into(),
            };
            if name.is_empty() {
                return Err(invalid("the name is empty"));
            }
            if !is_identifier(name) {
                return Err(invalid(
                    "a name is a letter or `_`, then letters, digits and `_` (no `=`, spaces or NUL)",
                ));
            }
            if value.contains('\0') {
                return Err(invalid("the value holds a NUL byte"));
            }
            if name.len() + value.len() > MAX_COMMAND_BYTES {
                return Err(invalid("the variable is over 64 KiB"));
            }
            if let Some(why) = super::env_rules::refused_env_name(name) {
                return Err(ExecRefusal::EnvDenied {
                    name: name.clone(),
                    why: why.into(),
                });
            }
            if super::env_rules::secret_value(value) {
                return Err(ExecRefusal::EnvDenied {
                    name: name.clone(),
                    why: "the value holds a password in a URL: secrets reach runtimes only \
                          through vault credentials"
                        .into(),
                });
            }
            let upper = name.to_ascii_uppercase();
            if let Some((pattern, _)) = self.deny_env.iter().find(|(_, m)| m.is_match(&upper)) {
                return Err(ExecRefusal::EnvDenied {
                    name: name.clone(),
                    why: format!("`process.deny_env` lists `{pattern}`"),
                });
            }
            // Under a command allow list a variable is refused unless `allow_env` names it:
            // what a listed program runs can depend on any variable it reads.
            let allowed = match (&self.allow_env, &self.allow) {
                (Some(allow_env), _) => allow_env.iter().any(|m| m.is_match(&upper)),
                (None, Some(_)) => false,
                (None, None) => true,
            };
            if !allowed {
                return Err(ExecRefusal::EnvNotAllowed { name: name.clone() });
            }
        }
        Ok(())
    }
}

fn check_text(text: &str, what: &str) -> Result<(), String> {
    if text.contains('\0') {
        return Err(format!("{what} holds a NUL byte"));
    }
    if text.len() > MAX_COMMAND_BYTES {
        return Err(format!("{what} is over 64 KiB"));
    }
    Ok(())
}

/// A program as named, and the file that name would run (links followed).
struct Program {
    name: String,
    resolved: Option<PathBuf>,
}

impl Program {
    fn new(name: &str, search_path: &str, cwd: &Path) -> Program {
        Program {
            name: name.to_owned(),
            resolved: resolve(name, search_path, cwd).and_then(|p| std::fs::canonicalize(p).ok()),
        }
    }

    /// (name, full path) pairs to match: the name as called, and the resolved file's.
    fn names(&self) -> impl Iterator<Item = (&str, Option<&Path>)> {
        let called = Path::new(&self.name)
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or(&self.name);
        let called_path = if self.name.contains('/') {
            Some(Path::new(&self.name))
        } else {
            self.resolved.as_deref()
        };
        let resolved = self.resolved.as_deref().map(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            (name, Some(p))
        });
        std::iter::once((called, called_path)).chain(resolved)
    }
}

/// A command word as the guard sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Word {
    /// Known before the line runs.
    Literal(String),
    /// Built when the line runs (`$x`, `` `...` ``, a glob): shown as written.
    Opaque(String),
}

impl Word {
    fn shown(&self) -> &str {
        match self {
            Word::Literal(s) | Word::Opaque(s) => s,
        }
    }
}

/// How deep `sh -c 'sh -c ...'` is followed before the line counts as invalid.
const MAX_NESTING: usize = 8;

/// What a command runs, as far as it can be seen: each program with its arguments, and the
/// variables the line itself sets (before a program, through `env`, or alone).
#[derive(Debug, Default)]
struct Seen {
    programs: Vec<(Word, Vec<String>)>,
    assignments: Vec<(String, String)>,
}

/// What a shell line runs, as far as it can be seen.
fn shell_seen(line: &str) -> Result<Seen, String> {
    let mut seen = Seen::default();
    shell_programs_into(line, &mut seen, 0)?;
    Ok(seen)
}

fn shell_programs_into(line: &str, seen: &mut Seen, depth: usize) -> Result<(), String> {
    if depth > MAX_NESTING {
        return Err("shells nested too deep to judge".into());
    }
    for command in split_commands(line)? {
        let words: Vec<(String, bool)> = command;
        if words.is_empty() {
            continue;
        }
        unwrap_tokens(&words, seen, depth)?;
    }
    Ok(())
}

/// A token: its text after quote removal, and whether it is known before the line runs.
type Token = (String, bool);

/// Splits a shell line into simple commands, each a list of tokens; a command substitution
/// or a subshell's contents are commands of their own.
fn split_commands(line: &str) -> Result<Vec<Vec<Token>>, String> {
    let mut commands: Vec<Vec<Token>> = vec![Vec::new()];
    let mut chars = line.chars().peekable();
    let mut word = String::new();
    let mut literal = true;
    let mut in_word = false;
    let end_word = |commands: &mut Vec<Vec<Token>>,
                    word: &mut String,
                    literal: &mut bool,
                    in_word: &mut bool| {
        if *in_word {
            commands
                .last_mut()
                .expect("one command")
                .push((std::mem::take(word), *literal));
        }
        *literal = true;
        *in_word = false;
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(c) => word.push(c),
                        None => return Err("a single quote is not closed".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(c) => word.push(c),
                            None => return Err("a double quote is not closed".into()),
                        },
                        Some(c) => {
                            if c == '$' || c == '`' {
                                literal = false;
                            }
                            word.push(c);
                        }
                        None => return Err("a double quote is not closed".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next()
                    && c != '\n'
                {
                    word.push(c);
                }
            }
            '#' if !in_word => {
                // A comment runs to the end of the line.
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                end_word(&mut commands, &mut word, &mut literal, &mut in_word);
                commands.push(Vec::new());
            }
            '$' if chars.peek() == Some(&'(') => {
                // `$(...)`: its contents run first, as commands of their own; the word it
                // stands in is decided at run time.
                chars.next();
                let arithmetic = chars.peek() == Some(&'(');
                let inner = take_balanced(&mut chars)?;
                // `$((1+1))` is arithmetic, not a command.
                if !arithmetic {
                    for command in split_commands(&inner)? {
                        commands.insert(commands.len() - 1, command);
                    }
                }
                in_word = true;
                literal = false;
                word.push_str("$(…)");
            }
            '`' => {
                let mut inner = String::new();
                loop {
                    match chars.next() {
                        Some('`') => break,
                        Some(c) => inner.push(c),
                        None => return Err("a backquote is not closed".into()),
                    }
                }
                for command in split_commands(&inner)? {
                    commands.insert(commands.len() - 1, command);
                }
                in_word = true;
                literal = false;
                word.push_str("`…`");
            }
            // `2>&1`, `<&0`: the `&` belongs to the redirection.
            '&' if in_word && (word.ends_with('>') || word.ends_with('<')) => word.push(c),
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                end_word(&mut commands, &mut word, &mut literal, &mut in_word);
                commands.push(Vec::new());
            }
            '{' | '}' if !in_word => commands.push(Vec::new()),
            c if c.is_whitespace() => {
                end_word(&mut commands, &mut word, &mut literal, &mut in_word)
            }
            c => {
                in_word = true;
                if matches!(c, '$' | '*' | '?' | '[') {
                    literal = false;
                }
                word.push(c);
            }
        }
    }
    end_word(&mut commands, &mut word, &mut literal, &mut in_word);
    commands.retain(|c| !c.is_empty());
    Ok(commands)
}

/// The text up to the `)` that closes an already opened `(` (quotes respected).
fn take_balanced(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) -> Result<String, String> {
    let mut depth = 1;
    let mut inner = String::new();
    let mut quote: Option<char> = None;
    for c in chars.by_ref() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(') => depth += 1,
            (None, ')') => {
                depth -= 1;
                if depth == 0 {
                    return Ok(inner);
                }
            }
            _ => {}
        }
        inner.push(c);
    }
    Err("a `$(` is not closed".into())
}

/// Words of a simple command after quote removal: skips assignments and redirections, then
/// follows wrappers to the program they run.
fn unwrap_tokens(tokens: &[Token], seen: &mut Seen, depth: usize) -> Result<(), String> {
    let mut i = 0;
    // Leading assignments (`A=1 cmd`) and redirections (`>out cmd`, `2> err cmd`).
    while i < tokens.len() {
        let (text, _) = &tokens[i];
        if is_assignment(text) {
            seen.assignments.push(split_assignment(text));
            i += 1;
        } else if let Some(rest) = redirection(text) {
            i += if rest.is_empty() { 2 } else { 1 };
        } else {
            break;
        }
    }
    let Some((first, literal)) = tokens.get(i) else {
        return Ok(());
    };
    if !literal {
        seen.programs
            .push((Word::Opaque(first.clone()), Vec::new()));
        return Ok(());
    }
    let words: Vec<String> = tokens[i..].iter().map(|(t, _)| t.clone()).collect();
    unwrap_words(&words, seen, depth)
}

/// `words[0]` is a program; a wrapper's wrapped command is judged too.
fn unwrap_words(words: &[String], seen: &mut Seen, depth: usize) -> Result<(), String> {
    if depth > MAX_NESTING {
        return Err("wrappers nested too deep to judge".into());
    }
    let Some(program) = words.first() else {
        return Ok(());
    };
    let rest = &words[1..];
    seen.programs
        .push((Word::Literal(program.clone()), rest.to_vec()));
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or(program);
    let wrapped: Option<&[String]> = match name {
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" => {
            // `sh -c LINE`: the line is judged as a line of its own.
            let flag = rest.iter().position(|w| {
                w == "-c" || (w.starts_with('-') && !w.starts_with("--") && w.contains('c'))
            });
            if let Some(line) = flag.and_then(|at| rest.get(at + 1)) {
                return shell_programs_into(line, seen, depth + 1);
            }
            None
        }
        "env" => {
            let inner = skip_while(rest, |w| w.starts_with('-') || is_assignment(w));
            let set = rest[..rest.len() - inner.len()].iter();
            seen.assignments.extend(
                set.filter(|w| is_assignment(w))
                    .map(|w| split_assignment(w)),
            );
            Some(inner)
        }
        "sudo" | "doas" => Some(skip_options(
            rest,
            &["-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U"],
        )),
        "nohup" | "exec" | "command" | "builtin" | "time" | "setsid" | "xargs" => {
            Some(skip_while(rest, |w| w.starts_with('-')))
        }
        "nice" => Some(skip_options(rest, &["-n"])),
        "stdbuf" => Some(skip_while(rest, |w| w.starts_with('-'))),
        "timeout" => {
            let after = skip_options(rest, &["-s", "-k", "--signal", "--kill-after"]);
            Some(after.get(1..).unwrap_or(&[]))
        }
        _ => None,
    };
    match wrapped {
        Some(inner) if !inner.is_empty() => unwrap_words(inner, seen, depth + 1),
        _ => Ok(()),
    }
}

fn skip_while(words: &[String], skip: impl Fn(&str) -> bool) -> &[String] {
    let at = words.iter().position(|w| !skip(w)).unwrap_or(words.len());
    &words[at..]
}

/// Skips options; those in `with_value` take the next word as their value.
fn skip_options<'a>(words: &'a [String], with_value: &[&str]) -> &'a [String] {
    let mut i = 0;
    while let Some(w) = words.get(i) {
        if w == "--" {
            return &words[i + 1..];
        }
        if !w.starts_with('-') {
            break;
        }
        i += if with_value.contains(&w.as_str()) {
            2
        } else {
            1
        };
    }
    words.get(i..).unwrap_or(&[])
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| is_identifier(name))
}

/// `NAME=VALUE` as its two halves (`word` is an assignment).
fn split_assignment(word: &str) -> (String, String) {
    let (name, value) = word.split_once('=').unwrap_or((word, ""));
    (name.to_owned(), value.to_owned())
}

/// A name a shell can export: a letter or `_`, then letters, digits and `_`.
fn is_identifier(name: &str) -> bool {
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with(|c: char| c.is_ascii_digit())
}

/// For a redirection word (`>`, `2>>`, `<in`, `&>out`), what follows the operator in the
/// same word.
fn redirection(word: &str) -> Option<&str> {
    let body = word.trim_start_matches(|c: char| c.is_ascii_digit() || c == '&');
    let rest = body.strip_prefix(['>', '<'])?;
    Some(rest.trim_start_matches(['>', '<', '&', '|']))
}

mod code_args;
#[cfg(test)]
mod tests;
