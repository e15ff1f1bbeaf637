//! Contexts: interpreters that keep their state between runs (`context_id`). A context is
//! one long-lived interpreter process on the supervisor, owned by one caller and one
//! language, started by the first run that names it. It runs a small driver loop that
//! reads one frame per run on its stdin, `<marker> <base64 of the code>[ <variables>]\n`
//! (the variables of that run only: [`super::run_env`]), runs the code
//! in one namespace that lives as long as the process (Python `exec` in one dict, shell
//! `eval` in the one shell, Node `vm.runInThisContext`), then writes `<marker> <status>\n`
//! on stdout and `<marker>\n` on stderr. The marker is random and new for every run, so
//! the code cannot end its run early by printing a marker it could not know; the output of
//! the run is what came before the marker on each stream.
//!
//! Bounds: one run at a time per context (the next waits); at most
//! [`MAX_PER_OWNER`] contexts per caller and [`MAX_CONTEXTS`] in all, the least recently
//! used closed to make room; a context idle for [`IDLE`] is closed; a run that times out
//! or an interpreter that exits (`exit()` in the code) closes it, and the next run starts
//! a fresh one. Closing a context stops its process group like any child.
//!
//! Those are the contexts a run starts by naming them (the server's `context_id`). A
//! context can also be managed explicitly ([`Contexts::create`], `list`, `restart`,
//! `delete`: the engine's code contexts): it gets a fresh id, and lives until it is
//! deleted or its owner closed ([`Contexts::close_owner`]). Such a context is never closed
//! for being idle nor to make room (its owner, a sandbox, pays for its processes like for
//! any other), and a run that times out or an interpreter that exits restarts it under the
//! same id (its state is lost, as after `restart`).

use super::{Language, Launch, RunOutcome};
use crate::services::supervisor::{Chunk, Limits, Process, Replay, Spec, Stdin, Stream};
use base64::Engine as _;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant, SystemTime};

/// Where a followed run's output goes as it is read ([`Contexts::run_in_followed`]).
pub type Follower = tokio::sync::mpsc::Sender<Chunk>;

/// How long the last output of a followed run may wait for a slow follower.
const LAST_SEND: Duration = Duration::from_secs(5);

/// Contexts one caller may hold at once.
pub const MAX_PER_OWNER: usize = 8;
/// Contexts the server holds at once.
pub const MAX_CONTEXTS: usize = 64;
/// A context not used for this long is closed.
pub const IDLE: Duration = Duration::from_secs(15 * 60);
/// The longest `context_id`.
pub const MAX_ID_LEN: usize = 64;

/// Reads frames, runs each in the one namespace `g`, reports the status.
pub const PYTHON_DRIVER: &str = r#"import sys, base64, traceback, os, json
g = {"__name__": "__main__", "__builtins__": __builtins__}
for line in sys.stdin.buffer:
    marker, _, rest = line.decode().strip().partition(" ")
    b64, _, b64env = rest.partition(" ")
    env = json.loads(base64.b64decode(b64env)) if b64env else {}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    status = 0
    try:
        exec(compile(base64.b64decode(b64).decode(), "<code>", "exec"), g)
    except SystemExit as e:
        status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        traceback.print_exc()
        status = 1
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    sys.stdout.flush()
    sys.stdout.write("%s %d\n" % (marker, status))
    sys.stdout.flush()
    sys.stderr.write(marker + "\n")
    sys.stderr.flush()
"#;

/// The shell's loop: `eval` keeps variables, functions and the directory in the shell.
pub const SHELL_DRIVER: &str = r#"while IFS=' ' read -r __svc_marker __svc_code __svc_env; do
__svc_restore=
if [ -n "$__svc_env" ]; then eval "$(printf '%s' "$__svc_env" | base64 -d)"; fi
eval "$(printf '%s' "$__svc_code" | base64 -d)"
__svc_status=$?
eval "$__svc_restore"
printf '%s %d\n' "$__svc_marker" "$__svc_status"
printf '%s\n' "$__svc_marker" >&2
done"#;

/// Node's loop: scripts run in this one global context, so globals and top-level
/// declarations stay (only synchronous work belongs to the run).
pub const NODE_DRIVER: &str = r#"const vm = require('vm');
globalThis.require = require;
const rl = require('readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const [marker, code64, env64] = line.split(' ');
  const code = Buffer.from(code64, 'base64').toString();
  const env = env64 ? JSON.parse(Buffer.from(env64, 'base64').toString()) : {};
  const saved = {};
  for (const k of Object.keys(env)) {
    saved[k] = Object.prototype.hasOwnProperty.call(process.env, k) ? process.env[k] : undefined;
    process.env[k] = env[k];
  }
  let status = 0;
  try { vm.runInThisContext(code, { filename: '<code>' }); }
  catch (e) { process.stderr.write((e && e.stack ? e.stack : String(e)) + '\n'); status = 1; }
  for (const k of Object.keys(saved)) {
    if (saved[k] === undefined) delete process.env[k]; else process.env[k] = saved[k];
  }
  process.stdout.write(marker + ' ' + status + '\n');
  process.stderr.write(marker + '\n');
});"#;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    owner: String,
    language: &'static str,
    id: String,
}

struct Context {
    process: Process,
    /// The variables it was started with (a later run may not ask for others).
    env: Vec<(String, String)>,
    /// Held for the length of a run: one at a time.
    turn: tokio::sync::Mutex<()>,
    last_used: Mutex<Instant>,
    /// Made by [`Contexts::create`]; `None` for a context a run started.
    pinned: Option<Pinned>,
}

/// What an explicitly made context is restarted from.
#[derive(Clone)]
struct Pinned {
    language: &'static Language,
    launch: Launch,
    created_at: SystemTime,
}

/// An explicitly made context, as [`Contexts::list`] shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextInfo {
    pub id: String,
    pub language: &'static str,
    pub cwd: PathBuf,
    pub created_at: SystemTime,
    /// Its interpreter's pid now (a restart changes it).
    pub pid: u32,
}

/// Why a context run failed before it ran.
#[derive(Debug)]
pub enum Error {
    /// `context_id` is malformed.
    BadId(String),
    /// The context was started with other variables.
    EnvMismatch,
    /// The interpreter could not be started or written to.
    Io(std::io::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::BadId(why) => f.write_str(why),
            Error::EnvMismatch => f.write_str(
                "the context was started with other variables: restart it, or use another id",
            ),
            Error::Io(e) => write!(f, "the interpreter failed: {e}"),
        }
    }
}

/// Every context, by owner, language and id.
#[derive(Default)]
pub struct Contexts {
    inner: Arc<Mutex<HashMap<Key, Arc<Context>>>>,
    sweeper: std::sync::OnceLock<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Why `id` is not a context id, or `None`.
pub fn invalid_id(id: &str) -> Option<String> {
    if id.is_empty() || id.len() > MAX_ID_LEN {
        return Some(format!("`context_id` is 1 to {MAX_ID_LEN} characters"));
    }
    if !id
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        return Some("`context_id` holds letters, digits, `_`, `-` and `.` only".into());
    }
    None
}

impl Contexts {
    /// How many contexts are open (all owners).
    pub fn len(&self) -> usize {
        lock(&self.inner).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Runs `code` in `owner`'s context `id` of `lang`, starting it if needed.
    pub async fn run(
        &self,
        owner: &str,
        id: &str,
        lang: &'static Language,
        launch: &Launch,
        code: &str,
    ) -> Result<RunOutcome, Error> {
        if let Some(why) = invalid_id(id) {
            return Err(Error::BadId(why));
        }
        self.start_sweeper();
        let key = Key {
            owner: owner.to_owned(),
            language: lang.name,
            id: id.to_owned(),
        };
        let context = self.get_or_start(&key, lang, launch)?;
        let _turn = context.turn.lock().await;
        *lock(&context.last_used) = Instant::now();
        let outcome = drive(&context, launch, code, None, None).await;
        *lock(&context.last_used) = Instant::now();
        let outcome = outcome.map_err(Error::Io)?;
        if outcome.timed_out || !context.process.is_running() {
            // Its state is gone or cannot be trusted: the next run starts afresh.
            self.remove(&key, &context);
        }
        Ok(outcome)
    }

    /// Starts a context of `lang` for `owner` under a fresh id; it lives until deleted.
    pub fn create(
        &self,
        owner: &str,
        lang: &'static Language,
        launch: &Launch,
    ) -> Result<ContextInfo, Error> {
        let created_at = SystemTime::now();
        let pinned = Pinned {
            language: lang,
            launch: launch.clone(),
            created_at,
        };
        let context = self.spawn(lang, launch, Some(pinned))?;
        let key = Key {
            owner: owner.to_owned(),
            language: lang.name,
            id: crate::services::ids::new("ctx"),
        };
        let info = ContextInfo {
            id: key.id.clone(),
            language: lang.name,
            cwd: launch.cwd.clone(),
            created_at,
            pid: context.process.pid(),
        };
        lock(&self.inner).insert(key, context);
        Ok(info)
    }

    /// `owner`'s explicitly made contexts, oldest first.
    pub fn list(&self, owner: &str) -> Vec<ContextInfo> {
        let mut infos: Vec<ContextInfo> = lock(&self.inner)
            .iter()
            .filter(|(k, _)| k.owner == owner)
            .filter_map(|(k, c)| info_of(k, c))
            .collect();
        infos.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        infos
    }

    /// `owner`'s explicitly made context `id`: its key and current interpreter.
    fn pinned(&self, owner: &str, id: &str) -> Option<(Key, Arc<Context>)> {
        lock(&self.inner)
            .iter()
            .find(|(k, c)| k.owner == owner && k.id == id && c.pinned.is_some())
            .map(|(k, c)| (k.clone(), c.clone()))
    }

    /// A new interpreter for context `id` (its state is lost; a run under way ends);
    /// `None` when `owner` has no such context.
    pub fn restart(&self, owner: &str, id: &str) -> Result<Option<ContextInfo>, Error> {
        let Some((key, old)) = self.pinned(owner, id) else {
            return Ok(None);
        };
        Ok(self
            .renew(&key, &old)?
            .and_then(|fresh| info_of(&key, &fresh)))
    }

    /// Replaces the pinned context `old` with a fresh interpreter under `key`; `None` when
    /// it was deleted meanwhile (it stays deleted).
    fn renew(&self, key: &Key, old: &Arc<Context>) -> Result<Option<Arc<Context>>, Error> {
        let Some(pinned) = old.pinned.clone() else {
            return Ok(None);
        };
        let _ = old
            .process
            .signal(crate::services::supervisor::Signal::Kill);
        let fresh = self.spawn(pinned.language, &pinned.launch, Some(pinned.clone()))?;
        let mut all = lock(&self.inner);
        Ok(match all.get(key) {
            // Dropping `fresh` ends it.
            None => None,
            // Renewed by another caller meanwhile: theirs stands.
            Some(now) if !Arc::ptr_eq(now, old) => Some(now.clone()),
            Some(_) => {
                all.insert(key.clone(), fresh.clone());
                Some(fresh)
            }
        })
    }

    /// Ends context `id`; `false` when `owner` has no such context.
    pub fn delete(&self, owner: &str, id: &str) -> bool {
        let Some((key, _)) = self.pinned(owner, id) else {
            return false;
        };
        // Dropping the last handle of its process kills it.
        lock(&self.inner).remove(&key).is_some()
    }

    /// Runs `code` in `owner`'s explicitly made context `id` within `timeout`, restarting
    /// its interpreter first if it ended; `None` when there is no such context. Answers the
    /// context's language with the outcome.
    pub async fn run_in(
        &self,
        owner: &str,
        id: &str,
        code: &str,
        timeout: Duration,
    ) -> Result<Option<(&'static Language, RunOutcome)>, Error> {
        self.run_in_with(owner, id, code, &BTreeMap::new(), timeout)
            .await
    }

    /// [`Contexts::run_in`] with variables set for this run only (names already checked).
    pub async fn run_in_with(
        &self,
        owner: &str,
        id: &str,
        code: &str,
        env: &BTreeMap<String, String>,
        timeout: Duration,
    ) -> Result<Option<(&'static Language, RunOutcome)>, Error> {
        self.run_pinned(owner, id, code, env, timeout, None).await
    }

    /// [`Contexts::run_in_with`] that also sends the run's output to `follower` as it is
    /// read (a streamed run), its end marker held back; the outcome still holds it all.
    /// A follower that is gone does not stop the run: it goes on to its end or timeout.
    pub async fn run_in_followed(
        &self,
        owner: &str,
        id: &str,
        code: &str,
        env: &BTreeMap<String, String>,
        timeout: Duration,
        follower: Follower,
    ) -> Result<Option<(&'static Language, RunOutcome)>, Error> {
        self.run_pinned(owner, id, code, env, timeout, Some(follower))
            .await
    }

    async fn run_pinned(
        &self,
        owner: &str,
        id: &str,
        code: &str,
        env: &BTreeMap<String, String>,
        timeout: Duration,
        follower: Option<Follower>,
    ) -> Result<Option<(&'static Language, RunOutcome)>, Error> {
        let Some((key, mut context)) = self.pinned(owner, id) else {
            return Ok(None);
        };
        if !context.process.is_running() {
            match self.renew(&key, &context)? {
                Some(fresh) => context = fresh,
                None => return Ok(None),
            }
        }
        let Some(pinned) = context.pinned.clone() else {
            return Ok(None);
        };
        let launch = Launch {
            timeout,
            ..pinned.launch.clone()
        };
        let _turn = context.turn.lock().await;
        *lock(&context.last_used) = Instant::now();
        let env = super::run_env::field(pinned.language, env);
        let outcome = drive(&context, &launch, code, env.as_deref(), follower)
            .await
            .map_err(Error::Io)?;
        *lock(&context.last_used) = Instant::now();
        Ok(Some((pinned.language, outcome)))
    }

    /// Ends every context of `owner` (its sandbox is gone).
    pub fn close_owner(&self, owner: &str) {
        let gone: Vec<Arc<Context>> = {
            let mut all = lock(&self.inner);
            let keys: Vec<Key> = all.keys().filter(|k| k.owner == owner).cloned().collect();
            keys.iter().filter_map(|k| all.remove(k)).collect()
        };
        for context in &gone {
            let _ = context
                .process
                .signal(crate::services::supervisor::Signal::Kill);
        }
    }

    /// The pids of `owner`'s running interpreters.
    pub fn pids(&self, owner: &str) -> Vec<u32> {
        lock(&self.inner)
            .iter()
            .filter(|(k, c)| k.owner == owner && c.process.is_running())
            .map(|(_, c)| c.process.pid())
            .collect()
    }

    fn get_or_start(
        &self,
        key: &Key,
        lang: &Language,
        launch: &Launch,
    ) -> Result<Arc<Context>, Error> {
        let mut all = lock(&self.inner);
        if let Some(found) = all.get(key) {
            if found.process.is_running() {
                if found.env != launch.env {
                    return Err(Error::EnvMismatch);
                }
                return Ok(found.clone());
            }
            all.remove(key);
        }
        make_room(&mut all, &key.owner);
        let context = self.spawn(lang, launch, None)?;
        all.insert(key.clone(), context.clone());
        Ok(context)
    }

    /// Starts an interpreter of `lang` running the driver loop.
    fn spawn(
        &self,
        lang: &Language,
        launch: &Launch,
        pinned: Option<Pinned>,
    ) -> Result<Arc<Context>, Error> {
        let spec = Spec {
            stdin: Stdin::Stream,
            limits: Limits {
                timeout: None,
                output_bytes: launch.output_bytes,
                ..Limits::default()
            },
            ..launch.command(lang.driver_args.iter().map(|a| a.to_string()).collect())
        };
        let process = Process::spawn(&spec).map_err(Error::Io)?;
        Ok(Arc::new(Context {
            process,
            env: launch.env.clone(),
            turn: tokio::sync::Mutex::new(()),
            last_used: Mutex::new(Instant::now()),
            pinned,
        }))
    }

    fn remove(&self, key: &Key, context: &Arc<Context>) {
        let mut all = lock(&self.inner);
        if all.get(key).is_some_and(|c| Arc::ptr_eq(c, context)) {
            all.remove(key);
        }
    }

    /// Closes idle contexts once a minute while the server runs (the task ends with the
    /// contexts).
    fn start_sweeper(&self) {
        self.sweeper.get_or_init(|| {
            let weak: Weak<Mutex<HashMap<Key, Arc<Context>>>> = Arc::downgrade(&self.inner);
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(60)).await;
                    let Some(inner) = weak.upgrade() else { return };
                    close_idle(&mut lock(&inner), Instant::now());
                }
            });
        });
    }
}

/// The record of a pinned context; `None` for one a run started.
fn info_of(key: &Key, context: &Context) -> Option<ContextInfo> {
    let pinned = context.pinned.as_ref()?;
    Some(ContextInfo {
        id: key.id.clone(),
        language: key.language,
        cwd: pinned.launch.cwd.clone(),
        created_at: pinned.created_at,
        pid: context.process.pid(),
    })
}

/// Drops contexts idle for [`IDLE`] (dropping a context stops its process).
fn close_idle(all: &mut HashMap<Key, Arc<Context>>, now: Instant) {
    all.retain(|_, c| {
        c.pinned.is_some()
            || c.turn.try_lock().is_err()
            || now.duration_since(*lock(&c.last_used)) < IDLE
    });
}

/// Closes the least recently used contexts until `owner` may open one more (explicitly
/// made contexts neither count nor are closed).
fn make_room(all: &mut HashMap<Key, Arc<Context>>, owner: &str) {
    close_idle(all, Instant::now());
    loop {
        let unpinned = || all.iter().filter(|(_, c)| c.pinned.is_none());
        let owned = unpinned().filter(|(k, _)| k.owner == owner).count();
        let full = if owned >= MAX_PER_OWNER {
            Some(owner)
        } else if unpinned().count() >= MAX_CONTEXTS {
            None
        } else {
            return;
        };
        let oldest = unpinned()
            .filter(|(k, _)| full.is_none_or(|o| k.owner == o))
            .min_by_key(|(_, c)| *lock(&c.last_used))
            .map(|(k, _)| k.clone());
        match oldest {
            Some(k) => {
                all.remove(&k);
            }
            None => return,
        }
    }
}

/// A fresh marker: 128 random bits, unknowable to the code.
fn marker() -> String {
    format!("__svc_end_{}", uuid::Uuid::new_v4().simple())
}

/// A followed run's follower and how far it has been sent each stream (offsets in all the
/// interpreter ever wrote).
struct Following {
    to: Follower,
    stdout: u64,
    stderr: u64,
}

impl Following {
    /// Sends what `replay` holds up to `upto` (an index in its bytes) that was not sent yet,
    /// waiting for a slow follower until `until`. Bytes the ring dropped meanwhile are
    /// skipped; a follower that is gone gets nothing more.
    async fn send(
        &mut self,
        stream: Stream,
        replay: &Replay,
        upto: usize,
        until: tokio::time::Instant,
    ) {
        let sent = match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        };
        let from = usize::try_from(sent.saturating_sub(replay.offset)).unwrap_or(usize::MAX);
        let upto = upto.min(replay.bytes.len());
        if from >= upto {
            return;
        }
        *sent = replay.offset + upto as u64;
        let chunk = Chunk {
            stream,
            bytes: bytes::Bytes::copy_from_slice(&replay.bytes[from..upto]),
        };
        if self.to.is_closed() {
            return;
        }
        let _ = tokio::time::timeout_at(until, self.to.send(chunk)).await;
    }

    /// Sends everything `out` and `err` hold, up to the ends given.
    async fn send_both(
        &mut self,
        out: (&Replay, usize),
        err: (&Replay, usize),
        until: tokio::time::Instant,
    ) {
        self.send(Stream::Stdout, out.0, out.1, until).await;
        self.send(Stream::Stderr, err.0, err.1, until).await;
    }
}

/// How many bytes at the end of `bytes` could begin `needle` (held back from a follower
/// until the next read tells whether they are the marker).
pub(super) fn could_begin(bytes: &[u8], needle: &[u8]) -> usize {
    (1..needle.len().min(bytes.len() + 1))
        .rev()
        .find(|k| bytes.ends_with(&needle[..*k]))
        .unwrap_or(0)
}

/// Sends one run to the context and reads its output up to the marker; with a follower,
/// sends it the output as it arrives (never the marker, even cut across reads).
async fn drive(
    context: &Context,
    launch: &Launch,
    code: &str,
    env: Option<&str>,
    follower: Option<Follower>,
) -> std::io::Result<RunOutcome> {
    let process = &context.process;
    let started = Instant::now();
    let marker = marker();
    let mut changed = process.subscribe();
    let from_out = process.output(Stream::Stdout, u64::MAX).total;
    let from_err = process.output(Stream::Stderr, u64::MAX).total;
    let mut following = follower.map(|to| Following {
        to,
        stdout: from_out,
        stderr: from_err,
    });
    let code = base64::engine::general_purpose::STANDARD.encode(code);
    let frame = match env {
        Some(env) => format!("{marker} {code} {env}\n"),
        None => format!("{marker} {code}\n"),
    };
    let out_end = format!("{marker} ");
    let err_end = format!("{marker}\n");
    let deadline = tokio::time::Instant::now() + launch.timeout;
    let written = tokio::time::timeout_at(deadline, process.write_stdin(frame.as_bytes(), false));
    let written = matches!(written.await, Ok(Ok(())));
    loop {
        let out = process.output(Stream::Stdout, from_out);
        let err = process.output(Stream::Stderr, from_err);
        let done_out = find(&out.bytes, out_end.as_bytes()).and_then(|at| {
            let rest = &out.bytes[at + marker.len() + 1..];
            let end = rest.iter().position(|b| *b == b'\n')?;
            let status = std::str::from_utf8(&rest[..end])
                .ok()?
                .trim()
                .parse::<i32>()
                .ok()?;
            Some((at, status))
        });
        let done_err = find(&err.bytes, err_end.as_bytes());
        let truncated = out.dropped > 0 || err.dropped > 0;
        let last = tokio::time::Instant::now() + LAST_SEND;
        if let (Some((out_at, status)), Some(err_at)) = (done_out, done_err) {
            if let Some(f) = following.as_mut() {
                f.send_both((&out, out_at), (&err, err_at), last).await;
            }
            return Ok(RunOutcome {
                stdout: out.bytes[..out_at].to_vec(),
                stderr: err.bytes[..err_at].to_vec(),
                exit_code: Some(status),
                duration: started.elapsed(),
                timed_out: false,
                truncated,
            });
        }
        if let Some(exit) = process.exit() {
            // The interpreter ended (the code called exit, or it crashed): the run's
            // status is the process's.
            if let Some(f) = following.as_mut() {
                let ends = (out.bytes.len(), err.bytes.len());
                f.send_both((&out, ends.0), (&err, ends.1), last).await;
            }
            return Ok(RunOutcome {
                stdout: out.bytes,
                stderr: err.bytes,
                exit_code: exit.code(),
                duration: started.elapsed(),
                timed_out: false,
                truncated,
            });
        }
        if !written && process.is_running() {
            return Err(std::io::Error::other(
                "the context's interpreter does not read its input",
            ));
        }
        if let Some(f) = following.as_mut() {
            // What cannot be the start of a marker is the run's output: it goes now.
            let out_upto = done_out.map_or_else(
                || out.bytes.len() - could_begin(&out.bytes, out_end.as_bytes()),
                |(at, _)| at,
            );
            let err_upto = done_err
                .unwrap_or_else(|| err.bytes.len() - could_begin(&err.bytes, err_end.as_bytes()));
            f.send_both((&out, out_upto), (&err, err_upto), deadline)
                .await;
        }
        if tokio::time::timeout_at(deadline, changed.changed())
            .await
            .is_err()
        {
            process.kill().await;
            let out = process.output(Stream::Stdout, from_out);
            let err = process.output(Stream::Stderr, from_err);
            if let Some(f) = following.as_mut() {
                let last = tokio::time::Instant::now() + LAST_SEND;
                let ends = (out.bytes.len(), err.bytes.len());
                f.send_both((&out, ends.0), (&err, ends.1), last).await;
            }
            return Ok(RunOutcome {
                truncated: out.dropped > 0 || err.dropped > 0,
                stdout: out.bytes,
                stderr: err.bytes,
                exit_code: None,
                duration: started.elapsed(),
                timed_out: true,
            });
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}
