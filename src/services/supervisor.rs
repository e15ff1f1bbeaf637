//! The process supervisor: every child the server starts (named commands now; shells,
//! processes and agent runtimes later) runs in a process group of its own, so a timeout or
//! a cancel stops the whole tree (TERM, a grace period, then KILL) and nothing is left
//! behind as a zombie or an orphan.

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

pub const GRACE: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct Spec {
    pub program: String,
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// Bytes kept of each of stdout and stderr; the rest is read and dropped so the child
    /// never blocks on a full pipe.
    pub output_cap: usize,
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub stdout: Captured,
    pub stderr: Captured,
    pub timed_out: bool,
    pub duration: Duration,
}

#[derive(Debug, Clone, Default)]
pub struct Captured {
    pub bytes: Vec<u8>,
    pub truncated: bool,
}

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// Runs to completion (or to the timeout) and reports what happened.
pub async fn run(spec: &Spec) -> std::io::Result<Outcome> {
    let started = Instant::now();
    let mut child = command(
        &spec.program,
        &spec.args,
        spec.cwd.as_ref(),
        &spec.env,
        false,
    )
    .spawn()?;
    let group = child.id().map(|id| Pid::from_raw(id as i32));
    let stdout = child.stdout.take().expect("piped");
    let stderr = child.stderr.take().expect("piped");
    let cap = spec.output_cap;
    let out_task = tokio::spawn(capture(stdout, cap));
    let err_task = tokio::spawn(capture(stderr, cap));

    let (status, timed_out) = match tokio::time::timeout(spec.timeout, child.wait()).await {
        Ok(status) => (status?, false),
        Err(_) => (stop_group(&mut child, group).await?, true),
    };
    // Whatever the child left running in its group goes too: a bounded run leaves nothing.
    if let Some(pgid) = group {
        let _ = killpg(pgid, Signal::SIGKILL);
    }
    let stdout = out_task.await.unwrap_or_default();
    let stderr = err_task.await.unwrap_or_default();
    Ok(Outcome {
        exit_code: status.code(),
        signal: signal_of(status),
        stdout,
        stderr,
        timed_out,
        duration: started.elapsed(),
    })
}

/// TERM to the group, a grace period, then KILL; always reaps the child.
pub async fn stop_group(
    child: &mut tokio::process::Child,
    group: Option<Pid>,
) -> std::io::Result<ExitStatus> {
    if let Some(pgid) = group {
        let _ = killpg(pgid, Signal::SIGTERM);
    }
    match tokio::time::timeout(GRACE, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            if let Some(pgid) = group {
                let _ = killpg(pgid, Signal::SIGKILL);
            }
            child.kill().await.ok();
            child.wait().await
        }
    }
}

/// Longest stdout line kept whole unless the spec says otherwise; a longer line is cut (the
/// reader still consumes the rest, so the child never blocks) and marked as cut.
pub const MAX_LINE_BYTES: usize = 32 * 1024 * 1024;

/// One line of a child's stdout, without its newline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    /// The line was longer than the limit: `text` holds its first bytes only.
    pub cut: bool,
}
/// How much of stderr is kept for error messages.
pub const STDERR_TAIL_BYTES: usize = 8 * 1024;

/// A child whose stdout is read line by line while it runs (agent runtimes, shells).
pub struct Streaming {
    child: tokio::process::Child,
    group: Option<Pid>,
    lines: tokio::sync::mpsc::Receiver<Line>,
    stderr: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    stderr_reader: Option<tokio::task::JoinHandle<()>>,
}

#[derive(Debug, Clone, Default)]
pub struct StreamSpec {
    pub program: String,
    pub args: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub env: Vec<(String, String)>,
    /// Written to stdin, which is then closed.
    pub stdin: Option<String>,
    /// The longest stdout line kept ([`MAX_LINE_BYTES`] when `None`).
    pub max_line_bytes: Option<usize>,
}

impl Streaming {
    pub fn spawn(spec: &StreamSpec) -> std::io::Result<Streaming> {
        use tokio::io::AsyncWriteExt;
        let stdin = spec.stdin.is_some();
        let mut child = command(
            &spec.program,
            &spec.args,
            spec.cwd.as_ref(),
            &spec.env,
            stdin,
        )
        .spawn()?;
        let group = child.id().map(|id| Pid::from_raw(id as i32));
        if let (Some(text), Some(mut stdin)) = (spec.stdin.clone(), child.stdin.take()) {
            tokio::spawn(async move {
                let _ = stdin.write_all(text.as_bytes()).await;
            });
        }
        let stdout = child.stdout.take().expect("piped");
        let stderr_pipe = child.stderr.take().expect("piped");
        let (tx, lines) = tokio::sync::mpsc::channel(256);
        let max_line = spec.max_line_bytes.unwrap_or(MAX_LINE_BYTES);
        tokio::spawn(read_lines(stdout, tx, max_line));
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let stderr_reader = Some(tokio::spawn(keep_tail(stderr_pipe, stderr.clone())));
        Ok(Streaming {
            child,
            group,
            lines,
            stderr,
            stderr_reader,
        })
    }

    pub fn pid(&self) -> Option<u32> {
        self.group.map(|p| p.as_raw() as u32)
    }

    /// The next stdout line, or `None` once stdout is closed.
    pub async fn next_line(&mut self) -> Option<Line> {
        self.lines.recv().await
    }

    /// Waits for the exit, then clears whatever the child left in its group.
    pub async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait().await?;
        self.after_exit().await;
        Ok(status)
    }

    /// TERM to the group, a grace period, then KILL; reaps the child.
    pub async fn stop(&mut self) -> std::io::Result<ExitStatus> {
        let status = stop_group(&mut self.child, self.group).await?;
        self.after_exit().await;
        Ok(status)
    }

    /// Ends the rest of the group and lets the stderr reader reach the end, so the tail
    /// holds the child's last words.
    async fn after_exit(&mut self) {
        if let Some(pgid) = self.group {
            let _ = killpg(pgid, Signal::SIGKILL);
        }
        if let Some(reader) = self.stderr_reader.take() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(2), reader).await;
        }
    }

    /// The last few KiB the child wrote to stderr, for error messages.
    pub fn stderr_tail(&self) -> String {
        let bytes = self.stderr.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8_lossy(&bytes).trim().to_owned()
    }
}

async fn read_lines(
    stdout: impl AsyncRead + Unpin,
    tx: tokio::sync::mpsc::Sender<Line>,
    max_line: usize,
) {
    use tokio::io::AsyncBufReadExt;
    let mut reader = tokio::io::BufReader::with_capacity(64 * 1024, stdout);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut cut = false;
        // Read one line, keeping at most `max_line` bytes of it.
        loop {
            let buf = match reader.fill_buf().await {
                Ok(buf) => buf,
                Err(_) => return,
            };
            if buf.is_empty() {
                break;
            }
            let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            let room = max_line.saturating_sub(line.len());
            cut |= chunk.len() > room;
            line.extend_from_slice(&chunk[..chunk.len().min(room)]);
            let used = done.unwrap_or(buf.len());
            reader.consume(used);
            if done.is_some() {
                break;
            }
        }
        if line.is_empty() && !cut {
            // Either EOF or an empty line; only EOF ends the loop.
            if reader
                .fill_buf()
                .await
                .map(|b| b.is_empty())
                .unwrap_or(true)
            {
                return;
            }
            continue;
        }
        let text = String::from_utf8_lossy(&line).into_owned();
        if tx.send(Line { text, cut }).await.is_err() {
            return;
        }
    }
}

async fn keep_tail(
    mut stderr: impl AsyncRead + Unpin,
    tail: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
) {
    let mut buf = vec![0u8; 8 * 1024];
    loop {
        match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if let Ok(mut t) = tail.lock() {
                    t.extend_from_slice(&buf[..n]);
                    let excess = t.len().saturating_sub(STDERR_TAIL_BYTES);
                    t.drain(..excess);
                }
            }
        }
    }
}

/// Every child: its own process group (so it can be stopped as a whole), piped output,
/// killed if the server drops it, and exactly the environment `env` (callers start from
/// `ChildEnv`): nothing of the server's own environment leaks through.
fn command(
    program: &str,
    args: &[String],
    cwd: Option<&PathBuf>,
    env: &[(String, String)],
    piped_stdin: bool,
) -> Command {
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(if piped_stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    command.env_clear().envs(env.iter().map(|(k, v)| (k, v)));
    command
}

fn signal_of(status: ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.signal()
}

async fn capture(mut stream: impl AsyncRead + Unpin, cap: usize) -> Captured {
    let mut captured = Captured::default();
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = cap.saturating_sub(captured.bytes.len());
                captured.bytes.extend_from_slice(&buf[..n.min(room)]);
                if n > room {
                    captured.truncated = true;
                }
            }
        }
    }
    captured
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str, timeout_ms: u64) -> Spec {
        Spec {
            program: "sh".into(),
            args: vec!["-c".into(), script.into()],
            cwd: None,
            env: vec![("GREETING".into(), "hi".into())],
            timeout: Duration::from_millis(timeout_ms),
            output_cap: 8,
        }
    }

    #[tokio::test]
    async fn captures_output_exit_code_and_env() {
        let out = run(&sh("echo $GREETING; echo oops >&2; exit 3", 5000))
            .await
            .unwrap();
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.stdout.text(), "hi\n");
        assert_eq!(out.stderr.text(), "oops\n");
        assert!(!out.timed_out);
    }

    #[tokio::test]
    async fn output_is_capped_not_blocked() {
        let out = run(&sh("head -c 200000 /dev/zero", 5000)).await.unwrap();
        assert_eq!(out.stdout.bytes.len(), 8);
        assert!(out.stdout.truncated);
        assert_eq!(out.exit_code, Some(0));
    }

    #[tokio::test]
    async fn streaming_lines_arrive_while_the_child_runs_and_stop_ends_the_group() {
        let spec = StreamSpec {
            program: "sh".into(),
            args: vec![
                "-c".into(),
                "echo warn >&2; echo one; echo two; sleep 30 & wait".into(),
            ],
            ..StreamSpec::default()
        };
        let mut child = Streaming::spawn(&spec).unwrap();
        assert_eq!(
            child.next_line().await.map(|l| l.text).as_deref(),
            Some("one")
        );
        assert_eq!(
            child.next_line().await.map(|l| l.text).as_deref(),
            Some("two")
        );
        let status = child.stop().await.unwrap();
        assert_eq!(signal_of(status), Some(15));
        assert_eq!(
            child.next_line().await,
            None,
            "stdout closed with the group"
        );
        assert_eq!(child.stderr_tail(), "warn");
    }

    #[tokio::test]
    async fn streaming_reads_stdin_and_huge_lines() {
        let spec = StreamSpec {
            program: "sh".into(),
            args: vec![
                "-c".into(),
                "cat; head -c 3000000 /dev/zero | tr '\\0' x; echo".into(),
            ],
            stdin: Some("from stdin\n".into()),
            ..StreamSpec::default()
        };
        let mut child = Streaming::spawn(&spec).unwrap();
        assert_eq!(
            child.next_line().await.map(|l| l.text).as_deref(),
            Some("from stdin")
        );
        let long = child.next_line().await.unwrap();
        assert_eq!((long.text.len(), long.cut), (3_000_000, false));
        assert_eq!(child.next_line().await, None);
        assert!(child.wait().await.unwrap().success());
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_cut_marked_and_the_next_line_still_arrives() {
        let spec = StreamSpec {
            program: "sh".into(),
            args: vec![
                "-c".into(),
                "head -c 5000 /dev/zero | tr '\\0' x; echo; echo after".into(),
            ],
            max_line_bytes: Some(1024),
            ..StreamSpec::default()
        };
        let mut child = Streaming::spawn(&spec).unwrap();
        let cut = child.next_line().await.unwrap();
        assert_eq!((cut.text.len(), cut.cut), (1024, true));
        assert_eq!(
            child.next_line().await.map(|l| (l.text, l.cut)),
            Some(("after".into(), false))
        );
        assert!(child.wait().await.unwrap().success());
    }

    #[tokio::test]
    async fn timeout_stops_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("grandchild.pid");
        let script = format!("sleep 30 & echo $! > {}; wait", marker.display());
        let out = run(&sh(&script, 300)).await.unwrap();
        assert!(out.timed_out);
        assert_eq!(out.signal, Some(15));
        let pid: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The grandchild was in the group: it is gone (or a zombie of init, never running).
        tokio::time::sleep(Duration::from_millis(100)).await;
        let status = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = status.split(") ").nth(1).and_then(|s| s.chars().next());
        assert!(matches!(state, None | Some('Z') | Some('X')), "{status}");
    }
}
