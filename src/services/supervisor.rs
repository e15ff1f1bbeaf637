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
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        command.current_dir(cwd);
    }
    for (k, v) in &spec.env {
        command.env(k, v);
    }
    let mut child = command.spawn()?;
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
