//! Responses API (issue 4): POST /v1/responses (sync), model selection,
//! refusals, ignored parameters and the failed / usage-less turns.
//! Streams and cancel are in responses_stream.rs; get / delete / input_items,
//! continuation, isolation and Idempotency-Key in responses_store.rs.

use super::definitions::create_def;
use super::support::responses::{
    RESPONSES, body, check_response, create, expect_response, output_text,
};
use super::support::sessions::{Api, RUNTIMES, on_each_runtime, expect_error_param, id_of, pre_redact};
use crate::{Case, Ctx, case, profiles};
use anyhow::{anyhow, ensure};
use serde_json::{Value, json};

async fn sync_create(ctx: &Ctx, rt: &str) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    let r = create(&api, &body(rt, "hello responses")).await?;
    check_response(&r, rt, rt)?;
    ensure!(r["status"] == "completed", "{rt}: status: {r}");
    ensure!(
        r["model_resolved"] == false,
        "{rt}: a runtime name is not a resolved model: {r}"
    );
    ensure!(
        r["background"] == false && r["store"] == true && r["error"].is_null(),
        "{rt}: defaults: {r}"
    );
    let msg = r["output"]
        .as_array()
        .and_then(|o| o.iter().find(|i| i["type"] == "message"))
        .ok_or_else(|| anyhow!("{rt}: no assistant message in output: {r}"))?;
    ensure!(msg["status"] == "completed", "{rt}: message status: {msg}");
    let text = output_text(&r);
    ensure!(
        text.contains("echo") && text.contains("hello responses"),
        "{rt}: echo reply: {text:?}"
    );
    ensure!(r["usage"].is_object(), "{rt}: usage present: {r}");
    Ok(())
}

/// (body, param) for every 400 refusal row of the design.
fn refusals() -> Vec<(Value, &'static str)> {
    let msg =
        |role: &str, content: Value| json!({"type": "message", "role": role, "content": content});
    let with = |key: &str, v: Value| {
        let mut b = body("rt-one", "hi");
        b[key] = v;
        b
    };
    vec![
        (json!({"input": "hi"}), "model"),
        (json!({"model": "rt-one"}), "input"),
        (json!({"model": "rt-one", "input": ""}), "input"),
        (json!({"model": "rt-one", "input": []}), "input"),
        (
            with(
                "input",
                json!([msg("user", json!("a")), msg("assistant", json!("b"))]),
            ),
            "input[1].role",
        ),
        (
            with(
                "input",
                json!([msg(
                    "user",
                    json!([{"type": "input_text", "text": "a"},
                    {"type": "input_image", "image_url": "https://example.com/a.png"}])
                )]),
            ),
            "input[0].content[1].type",
        ),
        (
            with(
                "input",
                json!([msg(
                    "user",
                    json!([{"type": "input_file", "file_id": "file_1"}])
                )]),
            ),
            "input[0].content[0].type",
        ),
        (
            with(
                "tools",
                json!([{"type": "function", "name": "f", "parameters": {}}]),
            ),
            "tools[0].type",
        ),
        // Found by the fuzz run: with `authorization`, headers that are not an object were a
        // caught panic (500).
        (
            with(
                "tools",
                json!([{"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example.com/mcp",
                        "headers": [null, null], "authorization": "t"}]),
            ),
            "tools[0].headers",
        ),
        (with("conversation", json!("conv_1")), "conversation"),
        (with("prompt", json!({"id": "pmpt_1"})), "prompt"),
        (
            with(
                "text",
                json!({"format": {"type": "json_schema", "name": "x", "schema": {}}}),
            ),
            "text.format",
        ),
        (
            with("include", json!(["reasoning.encrypted_content"])),
            "include",
        ),
        (with("service_tier", json!("flex")), "service_tier"),
        (with("tool_choice", json!("required")), "tool_choice"),
        (with("bogus_key", json!(1)), "bogus_key"),
        (
            json!({"model": "rt-one", "input": "hi", "store": false, "background": true}),
            "store",
        ),
        (
            json!({"model": "rt-two", "input": "hi", "reasoning": {"effort": "low"}}),
            "reasoning.effort",
        ),
        (
            with("reasoning", json!({"summary": "auto"})),
            "reasoning.summary",
        ),
    ]
}

async fn refused(ctx: &Ctx) -> anyhow::Result<()> {
    let api = Api::new(ctx);
    for (b, param) in refusals() {
        let resp = api.send(api.post(RESPONSES, &b)).await?;
        expect_error_param(&resp, 400, "invalid_request", param)
            .map_err(|e| anyhow!("body {b}: {e}"))?;
        ensure!(
            resp.header("x-should-retry") == Some("false"),
            "refusal without x-should-retry: false\n{}",
            resp.describe()
        );
    }
    Ok(())
}

fn ignored_header(resp: &crate::Resp) -> Vec<String> {
    resp.header("x-svc-ignored-params")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/responses/001",
            spec: "A sync POST /v1/responses with a runtime name as model answers when the turn ends: every field of the response object, status completed, model_resolved false, an assistant message with the echo reply, usage (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create"],
            codes: [],
            run: |ctx| async move {
                on_each_runtime(&ctx, sync_create).await
            },
        },
        case! {
            id: "agents/responses/002",
            spec: "A model id runs on the default runtime (or the X-Svc-Adapter one) with model_resolved true; a definition id as model uses the definition's runtime.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let r = create(&api, &body("gpt-x", "model id")).await?;
                check_response(&r, "gpt-x", "rt-one")?;
                ensure!(r["model_resolved"] == true && r["status"] == "completed", "gpt-x: {r}");
                let b = body("gpt-x", "model id on rt-two");
                let resp = api.send(api.post(RESPONSES, &b).header("X-Svc-Adapter", "rt-two")).await?;
                let r = expect_response(&resp, &b)?;
                check_response(&r, "gpt-x", "rt-two")?;
                ensure!(r["model_resolved"] == true, "header-selected: {r}");
                let d = create_def(&api, &json!({"model": "rt-two", "name": "resp-def"})).await?;
                let did = id_of(&d)?;
                let r = create(&api, &body(&did, "through a definition")).await?;
                check_response(&r, &did, "rt-two")?;
                ensure!(output_text(&r).contains("through a definition"), "definition reply: {r}");
                Ok(())
            },
        },
        case! {
            id: "agents/responses/003",
            spec: "Every refusal row of the design answers 400 invalid_request naming the field in param, with x-should-retry: false.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create"],
            codes: ["invalid_request"],
            run: |ctx| async move { refused(&ctx).await },
        },
        case! {
            id: "agents/responses/004",
            spec: "A declared-only or unknown runtime selected by X-Svc-Adapter is 404 agents.not_implemented_locally with x_svc.runtimes and x-should-retry: false (a declared runtime's name as `model` is a model id, as in agents/selection/004).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_responses_create"],
            codes: ["agents.not_implemented_locally"],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for name in ["declared-a", "declared-b", "command", "no-such-runtime"] {
                    let resp = api.send(api.post(RESPONSES, &body("gpt-x", "hi")).header("X-Svc-Adapter", name)).await?;
                    let b = resp.expect_error(404, "agents.not_implemented_locally").map_err(|e| anyhow!("{name}: {e}"))?;
                    ensure!(b["x_svc"]["runtimes"] == "/v1/agents/runtimes", "{name}: x_svc.runtimes: {b}");
                    ensure!(resp.header("x-should-retry") == Some("false"), "{name}: x-should-retry\n{}", resp.describe());
                }
                Ok(())
            },
        },
        case! {
            id: "agents/responses/005",
            spec: "temperature, top_p and max_output_tokens are ignored: 200, listed in X-Svc-Ignored-Params, and null in the object; without them the header lists none of them.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let b = json!({"model": "rt-one", "input": "ignored", "temperature": 0.5, "top_p": 0.9, "max_output_tokens": 100});
                let resp = api.send(api.post(RESPONSES, &b)).await?;
                let r = expect_response(&resp, &b)?;
                check_response(&r, "rt-one", "rt-one")?;
                let listed = ignored_header(&resp);
                for p in ["temperature", "top_p", "max_output_tokens"] {
                    ensure!(listed.iter().any(|l| l == p), "X-Svc-Ignored-Params lacks {p}\n{}", resp.describe());
                }
                let b = body("rt-one", "nothing ignored");
                let resp = api.send(api.post(RESPONSES, &b)).await?;
                expect_response(&resp, &b)?;
                ensure!(
                    !ignored_header(&resp).iter().any(|l| ["temperature", "top_p", "max_output_tokens"].contains(&l.as_str())),
                    "header lists params not sent\n{}",
                    resp.describe()
                );
                Ok(())
            },
        },
        case! {
            id: "agents/responses/006",
            spec: "usage is null when the runtime reports none ([[scenario:no_usage]]); a failed turn ([[scenario:fail]]) gives status failed with error.code server_error (both runtimes).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                for rt in RUNTIMES {
                    let r = create(&api, &body(rt, "[[scenario:no_usage]] quiet")).await?;
                    check_response(&r, rt, rt)?;
                    ensure!(r["status"] == "completed" && r["usage"].is_null(), "{rt}: no_usage: {r}");
                    let r = create(&api, &body(rt, "[[scenario:fail]]")).await?;
                    check_response(&r, rt, rt)?;
                    ensure!(r["status"] == "failed", "{rt}: failed turn status: {r}");
                    ensure!(
                        r["error"]["code"] == "server_error" && r["error"]["message"].is_string(),
                        "{rt}: failed turn error: {r}"
                    );
                }
                Ok(())
            },
        },
        case! {
            id: "agents/responses/007",
            spec: "Snapshot of a completed rt-one response object (ids and timestamps masked).",
            profile: &profiles::AGENTS_SESSIONS,
            tags: ["needs:fake-runtimes"],
            endpoints: ["agents_responses_create"],
            codes: [],
            run: |ctx| async move {
                let api = Api::new(&ctx);
                let r = create(&api, &json!({
                    "model": "rt-one",
                    "input": "snapshot response",
                    "instructions": "Be brief.",
                    "metadata": {"case": "snapshot"},
                })).await?;
                check_response(&r, "rt-one", "rt-one")?;
                ensure!(r["status"] == "completed", "status: {r}");
                ctx.snapshot("agents__responses__object", &pre_redact(&r)?)
            },
        },
    ]
}
