//! Property: any `POST /v1/responses` body with one invalid field gets a 400 naming that
//! field as `param`, never a 5xx.

use crate::{Case, Ctx, case, profiles};
use anyhow::anyhow;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::{Value, json};

/// (field, invalid value, the param the refusal must name).
fn invalid_fields() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        ("model", json!(42), "model"),
        ("model", json!(""), "model"),
        ("input", json!(7), "input"),
        ("input", json!([]), "input"),
        (
            "input",
            json!([{"role": "assistant", "content": "earlier"}]),
            "input[0].role",
        ),
        (
            "input",
            json!([{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]),
            "input[0].content[0].type",
        ),
        (
            "input",
            json!([{"role": "user", "content": [{"type": "input_file", "file_id": "file-1"}]}]),
            "input[0].content[0].type",
        ),
        ("instructions", json!(5), "instructions"),
        ("metadata", json!({"k": {"nested": 1}}), "metadata.k"),
        ("metadata", json!({"k": null}), "metadata.k"),
        ("metadata", json!([1]), "metadata"),
        ("store", json!("yes"), "store"),
        ("background", json!("no"), "background"),
        ("stream", json!(1), "stream"),
        ("tools", json!([{"type": "web_search"}]), "tools[0].type"),
        (
            "tools",
            json!([{"type": "function", "name": "f"}]),
            "tools[0].type",
        ),
        ("tools", json!("mcp"), "tools"),
        (
            "tools",
            json!([
                {"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example.com/a"},
                {"type": "mcp", "server_label": "docs", "server_url": "https://mcp.example.com/b"},
            ]),
            "tools[1].server_label",
        ),
        ("reasoning", json!({"summary": "auto"}), "reasoning.summary"),
        (
            "text",
            json!({"format": {"type": "json_schema"}}),
            "text.format",
        ),
        ("service_tier", json!("flex"), "service_tier"),
        ("tool_choice", json!("required"), "tool_choice"),
        ("include", json!(["reasoning.encrypted_content"]), "include"),
        ("conversation", json!("conv_1"), "conversation"),
        ("prompt", json!({"id": "pmpt_1"}), "prompt"),
        ("frobnicate", json!(true), "frobnicate"),
        ("previous_response_id", json!(5), "previous_response_id"),
    ]
}

/// Valid optional fields a body may also carry.
fn valid_extras() -> impl Strategy<Value = Vec<(&'static str, Value)>> {
    proptest::sample::subsequence(
        vec![
            ("instructions", json!("be brief")),
            ("metadata", json!({"run": "prop"})),
            ("temperature", json!(0.2)),
            ("top_p", json!(0.9)),
            ("max_output_tokens", json!(64)),
            ("tool_choice", json!("auto")),
            ("service_tier", json!("auto")),
            ("text", json!({"format": {"type": "text"}})),
        ],
        0..4,
    )
}

async fn probe(ctx: &Ctx, body: &Value, param: &str) -> Result<(), String> {
    let resp = ctx
        .send(ctx.post_json("/v1/responses", body))
        .await
        .map_err(|e| e.to_string())?;
    if resp.status >= 500 {
        return Err(format!("5xx for {body}\n{}", resp.describe()));
    }
    let err = resp
        .expect_error(400, "invalid_request")
        .map_err(|e| format!("{body}: {e}"))?;
    if err["error"]["param"] != param {
        return Err(format!(
            "{body}: expected param {param}, got {}",
            err["error"]["param"]
        ));
    }
    Ok(())
}

pub fn cases() -> Vec<Case> {
    vec![case! {
        id: "agents/responses_property/001",
        spec: "Any generated POST /v1/responses body with one invalid field gets 400 naming that `param`, never a 5xx.",
        profile: &profiles::AGENTS_SESSIONS,
        tags: [],
        endpoints: ["agents_responses_create"],
        codes: ["invalid_request"],
        run: |ctx| async move {
            let handle = tokio::runtime::Handle::current();
            let fields = invalid_fields();
            tokio::task::spawn_blocking(move || {
                let mut runner = TestRunner::new(Config { cases: 128, failure_persistence: None, ..Config::default() });
                let strategy = (0..fields.len(), valid_extras());
                runner.run(&strategy, |(pick, extras)| {
                    let (field, bad, param) = &fields[pick];
                    let mut body = json!({"model": "rt-one", "input": "hello"});
                    for (k, v) in extras {
                        body[k] = v;
                    }
                    body[*field] = bad.clone();
                    handle.block_on(probe(&ctx, &body, param)).map_err(TestCaseError::fail)
                }).map_err(|e| anyhow!("{e}"))
            }).await?
        },
    }]
}
