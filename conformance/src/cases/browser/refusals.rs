//! What navigation refuses (issue 13, wire contract `browser`): schemes other than http and
//! https, private, link-local and metadata addresses in any spelling, a redirect from an
//! admitted page to a private address, a page that cannot be loaded, one that never ends.

use super::support::{navigate, serve_pages, start, status, stop};
use crate::{Case, case, profiles};
use anyhow::ensure;
use std::time::{Duration, Instant};

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "browser/urls/001",
            spec: "browser: navigate takes http and https only (`file:`, `javascript:`, `data:`, no URL: 400 `url_invalid`); private, link-local and metadata addresses are 403 `url_denied` in every spelling, even with loopback admitted; a redirect from an admitted page to a private address is 403 `url_denied` (judged by the browser's proxy on the address it would connect to); a page nothing answers for is 502 `navigation_failed`.",
            profile: &profiles::BROWSER_URLS,
            tags: ["needs:browser"],
            endpoints: ["browser_start", "browser_navigate", "browser_stop"],
            codes: ["url_invalid", "url_denied", "navigation_failed"],
            run: |ctx| async move {
                let pages = serve_pages().await?;
                start(&ctx).await?.expect_status(200)?;
                for bad in ["file:///etc/passwd", "javascript:alert(1)", "data:text/html,hi", "not a url"] {
                    let err = navigate(&ctx, bad).await?.expect_error(400, "url_invalid")?;
                    ensure!(err["param"] == "url", "{bad}: {err}");
                }
                for private in [
                    "http://10.0.0.1/",
                    "http://169.254.169.254/latest/meta-data/",
                    "http://0xa9fea9fe/",
                    "http://[::ffff:10.0.0.1]/",
                    "http://192.168.1.1/",
                    "http://[fd00::1]/",
                ] {
                    navigate(&ctx, private).await?.expect_error(403, "url_denied")?;
                }
                let err = navigate(&ctx, &format!("http://{pages}/away")).await?.expect_error(403, "url_denied")?;
                ensure!(err["error"].as_str().unwrap_or("").contains("169.254.169.254"), "names the refused address: {err}");
                // A loopback port nothing listens on (bound, then closed).
                let closed = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
                navigate(&ctx, &format!("http://{closed}/")).await?.expect_error(502, "navigation_failed")?;
                ensure!(status(&ctx).await?["running"] == true, "refusals leave the browser running");
                stop(&ctx).await?.expect_status(200)?;
                Ok(())
            },
        },
        case! {
            id: "browser/urls/002",
            spec: "browser: a navigation that does not finish is answered, never waited for: 504 `browser_timeout` after 30 s, the browser still running.",
            profile: &profiles::BROWSER_TIMEOUT,
            tags: ["needs:browser"],
            endpoints: ["browser_navigate"],
            codes: ["browser_timeout"],
            run: |ctx| async move {
                let pages = serve_pages().await?;
                start(&ctx).await?.expect_status(200)?;
                let began = Instant::now();
                // Longer than the client's usual 30 s: the server's limit is what is tested.
                let url = format!("http://{pages}/hang");
                let request = ctx
                    .post_json("/browser/navigate", &serde_json::json!({"url": url}))
                    .timeout(Duration::from_secs(50));
                ctx.send(request)
                    .await?
                    .expect_error(504, "browser_timeout")?;
                ensure!(began.elapsed() < Duration::from_secs(45), "answered in {:?}", began.elapsed());
                ensure!(status(&ctx).await?["running"] == true, "still running");
                stop(&ctx).await?.expect_status(200)?;
                Ok(())
            },
        },
    ]
}
