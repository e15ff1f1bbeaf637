//! Start, status and stop (issue 13, wire contract `browser`): the operations while no
//! browser runs, a second start, a browser that died, a missing binary, the group off by
//! default.

use super::support::{click, content, navigate, screenshot, start, status, stop, type_text};
use crate::{Case, case, profiles};
use anyhow::ensure;
use std::time::{Duration, Instant};

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "browser/lifecycle/001",
            spec: "browser: GET /browser answers `{running: false}` before a start and after DELETE /browser; every page operation and DELETE while no browser runs is 409 `browser_not_running`; POST /browser starts one and answers `{running: true, pid, url, title}`; a second start while it runs is 409 `browser_running`; DELETE ends the browser's process.",
            profile: &profiles::BROWSER_LIFECYCLE,
            tags: ["needs:browser"],
            endpoints: ["browser_start", "browser_status", "browser_stop", "browser_navigate", "browser_click", "browser_type", "browser_screenshot", "browser_content"],
            codes: ["browser_running", "browser_not_running"],
            run: |ctx| async move {
                ensure!(status(&ctx).await? == serde_json::json!({"running": false}), "stopped at first");
                let not_running = || async {
                    navigate(&ctx, "https://example.com/").await?.expect_error(409, "browser_not_running")?;
                    click(&ctx, "#go").await?.expect_error(409, "browser_not_running")?;
                    type_text(&ctx, "#name", "x").await?.expect_error(409, "browser_not_running")?;
                    screenshot(&ctx, "").await?.expect_error(409, "browser_not_running")?;
                    content(&ctx).await?.expect_error(409, "browser_not_running")?;
                    stop(&ctx).await?.expect_error(409, "browser_not_running")?;
                    anyhow::Ok(())
                };
                not_running().await?;
                let started = start(&ctx).await?;
                started.expect_status(200)?;
                let body = started.json()?;
                let pid = body["pid"].as_u64().unwrap_or(0);
                ensure!(body["running"] == true && pid > 0 && body["url"] == "about:blank", "{body}");
                let again = start(&ctx).await?.expect_error(409, "browser_running")?;
                ensure!(again["error"].as_str().unwrap_or("").contains(&pid.to_string()), "{again}");
                let now = status(&ctx).await?;
                ensure!(now["running"] == true && now["pid"] == pid, "{now}");
                let stopped = stop(&ctx).await?;
                stopped.expect_status(200)?;
                ensure!(stopped.json()?["running"] == false, "{}", stopped.text());
                ensure!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "the browser {pid} is gone");
                ensure!(status(&ctx).await? == serde_json::json!({"running": false}), "stopped after DELETE");
                not_running().await?;
                Ok(())
            },
        },
        case! {
            id: "browser/lifecycle/002",
            spec: "browser: a browser that died is noticed, never waited for: GET /browser answers `running: false` with the `reason`, the operations are 409 `browser_not_running` saying how it ended, and a new start works.",
            profile: &profiles::BROWSER_DEATH,
            tags: ["needs:browser"],
            endpoints: ["browser_start", "browser_status", "browser_content"],
            codes: ["browser_not_running"],
            run: |ctx| async move {
                let started = start(&ctx).await?;
                started.expect_status(200)?;
                let pid = started.json()?["pid"].as_i64().unwrap_or(0) as i32;
                ensure!(pid > 0, "{}", started.text());
                nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL)?;
                let deadline = Instant::now() + Duration::from_secs(10);
                let mut now = status(&ctx).await?;
                while now["running"] == true && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    now = status(&ctx).await?;
                }
                ensure!(now["running"] == false && now["reason"].is_string(), "{now}");
                let err = content(&ctx).await?.expect_error(409, "browser_not_running")?;
                ensure!(err["error"].as_str().unwrap_or("").contains("exited") || err["error"].as_str().unwrap_or("").contains("DevTools"), "{err}");
                start(&ctx).await?.expect_status(200)?;
                stop(&ctx).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "browser/lifecycle/003",
            spec: "browser: with no browser binary (here `SVC_BROWSER_BIN` names none) POST /browser is 503 `browser_unavailable` naming the package to install.",
            profile: &profiles::BROWSER_MISSING,
            tags: [],
            endpoints: ["browser_start"],
            codes: ["browser_unavailable"],
            run: |ctx| async move {
                let err = start(&ctx).await?.expect_error(503, "browser_unavailable")?;
                let message = err["error"].as_str().unwrap_or("");
                ensure!(message.contains("SVC_BROWSER_BIN") && message.contains("apt-get install -y chromium"), "{err}");
                ensure!(status(&ctx).await? == serde_json::json!({"running": false}), "nothing runs");
                Ok(())
            },
        },
        case! {
            id: "browser/lifecycle/004",
            spec: "browser: the group is opt-in: on a server that did not switch it on, its routes are 404 `endpoint_disabled`.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["browser_start", "browser_status"],
            codes: ["endpoint_disabled"],
            run: |ctx| async move {
                start(&ctx).await?.expect_error(404, "endpoint_disabled")?;
                ctx.send(ctx.get("/browser")).await?.expect_error(404, "endpoint_disabled")?;
                Ok(())
            },
        },
    ]
}
