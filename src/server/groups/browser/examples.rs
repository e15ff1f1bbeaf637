//! What the browser examples need of their own (the runner is `server::example_run`): they
//! run in order against one real Chromium behind the real router (the browser group
//! switched on, loopback admitted), on the page below served here at the address the
//! examples call `127.0.0.1:8080`; the screenshot is checked as a PNG of the viewport.
//! Skipped, with the reason printed, only when no browser binary is installed.

use crate::server::config::Settings;
use crate::server::endpoints::Group;
use crate::server::example_run::{Answer, Call, Harness};
use crate::server::route::Route;
use crate::server::{AppState, SharedState};
use crate::services::browser::{Browser, Config, VIEWPORT};
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The page of the examples.
const PAGE: &str = r#"<html><head><title>Form</title></head><body><input id="name"><button id="go" onclick="document.getElementById('out').textContent='hello '+document.getElementById('name').value">Go</button><p id="out">waiting</p></body></html>"#;
const DOC_ADDR: &str = "127.0.0.1:8080";

async fn serve_page() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{PAGE}",
                    PAGE.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    addr
}

pub(crate) struct Examples {
    state: SharedState,
    app: axum::Router,
    /// Where the page is served.
    addr: String,
}

impl Harness for Examples {
    const VOLATILE: &'static [&'static str] = &["pid"];

    async fn start() -> Result<Self, String> {
        let mut env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
        env.insert("SVC_BROWSER_ALLOW_PRIVATE".into(), "loopback".into());
        let config = Config::from_env(&env).unwrap();
        crate::services::browser::find_binary(&config)?;
        let mut settings = Settings::defaults();
        settings.code_groups.insert(Group::Browser, true);
        let mut state = AppState::with_settings(settings);
        Arc::get_mut(&mut state).unwrap().browser = Browser::new(config);
        Ok(Self {
            app: crate::server::router::app(state.clone()),
            state,
            addr: serve_page().await,
        })
    }

    async fn prepare(&mut self, _: &Route) -> Call {
        Call {
            app: self.app.clone(),
            swaps: vec![(DOC_ADDR, self.addr.clone())],
        }
    }

    /// The screenshot: a PNG of the viewport's size, documented as such.
    fn compare(&self, route: &Route, _: &Call, answer: &Answer, what: &str) -> bool {
        let x = route.example;
        if !x.headers.contains(&("content-type", "image/png")) {
            return false;
        }
        let body = &answer.body;
        let be = |at: usize| u32::from_be_bytes(body[at..at + 4].try_into().unwrap());
        assert_eq!(&body[..8], b"\x89PNG\r\n\x1a\n", "{what}");
        assert_eq!((be(16), be(20)), VIEWPORT, "{what}");
        let documented = format!("<the PNG: {}x{}>", VIEWPORT.0, VIEWPORT.1);
        assert_eq!(x.answer, documented, "{what}");
        true
    }

    async fn end(self) {
        self.state.end_children().await;
    }
}
