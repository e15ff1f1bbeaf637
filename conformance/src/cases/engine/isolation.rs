//! Isolated sandboxes (issue 27): a sandbox is a machine of its own, and every case here
//! is an escape attempt that must fail. Each needs the provider's `isolation` feature;
//! a provider without it is skipped with the reason.
//!
//! - "What a sandbox sees": `/home/user` (the home and default working directory), its
//!   own `/tmp`, the system read-only, an `/etc` of its own, its own `/proc` and a
//!   minimal `/dev`; user `user` (1000), `root` on request; nothing of the host.
//! - "The files API sees the same tree as the commands": paths are the sandbox's.
//! - "Network": the machine's by default; `allow_internet_access: false` gives a
//!   loopback only.
//! - "Limits": `max_processes` bounds a fork storm.

use super::support::{
    create, expect_error, get, kill, post, processes, q, req, run, sb, sh,
};
use crate::{Case, Ctx, case, profiles};
use anyhow::{anyhow, ensure};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

/// A fresh isolated sandbox (lifetime 300 s): its id.
async fn isolated(ctx: &Ctx) -> anyhow::Result<String> {
    let record = create(ctx, &json!({"timeout": 300, "isolation": "namespaces"})).await?;
    Ok(record["sandbox_id"].as_str().unwrap_or_default().to_owned())
}

/// Runs `line` in the sandbox as `user` (the default when `None`); answers the result.
async fn as_user(ctx: &Ctx, id: &str, user: Option<&str>, line: &str) -> anyhow::Result<Value> {
    let mut body = json!({"cmd": line});
    if let Some(user) = user {
        body["user"] = json!(user);
    }
    run(ctx, id, &body).await
}

/// Reads a file through the files API; answers status and body text.
async fn read(ctx: &Ctx, id: &str, path: &str) -> anyhow::Result<(u16, String)> {
    let resp = get(ctx, &sb(id, &format!("/files/content?path={}", q(path)))).await?;
    Ok((resp.status, String::from_utf8_lossy(&resp.body).into_owned()))
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "engine/isolation/001",
            spec: "A sandbox created with `isolation: \"namespaces\"` is a machine of its own: its record says `isolation: \"namespaces\"` and `limits_enforced` `filesystem` and `processes` true; a command runs as `user` (uid 1000, in the sandbox's /etc/passwd) with HOME and working directory /home/user, its host name is the sandbox id, and `/` holds only the machine's layout (no host folder such as /root's files, /work or the engine's state).",
            profile: &profiles::LOCAL,
            tags: ["feature:isolation", "feature:commands"],
            endpoints: ["sandboxes_create", "commands_run"],
            codes: [],
            run: |ctx| async move {
                let record = create(&ctx, &json!({"timeout": 300, "isolation": "namespaces"})).await?;
                let id = record["sandbox_id"].as_str().unwrap_or_default().to_owned();
                ensure!(record["isolation"] == "namespaces", "{record}");
                let limits = &record["limits_enforced"];
                ensure!(limits["filesystem"] == true && limits["processes"] == true, "{record}");
                let out = sh(&ctx, &id, "id -u; id -un; echo $HOME; pwd; hostname; ls /").await?;
                let lines: Vec<&str> = out.lines().collect();
                ensure!(lines.len() > 5 && lines[..5] == ["1000", "user", "/home/user", "/home/user", id.as_str()], "{out}");
                let root: Vec<&str> = lines[5..].to_vec();
                for name in &root {
                    ensure!(["bin", "dev", "etc", "home", "lib", "lib32", "lib64", "libx32", "opt", "proc", "sbin", "tmp", "usr"].contains(name), "`/{name}` is in the sandbox's root: {out}");
                }
                let here = std::env::current_dir()?;
                let probe = as_user(&ctx, &id, None, &format!("ls {} /root /home 2>&1; cat /etc/shadow /etc/sudoers 2>&1", here.display())).await?;
                let text = probe["stdout"].as_str().unwrap_or_default();
                ensure!(text.contains("No such file") && !text.contains("Cargo.toml") && !text.contains("root:"), "the host shows through: {text}");
                kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/isolation/002",
            spec: "A sandbox sees its own processes only: `/proc` lists a handful (not the host's), a host process (this client's pid) can be neither seen nor signalled, and a process one command leaves in the background is seen by the next.",
            profile: &profiles::LOCAL,
            tags: ["feature:isolation", "feature:commands"],
            endpoints: ["commands_run"],
            codes: [],
            run: |ctx| async move {
                let id = isolated(&ctx).await?;
                let me = std::process::id();
                sh(&ctx, &id, "sleep 300 >/dev/null 2>&1 &").await?;
                let out = sh(&ctx, &id, &format!("ls /proc | grep -c '^[0-9]'; cat /proc/[0-9]*/cmdline | tr '\\0' ' '; kill -0 {me} 2>&1 || echo unreachable; ls /proc/{me} 2>&1 || true")).await?;
                let count: u32 = out.lines().next().and_then(|l| l.trim().parse().ok()).unwrap_or(u32::MAX);
                ensure!(count < 20, "the sandbox sees {count} processes: {out}");
                ensure!(out.contains("sleep 300"), "the background process is seen by the next command: {out}");
                ensure!(out.contains("unreachable"), "a host process was signalled: {out}");
                ensure!(crate::cases::engine::support::alive(u64::from(me)), "this client still runs");
                kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/isolation/003",
            spec: "Nothing leaves the sandbox's folders through the files API: `..`, an absolute path outside /home/user and /tmp (`/etc/shadow`, `/proc/1/root/etc/passwd`, `/usr/bin/x`), and a link a command made to `/` are 400 `E4005`, and a write to the read-only system is refused the same way, writing nothing.",
            profile: &profiles::LOCAL,
            tags: ["feature:isolation", "feature:files", "feature:commands"],
            endpoints: ["files_read", "files_write"],
            codes: ["E4005"],
            run: |ctx| async move {
                let id = isolated(&ctx).await?;
                sh(&ctx, &id, "ln -s / /home/user/up && ln -s /etc/passwd /home/user/pw").await?;
                for path in ["../../etc/passwd", "/etc/shadow", "/proc/1/root/etc/passwd", "/home/user/../../root", "up/etc/passwd", "pw"] {
                    let resp = get(&ctx, &sb(&id, &format!("/files/content?path={}", q(path)))).await?;
                    expect_error(&resp, 400, "E4005").map_err(|e| anyhow!("read {path}: {e}"))?;
                }
                for path in ["/usr/bin/escaped", "/etc/escaped", "up/tmp/escaped"] {
                    let resp = ctx.send(req(&ctx, Method::PUT, &sb(&id, &format!("/files/content?path={}", q(path)))).body("x")).await?;
                    expect_error(&resp, 400, "E4005").map_err(|e| anyhow!("write {path}: {e}"))?;
                }
                ensure!(!std::path::Path::new("/usr/bin/escaped").exists() && !std::path::Path::new("/etc/escaped").exists(), "a write landed on the host");
                let out = as_user(&ctx, &id, None, "touch /usr/x /etc/x 2>&1; echo done").await?;
                ensure!(out["stdout"].as_str().unwrap_or_default().contains("Read-only"), "{out}");
                kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/isolation/004",
            spec: "The files API and the commands see one tree: what the API writes at `/tmp/a.txt` and `b.txt` (relative: /home/user) a command reads, owned by `user`; what a command writes in /tmp the API reads; the API's entries name sandbox paths (`/home/user/...`), never a host folder.",
            profile: &profiles::LOCAL,
            tags: ["feature:isolation", "feature:files", "feature:commands"],
            endpoints: ["files_write", "files_read", "files_list"],
            codes: [],
            run: |ctx| async move {
                let id = isolated(&ctx).await?;
                for (path, text) in [("/tmp/a.txt", "from the api\n"), ("b.txt", "relative\n")] {
                    let resp = ctx.send(req(&ctx, Method::PUT, &sb(&id, &format!("/files/content?path={}", q(path)))).body(text)).await?;
                    resp.expect_status(200)?;
                    let entry = resp.json()?;
                    let shown = entry["path"].as_str().unwrap_or_default();
                    ensure!(shown == "/tmp/a.txt" || shown == "/home/user/b.txt", "the entry names a sandbox path: {entry}");
                }
                let out = sh(&ctx, &id, "cat /tmp/a.txt /home/user/b.txt; stat -c %U /home/user/b.txt; echo made > /tmp/c.txt").await?;
                ensure!(out == "from the api\nrelative\nuser\n", "{out}");
                let (status, text) = read(&ctx, &id, "/tmp/c.txt").await?;
                ensure!(status == 200 && text == "made\n", "{status} {text}");
                let resp = get(&ctx, &sb(&id, "/files/list?path=/home/user")).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                let listed = body.to_string();
                ensure!(listed.contains("\"/home/user/b.txt\"") && !listed.contains("sandboxes/"), "{body}");
                kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/isolation/005",
            spec: "`user: \"root\"` runs as uid 0 inside, which is no root of the host: it cannot change the host's /dev/null (whose mode stays 0666) nor mount over the system; any other `user` is 400 `E4001` naming `user`.",
            profile: &profiles::LOCAL,
            tags: ["feature:isolation", "feature:commands"],
            endpoints: ["commands_run"],
            codes: ["E4001"],
            run: |ctx| async move {
                use std::os::unix::fs::PermissionsExt;
                let id = isolated(&ctx).await?;
                let before = std::fs::metadata("/dev/null")?.permissions().mode();
                let out = as_user(&ctx, &id, Some("root"), "id -u; chmod 600 /dev/null 2>&1; echo x > /usr/escaped 2>&1; true").await?;
                let text = out["stdout"].as_str().unwrap_or_default();
                ensure!(text.starts_with("0\n"), "{out}");
                ensure!(std::fs::metadata("/dev/null")?.permissions().mode() == before, "root inside changed the host's /dev/null: {out}");
                ensure!(!std::path::Path::new("/usr/escaped").exists(), "root inside wrote the host's /usr");
                let resp = post(&ctx, &sb(&id, "/commands/run"), &json!({"cmd": "id", "user": "admin"})).await?;
                let body = expect_error(&resp, 400, "E4001")?;
                ensure!(body.to_string().contains("`user`"), "{body}");
                kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/isolation/006",
            spec: "One sandbox cannot reach another: a file and a process of sandbox A are not seen from sandbox B, by path or through `/proc/*/root`.",
            profile: &profiles::LOCAL,
            tags: ["feature:isolation", "feature:commands"],
            endpoints: ["commands_run"],
            codes: [],
            run: |ctx| async move {
                let a = isolated(&ctx).await?;
                let b = isolated(&ctx).await?;
                sh(&ctx, &a, "echo secret-of-a > /home/user/secret; sleep 300 >/dev/null 2>&1 &").await?;
                let out = as_user(&ctx, &b, Some("root"), "cat /home/user/secret /proc/*/root/home/user/secret 2>/dev/null; cat /proc/[0-9]*/cmdline | tr '\\0' ' '; true").await?;
                let text = out["stdout"].as_str().unwrap_or_default();
                ensure!(!text.contains("secret-of-a") && !text.contains("sleep 300"), "B sees A: {text}");
                kill(&ctx, &a).await;
                kill(&ctx, &b).await;
                Ok(())
            },
        },
        case! {
            id: "engine/isolation/007",
            spec: "The end leaves nothing on the host: after DELETE every process the sandbox had (its background ones included, and one that called setsid) is gone.",
            profile: &profiles::LOCAL,
            tags: ["feature:isolation", "feature:commands", "feature:processes"],
            endpoints: ["sandboxes_kill", "processes_list"],
            codes: [],
            run: |ctx| async move {
                let id = isolated(&ctx).await?;
                let words = [super::support::sleep_word(), super::support::sleep_word()];
                sh(&ctx, &id, &format!("sleep {} >/dev/null 2>&1 & setsid sleep {} >/dev/null 2>&1 < /dev/null &", words[0], words[1])).await?;
                let left: Vec<super::support::Left> = super::support::eventually(Duration::from_secs(5), "both sleeps listed", || async {
                    let list = processes(&ctx, &id).await?;
                    let left: Vec<super::support::Left> = words.iter().filter_map(|w| {
                        let listed = list.iter().find(|p| p["cmd"] == format!("sleep {w}").as_str())?;
                        Some(super::support::Left { pid: listed["pid"].as_u64()?, word: w.clone() })
                    }).collect();
                    Ok((left.len() == 2).then_some(left))
                }).await?;
                ensure!(left.iter().all(super::support::Left::alive), "both run on the machine: {left:?}");
                let resp = super::support::delete(&ctx, &sb(&id, "")).await?;
                resp.expect_status(200)?;
                for one in left {
                    one.gone(Duration::from_secs(10)).await?;
                }
                Ok(())
            },
        },
        case! {
            id: "engine/isolation/008",
            spec: "Network: by default a sandbox has the machine's network (`allow_internet_access: true` in the record); created with `allow_internet_access: false` it has only a loopback of its own (the record says false, `limits_enforced.network` true).",
            profile: &profiles::LOCAL,
            tags: ["feature:isolation", "feature:commands"],
            endpoints: ["sandboxes_create"],
            codes: [],
            run: |ctx| async move {
                let open = create(&ctx, &json!({"timeout": 300, "isolation": "namespaces"})).await?;
                ensure!(open["allow_internet_access"] == true, "{open}");
                let closed = create(&ctx, &json!({"timeout": 300, "isolation": "namespaces", "allow_internet_access": false})).await?;
                ensure!(closed["allow_internet_access"] == false && closed["limits_enforced"]["network"] == true, "{closed}");
                let count = |text: &str| text.lines().skip(2).count();
                let host_links = std::fs::read_to_string("/proc/net/dev")?;
                let open_id = open["sandbox_id"].as_str().unwrap_or_default();
                let closed_id = closed["sandbox_id"].as_str().unwrap_or_default();
                let seen_open = sh(&ctx, open_id, "cat /proc/net/dev").await?;
                let seen_closed = sh(&ctx, closed_id, "cat /proc/net/dev").await?;
                ensure!(count(&seen_open) == count(&host_links), "the default sandbox has the machine's links: {seen_open}");
                ensure!(count(&seen_closed) == 1 && seen_closed.contains("lo:"), "only a loopback: {seen_closed}");
                kill(&ctx, open_id).await;
                kill(&ctx, closed_id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/isolation/009",
            spec: "A fork storm stays inside: with `max_processes: 40` (the record shows it) and `limits_enforced.pids` true, 100 background sleeps start at most 40 processes; with `pids` false the record says so and the case says what it could not check. `max_processes` counts the sandbox's processes, not the machine's own: with `max_processes: 1` the sandbox is made and runs a command.",
            profile: &profiles::LOCAL,
            tags: ["feature:isolation", "feature:commands", "feature:processes"],
            endpoints: ["sandboxes_create", "processes_list"],
            codes: [],
            run: |ctx| async move {
                // (A machine born in its cgroup once counted its own processes against the
                // limit: bubblewrap could not fork its init, and the create was a 500.)
                let one = create(&ctx, &json!({"timeout": 300, "isolation": "namespaces", "max_processes": 1})).await?;
                let one_id = one["sandbox_id"].as_str().unwrap_or_default().to_owned();
                ensure!(one["max_processes"] == 1, "{one}");
                let out = sh(&ctx, &one_id, "echo one").await?;
                ensure!(out == "one\n", "one command in a sandbox limited to 1 process: {out:?}");
                kill(&ctx, &one_id).await;
                let record = create(&ctx, &json!({"timeout": 300, "isolation": "namespaces", "max_processes": 40})).await?;
                let id = record["sandbox_id"].as_str().unwrap_or_default().to_owned();
                ensure!(record["max_processes"] == 40, "{record}");
                if record["limits_enforced"]["pids"] != true {
                    kill(&ctx, &id).await;
                    ensure!(record["limits_enforced"]["pids"] == false, "{record}");
                    return Ok(()); // said by the record: no cgroup here
                }
                let _ = as_user(&ctx, &id, None, "for i in $(seq 100); do sleep 300 >/dev/null 2>&1 & done 2>/dev/null; true").await?;
                let list = processes(&ctx, &id).await?;
                ensure!(list.len() <= 40, "{} processes in a sandbox limited to 40", list.len());
                kill(&ctx, &id).await;
                Ok(())
            },
        },
        case! {
            id: "engine/isolation/010",
            spec: "`isolation: \"none\"` is the old, unsafe behaviour, said plainly: the record says `isolation: \"none\"` and `limits_enforced` `filesystem`, `processes` and `network` false; `allow_internet_access: false` without isolation is 400 `E4001`.",
            profile: &profiles::LOCAL,
            tags: ["feature:isolation"],
            endpoints: ["sandboxes_create"],
            codes: ["E4001"],
            run: |ctx| async move {
                let record = create(&ctx, &json!({"timeout": 300, "isolation": "none"})).await?;
                let limits = &record["limits_enforced"];
                ensure!(record["isolation"] == "none" && limits["filesystem"] == false && limits["processes"] == false && limits["network"] == false, "{record}");
                kill(&ctx, record["sandbox_id"].as_str().unwrap_or_default()).await;
                let resp = post(&ctx, "/v1/sandboxes", &json!({"isolation": "none", "allow_internet_access": false})).await?;
                expect_error(&resp, 400, "E4001")?;
                Ok(())
            },
        },
        case! {
            id: "engine/isolation/011",
            spec: "Where the machine cannot make namespaces (here: an engine whose PATH has no bubblewrap), a create asking `isolation: \"namespaces\"` is 501 `E8005` saying what is missing, `GET /v1/health` says `isolation: {available: false, reason}` before, and a create without isolation still works: never a silent downgrade.",
            profile: &profiles::LOCAL_WITHOUT_BWRAP,
            tags: [],
            endpoints: ["sandboxes_create", "health"],
            codes: ["E8005"],
            run: |ctx| async move {
                let health = get(&ctx, "/v1/health").await?.json()?;
                ensure!(health["isolation"]["available"] == false && health["isolation"]["reason"].as_str().is_some_and(|r| r.contains("bwrap")), "{health}");
                let resp = post(&ctx, "/v1/sandboxes", &json!({"isolation": "namespaces"})).await?;
                let body = expect_error(&resp, 501, "E8005")?;
                ensure!(body.to_string().contains("bubblewrap"), "the error says what to install: {body}");
                let record = create(&ctx, &json!({"timeout": 60, "isolation": "none"})).await?;
                ensure!(record["isolation"] == "none", "{record}");
                kill(&ctx, record["sandbox_id"].as_str().unwrap_or_default()).await;
                Ok(())
            },
        },
        case! {
            id: "engine/isolation/012",
            spec: "The host's pids of what starts a sandbox's commands (its `nsenter`s) are no pids of the sandbox: signal and kill by such a number are 404 `E2005`, and the command it started goes on; the command is reached by the pid its `start` event gave, the sandbox's own.",
            profile: &profiles::LOCAL,
            tags: ["feature:isolation", "feature:commands", "feature:processes"],
            endpoints: ["commands_stream", "processes_signal", "processes_kill"],
            codes: ["E2005"],
            run: |ctx| async move {
                let id = isolated(&ctx).await?;
                let word = super::support::sleep_word();
                let mut stream = ctx.sse(req(&ctx, Method::POST, &sb(&id, "/commands/stream")).json(&json!({"cmd": format!("sleep {word}")}))).await?;
                let start = stream.next_event_within(Duration::from_secs(10)).await?.ok_or_else(|| anyhow!("the stream ended before `start`"))?;
                let pid = start.json()?["pid"].as_u64().ok_or_else(|| anyhow!("`start` has a pid: {start:?}"))?;
                let left = super::support::Left { pid, word: word.clone() };
                let listed: Vec<u64> = processes(&ctx, &id).await?.iter().filter_map(|p| p["pid"].as_u64()).collect();
                // The host's numbers of the command's processes: its `nsenter` and what runs inside.
                let hosts: Vec<u64> = super::support::host_pids(&word).into_iter().filter(|h| !listed.contains(h)).collect();
                ensure!(!hosts.is_empty(), "the command runs on the host under numbers of its own");
                for host in hosts {
                    let signal = post(&ctx, &sb(&id, &format!("/processes/{host}/signal")), &json!({"signal": 9})).await?;
                    expect_error(&signal, 404, "E2005").map_err(|e| anyhow!("signal to host pid {host}: {e:#}"))?;
                    let killed = super::support::delete(&ctx, &sb(&id, &format!("/processes/{host}"))).await?;
                    expect_error(&killed, 404, "E2005").map_err(|e| anyhow!("kill of host pid {host}: {e:#}"))?;
                }
                ensure!(left.alive(), "nothing was delivered to the command");
                post(&ctx, &sb(&id, &format!("/processes/{pid}/signal")), &json!({"signal": 9})).await?.expect_status(200)?;
                left.gone(Duration::from_secs(5)).await?;
                kill(&ctx, &id).await;
                Ok(())
            },
        },
    ]
}
