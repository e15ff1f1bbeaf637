//! List envelopes and cursors: the paging property over items, turns, turn
//! items and sessions; limit / order / after validation (issue 3).

use std::collections::HashSet;

use super::support::sessions::{
    Api, SESSIONS, check_list, expect_error_param, id_of, page_through, spath,
};
use crate::{Case, Ctx, case, profiles};
use anyhow::{anyhow, ensure};
use serde_json::Value;

/// The paging property: for each limit and both orders the pages concatenate
/// to the full list without duplicates, and asc is desc reversed.
async fn paging_property(
    api: &Api,
    path: &str,
    limits: &[usize],
    expect_len: usize,
) -> anyhow::Result<()> {
    let full_asc = api.all(path).await?;
    ensure!(
        full_asc.len() == expect_len,
        "{path}: {} elements, expected {expect_len}",
        full_asc.len()
    );
    let mut full_desc = full_asc.clone();
    full_desc.reverse();
    for &limit in limits {
        for (order, full) in [("asc", &full_asc), ("desc", &full_desc)] {
            let got = page_through(api, path, limit, order).await?;
            let ids: HashSet<&Value> = got.iter().map(|v| &v["id"]).collect();
            ensure!(
                ids.len() == got.len(),
                "{path} limit={limit} order={order}: duplicates"
            );
            ensure!(
                &got == full,
                "{path} limit={limit} order={order}: pages do not make up the list"
            );
        }
    }
    let sep = if path.contains('?') { '&' } else { '?' };
    let default = api.json(&format!("{path}{sep}limit=100")).await?;
    ensure!(
        default["data"].as_array() == Some(&full_desc),
        "{path}: the default order is desc"
    );
    Ok(())
}

/// A settled rt-one session with `turns` turns of 4 items each (user, reasoning, command, reply).
async fn busy_session(api: &Api, turns: usize) -> anyhow::Result<String> {
    let prompt = "[[scenario:reasoning]] [[scenario:command]] page";
    let sid = api.create_on("rt-one", Some(prompt)).await?;
    for _ in 1..turns {
        api.input(&sid, prompt).await?;
    }
    api.settle(&sid, turns).await?;
    Ok(sid)
}

async fn bounds(ctx: &Ctx) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let sid = api.create_on("rt-two", Some("bounds")).await?;
    let turns = api.settle(&sid, 1).await?;
    let tid = id_of(&turns[0])?;
    let lists = [
        SESSIONS.to_string(),
        spath(&sid, "/items"),
        spath(&sid, "/turns"),
        spath(&sid, &format!("/turns/{tid}/items")),
        spath(&sid, "/artifacts"),
        spath(&sid, "/traces"),
        spath(&sid, "/subagents"),
    ];
    for path in &lists {
        for q in ["limit=0", "limit=101", "limit=abc", "limit=-1"] {
            let resp = api.send(api.get(&format!("{path}?{q}"))).await?;
            expect_error_param(&resp, 400, "invalid_request", "limit")
                .map_err(|e| anyhow!("{path}?{q}: {e}"))?;
        }
        let resp = api.send(api.get(&format!("{path}?order=sideways"))).await?;
        expect_error_param(&resp, 400, "invalid_request", "order")
            .map_err(|e| anyhow!("{path}: {e}"))?;
        for q in ["limit=1", "limit=100", "order=asc", "order=desc"] {
            let page = api.json(&format!("{path}?{q}")).await?;
            check_list(&page).map_err(|e| anyhow!("{path}?{q}: {e}"))?;
        }
    }
    let cursors = [
        (SESSIONS.to_string(), "agsess_000000000000000000000000"),
        (spath(&sid, "/items"), "item_000000000000000000000000"),
        (spath(&sid, "/turns"), "turn_000000000000000000000000"),
        (
            spath(&sid, &format!("/turns/{tid}/items")),
            "item_000000000000000000000000",
        ),
        (spath(&sid, "/artifacts"), "art_000000000000000000000000"),
        (spath(&sid, "/traces"), "trace_000000000000000000000000"),
        (spath(&sid, "/subagents"), "nope"),
    ];
    for (path, after) in cursors {
        let resp = api.send(api.get(&format!("{path}?after={after}"))).await?;
        expect_error_param(&resp, 404, "agents.cursor_not_found", "after")
            .map_err(|e| anyhow!("{path}: {e}"))?;
    }
    // An id of another sequence is not a cursor of this one.
    let resp = api
        .send(api.get(&format!("{}?after={tid}", spath(&sid, "/items"))))
        .await?;
    expect_error_param(&resp, 404, "agents.cursor_not_found", "after")?;
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/lists/001",
            spec: "Paging property, items: for several limits and both orders, following after=last_id while has_more concatenates to the full list with no duplicate; asc is desc reversed; default limit 20, default order desc.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_items_list"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let sid = busy_session(&api, 6).await?;
                let path = spath(&sid, "/items");
                paging_property(&api, &path, &[1, 2, 3, 5, 7, 20, 23, 24, 25, 100], 24).await?;
                let first = api.json(&path).await?;
                ensure!(first["data"].as_array().map(Vec::len) == Some(20) && first["has_more"] == true, "default limit 20: {first}");
                Ok(())
            },
        },
        case! {
            id: "agents/lists/002",
            spec: "Paging property, turns and one turn's items.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_turns_list", "agents_sessions_turns_items_list"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let sid = busy_session(&api, 4).await?;
                paging_property(&api, &spath(&sid, "/turns"), &[1, 2, 3, 4, 5], 4).await?;
                let turns = api.turns(&sid).await?;
                let tid = id_of(&turns[2])?;
                paging_property(&api, &spath(&sid, &format!("/turns/{tid}/items")), &[1, 2, 3, 4], 4).await?;
                Ok(())
            },
        },
        case! {
            id: "agents/lists/003",
            spec: "Paging property, sessions (one identity's sessions only).",
            profile: &profiles::AGENTS_SESSIONS_OWNERS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_sessions_list", "agents_sessions_create"],
            codes: [],
            run: |ctx| async move {
                // Only this case acts as bob in a way that creates sessions.
                let bob = Api::as_token(&ctx, "bob-token");
                for i in 0..6 {
                    bob.create(&serde_json::json!({"metadata": {"n": format!("{i}")}})).await?;
                }
                paging_property(&bob, SESSIONS, &[1, 2, 4, 5, 6, 7], 6).await
            },
        },
        case! {
            id: "agents/lists/004",
            spec: "Every list: limit outside 1-100 is 400 param limit, an unknown order 400 param order, an `after` not in the sequence 404 agents.cursor_not_found param after.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: [
                "agents_sessions_list", "agents_sessions_items_list", "agents_sessions_turns_list",
                "agents_sessions_turns_items_list", "agents_artifacts_list", "agents_traces_list",
                "agents_subagents_list",
            ],
            codes: ["invalid_request", "agents.cursor_not_found"],
            run: |ctx| async move { bounds(&ctx).await },
        },
    ]
}
