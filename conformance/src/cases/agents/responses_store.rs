//! Responses API (issue 4): GET / DELETE, input_items and paging,
//! previous_response_id, store:false, owner isolation and Idempotency-Key.

use super::support::responses::{
    MISSING_RESP, RESPONSES, body, check_response, create, input_items, output_text, post_empty,
    rpath,
};
use super::support::sessions::{Api, RUNTIMES, on_each_runtime, expect_error_param, expect_missing, id_of};
use crate::{Case, Ctx, case, profiles};
use anyhow::{anyhow, ensure};
use serde_json::{Value, json};

/// An input item of the design: {id:"msg_…", type message, role, status completed, [input_text]}.
fn check_input_item(i: &Value, role: &str, text: &str) -> anyhow::Result<()> {
    ensure!(
        i["id"].as_str().is_some_and(|s| s.starts_with("msg_")),
        "input item id msg_…: {i}"
    );
    ensure!(
        i["type"] == "message" && i["role"] == role && i["status"] == "completed",
        "input item ({role}): {i}"
    );
    ensure!(
        i["content"] == json!([{"type": "input_text", "text": text}]),
        "input item content {text:?}: {i}"
    );
    Ok(())
}

async fn continuation(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let r1 = id_of(&create(&api, &body(rt, "first")).await?)?;
    let mut b = body(rt, "second");
    b["previous_response_id"] = json!(r1);
    let r2 = create(&api, &b).await?;
    check_response(&r2, rt, rt)?;
    ensure!(
        r2["previous_response_id"] == r1.as_str(),
        "{rt}: previous_response_id: {r2}"
    );
    let text = output_text(&r2);
    ensure!(
        text.contains("turn 2") && text.contains("second"),
        "{rt}: continued reply: {text:?}"
    );
    let mut b = body(rt, "from the older one");
    b["previous_response_id"] = json!(r1);
    let resp = api.send(api.post(RESPONSES, &b)).await?;
    expect_error_param(
        &resp,
        400,
        "agents.previous_response_not_latest",
        "previous_response_id",
    )
    .map_err(|e| anyhow!("{rt}: {e}"))?;
    b["previous_response_id"] = json!(MISSING_RESP);
    let resp = api.send(api.post(RESPONSES, &b)).await?;
    expect_error_param(&resp, 404, "resource_not_found", "previous_response_id")
        .map_err(|e| anyhow!("{rt}: {e}"))?;
    Ok(())
}

async fn isolation(ctx: &Ctx) -> anyhow::Result<()> {
    let alice = Api::as_token(ctx, "alice-token");
    let bob = Api::as_token(ctx, "bob-token");
    let r = create(&alice, &body("rt-one", "alice only")).await?;
    let id = id_of(&r)?;
    for (other, missing) in [
        (bob.get(&rpath(&id, "")), bob.get(&rpath(MISSING_RESP, ""))),
        (
            bob.delete(&rpath(&id, "")),
            bob.delete(&rpath(MISSING_RESP, "")),
        ),
        (
            bob.get(&rpath(&id, "/input_items")),
            bob.get(&rpath(MISSING_RESP, "/input_items")),
        ),
        (
            post_empty(&bob, &rpath(&id, "/cancel")),
            post_empty(&bob, &rpath(MISSING_RESP, "/cancel")),
        ),
    ] {
        compare(&bob, other, missing, &id, "response_id").await?;
    }
    let cont =
        |prev: &str| json!({"model": "rt-one", "input": "bob", "previous_response_id": prev});
    compare(
        &bob,
        bob.post(RESPONSES, &cont(&id)),
        bob.post(RESPONSES, &cont(MISSING_RESP)),
        &id,
        "previous_response_id",
    )
    .await?;
    let got = alice.json(&rpath(&id, "")).await?;
    ensure!(got == r, "bob changed alice's response:\n{got}\n{r}");
    Ok(())
}

async fn compare(
    bob: &Api,
    other: reqwest::RequestBuilder,
    missing: reqwest::RequestBuilder,
    id: &str,
    param: &str,
) -> anyhow::Result<()> {
    let mask = |text: String, id: &str| text.replace(id, "<id>");
    let other = bob.send(other).await?;
    let missing = bob.send(missing).await?;
    expect_error_param(&other, 404, "resource_not_found", param)?;
    expect_error_param(&missing, 404, "resource_not_found", param)?;
    ensure!(
        mask(other.text(), id) == mask(missing.text(), MISSING_RESP),
        "another owner's response must answer exactly like a missing one:\n{}\n{}",
        other.describe(),
        missing.describe()
    );
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/responses/040",
            spec: "GET /v1/responses/{id} returns the object the create answered; DELETE answers {id, object:\"response.deleted\", deleted:true}, then GET and DELETE are 404 resource_not_found param response_id.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create", "agents_responses_get", "agents_responses_delete"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for rt in RUNTIMES {
                    let r = create(&api, &body(rt, "keep me")).await?;
                    let id = id_of(&r)?;
                    let got = api.json(&rpath(&id, "")).await?;
                    ensure!(got == r, "{rt}: GET answers the created object:\n{got}\n{r}");
                    let resp = api.send(api.delete(&rpath(&id, ""))).await?;
                    resp.expect_status(200)?;
                    let d = resp.json()?;
                    ensure!(d == json!({"id": id, "object": "response.deleted", "deleted": true}), "{rt}: deleted: {d}");
                    expect_missing(&api, api.get(&rpath(&id, "")), "response_id").await?;
                    expect_missing(&api, api.delete(&rpath(&id, "")), "response_id").await?;
                }
                Ok(())
            },
        },
        case! {
            id: "agents/responses/041",
            spec: "An unknown response id is 404 resource_not_found param response_id on get, delete, cancel and input_items.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_responses_get", "agents_responses_delete", "agents_responses_cancel", "agents_responses_input_items"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                expect_missing(&api, api.get(&rpath(MISSING_RESP, "")), "response_id").await?;
                expect_missing(&api, api.delete(&rpath(MISSING_RESP, "")), "response_id").await?;
                expect_missing(&api, post_empty(&api, &rpath(MISSING_RESP, "/cancel")), "response_id").await?;
                expect_missing(&api, api.get(&rpath(MISSING_RESP, "/input_items")), "response_id").await?;
                Ok(())
            },
        },
        case! {
            id: "agents/responses/042",
            spec: "input_items lists the input as messages with msg_ ids, status completed and input_text parts: a string input, and a user + developer message list (asc; the default desc is its reverse).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create", "agents_responses_input_items"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let id = id_of(&create(&api, &body("rt-one", "just a string")).await?)?;
                let items = input_items(&api, &id, "asc", 100).await?;
                ensure!(items.len() == 1, "one input item: {items:?}");
                check_input_item(&items[0], "user", "just a string")?;
                let b = json!({"model": "rt-two", "input": [
                    {"role": "user", "content": "from the user"},
                    {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "from the developer"}]},
                ]});
                let id = id_of(&create(&api, &b).await?)?;
                let items = input_items(&api, &id, "asc", 100).await?;
                ensure!(items.len() == 2, "two input items: {items:?}");
                check_input_item(&items[0], "user", "from the user")?;
                check_input_item(&items[1], "developer", "from the developer")?;
                let page = api.json(&rpath(&id, "/input_items")).await?;
                let mut rev = items.clone();
                rev.reverse();
                ensure!(page["data"] == json!(rev), "default order desc: {page}");
                Ok(())
            },
        },
        case! {
            id: "agents/responses/043",
            spec: "input_items pages: limit=1 pages followed with after=last_id concatenate to the full list (both orders); a bad limit is 400 param limit.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_input_items"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let input: Vec<Value> = ["one", "two", "three"].iter().map(|t| json!({"role": "user", "content": t})).collect();
                let id = id_of(&create(&api, &json!({"model": "rt-one", "input": input})).await?)?;
                let full = input_items(&api, &id, "asc", 100).await?;
                ensure!(full.len() == 3, "three items: {full:?}");
                ensure!(input_items(&api, &id, "asc", 1).await? == full, "limit=1 asc pages");
                let mut rev = full.clone();
                rev.reverse();
                ensure!(input_items(&api, &id, "desc", 1).await? == rev, "limit=1 desc pages");
                for bad in ["0", "101", "x"] {
                    let resp = api.send(api.get(&rpath(&id, &format!("/input_items?limit={bad}")))).await?;
                    expect_error_param(&resp, 400, "invalid_request", "limit").map_err(|e| anyhow!("limit={bad}: {e}"))?;
                }
                Ok(())
            },
        },
        case! {
            id: "agents/responses/044",
            spec: "previous_response_id continues the runtime's thread (\"turn 2\"); continuing an older response is 400 agents.previous_response_not_latest; an unknown one is 404 resource_not_found param previous_response_id (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create"],
            codes: ["agents.previous_response_not_latest", "resource_not_found"],
            run: |ctx| async move {
                on_each_runtime(&ctx, continuation).await
            },
        },
        case! {
            id: "agents/responses/045",
            spec: "store:false: the answer has store false, and GET after the turn is 404 resource_not_found.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create", "agents_responses_get"],
            codes: ["resource_not_found"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let r = create(&api, &json!({"model": "rt-one", "input": "forget me", "store": false})).await?;
                check_response(&r, "rt-one", "rt-one")?;
                ensure!(r["store"] == false && r["status"] == "completed", "store:false: {r}");
                expect_missing(&api, api.get(&rpath(&id_of(&r)?, "")), "response_id").await?;
                Ok(())
            },
        },
        case! {
            id: "agents/responses/046",
            spec: "Another identity's response id answers exactly like a missing one (404 resource_not_found) on get, delete, cancel, input_items and as previous_response_id.",
            profile: &profiles::AGENTS_SESSIONS_OWNERS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_get", "agents_responses_delete", "agents_responses_cancel", "agents_responses_input_items", "agents_responses_create"],
            codes: ["resource_not_found"],
            run: |ctx| async move { isolation(&ctx).await },
        },
        case! {
            id: "agents/responses/047",
            spec: "Idempotency-Key: the same key and body answer the first response again (same id); the same key with another body is 409 idempotency.mismatch with x-should-retry: false.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create"],
            codes: ["idempotency.mismatch"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let key = "resp-idem-key-1";
                let b = body("rt-one", "only once");
                let send = |b: &Value| api.send(api.post(RESPONSES, b).header("Idempotency-Key", key));
                let first = send(&b).await?;
                first.expect_status(200)?;
                let first = first.json()?;
                let again = send(&b).await?;
                again.expect_status(200)?;
                let again = again.json()?;
                ensure!(again["id"] == first["id"], "same key + body, same response:\n{first}\n{again}");
                let other = send(&body("rt-one", "something else")).await?;
                other.expect_error(409, "idempotency.mismatch")?;
                ensure!(other.header("x-should-retry") == Some("false"), "x-should-retry: false\n{}", other.describe());
                Ok(())
            },
        },
    ]
}
