//! GET /system/info, /system/metrics, /system/disk and /system/ports.

use super::redact_checked;
use crate::{Case, case, profiles};
use anyhow::ensure;
use serde_json::Value;

fn text(v: &Value) -> bool {
    v.as_str().is_some_and(|s| !s.is_empty())
}
fn count(v: &Value) -> bool {
    v.as_u64().is_some()
}
fn positive(v: &Value) -> bool {
    v.as_u64().is_some_and(|n| n > 0)
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "system/info/001",
            spec: "system: `GET /system/info` answers `{os, kernel, arch, cpus, memory_bytes, hostname, uptime_s, server_version}`: what the machine is.",
            profile: &profiles::SYSTEM,
            tags: [],
            endpoints: ["system_info"],
            codes: [],
            run: |ctx| async move {
                let resp = ctx.send(ctx.get("/system/info")).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
                ensure!(body["kernel"] == kernel.trim(), "the kernel of this machine: {body}");
                ensure!(body["os"].as_str().is_some_and(|o| o.starts_with("linux")), "{body}");
                let shaped = redact_checked(&body, &[
                    ("os", text), ("kernel", text), ("arch", text), ("cpus", positive),
                    ("memory_bytes", positive), ("hostname", |v| v.is_string()),
                    ("uptime_s", count),
                ])?;
                ctx.snapshot("system__info", &shaped)?;
                Ok(())
            },
        },
        case! {
            id: "system/metrics/001",
            spec: "system: `GET /system/metrics` answers `{cpu_percent, memory: {total_bytes, used_bytes}, load: [1m, 5m, 15m], processes}`.",
            profile: &profiles::SYSTEM,
            tags: [],
            endpoints: ["system_metrics"],
            codes: [],
            run: |ctx| async move {
                let resp = ctx.send(ctx.get("/system/metrics")).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                let cpu = body["cpu_percent"].as_f64().unwrap_or(-1.0);
                ensure!((0.0..=100.0).contains(&cpu), "cpu_percent 0 to 100: {body}");
                let (total, used) = (body["memory"]["total_bytes"].as_u64(), body["memory"]["used_bytes"].as_u64());
                ensure!(matches!((total, used), (Some(t), Some(u)) if t > 0 && u <= t), "{body}");
                let load = body["load"].as_array().cloned().unwrap_or_default();
                ensure!(load.len() == 3 && load.iter().all(|l| l.as_f64().is_some_and(|x| x >= 0.0)), "{body}");
                ensure!(body["processes"].as_u64().is_some_and(|n| n >= 2), "the server and its caller at least: {body}");
                let mut shaped = redact_checked(&body, &[
                    ("cpu_percent", |v| v.is_number()), ("load", |v| v.is_array()), ("processes", positive),
                ])?;
                shaped["memory"] = redact_checked(&body["memory"], &[("total_bytes", positive), ("used_bytes", count)])?;
                ctx.snapshot("system__metrics", &shaped)?;
                Ok(())
            },
        },
        case! {
            id: "system/disk/001",
            spec: "system: `GET /system/disk?path=` answers `{path, total_bytes, used_bytes, free_bytes}` for the filesystem holding the path; a path that does not exist is 404 `not_found`.",
            profile: &profiles::SYSTEM,
            tags: [],
            endpoints: ["system_disk"],
            codes: ["not_found"],
            run: |ctx| async move {
                let dir = ctx.dir().ok_or_else(|| anyhow::anyhow!("needs the profile directory"))?.join("work");
                let resp = ctx.send(ctx.get(&format!("/system/disk?path={}", dir.display()))).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                ensure!(body["path"] == dir.display().to_string(), "{body}");
                let n = |k: &str| body[k].as_u64().unwrap_or(0);
                ensure!(n("total_bytes") > 0 && n("used_bytes") <= n("total_bytes") && n("free_bytes") <= n("total_bytes"), "{body}");
                let shaped = redact_checked(&body, &[("total_bytes", positive), ("used_bytes", count), ("free_bytes", count)])?;
                ctx.snapshot("system__disk", &shaped)?;
                let missing = ctx.send(ctx.get(&format!("/system/disk?path={}/no-such-dir", dir.display()))).await?;
                let err = missing.expect_error(404, "not_found")?;
                ensure!(err["param"] == "path", "{err}");
                Ok(())
            },
        },
        case! {
            id: "system/disk/002",
            spec: "system: the path of `GET /system/disk` passes the path guard: outside `paths.allow` is 403 `path_not_allowed`; an unknown query member is 400 `invalid_request`.",
            profile: &profiles::SYSTEM,
            tags: [],
            endpoints: ["system_disk"],
            codes: ["path_not_allowed", "invalid_request"],
            run: |ctx| async move {
                let resp = ctx.send(ctx.get("/system/disk?path=/etc")).await?;
                let err = resp.expect_error(403, "path_not_allowed")?;
                ensure!(err["param"] == "path", "{err}");
                ctx.snapshot("system__disk__path_not_allowed", &err)?;
                let resp = ctx.send(ctx.get("/system/disk?device=/dev/sda")).await?;
                resp.expect_error(400, "invalid_request")?;
                Ok(())
            },
        },
        case! {
            id: "system/ports/001",
            spec: "system: `GET /system/ports` answers `{ports: [{port, address, protocol, pid?, program?}]}`, the listening TCP sockets; a socket the caller opened is listed with the caller's pid when the server can see it.",
            profile: &profiles::SYSTEM,
            tags: [],
            endpoints: ["system_ports"],
            codes: [],
            run: |ctx| async move {
                let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
                let port = listener.local_addr()?.port();
                let resp = ctx.send(ctx.get("/system/ports")).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                let ports = body["ports"].as_array().cloned().unwrap_or_default();
                for p in &ports {
                    ensure!(p["port"].is_u64() && p["address"].is_string() && (p["protocol"] == "tcp" || p["protocol"] == "tcp6"), "{p}");
                }
                let ours = ports.iter().find(|p| p["port"] == port)
                    .ok_or_else(|| anyhow::anyhow!("port {port} is not listed: {body}"))?;
                ensure!(ours["address"] == "127.0.0.1" && ours["protocol"] == "tcp", "{ours}");
                ensure!(ours["pid"] == std::process::id(), "held by this process: {ours}");
                let shaped = redact_checked(ours, &[("port", positive), ("pid", positive), ("program", text)])?;
                ctx.snapshot("system__ports__entry", &shaped)?;
                drop(listener);
                Ok(())
            },
        },
    ]
}
