//! What the routes do to the page: navigate, click, type, screenshot, read. Elements are
//! found by a script (so an invalid selector and a selector that matches nothing are told
//! apart), clicks and text go through DevTools input events (what a user's mouse and
//! keyboard do, so the page's own handlers run).

use super::session::Session;
use super::{Browser, CALL_TIMEOUT, Error, NAVIGATE_TIMEOUT, Refusal};
use chromiumoxide::cdp::browser_protocol::input::InsertTextParams;
use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
use chromiumoxide::cdp::js_protocol::runtime::EvaluateParams;
use chromiumoxide::layout::Point;
use chromiumoxide::page::ScreenshotParams;
use serde::Deserialize;
use std::time::Duration;

/// Status waits this long for the page's url and title (then answers without them). 2 s
/// was too short on a busy 2-core machine: a live page's status came back without them.
const STATUS_TIMEOUT: Duration = Duration::from_secs(5);

/// Where a navigation ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Navigated {
    pub url: String,
    pub title: String,
    /// The HTTP status of the document (0 when the page was not loaded over HTTP).
    pub status: u16,
}

/// The page as a reader sees it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Content {
    pub url: String,
    pub title: String,
    pub html: String,
    pub text: String,
}

fn devtools(e: chromiumoxide::error::CdpError) -> Error {
    Error::Devtools(e.to_string())
}

/// Evaluates `expr` in the page and answers its value.
async fn eval<T: serde::de::DeserializeOwned>(session: &Session, expr: String) -> Result<T, Error> {
    let params = EvaluateParams::builder()
        .expression(expr)
        .return_by_value(true)
        .build()
        .map_err(Error::Devtools)?;
    let result = session
        .page
        .evaluate_expression(params)
        .await
        .map_err(devtools)?;
    result
        .into_value()
        .map_err(|e| Error::Devtools(format!("unexpected answer: {e}")))
}

/// A JS string literal of `text` (JSON's is one).
fn js_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}

/// The page's url and title, if it answers within [`STATUS_TIMEOUT`].
pub(super) async fn location(session: &Session) -> Option<(String, String)> {
    let expr = "[location.href, document.title]".to_owned();
    tokio::time::timeout(STATUS_TIMEOUT, eval::<(String, String)>(session, expr))
        .await
        .ok()?
        .ok()
}

#[derive(Deserialize)]
struct Found {
    invalid: Option<bool>,
    missing: Option<bool>,
    x: Option<f64>,
    y: Option<f64>,
}

/// Finds the first element matching `selector`, scrolls it into view and, when `focus`,
/// focuses it; answers its centre (`None` for an element with no box: it is clicked by
/// script).
async fn find(session: &Session, selector: &str, focus: bool) -> Result<Option<Point>, Error> {
    let expr = format!(
        r#"(() => {{
            let el;
            try {{ el = document.querySelector({sel}); }} catch (e) {{ return {{invalid: true}}; }}
            if (!el) return {{missing: true}};
            el.scrollIntoView({{block: "center", inline: "center"}});
            if ({focus}) el.focus();
            const r = el.getBoundingClientRect();
            if (r.width === 0 || r.height === 0) return {{}};
            return {{x: r.left + r.width / 2, y: r.top + r.height / 2}};
        }})()"#,
        sel = js_string(selector),
    );
    let found: Found = eval(session, expr).await?;
    if found.invalid == Some(true) {
        return Err(Error::SelectorInvalid(selector.to_owned()));
    }
    if found.missing == Some(true) {
        return Err(Error::SelectorNotFound(selector.to_owned()));
    }
    Ok(found.x.zip(found.y).map(|(x, y)| Point { x, y }))
}

impl Browser {
    /// Loads `raw` and answers where the page ended (after redirects) and its status.
    pub async fn navigate(&self, raw: &str) -> Result<Navigated, Error> {
        // Not running is told first: a URL is judged for the browser that would load it.
        self.live()?;
        let rules = &self.config().rules;
        let url = rules.parse(raw)?;
        let host = url.host_str().unwrap_or_default().to_owned();
        // Judged here for a typed answer; the proxy judges every request again, on the
        // addresses it connects to.
        rules
            .resolve(&host, url.port_or_known_default().unwrap_or(80))
            .await?;
        self.with_page("the navigation", NAVIGATE_TIMEOUT, |s| async move {
            let mark = s.proxy.log.lock().unwrap_or_else(|e| e.into_inner()).mark();
            let went = s.page.goto(url.as_str()).await;
            let refused = s
                .proxy
                .log
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .since(mark);
            let (href, title, status): (String, String, u16) = eval(
                &s,
                "[location.href, document.title, \
                 (performance.getEntriesByType('navigation')[0] || {}).responseStatus || 0]"
                    .to_owned(),
            )
            .await?;
            // The document itself was refused by the proxy (a redirect to a refused host,
            // or a name that resolved elsewhere by now): the refusal is the answer.
            let main = refused
                .iter()
                .find(|(u, _)| *u == href)
                .or(if went.is_err() { refused.first() } else { None });
            if let Some((u, refusal)) = main {
                let message = format!("{u}: {refusal}");
                return Err(match refusal {
                    Refusal::Denied(_) => Error::UrlDenied(message),
                    Refusal::Invalid(_) => Error::UrlInvalid(message),
                    Refusal::Unreachable(_) => Error::NavigationFailed(message),
                });
            }
            if let Err(e) = went {
                return Err(Error::NavigationFailed(format!("{url}: {e}")));
            }
            Ok(Navigated {
                url: href,
                title,
                status,
            })
        })
        .await
    }

    /// Clicks the centre of the first element matching `selector`.
    pub async fn click(&self, selector: &str) -> Result<(), Error> {
        self.with_page("the click", CALL_TIMEOUT, |s| async move {
            match find(&s, selector, false).await? {
                Some(point) => {
                    s.page.click(point).await.map_err(devtools)?;
                }
                None => {
                    let expr = format!(
                        "document.querySelector({}).click(), true",
                        js_string(selector)
                    );
                    eval::<bool>(&s, expr).await?;
                }
            }
            Ok(())
        })
        .await
    }

    /// Focuses the first element matching `selector` and types `text` into it.
    pub async fn type_text(&self, selector: &str, text: &str) -> Result<(), Error> {
        self.with_page("the typing", CALL_TIMEOUT, |s| async move {
            find(&s, selector, true).await?;
            s.page
                .execute(InsertTextParams::new(text))
                .await
                .map_err(devtools)?;
            Ok(())
        })
        .await
    }

    /// A PNG of the viewport, or of the whole page.
    pub async fn screenshot(&self, full_page: bool) -> Result<Vec<u8>, Error> {
        self.with_page("the screenshot", CALL_TIMEOUT, |s| async move {
            let params = ScreenshotParams::builder()
                .format(CaptureScreenshotFormat::Png)
                .full_page(full_page)
                .build();
            s.page.screenshot(params).await.map_err(devtools)
        })
        .await
    }

    /// The page's url, title, HTML and visible text.
    pub async fn content(&self) -> Result<Content, Error> {
        self.with_page("the content", CALL_TIMEOUT, |s| async move {
            eval(
                &s,
                "({url: location.href, title: document.title, \
                  html: document.documentElement ? document.documentElement.outerHTML : '', \
                  text: document.body ? document.body.innerText : ''})"
                    .to_owned(),
            )
            .await
        })
        .await
    }
}
