//! `just bench` (browser part): the browser routes through the whole server, in process
//! on loopback, against the same work done with `chromiumoxide` directly in the same run
//! (the floor: what Chromium itself costs here). Skipped with the reason when no browser
//! binary is installed.
//!
//! - start to first navigate: POST /browser then POST /browser/navigate to a page served
//!   here, answered; versus `Browser::launch`, a new page and `goto` with the crate
//!   directly. `--starts N` rounds (default 5; `--quick`: one, and one screenshot),
//!   interleaved.
//! - screenshot: GET /browser/screenshot (a 1280x720 PNG) p50 and p99 over `--rounds N`
//!   (default 50), versus `Page::screenshot` on the directly driven browser.

// Shared with the other benches; this one uses only part of it.
#[allow(dead_code)]
mod support;

use chromiumoxide::browser::{Browser as Cdp, BrowserConfig};
use chromiumoxide::cdp::browser_protocol::page::CaptureScreenshotFormat;
use chromiumoxide::page::ScreenshotParams;
use futures::StreamExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use support::{arg_quick, ms, percentile};
use svc::server::AppState;
use svc::server::config::Settings;
use svc::server::endpoints::Group;
use svc::services::browser::{Browser, Config};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const PAGE: &str = "<html><head><title>Bench</title></head><body><p>hello</p></body></html>";

async fn serve_page() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
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
    format!("http://{addr}/")
}

/// `svc` with the browser group on and loopback admitted; its base URL.
async fn serve(config: Config) -> String {
    let mut settings = Settings::defaults();
    settings.code_groups.insert(Group::Browser, true);
    let mut state = AppState::with_settings(settings);
    Arc::get_mut(&mut state).unwrap().browser = Browser::new(config);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = svc::app(state);
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

async fn server_start_navigate(client: &reqwest::Client, base: &str, page: &str) -> Duration {
    let started = Instant::now();
    let resp = client
        .post(format!("{base}/browser"))
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        resp.status(),
        200,
        "{}",
        resp.text().await.unwrap_or_default()
    );
    let resp = client
        .post(format!("{base}/browser/navigate"))
        .json(&serde_json::json!({"url": page}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let took = started.elapsed();
    client
        .delete(format!("{base}/browser"))
        .send()
        .await
        .unwrap();
    took
}

/// The crate alone: launch (its own temp profile), a page, goto; the handler polled.
async fn direct_launch(bin: &std::path::Path, as_root: bool) -> (Cdp, tokio::task::JoinHandle<()>) {
    // The same viewport as the server's pages, so the screenshots are the same size.
    let viewport = chromiumoxide::handler::viewport::Viewport {
        width: 1280,
        height: 720,
        ..Default::default()
    };
    let mut builder = BrowserConfig::builder()
        .chrome_executable(bin)
        .arg("--headless=new")
        .window_size(1280, 720)
        .viewport(viewport);
    if as_root {
        builder = builder.no_sandbox();
    }
    let (browser, mut handler) = Cdp::launch(builder.build().unwrap()).await.unwrap();
    let task = tokio::spawn(async move { while handler.next().await.is_some() {} });
    (browser, task)
}

async fn direct_start_navigate(bin: &std::path::Path, as_root: bool, page: &str) -> Duration {
    let started = Instant::now();
    let (mut browser, task) = direct_launch(bin, as_root).await;
    let tab = browser.new_page("about:blank").await.unwrap();
    tab.goto(page).await.unwrap();
    let took = started.elapsed();
    let _ = browser.close().await;
    let _ = browser.wait().await;
    task.abort();
    took
}

fn report(what: &str, server: Vec<f64>, floor: Vec<f64>) {
    let (s50, s99) = (percentile(server.clone(), 0.5), percentile(server, 0.99));
    let (f50, f99) = (percentile(floor.clone(), 0.5), percentile(floor, 0.99));
    println!(
        "{what}: server p50 {s50:.1} ms p99 {s99:.1} ms; crate directly p50 {f50:.1} ms p99 {f99:.1} ms; ratio {:.2}",
        s50 / f50
    );
}

fn main() {
    let starts = arg_quick("--starts", 5, 1) as usize;
    let rounds = arg_quick("--rounds", 50, 1) as usize;
    let mut env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
    env.insert("SVC_BROWSER_ALLOW_PRIVATE".into(), "loopback".into());
    let config = Config::from_env(&env).unwrap();
    let bin = match svc::services::browser::find_binary(&config) {
        Ok(bin) => bin,
        Err(why) => {
            println!("browser bench skipped: {why}");
            return;
        }
    };
    let as_root = config.as_root;
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        let page = serve_page().await;
        let base = serve(config).await;
        let client = reqwest::Client::new();
        let (mut server, mut floor) = (Vec::new(), Vec::new());
        for _ in 0..starts {
            server.push(ms(server_start_navigate(&client, &base, &page).await));
            floor.push(ms(direct_start_navigate(&bin, as_root, &page).await));
        }
        report("start to first navigate", server, floor);

        client
            .post(format!("{base}/browser"))
            .json(&serde_json::json!({}))
            .send()
            .await
            .unwrap();
        client
            .post(format!("{base}/browser/navigate"))
            .json(&serde_json::json!({"url": page}))
            .send()
            .await
            .unwrap();
        let (mut direct, task) = direct_launch(&bin, as_root).await;
        let tab = direct.new_page(page.as_str()).await.unwrap();
        let (mut server, mut floor) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let started = Instant::now();
            let resp = client
                .get(format!("{base}/browser/screenshot"))
                .send()
                .await
                .unwrap();
            assert_eq!(resp.status(), 200);
            resp.bytes().await.unwrap();
            server.push(ms(started.elapsed()));
            let started = Instant::now();
            let params = ScreenshotParams::builder()
                .format(CaptureScreenshotFormat::Png)
                .build();
            tab.screenshot(params).await.unwrap();
            floor.push(ms(started.elapsed()));
        }
        report("screenshot 1280x720", server, floor);
        client
            .delete(format!("{base}/browser"))
            .send()
            .await
            .unwrap();
        let _ = direct.close().await;
        let _ = direct.wait().await;
        task.abort();
    });
}
