//! A page served by the case itself, navigated, typed into, clicked and read back, and its
//! screenshots (issue 13, wire contract `browser`).

use super::support::{
    click, content, navigate, png_size, screenshot, serve_pages, start, status, stop, type_text,
};
use crate::{Case, case, profiles};
use anyhow::ensure;

pub fn cases() -> Vec<Case> {
    vec![case! {
        id: "browser/page/001",
        spec: "browser: navigate answers `{url, title, status}`; type puts text into the element the selector names and click clicks it, the page's own handlers running; content answers `{url, title, html, text}` as the DOM is now; a screenshot is `image/png` of the viewport (1280x720), `full_page=true` the whole page; a selector that matches nothing is 404 `selector_not_found` and a malformed one 400 `invalid_request`, both naming `selector`.",
        profile: &profiles::BROWSER,
        tags: ["needs:browser"],
        endpoints: ["browser_start", "browser_navigate", "browser_type", "browser_click", "browser_content", "browser_screenshot", "browser_status", "browser_stop"],
        codes: ["selector_not_found", "invalid_request"],
        run: |ctx| async move {
            let pages = serve_pages().await?;
            start(&ctx).await?.expect_status(200)?;
            let url = format!("http://{pages}/");
            let went = navigate(&ctx, &url).await?;
            went.expect_status(200)?;
            let went = went.json()?;
            ensure!(went == serde_json::json!({"url": url, "title": "Form", "status": 200}), "{went}");
            let missing = navigate(&ctx, &format!("http://{pages}/missing")).await?.json()?;
            ensure!(missing["status"] == 404, "a 404 page is still a navigation: {missing}");
            navigate(&ctx, &url).await?.expect_status(200)?;

            let typed = type_text(&ctx, "#name", "conformance").await?;
            typed.expect_status(200)?;
            ensure!(typed.json()?["url"] == url.as_str(), "{}", typed.text());
            click(&ctx, "#go").await?.expect_status(200)?;
            let page = content(&ctx).await?;
            page.expect_status(200)?;
            let page = page.json()?;
            ensure!(page["url"] == url.as_str() && page["title"] == "Form", "{page}");
            ensure!(page["text"].as_str().unwrap_or("").contains("hello conformance"), "{page}");
            ensure!(page["html"].as_str().unwrap_or("").contains("<p id=\"out\">hello conformance</p>"), "{page}");

            let shot = screenshot(&ctx, "").await?;
            shot.expect_status(200)?;
            ensure!(shot.header("content-type") == Some("image/png"), "{}", shot.describe());
            ensure!(png_size(&shot.body)? == (1280, 720), "viewport: {:?}", png_size(&shot.body)?);
            let full = screenshot(&ctx, "?full_page=true").await?;
            let (w, h) = png_size(&full.body)?;
            ensure!(w >= 1200 && h > 2000, "the whole page: {w}x{h}");
            screenshot(&ctx, "?full_page=maybe").await?.expect_error(400, "invalid_request")?;

            let err = click(&ctx, "#nothing").await?.expect_error(404, "selector_not_found")?;
            ensure!(err["param"] == "selector", "{err}");
            let err = type_text(&ctx, "#nothing", "x").await?.expect_error(404, "selector_not_found")?;
            ensure!(err["param"] == "selector", "{err}");
            let err = click(&ctx, "a[").await?.expect_error(400, "invalid_request")?;
            ensure!(err["param"] == "selector", "{err}");
            let extra = serde_json::json!({"selector": "#go", "button": "right"});
            ctx.send(ctx.post_json("/browser/click", &extra)).await?.expect_error(400, "invalid_request")?;

            let now = status(&ctx).await?;
            ensure!(now["running"] == true && now["url"] == url.as_str() && now["title"] == "Form", "{now}");
            stop(&ctx).await?.expect_status(200)?;
            Ok(())
        },
    }]
}
