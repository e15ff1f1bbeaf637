//! Launching a server for one profile and tearing it down without leaving
//! processes behind.

use std::collections::VecDeque;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, BufReader};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;

use crate::profiles::Profile;

/// Lines of server stderr kept for launch failure messages.
const STDERR_TAIL: usize = 40;
/// The server's whole stderr, in the profile's directory.
pub const SERVER_LOG: &str = "server-stderr.log";
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The workspace this crate was built in (`conformance/..`).
pub fn workspace_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

/// `CARGO_TARGET_DIR` (relative ones taken from the workspace root) or `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if !dir.is_empty() => workspace_root().join(dir),
        _ => workspace_root().join("target"),
    }
}

/// The runner's own directory when `rt-one` is there (a normal build puts the
/// fake runtimes beside it), else `<target>/debug` when it exists.
pub fn default_runtimes_dir() -> Option<PathBuf> {
    let mut candidates = Vec::new();
    if let Ok(exe) = std::env::current_exe()
        && let Some(dir) = exe.parent()
    {
        candidates.push(dir.to_path_buf());
        // Test binaries live in target/<profile>/deps.
        if dir.file_name().is_some_and(|n| n == "deps")
            && let Some(up) = dir.parent()
        {
            candidates.push(up.to_path_buf());
        }
    }
    if let Some(dir) = candidates.iter().find(|d| d.join("rt-one").is_file()) {
        return Some(dir.clone());
    }
    let debug = target_dir().join("debug");
    debug.is_dir().then_some(debug)
}

/// Whether `rt-one` is in `runtimes_dir` or on `PATH`.
pub fn has_fake_runtimes(runtimes_dir: Option<&Path>) -> bool {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("rt-one").is_file()))
        .unwrap_or(false);
    on_path || runtimes_dir.is_some_and(|d| d.join("rt-one").is_file())
}

/// Whether a browser the server's browser group can start is on `PATH` (or named by
/// `SVC_BROWSER_BIN`), for the `needs:browser` cases.
pub fn has_browser() -> bool {
    if let Some(bin) = std::env::var_os("SVC_BROWSER_BIN") {
        return Path::new(&bin).is_file();
    }
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| {
            [
                "chromium",
                "chromium-browser",
                "google-chrome",
                "google-chrome-stable",
            ]
            .iter()
            .any(|name| d.join(name).is_file())
        })
    })
}

/// A running server in its own process group.
pub struct Server {
    // Declared first so it drops first: the server dies before its dir goes.
    group: Group,
    pub base_url: String,
    /// The terminal listener, when the command took the `{terminal_port}` the runner picked.
    pub terminal_url: Option<String>,
    dir: tempfile::TempDir,
}

impl Server {
    /// The profile's temp dir (`{dir}`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// SIGTERM to the group, up to 5 s grace, then SIGKILL; reaps the child.
    pub async fn stop(self) {
        self.group.stop().await;
    }
}

/// The server's process group plus the tasks draining its pipes. Dropping it
/// unstopped (a panic, Ctrl-C while waiting) kills the group at once, so no
/// path leaves a server behind. The engine launcher shares it.
pub(crate) struct Group {
    pub(crate) child: Child,
    pgid: Pid,
    pub(crate) tasks: Vec<JoinHandle<()>>,
    stopped: bool,
}

impl Group {
    /// Starts `command` in a process group of its own (teardown signals reach
    /// everything it spawns); its stdout and stderr are taken for the caller to drain.
    pub(crate) fn spawn(
        command: &mut Command,
    ) -> std::io::Result<(
        Group,
        Option<tokio::process::ChildStdout>,
        Option<tokio::process::ChildStderr>,
    )> {
        let mut child = command.process_group(0).spawn()?;
        let pgid = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .map(Pid::from_raw)
            .ok_or_else(|| std::io::Error::other("the child has no pid"))?;
        let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
        let group = Group {
            child,
            pgid,
            tasks: Vec::new(),
            stopped: false,
        };
        Ok((group, stdout, stderr))
    }

    /// SIGTERM to the group, up to 5 s grace, then SIGKILL; reaps the child.
    pub(crate) async fn stop(mut self) {
        let _ = killpg(self.pgid, Signal::SIGTERM);
        if tokio::time::timeout(STOP_GRACE, self.child.wait())
            .await
            .is_err()
        {
            let _ = killpg(self.pgid, Signal::SIGKILL);
            let _ = self.child.wait().await;
        }
        // Anything left in the group (a grandchild ignoring SIGTERM) goes too.
        let _ = killpg(self.pgid, Signal::SIGKILL);
        self.stopped = true;
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        if !self.stopped {
            let _ = killpg(self.pgid, Signal::SIGKILL);
            let _ = self.child.start_kill();
            let _ = self.child.try_wait();
        }
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Writes the profile's files into a fresh temp dir, starts `cmd` through
/// `sh -c` and waits for `listening on http://HOST:PORT` on stdout.
pub async fn launch(
    cmd: &str,
    profile: &Profile,
    runtimes_dir: Option<&Path>,
    ready_timeout: Duration,
) -> anyhow::Result<Server> {
    let dir = tempfile::Builder::new()
        .prefix(&format!("svc-conformance-{}-", profile.name))
        .tempdir()
        .context("creating the profile temp dir")?;
    let dir_str = dir.path().to_string_lossy().into_owned();
    let fill = |s: &str| s.replace("{dir}", &dir_str);

    let config = match profile.template {
        Some(text) => {
            let path = dir.path().join("template.yaml");
            std::fs::write(&path, fill(text)).context("writing template.yaml")?;
            Some(path)
        }
        None => None,
    };
    for (rel, content) in profile.files {
        let rel_path = Path::new(rel);
        if !rel_path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
        {
            bail!(
                "profile {}: file path {rel:?} must stay inside {{dir}}",
                profile.name
            );
        }
        let path = dir.path().join(rel_path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&path, fill(content))
            .with_context(|| format!("writing {}", path.display()))?;
    }

    let config_str = config
        .as_deref()
        .map(|p| shell_quote(&p.to_string_lossy()))
        .unwrap_or_default();
    // The terminal listener is not announced on stdout: the runner picks its port.
    let terminal_port = if cmd.contains(TERMINAL_PORT) {
        Some(free_port().context("picking a free port for {terminal_port}")?)
    } else {
        None
    };
    let terminal_port_str = terminal_port.map(|p| p.to_string()).unwrap_or_default();
    let mut line = fill(
        &cmd.replace("{port}", "0")
            .replace(TERMINAL_PORT, &terminal_port_str)
            .replace("{config}", &config_str),
    );
    for arg in profile.args {
        line.push(' ');
        line.push_str(&shell_quote(&fill(arg)));
    }

    let mut command = Command::new("sh");
    command.arg("-c").arg(&line);
    // The server must see only what the profile says, not the caller's config.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("SVC_") {
            command.env_remove(key);
        }
    }
    if let Some(rt) = runtimes_dir {
        let mut paths = vec![rt.to_path_buf()];
        if let Some(old) = std::env::var_os("PATH") {
            paths.extend(std::env::split_paths(&old));
        }
        command.env("PATH", std::env::join_paths(paths).context("joining PATH")?);
    }
    for (key, value) in profile.env {
        command.env(key, fill(value));
    }
    if let Some(path) = &config {
        command.env("SVC_CONFIG", path);
    }
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Own group: teardown signals reach everything the server spawned.
        .process_group(0);

    let mut child = command
        .spawn()
        .with_context(|| format!("starting `sh -c {line}`"))?;
    let pgid = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw)
        .ok_or_else(|| anyhow!("server process has no pid"))?;
    let (stdout, stderr) = (child.stdout.take(), child.stderr.take());
    let mut group = Group {
        child,
        pgid,
        tasks: Vec::new(),
        stopped: false,
    };

    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
    if let Some(out) = stdout {
        let mut ready_tx = Some(ready_tx);
        group.tasks.push(tokio::spawn(drain(out, move |l| {
            if let Some(url) = parse_listening(l)
                && let Some(tx) = ready_tx.take()
            {
                let _ = tx.send(url);
            }
        })));
    }
    // Kept whole in the profile's directory, so a case can check what the server logged.
    let mut log = std::fs::File::create(dir.path().join(SERVER_LOG)).ok();
    let stderr_task = stderr.map(|err| {
        let tail = tail.clone();
        tokio::spawn(drain(err, move |l| {
            if let Some(file) = log.as_mut() {
                let _ = writeln!(file, "{l}");
            }
            if let Ok(mut t) = tail.lock() {
                if t.len() == STDERR_TAIL {
                    t.pop_front();
                }
                t.push_back(l.to_string());
            }
        }))
    });

    let why = tokio::select! {
        url = ready_rx => match url {
            Ok(base_url) => {
                group.tasks.extend(stderr_task);
                let terminal_url = match terminal_port {
                    Some(port) => Some(with_port(&base_url, port)?),
                    None => None,
                };
                return Ok(Server { base_url, terminal_url, dir, group });
            }
            // EOF usually means it is exiting: prefer reporting how.
            Err(_) => match tokio::time::timeout(Duration::from_secs(1), group.child.wait()).await {
                Ok(Ok(s)) => format!("exited ({s})"),
                _ => "closed stdout".to_string(),
            },
        },
        status = group.child.wait() => match status {
            Ok(s) => format!("exited ({s})"),
            Err(e) => format!("could not be waited for ({e})"),
        },
        _ = tokio::time::sleep(ready_timeout) => format!("did not get ready within {ready_timeout:?}"),
    };
    group.stop().await;
    if let Some(task) = stderr_task {
        // Let the last words reach the tail; a lingering grandchild may hold the pipe.
        let _ = tokio::time::timeout(Duration::from_secs(2), task).await;
    }
    let tail: Vec<String> = tail
        .lock()
        .map(|t| t.iter().cloned().collect())
        .unwrap_or_default();
    let shown = if tail.is_empty() {
        "  <no stderr output>".to_string()
    } else {
        tail.iter()
            .map(|l| format!("  | {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    bail!(
        "server for profile {} {why} before printing `listening on http://HOST:PORT`\n  \
         command: sh -c {}\n  last stderr lines:\n{shown}",
        profile.name,
        shell_quote(&line)
    )
}

/// The placeholder of a server command for the terminal listener's port.
pub const TERMINAL_PORT: &str = "{terminal_port}";

/// A port free on loopback right now (the server binds it a moment later; nothing else in
/// the run binds fixed ports).
fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// `url` with its port replaced: the terminal listener is on the host of the main one.
pub fn with_port(url: &str, port: u16) -> anyhow::Result<String> {
    let mut parsed = reqwest::Url::parse(url).with_context(|| format!("parsing {url}"))?;
    parsed
        .set_port(Some(port))
        .map_err(|()| anyhow!("{url} cannot take a port"))?;
    Ok(parsed.as_str().trim_end_matches('/').to_owned())
}

/// Reads lines (lossy UTF-8) until EOF, so pipes never fill up and block the server.
pub(crate) async fn drain(reader: impl AsyncRead + Unpin, mut each: impl FnMut(&str)) {
    let mut reader = BufReader::new(reader);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        match reader.read_until(b'\n', &mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let line = String::from_utf8_lossy(&buf);
                each(line.trim_end_matches(['\n', '\r']));
            }
        }
    }
}

/// `listening on http://HOST:PORT` → `http://HOST:PORT`; wildcard hosts become loopback.
pub fn parse_listening(line: &str) -> Option<String> {
    let rest = line.trim().strip_prefix("listening on http://")?;
    let authority = rest.trim_end_matches('/');
    let (host, port) = authority.rsplit_once(':')?;
    port.parse::<u16>().ok().filter(|p| *p != 0)?;
    if host.is_empty() || authority.contains('/') {
        return None;
    }
    let host = match host {
        "0.0.0.0" => "127.0.0.1",
        "[::]" => "[::1]",
        h => h,
    };
    Some(format!("http://{host}:{port}"))
}

/// Quotes for `sh` only when needed, so plain commands stay readable in messages.
pub fn shell_quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-=:,+@%".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listening_line() {
        assert_eq!(
            parse_listening("listening on http://127.0.0.1:4321").as_deref(),
            Some("http://127.0.0.1:4321")
        );
        assert_eq!(
            parse_listening("listening on http://0.0.0.0:80/\n").as_deref(),
            Some("http://127.0.0.1:80")
        );
        assert!(parse_listening("listening on http://127.0.0.1:0").is_none());
        assert!(parse_listening("listening on http://127.0.0.1").is_none());
        assert!(parse_listening("Listening on 127.0.0.1:80").is_none());
    }

    #[test]
    fn the_terminal_url_is_the_main_host_on_its_port() {
        assert_eq!(
            with_port("http://127.0.0.1:4321", 5555).unwrap(),
            "http://127.0.0.1:5555"
        );
        assert_eq!(with_port("http://[::1]:80", 81).unwrap(), "http://[::1]:81");
        assert!(free_port().unwrap() > 0);
    }

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("--flag=x"), "--flag=x");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
