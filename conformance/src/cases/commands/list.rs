//! Named commands: GET /commands (second document, 4.2).

use crate::{Case, case, profiles};
use anyhow::{Context, ensure};
use serde_json::json;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "commands/list/001",
            spec: "GET /commands lists the named commands registered in the server, each with name, description and args.",
            profile: &profiles::COMMANDS,
            tags: [],
            endpoints: ["commands_list"],
            codes: [],
            run: |ctx| async move {
                let resp = ctx.send(ctx.get("/commands")).await?;
                resp.expect_status(200)?;
                let body = resp.json()?;
                let list = body["commands"].as_array().context("`commands` is an array")?;
                let names: Vec<_> = list.iter().filter_map(|c| c["name"].as_str()).collect();
                ensure!(names == ["greet", "fail", "slow", "missing"], "names: {names:?}");
                ensure!(list.iter().all(|c| c["description"].is_string() && c["args"].is_array()), "{body}");
                ensure!(!body.to_string().contains("argv"), "the argv template stays private");
                ctx.snapshot("commands__list", &body)
            },
        },
        case! {
            id: "commands/list/002",
            spec: "With no command declared the list is empty.",
            profile: &profiles::DEFAULT,
            tags: [],
            endpoints: ["commands_list"],
            codes: [],
            run: |ctx| async move {
                let body = ctx.send(ctx.get("/commands")).await?.json()?;
                ensure!(body == json!({"commands": []}), "{body}");
                Ok(())
            },
        },
    ]
}
