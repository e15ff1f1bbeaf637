//! Reaching an engine (`svc-engine/1`): launching one per profile in a fresh
//! state folder and finding it through its descriptor, reading what its
//! providers declare, and leaving nothing behind (its sandboxes outlive it, so
//! they are killed before it is stopped).

use std::collections::{BTreeSet, VecDeque};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, anyhow, bail};
use base64::Engine as _;
use reqwest::Method;
use serde_json::Value;
use tokio::process::Command;

use crate::ctx::Ctx;
use crate::launch::{Group, drain, shell_quote};
use crate::profiles::Profile;

/// The protocol a descriptor and the health record name.
pub const PROTOCOL: &str = "svc-engine/1";
/// The connection header (spec 5.4): unpadded base64url of the connection JSON.
pub const CONNECTION_HEADER: &str = "x-svc-connection";
/// The placeholder of an engine command for its state folder (also given as
/// `SVC_STATE_DIR`).
pub const STATE_DIR: &str = "{state_dir}";
/// The engine's stdout and stderr, beside its state folder.
pub const ENGINE_OUTPUT: &str = "engine-output.log";
const OUTPUT_TAIL: usize = 40;
/// How long a stopped engine gets to exit by itself before its group is signalled.
const EXIT_WAIT: Duration = Duration::from_secs(5);

/// The header value of a connection.
pub fn connection_header(connection: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(connection.to_string())
}

/// The header of an engine profile's connection, when it has one.
pub fn profile_connection(connection: Option<&Value>) -> Option<String> {
    connection.map(connection_header)
}

/// A launched engine, in its own process group, with its state folder.
pub struct Engine {
    // Declared first so it drops first: the engine dies before its folder goes.
    group: Group,
    /// `http://HOST:PORT` from the descriptor (cases add `/v1/...`).
    pub base_url: String,
    /// The descriptor's token.
    pub token: String,
    root: tempfile::TempDir,
}

impl Engine {
    /// `SVC_STATE_DIR` of this engine.
    pub fn state_dir(&self) -> PathBuf {
        self.root.path().join("state")
    }

    /// Asks the engine to stop (`POST /v1/shutdown`), waits for it, then signals
    /// whatever is left of its group; the state folder goes with `self`.
    pub async fn stop(mut self, ctx: &Ctx) {
        let _ = ctx.send(ctx.request(Method::POST, "/v1/shutdown")).await;
        let _ = tokio::time::timeout(EXIT_WAIT, self.group.child.wait()).await;
        self.group.stop().await;
    }

    /// [`Engine::stop`] for an engine no case talked to directly (an upstream one),
    /// through a context of its own; its sandboxes are killed first.
    pub async fn stop_alone(self) {
        match Ctx::new(
            &self.base_url,
            None,
            Some(self.token.clone()),
            "engine-upstream",
        ) {
            Ok(ctx) => {
                let ctx = ctx.for_engine(Some("local"), None);
                kill_sandboxes(&ctx, true).await;
                self.stop(&ctx).await;
            }
            Err(_) => {
                let group = self.group;
                group.stop().await;
            }
        }
    }
}

/// Starts `cmd` through `sh -c` with `SVC_STATE_DIR` a fresh folder, and waits
/// for the descriptor `<state>/engine.json` to name a port and a token.
pub async fn launch(
    cmd: &str,
    profile: &Profile,
    env: &[(String, String)],
    ready_timeout: Duration,
) -> anyhow::Result<Engine> {
    let root = tempfile::Builder::new()
        .prefix(&format!("svc-conformance-{}-", profile.name))
        .tempdir()
        .context("creating the engine's temp dir")?;
    let state = root.path().join("state");
    let state_str = state.to_string_lossy().into_owned();
    let mut line = cmd
        .replace("{port}", "0")
        .replace(STATE_DIR, &shell_quote(&state_str));
    for arg in profile.args {
        line.push(' ');
        line.push_str(&shell_quote(arg));
    }
    // By its path: a profile may give the engine a `PATH` without a shell on it.
    let mut command = Command::new("/bin/sh");
    command.arg("-c").arg(&line);
    // The engine must see only what the profile says, not the caller's state folder.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("SVC_") {
            command.env_remove(key);
        }
    }
    for (key, value) in profile
        .env
        .iter()
        .copied()
        .chain(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    {
        command.env(key, value.replace("{dir}", &state_str));
    }
    command
        .env("SVC_STATE_DIR", &state)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (mut group, stdout, stderr) =
        Group::spawn(&mut command).with_context(|| format!("starting `sh -c {line}`"))?;

    // Both pipes into one log beside the state folder, the last lines kept for failures.
    let tail = Arc::new(Mutex::new(VecDeque::new()));
    let log = Arc::new(Mutex::new(
        std::fs::File::create(root.path().join(ENGINE_OUTPUT)).ok(),
    ));
    for pipe in [
        stdout.map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
        stderr.map(|p| Box::new(p) as Box<dyn tokio::io::AsyncRead + Unpin + Send>),
    ]
    .into_iter()
    .flatten()
    {
        let (tail, log) = (tail.clone(), log.clone());
        group.tasks.push(tokio::spawn(drain(pipe, move |l| {
            if let Ok(mut file) = log.lock()
                && let Some(file) = file.as_mut()
            {
                let _ = writeln!(file, "{l}");
            }
            if let Ok(mut t) = tail.lock() {
                if t.len() == OUTPUT_TAIL {
                    t.pop_front();
                }
                t.push_back(l.to_string());
            }
        })));
    }

    let deadline = Instant::now() + ready_timeout;
    let why = loop {
        match read_descriptor(&state) {
            Ok(Some((base_url, token))) => {
                return Ok(Engine {
                    group,
                    base_url,
                    token,
                    root,
                });
            }
            Ok(None) => {}
            Err(e) => break format!("wrote a descriptor that is not one ({e:#})"),
        }
        if let Ok(Some(status)) = group.child.try_wait() {
            break format!("exited ({status})");
        }
        if Instant::now() >= deadline {
            break format!("did not write its descriptor within {ready_timeout:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let drains = std::mem::take(&mut group.tasks);
    group.stop().await;
    // Let the last words reach the tail; a lingering grandchild may hold a pipe.
    let _ = tokio::time::timeout(Duration::from_secs(2), futures::future::join_all(drains)).await;
    let mut shown: Vec<String> = tail
        .lock()
        .map(|t| t.iter().map(|l| format!("  | {l}")).collect())
        .unwrap_or_default();
    if shown.is_empty() {
        shown.push("  <no output>".into());
    }
    let log = std::fs::read_to_string(state.join("engine.log")).unwrap_or_default();
    let log_tail: Vec<String> = log
        .lines()
        .rev()
        .take(10)
        .map(|l| format!("  | {l}"))
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    bail!(
        "engine for profile {} {why}\n  command: SVC_STATE_DIR={} sh -c {}\n  last output lines:\n{}{}",
        profile.name,
        shell_quote(&state_str),
        shell_quote(&line),
        shown.join("\n"),
        if log_tail.is_empty() {
            String::new()
        } else {
            format!("\n  last lines of engine.log:\n{}", log_tail.join("\n"))
        }
    )
}

/// The descriptor's base URL and token once it is complete; `Ok(None)` while it
/// is not there (or half written by an engine that does not rename it in place).
fn read_descriptor(state: &Path) -> anyhow::Result<Option<(String, String)>> {
    let Ok(text) = std::fs::read(state.join("engine.json")) else {
        return Ok(None);
    };
    let Ok(d) = serde_json::from_slice::<Value>(&text) else {
        return Ok(None);
    };
    if d["protocol"] != PROTOCOL {
        bail!("`protocol` is not {PROTOCOL:?}: {d}");
    }
    let port = d["port"]
        .as_u64()
        .filter(|p| (1..=65535).contains(p))
        .ok_or_else(|| anyhow!("no port in {d}"))?;
    let token = d["token"]
        .as_str()
        .filter(|t| !t.is_empty())
        .ok_or_else(|| anyhow!("no token in {d}"))?;
    let host = d["host"].as_str().unwrap_or("127.0.0.1");
    let host = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.to_owned()
    };
    Ok(Some((format!("http://{host}:{port}"), token.to_owned())))
}

/// What `provider` declares, from `GET /v1/providers`: `Ok(Err(reason))` when the
/// engine has no such provider or it cannot serve, so its cases skip with that reason.
pub async fn provider_features(
    ctx: &Ctx,
    provider: &str,
) -> anyhow::Result<Result<BTreeSet<String>, String>> {
    let resp = ctx.send(ctx.request(Method::GET, "/v1/providers")).await?;
    resp.expect_status(200)?;
    let body = resp.json()?;
    let list = body["providers"]
        .as_array()
        .ok_or_else(|| anyhow!("GET /v1/providers: no `providers` list: {body}"))?;
    let Some(record) = list.iter().find(|p| p["id"] == provider) else {
        let ids: Vec<&str> = list.iter().filter_map(|p| p["id"].as_str()).collect();
        return Ok(Err(format!(
            "provider {provider} is not installed in this engine (GET /v1/providers lists {ids:?})"
        )));
    };
    if let Some(error) = record["error"].as_str() {
        return Ok(Err(format!("provider {provider} cannot serve: {error}")));
    }
    let features = record["features"]
        .as_array()
        .ok_or_else(|| anyhow!("provider {provider}: no `features` list: {record}"))?
        .iter()
        .filter_map(|f| f.as_str().map(str::to_owned))
        .collect();
    Ok(Ok(features))
}

/// The tag by which a case names the provider feature it needs: `feature:<name>`.
pub fn needed_features<'a>(tags: &'a [&'a str]) -> impl Iterator<Item = &'a str> + 'a {
    tags.iter().filter_map(|t| t.strip_prefix("feature:"))
}

/// Kills every sandbox the cases made: a sandbox outlives its engine, so nothing
/// else would. In an engine the runner launched (`all`), also any other the
/// profile's connection still lists; never in someone's running engine.
pub async fn kill_sandboxes(ctx: &Ctx, all: bool) {
    let mut targets = ctx.tracked_sandboxes();
    let own = profile_connection(ctx.connection());
    if all
        && let Ok(resp) = ctx
            .send(with_connection(
                ctx.request(Method::GET, "/v1/sandboxes"),
                own.as_deref(),
            ))
            .await
        && let Ok(body) = resp.json()
    {
        for id in body["sandboxes"].as_array().into_iter().flatten() {
            if let Some(id) = id["sandbox_id"].as_str() {
                targets.push((own.clone(), id.to_owned()));
            }
        }
    }
    targets.sort();
    targets.dedup();
    for (connection, id) in targets {
        let rb = ctx.request(Method::DELETE, &format!("/v1/sandboxes/{id}"));
        let _ = ctx.send(with_connection(rb, connection.as_deref())).await;
    }
}

fn with_connection(
    rb: reqwest::RequestBuilder,
    connection: Option<&str>,
) -> reqwest::RequestBuilder {
    match connection {
        Some(c) => rb.header(CONNECTION_HEADER, c),
        None => rb,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_connection_header_is_unpadded_base64url_json() {
        let h = connection_header(&json!({"provider": "local", "api_key": "k?>"}));
        assert!(
            !h.contains('=') && !h.contains('+') && !h.contains('/'),
            "{h}"
        );
        let back = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(&h)
            .unwrap();
        let v: Value = serde_json::from_slice(&back).unwrap();
        assert_eq!(v, json!({"provider": "local", "api_key": "k?>"}));
        assert!(profile_connection(None).is_none());
    }

    #[test]
    fn descriptors_are_read_once_complete() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_descriptor(dir.path()).unwrap().is_none());
        std::fs::write(dir.path().join("engine.json"), "{\"proto").unwrap();
        assert!(read_descriptor(dir.path()).unwrap().is_none());
        std::fs::write(
            dir.path().join("engine.json"),
            r#"{"protocol":"svc-engine/1","pid":1,"host":"127.0.0.1","port":4242,"token":"t"}"#,
        )
        .unwrap();
        assert_eq!(
            read_descriptor(dir.path()).unwrap(),
            Some(("http://127.0.0.1:4242".into(), "t".into()))
        );
        std::fs::write(dir.path().join("engine.json"), r#"{"protocol":"other/2"}"#).unwrap();
        assert!(read_descriptor(dir.path()).is_err());
    }

    #[test]
    fn features_are_tags() {
        let tags = ["needs:own-engine", "feature:pause", "feature:processes"];
        assert_eq!(
            needed_features(&tags).collect::<Vec<_>>(),
            vec!["pause", "processes"]
        );
    }
}
