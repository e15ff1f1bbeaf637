//! The guards of every route that starts a child (issue 12, Guards; spec 7.1): `cwd` under
//! the path guard, the allow list and its scopes, the process guard, the variable rules,
//! and the pipeline's body, rate and concurrency limits on these routes.

use super::support::{area, base, s, snapshot};
use crate::{Case, Ctx, Resp, case, profiles};
use anyhow::ensure;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

async fn as_(
    ctx: &Ctx,
    who: &str,
    method: Method,
    path: &str,
    body: &Value,
) -> anyhow::Result<Resp> {
    ctx.send(
        ctx.anonymous(method, path)
            .bearer_auth(format!("{who}-token"))
            .json(body),
    )
    .await
}

/// A request as the runner's caller (the limits profile has no identities).
async fn plain(ctx: &Ctx, method: Method, path: &str, body: &Value) -> anyhow::Result<Resp> {
    ctx.send(ctx.request(method, path).json(body)).await
}

/// The three starting routes, each with `body`.
async fn every_start(
    ctx: &Ctx,
    who: &str,
    body: &Value,
) -> anyhow::Result<Vec<(&'static str, Resp)>> {
    Ok(vec![
        ("shell", as_(ctx, who, Method::POST, "/shell", body).await?),
        (
            "shell_stream",
            as_(ctx, who, Method::POST, "/shell/stream", body).await?,
        ),
        (
            "process_start",
            as_(ctx, who, Method::POST, "/processes", body).await?,
        ),
    ])
}

async fn refused_everywhere(
    ctx: &Ctx,
    who: &str,
    body: &Value,
    status: u16,
    code: &str,
) -> anyhow::Result<Value> {
    let mut last = Value::Null;
    for (route, resp) in every_start(ctx, who, body).await? {
        last = resp
            .expect_error(status, code)
            .map_err(|e| e.context(format!("{route} with {body}")))?;
        if status == 403 {
            ensure!(
                last["endpoint"] == route,
                "{route}: a denial names the endpoint: {last}"
            );
        }
    }
    Ok(last)
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "process/guard/001",
            spec: "path_not_allowed (403): a `cwd` outside `paths.allow` (the server's own working directory when `cwd` is absent is judged too); a `cwd` that does not exist is 404 `not_found`.",
            profile: &profiles::PROCESS_GUARD,
            tags: [],
            endpoints: ["shell", "shell_stream", "process_start"],
            codes: ["path_not_allowed", "not_found"],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-001")?;
                let outside = base(&ctx)?.join("outside");
                std::fs::create_dir_all(&outside)?;
                let err = refused_everywhere(&ctx, "admin", &json!({"cmd": "true", "cwd": s(&outside)}), 403, "path_not_allowed").await?;
                ensure!(err["param"] == "cwd", "{err}");
                snapshot(&ctx, "process__guard__path_not_allowed", &err)?;
                refused_everywhere(&ctx, "admin", &json!({"cmd": "true", "cwd": format!("{}/../../outside", s(&dir))}), 403, "path_not_allowed").await?;
                if !std::env::current_dir()?.starts_with(base(&ctx)?.join("work")) {
                    refused_everywhere(&ctx, "admin", &json!({"cmd": "true"}), 403, "path_not_allowed").await?;
                }
                let resp = as_(&ctx, "admin", Method::POST, "/shell", &json!({"cmd": "true", "cwd": s(&dir.join("missing"))})).await?;
                resp.expect_error(404, "not_found")?;
                let ok = as_(&ctx, "admin", Method::POST, "/shell", &json!({"cmd": "echo fine", "cwd": s(&dir)})).await?;
                ensure!(ok.json()?["stdout"] == "fine\n", "{}", ok.describe());
                Ok(())
            },
        },
        case! {
            id: "process/guard/002",
            spec: "command_not_allowed (403): with `allow_commands`, a program it does not name is refused, matched on the program actually executed: each command of a shell line, after `env`, `sudo`, `sh -c` wrappers, through a link; a program decided at run time (`$X`, `eval`) is refused since the guard cannot see it.",
            profile: &profiles::PROCESS_GUARD,
            tags: [],
            endpoints: ["shell", "shell_stream", "process_start"],
            codes: ["command_not_allowed"],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-002")?;
                let link = dir.join("innocent");
                std::os::unix::fs::symlink("/bin/rm", &link)?;
                let victim = dir.join("victim");
                std::fs::write(&victim, "still here")?;
                for cmd in [
                    json!({"cmd": format!("rm {}", s(&victim))}),
                    json!({"cmd": format!("echo hi | rm {}", s(&victim))}),
                    json!({"cmd": format!("env rm {}", s(&victim))}),
                    json!({"cmd": format!("sh -c 'echo; rm {}'", s(&victim))}),
                    json!({"cmd": "sh", "args": ["-c", format!("rm {}", s(&victim))]}),
                    json!({"cmd": s(&link), "args": [s(&victim)]}),
                    json!({"cmd": "$X", "env": {"APP_X": "rm"}}),
                    json!({"cmd": "eval echo"}),
                ] {
                    let mut body = cmd.clone();
                    body["cwd"] = json!(s(&dir));
                    refused_everywhere(&ctx, "admin", &body, 403, "command_not_allowed").await?;
                }
                ensure!(victim.exists(), "nothing ran");
                let ok = as_(&ctx, "admin", Method::POST, "/shell", &json!({"cmd": "cd . && echo $((1+1)) | cat", "cwd": s(&dir)})).await?;
                ensure!(ok.json()?["stdout"] == "2\n", "named programs (and harmless builtins) run: {}", ok.describe());
                Ok(())
            },
        },
        case! {
            id: "process/guard/003",
            spec: "scope_required (403): a command guard with no allow-list entry that could admit the call for this caller (`git` is allowed only with `vcs:write`); a caller holding the scope runs it.",
            profile: &profiles::PROCESS_GUARD,
            tags: [],
            endpoints: ["shell", "shell_stream", "process_start"],
            codes: ["scope_required"],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-003")?;
                let body = json!({"cmd": "git --version >/dev/null 2>&1; true", "cwd": s(&dir)});
                let err = refused_everywhere(&ctx, "runner", &body, 403, "scope_required").await?;
                ensure!(err["error"].as_str().is_some_and(|m| m.contains("vcs:write")), "the message names the scope: {err}");
                snapshot(&ctx, "process__guard__scope_required", &err)?;
                let ok = as_(&ctx, "admin", Method::POST, "/shell", &body).await?;
                ensure!(ok.status == 200, "a caller holding `vcs:write` (admin holds `*`) runs it: {}", ok.describe());
                Ok(())
            },
        },
        case! {
            id: "process/guard/004",
            spec: "process_denied (403): the process guard refuses programs that leave the process group or change the user (`setsid`, `sudo`, ... by default), even behind a wrapper.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell", "shell_stream", "process_start"],
            codes: ["process_denied"],
            run: |ctx| async move {
                let dir = s(&area(&ctx, "guard-004")?);
                for body in [
                    json!({"cmd": "setsid sleep 60", "cwd": dir}),
                    json!({"cmd": "env sudo true", "cwd": dir}),
                    json!({"cmd": "setsid", "args": ["sleep", "60"], "cwd": dir}),
                ] {
                    for (route, path) in [("shell", "/shell"), ("shell_stream", "/shell/stream"), ("process_start", "/processes")] {
                        let err = ctx.send(ctx.post_json(path, &body)).await?.expect_error(403, "process_denied")?;
                        ensure!(err["endpoint"] == route, "{err}");
                    }
                }
                let err = ctx.send(ctx.post_json("/shell", &json!({"cmd": "setsid true", "cwd": dir}))).await?.json()?;
                snapshot(&ctx, "process__guard__process_denied", &err)?;
                Ok(())
            },
        },
        case! {
            id: "process/guard/005",
            spec: "Variables: a name the built-in rule refuses (`LD_PRELOAD`, `PATH`, secret-like names) or `process.deny_env` lists is 403 `env_var_denied`; a name not on `process.allow_env` is 403 `env_var_not_allowed`; a malformed name (`=`, empty) or a NUL in a value is 400 `env_invalid`; an allowed variable reaches the child.",
            profile: &profiles::PROCESS_GUARD,
            tags: [],
            endpoints: ["shell", "shell_stream", "process_start"],
            codes: ["env_var_denied", "env_var_not_allowed", "env_invalid"],
            run: |ctx| async move {
                let dir = s(&area(&ctx, "guard-005")?);
                for (env, status, code) in [
                    (json!({"LD_PRELOAD": "/tmp/x.so"}), 403, "env_var_denied"),
                    (json!({"PATH": "/tmp"}), 403, "env_var_denied"),
                    (json!({"APP_TOKEN": "x"}), 403, "env_var_denied"),
                    (json!({"OTHER": "1"}), 403, "env_var_not_allowed"),
                    (json!({"APP_A=B": "1"}), 400, "env_invalid"),
                    (json!({"": "1"}), 400, "env_invalid"),
                    (json!({"APP_X": "a\u{0}b"}), 400, "env_invalid"),
                ] {
                    let body = json!({"cmd": "true", "cwd": dir, "env": env});
                    let err = refused_everywhere(&ctx, "admin", &body, status, code).await?;
                    ensure!(err["param"] == "env", "{err}");
                }
                let ok = as_(&ctx, "admin", Method::POST, "/shell", &json!({"cmd": "echo $APP_MODE", "cwd": dir, "env": {"APP_MODE": "blue"}})).await?;
                ensure!(ok.json()?["stdout"] == "blue\n", "{}", ok.describe());
                let err = as_(&ctx, "admin", Method::POST, "/shell", &json!({"cmd": "true", "cwd": dir, "env": {"OTHER": "1"}})).await?.json()?;
                snapshot(&ctx, "process__guard__env_var_not_allowed", &err)?;
                let resp = ctx.send(ctx.post_json("/shell", &json!({"cmd": "true", "cwd": dir, "env": {"BLOCKED_X": "1"}}))).await?;
                ensure!(resp.status == 401, "the guard profile needs a token: {}", resp.describe());
                Ok(())
            },
        },
        case! {
            id: "process/guard/008",
            spec: "An allow list means what it says (issue 30, item 3): with `make`, `git`, `curl` and `kubectl` allowed, a line that sets a variable which makes them run code or read another configuration (`MAKEFLAGS`, `GIT_CONFIG_*`, `GIT_EXTERNAL_DIFF`, `KUBECONFIG`, `CURL_HOME`, before the program or through `env`), and arguments known to run code (`make --eval` or any prefix of it from `--ev`, `-E`, a variable set on the line with `!=` or a `$`, after `--` too, `git -c`, `git config` setting a value, `git init --template`, `git --config-env`, any git global option not known, such as `--attr-source VALUE` hiding a `-c`, and a git command's options that run a program, any prefix of them, `clone --upl=`, `rebase -x`, `submodule foreach`) are 403 and run nothing; a caller's `env` name that is not an identifier (`A B`, `1ABC`) is 400 `env_invalid`.",
            profile: &profiles::PROCESS_GUARD,
            tags: [],
            endpoints: ["shell", "shell_stream", "process_start"],
            codes: ["command_not_allowed", "env_invalid"],
            run: |ctx| async move {
                let dir = area(&ctx, "guard-008")?;
                std::fs::write(dir.join("kc"), "apiVersion: v1\nkind: Config\nusers: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: touch, args: [pwned]}}}]\n")?;
                std::fs::write(dir.join(".curlrc"), "output = pwned\n")?;
                let touch = "touch pwned";
                for cmd in [
                    json!({"cmd": format!("MAKEFLAGS='--eval=$(shell {touch})' make -f /dev/null")}),
                    json!({"cmd": format!("env MAKEFLAGS='--eval=$(shell {touch})' make -f /dev/null")}),
                    json!({"cmd": format!("make --eval='$(shell {touch})' -f /dev/null")}),
                    json!({"cmd": format!("make -E '$(shell {touch})' -f /dev/null")}),
                    json!({"cmd": format!("make --ev='$(shell {touch})' -f /dev/null")}),
                    json!({"cmd": format!("make --eva='$(shell {touch})' -f /dev/null")}),
                    json!({"cmd": format!("make -f /dev/null 'X!={touch}'")}),
                    json!({"cmd": format!("make -f /dev/null 'X:=$(shell {touch})'")}),
                    json!({"cmd": format!("make -f /dev/null -- 'X!={touch}'")}),
                    json!({"cmd": format!("git config alias.x '!{touch}'")}),
                    json!({"cmd": format!("git init --template=. x")}),
                    json!({"cmd": format!("git --attr-source HEAD -c alias.x='!{touch}' x")}),
                    json!({"cmd": "git", "args": ["--attr-source", "HEAD", "-c", format!("alias.x=!{touch}"), "x"]}),
                    json!({"cmd": format!("git clone --upl='{touch};' file:///nonexistent x")}),
                    json!({"cmd": format!("git -C . rebase -x '{touch}' HEAD")}),
                    json!({"cmd": format!("git submodule foreach '{touch}'")}),
                    json!({"cmd": "make", "args": [format!("--eval=$(shell {touch})"), "-f", "/dev/null"]}),
                    json!({"cmd": format!("git -c alias.x='!{touch}' x")}),
                    json!({"cmd": "git", "args": ["-c", format!("alias.x=!{touch}"), "x"]}),
                    json!({"cmd": format!("APP_X='!{touch}' git --config-env=alias.x=APP_X x")}),
                    json!({"cmd": format!("GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!{touch}' git x")}),
                    json!({"cmd": format!("GIT_EXTERNAL_DIFF='{touch}' git diff --no-index --ext-diff kc .curlrc")}),
                    json!({"cmd": "KUBECONFIG=kc kubectl get pods --request-timeout=1s"}),
                    json!({"cmd": "CURL_HOME=. curl -s file:///dev/null"}),
                ] {
                    let mut body = cmd.clone();
                    body["cwd"] = json!(s(&dir));
                    for (route, resp) in every_start(&ctx, "admin", &body).await? {
                        ensure!(resp.status == 403, "{route} with {body}: {}", resp.describe());
                        ensure!(!dir.join("pwned").exists(), "{route} with {body} created a file");
                    }
                }
                for name in ["A B", "1ABC", "A-B", "A.B"] {
                    let body = json!({"cmd": "true", "cwd": s(&dir), "env": {name: "1"}});
                    let err = refused_everywhere(&ctx, "admin", &body, 400, "env_invalid").await?;
                    ensure!(err["param"] == "env", "{err}");
                }
                Ok(())
            },
        },
        case! {
            id: "process/guard/006",
            spec: "`process.deny_env` refuses the variables it lists (403 `env_var_denied`), in any case.",
            profile: &profiles::PROCESS,
            tags: [],
            endpoints: ["shell"],
            codes: ["env_var_denied"],
            run: |ctx| async move {
                let dir = s(&area(&ctx, "guard-006")?);
                for name in ["BLOCKED_ONE", "blocked_two"] {
                    let err = ctx.send(ctx.post_json("/shell", &json!({"cmd": "true", "cwd": dir, "env": {name: "1"}}))).await?.expect_error(403, "env_var_denied")?;
                    ensure!(err["error"].as_str().is_some_and(|m| m.contains("BLOCKED_*")), "the message names the rule: {err}");
                }
                let ok = ctx.send(ctx.post_json("/shell", &json!({"cmd": "echo $FREE", "cwd": dir, "env": {"FREE": "yes"}}))).await?;
                ensure!(ok.json()?["stdout"] == "yes\n", "{}", ok.describe());
                Ok(())
            },
        },
        case! {
            id: "process/guard/007",
            spec: "The pipeline's limits apply to these routes: a body over the endpoint's limit is 413 `payload_too_large`; a second `shell_stream` while one is open is 429 `concurrency_limited`; past `process_stdin`'s rate, 429 `rate_limited`; both with `Retry-After`.",
            profile: &profiles::PROCESS_LIMITS,
            tags: [],
            endpoints: ["process_start", "shell_stream", "process_stdin"],
            codes: ["payload_too_large", "concurrency_limited", "rate_limited"],
            run: |ctx| async move {
                let dir = s(&area(&ctx, "guard-007")?);
                let big = json!({"cmd": "echo", "args": ["x".repeat(4096)], "cwd": dir});
                plain(&ctx, Method::POST, "/processes", &big).await?.expect_error(413, "payload_too_large")?;
                let mut open = ctx.sse(ctx.anonymous(Method::POST, "/shell/stream").json(&json!({"cmd": "echo open; sleep 5", "cwd": dir}))).await?;
                ensure!(open.status == 200, "{}", open.status);
                open.next_event_within(Duration::from_secs(10)).await?;
                let second = plain(&ctx, Method::POST, "/shell/stream", &json!({"cmd": "true", "cwd": dir})).await?;
                second.expect_error(429, "concurrency_limited")?;
                ensure!(second.header("retry-after").is_some(), "{}", second.describe());
                drop(open);
                let resp = plain(&ctx, Method::POST, "/processes", &json!({"cmd": "cat", "args": [], "cwd": dir})).await?;
                let pid = super::support::pid_of(&resp.json()?)?;
                let mut limited = None;
                for _ in 0..6 {
                    let r = plain(&ctx, Method::POST, &format!("/processes/{pid}/stdin"), &json!({"data": "x\n"})).await?;
                    if r.status == 429 { limited = Some(r); break; }
                    r.expect_status(200)?;
                }
                let limited = limited.ok_or_else(|| anyhow::anyhow!("no 429 after 6 writes at 3 a minute"))?;
                limited.expect_error(429, "rate_limited")?;
                ensure!(limited.header("retry-after").is_some(), "{}", limited.describe());
                plain(&ctx, Method::DELETE, &format!("/processes/{pid}"), &json!(null)).await?;
                Ok(())
            },
        },
    ]
}
