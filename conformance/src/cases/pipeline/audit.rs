//! The audit log.

use super::auth::with_token;
use crate::{Case, Ctx, case, profiles};
use anyhow::ensure;
use reqwest::Method;
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "pipeline/audit/001",
            spec: "`audit: all` writes one JSON line per call: time, identity, endpoint id, decision, code, rule, status, duration.",
            profile: &profiles::SECURED,
            tags: [],
            endpoints: ["commands_list"],
            codes: ["missing_scope"],
            run: |ctx| async move {
                ctx.send(with_token(&ctx, Method::GET, "/commands?audit_probe=1", "admin-token")).await?.expect_status(200)?;
                let rb = with_token(&ctx, Method::POST, "/commands/greet", "reader-token").json(&json!({"who": "x"}));
                ctx.send(rb).await?.expect_error(403, "missing_scope")?;
                let lines = audit_lines(&ctx, |lines| {
                    lines.iter().any(|l| l["endpoint"] == "commands_list" && l["identity"] == "admin")
                        && lines.iter().any(|l| l["endpoint"] == "commands_run" && l["identity"] == "reader")
                })
                .await?;
                let allowed = lines.iter().find(|l| l["endpoint"] == "commands_list" && l["identity"] == "admin")
                    .ok_or_else(|| anyhow::anyhow!("no line for the allowed call: {lines:?}"))?;
                ensure!(allowed["decision"] == "allow" && allowed["status"] == 200 && allowed["code"].is_null(), "{allowed}");
                ensure!(allowed["duration_ms"].is_number() && allowed["time"].is_string(), "{allowed}");
                ensure!(!allowed.to_string().contains("audit_probe"), "the query string is not logged");
                let denied = lines.iter().find(|l| l["endpoint"] == "commands_run" && l["identity"] == "reader")
                    .ok_or_else(|| anyhow::anyhow!("no line for the denied call: {lines:?}"))?;
                ensure!(denied["decision"] == "deny" && denied["code"] == "missing_scope" && denied["status"] == 403, "{denied}");
                ensure!(!lines.iter().any(|l| l.to_string().contains("reader-token")), "tokens never reach the audit");
                Ok(())
            },
        },
        case! {
            id: "pipeline/audit/002",
            spec: "`audit: deny` records refusals only, with the rule of a disabled endpoint.",
            profile: &profiles::POLICY,
            tags: [],
            endpoints: ["health", "system_info"],
            codes: ["endpoint_disabled"],
            run: |ctx| async move {
                ctx.send(ctx.get("/health")).await?.expect_status(200)?;
                ctx.send(ctx.get("/system/info")).await?.expect_error(404, "endpoint_disabled")?;
                let lines = audit_lines(&ctx, |lines| lines.iter().any(|l| l["endpoint"] == "system_info")).await?;
                ensure!(lines.iter().all(|l| l["decision"] == "deny"), "only refusals: {lines:?}");
                let line = lines.iter().find(|l| l["endpoint"] == "system_info")
                    .ok_or_else(|| anyhow::anyhow!("no line for system_info: {lines:?}"))?;
                ensure!(line["rule"] == "policy:endpoints.system_info" && line["identity"] == "anonymous", "{line}");
                Ok(())
            },
        },
    ]
}

/// The audit file's lines once `wanted` holds of them. Other cases of the profile share the
/// server and its audit file, so their lines come and go beside this case's: waiting for a
/// number of lines could read the file before this case's own line was written.
async fn audit_lines(
    ctx: &Ctx,
    wanted: impl Fn(&[serde_json::Value]) -> bool,
) -> anyhow::Result<Vec<serde_json::Value>> {
    let dir = ctx
        .dir()
        .ok_or_else(|| anyhow::anyhow!("needs the profile directory"))?;
    let path = dir.join("audit.jsonl");
    // The audit writer runs beside the request path: give it a moment.
    let mut seen = Vec::new();
    for _ in 0..50 {
        let text = tokio::fs::read_to_string(&path).await.unwrap_or_default();
        // Only whole lines: the writer may be in the middle of the next one.
        let whole = text.rfind('\n').map_or("", |end| &text[..end]);
        let lines: Vec<serde_json::Value> = whole
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?;
        if wanted(&lines) {
            return Ok(lines);
        }
        seen = lines;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    anyhow::bail!(
        "the audit file {} never held this case's lines: {seen:?}",
        path.display()
    )
}
