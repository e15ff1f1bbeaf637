//! Nothing escapes the end of a child (issue 30, item 2): a program that leaves its
//! process group with `setsid` (here Python's `os.setsid()`, as a daemon does) is still
//! ended by the kill, the timeout and the end of the child that started it. A group kill
//! misses such a process; a server that tracks the whole tree does not. Each case is the
//! attack: before the fix the escaped process lived on, reparented to pid 1. The last
//! one keeps the other side: what a running process left is that process's, and another
//! child's end does not take it.

use super::support::{alive, all_gone, area, exited, kill, pids_in, s, shell, started};
use crate::{Case, case, profiles};
use anyhow::ensure;
use serde_json::json;
use std::path::Path;
use std::time::Duration;

/// A shell line that starts a Python process which leaves the group and the session, writes
/// its pid to `file` and sleeps; the line goes on once the pid is written.
fn escape(file: &Path) -> String {
    let file = s(file);
    format!(
        r#"python3 -c 'import os,time; os.setsid(); open("{file}.part","w").write(str(os.getpid())); os.rename("{file}.part","{file}"); time.sleep(302)' & while [ ! -s {file} ]; do sleep 0.05; done"#
    )
}

/// How long a killed tree may take to be gone.
const GONE: Duration = Duration::from_secs(5);

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "process/escape/001",
            spec: "shell: whatever the command started is ended with it, a process that left the command's process group and session (`os.setsid()`) included: once POST /shell answers, nothing it started runs.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "escape-001")?;
                let file = dir.join("pid");
                let resp = shell(&ctx, &json!({"cmd": format!("{}; echo started", escape(&file)), "cwd": s(&dir)})).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body["stdout"] == "started\n" && body["exit_code"] == 0, "{body}");
                let escaped = pids_in(&file, 1, GONE).await?;
                all_gone(&escaped, GONE).await
            },
        },
        case! {
            id: "process/escape/002",
            spec: "shell: a `timeout` ends the whole tree, a process that left the group with `setsid` included.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "escape-002")?;
                let file = dir.join("pid");
                let resp = shell(&ctx, &json!({"cmd": format!("{}; sleep 30", escape(&file)), "cwd": s(&dir), "timeout": 2})).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body["timed_out"] == true, "{body}");
                let escaped = pids_in(&file, 1, GONE).await?;
                all_gone(&escaped, GONE).await
            },
        },
        case! {
            id: "process/escape/003",
            spec: "process_kill: DELETE /processes/{pid} ends the whole tree, a process that left the group with `setsid` included.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["process_start", "process_kill"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "escape-003")?;
                let file = dir.join("pid");
                let pid = started(&ctx, &json!({"cmd": format!("{}; sleep 300", escape(&file)), "cwd": s(&dir)})).await?;
                let escaped = pids_in(&file, 1, GONE).await?;
                kill(&ctx, pid).await?.expect_status(200)?;
                all_gone(&escaped, GONE).await
            },
        },
        case! {
            id: "process/escape/004",
            spec: "processes: when a process ends by itself, whatever it started ends too, a process that left the group with `setsid` included.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["process_start", "process_get"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "escape-004")?;
                let file = dir.join("pid");
                let pid = started(&ctx, &json!({"cmd": format!("{}; exit 0", escape(&file)), "cwd": s(&dir)})).await?;
                let record = exited(&ctx, pid, GONE).await?;
                ensure!(record["exit_code"] == 0, "{record}");
                let escaped = pids_in(&file, 1, GONE).await?;
                all_gone(&escaped, GONE).await
            },
        },
        case! {
            id: "process/escape/005",
            spec: "processes: a daemon a running process left (a double fork: its parent shell ended, and it left the group with `setsid`) lives as long as that process, whatever other children end meanwhile, and ends with its DELETE.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["process_start", "shell", "process_kill"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "escape-005")?;
                let file = dir.join("pid");
                // The inner shell ends once the daemon wrote its pid: the daemon has lost
                // its parent, its group and its session.
                let inner = escape(&file).replace('\'', r"'\''");
                let cmd = format!("sh -c '{inner}'; sleep 300");
                let pid = started(&ctx, &json!({"cmd": cmd, "cwd": s(&dir)})).await?;
                let escaped = pids_in(&file, 1, GONE).await?;
                // Another child ends (the server clears what each end leaves behind).
                shell(&ctx, &json!({"cmd": "true", "cwd": s(&dir)})).await?.expect_status(200)?;
                tokio::time::sleep(Duration::from_millis(500)).await;
                ensure!(
                    escaped.iter().all(|&p| alive(p)),
                    "another child's end ended the daemon of a process that still runs"
                );
                kill(&ctx, pid).await?.expect_status(200)?;
                all_gone(&escaped, GONE).await
            },
        },
    ]
}
