//! The agents group switch.

use crate::{Case, case, profiles};
use anyhow::ensure;
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![case! {
        id: "agents/switch/001",
        spec: "The agents group is off by default and switched on by `SVC_SERVER_ENABLED_GROUPS=agents`.",
        profile: &profiles::AGENTS,
        tags: [],
        endpoints: ["capabilities"],
        codes: [],
        run: |ctx| async move {
            let caps = ctx.send(ctx.get("/capabilities")).await?.json()?;
            ensure!(caps["groups"]["agents"] == true, "{}", caps["groups"]);
            ensure!(caps["group_summary"]["agents"] == json!({"enabled": 70, "total": 70}), "{}", caps["group_summary"]["agents"]);
            ensure!(caps["endpoints"]["agents_sessions_create"]["scopes"] == json!(["agents:use"]), "default scope agents:use");
            Ok(())
        },
    }]
}
