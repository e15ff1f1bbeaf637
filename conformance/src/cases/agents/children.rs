//! What a child of the server inherits (issue: children inherit the server's token). A
//! runtime starts from an explicit base, never the server's own environment: no
//! `SVC_*` variable (the server's token among them), nothing the operator did not pass on.
//! The fakes' `env` scenario prints a variable's real value in the runtime's environment as
//! a command's output, which is what a real agent reading `/proc/self/environ` would see.

use super::support::sessions::{Api, RUNTIMES};
use crate::profiles::{self, SERVER_SECRET_TOKEN};
use crate::{Case, case};
use anyhow::{Context, ensure};
use serde_json::Value;

/// The output a `printenv NAME` command item reported, and its exit code.
fn printed(items: &[Value]) -> anyhow::Result<(String, i64)> {
    let item = items
        .iter()
        .find(|i| i["type"] == "command_execution")
        .with_context(|| format!("no command item among {items:?}"))?;
    let output = item["output"].as_str().unwrap_or_default().to_owned();
    let exit = item["exit_code"].as_i64().context("exit_code")?;
    Ok((output, exit))
}

async fn child_env(ctx: crate::Ctx) -> anyhow::Result<()> {
    let api = Api::as_token(&ctx, SERVER_SECRET_TOKEN);
    for runtime in RUNTIMES {
        // Passed on purpose: the scenario really shows the child's environment.
        let (_, turn, items) = api
            .run_turn(runtime, "[[scenario:env:CHILD_VISIBLE]]")
            .await?;
        let (text, exit) = printed(&items)?;
        ensure!(
            exit == 0 && text.trim_end() == "passed-on-purpose-5e8a",
            "{runtime}: a variable listed in SVC_SERVER_CHILD_ENV reaches the runtime: {turn} {items:?}"
        );
        for name in [
            "SVC_SERVER_TOKEN",
            "SVC_SERVER_ENABLED_GROUPS",
            "SVC_AGENTS_WORKSPACE",
            "SVC_SERVER_CHILD_ENV",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            let (sid, _, items) = api
                .run_turn(runtime, &format!("[[scenario:env:{name}]]"))
                .await?;
            let (text, exit) = printed(&items)?;
            ensure!(
                !text.contains(SERVER_SECRET_TOKEN) && !text.contains("aws-secret-9c41e7d2"),
                "{runtime}: `{name}` leaked into the runtime's environment: {items:?}"
            );
            ensure!(
                exit != 0,
                "{runtime}: `printenv {name}` must fail in the child (the variable is unset): {items:?}"
            );
            // Nowhere else either: the whole event history of the session.
            let events = api.replay(&sid, "after=0").await?;
            for frame in events {
                let data = frame.data.unwrap_or_default();
                ensure!(
                    !data.contains(SERVER_SECRET_TOKEN),
                    "{runtime}: the token appeared in an event: {data}"
                );
            }
        }
    }
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![case! {
        id: "agents/children/001",
        spec: "Runtimes get an environment built from an explicit base, never the server's own: no `SVC_*` variable (the server's token among them) and nothing the operator did not pass on; a variable listed in `SVC_SERVER_CHILD_ENV` does reach them. Both runtimes.",
        profile: &profiles::AGENTS_SESSIONS_SERVER_SECRETS,
        tags: ["needs:fake-runtimes"],
        endpoints: ["agents_sessions_create", "agents_sessions_items_list"],
        codes: [],
        run: child_env,
    }]
}
