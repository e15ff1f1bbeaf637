//! The query string.

use crate::{Case, case, profiles};
use anyhow::ensure;
use reqwest::Method;

pub fn cases() -> Vec<Case> {
    vec![case! {
        id: "pipeline/query/001",
        spec: "A repeated query parameter: 400 `duplicate_parameter`.",
        profile: &profiles::ANY,
        tags: [],
        endpoints: ["health"],
        codes: ["duplicate_parameter"],
        run: |ctx| async move {
            let resp = ctx.send(ctx.anonymous(Method::GET, "/health?probe=1&probe=2")).await?;
            let body = resp.expect_error(400, "duplicate_parameter")?;
            ensure!(body["param"] == "probe", "the body names the parameter: {body}");
            ctx.send(ctx.anonymous(Method::GET, "/health?probe=1&other=2")).await?.expect_status(200)?;
            Ok(())
        },
    }]
}
