//! The service against a real Chromium and a page served here; skipped (with the reason
//! printed) only when no browser binary is installed.

use super::*;
use std::collections::BTreeMap;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

const FORM: &str = r#"<!doctype html><html><head><title>Form</title></head><body>
<input id="name"><button id="go" onclick="document.getElementById('out').textContent = 'hello ' + document.getElementById('name').value">Go</button>
<p id="out">waiting</p><div style="height: 3000px">tall</div></body></html>"#;

/// A tiny HTTP server: `/` the form, `/away` a redirect to a private address, anything
/// else 404.
pub(crate) async fn serve_pages() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).into_owned();
                let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
                let reply = match path.as_str() {
                    "/" => format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{FORM}",
                        FORM.len()
                    ),
                    "/away" => "HTTP/1.1 302 Found\r\nlocation: http://10.255.255.1/secret\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_owned(),
                    _ => "HTTP/1.1 404 Not Found\r\ncontent-length: 4\r\nconnection: close\r\n\r\nnope".to_owned(),
                };
                let _ = s.write_all(reply.as_bytes()).await;
            });
        }
    });
    addr
}

fn config(private: &str) -> Option<Config> {
    let mut env: BTreeMap<String, String> = std::env::vars().collect();
    env.insert("SVC_BROWSER_ALLOW_PRIVATE".into(), private.into());
    let config = Config::from_env(&env).unwrap();
    match binary::find(config.binary.as_deref(), &config.path) {
        Ok(_) => Some(config),
        Err(why) => {
            eprintln!("skipped: {why}");
            None
        }
    }
}

/// Width and height from a PNG's IHDR.
pub(crate) fn png_size(png: &[u8]) -> (u32, u32) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    let be = |at: usize| u32::from_be_bytes(png[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_browser_navigates_types_clicks_reads_and_stops() {
    let Some(config) = config("loopback") else {
        return;
    };
    let pages = serve_pages().await;
    let browser = Browser::new(config);
    assert_eq!(browser.status().await, Status::default());
    assert_eq!(browser.click("#go").await, Err(Error::NotRunning(None)));

    let started = browser.start(true).await.unwrap();
    assert!(started.running && started.pid.is_some());
    assert!(matches!(
        browser.start(true).await,
        Err(Error::AlreadyRunning { pid }) if Some(pid) == started.pid
    ));

    let url = format!("http://{pages}/");
    let went = browser.navigate(&url).await.unwrap();
    assert_eq!(
        (went.url.as_str(), went.title.as_str(), went.status),
        (url.as_str(), "Form", 200)
    );
    let missing = browser
        .navigate(&format!("http://{pages}/missing"))
        .await
        .unwrap();
    assert_eq!(missing.status, 404);
    browser.navigate(&url).await.unwrap();

    browser.type_text("#name", "world").await.unwrap();
    browser.click("#go").await.unwrap();
    let content = browser.content().await.unwrap();
    assert!(content.text.contains("hello world"), "{}", content.text);
    assert!(content.html.contains("<title>Form</title>"));
    assert_eq!(
        browser.click("#nothing").await,
        Err(Error::SelectorNotFound("#nothing".into()))
    );
    assert_eq!(
        browser.click("a[").await,
        Err(Error::SelectorInvalid("a[".into()))
    );

    let shot = browser.screenshot(false).await.unwrap();
    assert_eq!(png_size(&shot), VIEWPORT);
    let full = browser.screenshot(true).await.unwrap();
    let (w, h) = png_size(&full);
    assert!(w >= VIEWPORT.0 - 20 && h > 3000, "{w}x{h}");

    let status = browser.status().await;
    assert_eq!(
        (status.url.as_deref(), status.title.as_deref()),
        (Some(url.as_str()), Some("Form"))
    );

    // A redirect to a private address is refused by the proxy, and told as such.
    let away = browser.navigate(&format!("http://{pages}/away")).await;
    assert!(
        matches!(&away, Err(Error::UrlDenied(m)) if m.contains("10.255.255.1")),
        "{away:?}"
    );
    for bad in ["file:///etc/passwd", "javascript:alert(1)"] {
        assert!(
            matches!(browser.navigate(bad).await, Err(Error::UrlInvalid(_))),
            "{bad}"
        );
    }
    assert!(matches!(
        browser.navigate("http://169.254.169.254/").await,
        Err(Error::UrlDenied(_))
    ));

    let pid = started.pid.unwrap();
    browser.stop().await.unwrap();
    assert_eq!(browser.status().await, Status::default());
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
    assert_eq!(browser.stop().await, Err(Error::NotRunning(None)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_that_dies_is_reported_not_waited_for() {
    let Some(config) = config("") else { return };
    let browser = Browser::new(config);
    let pid = browser.start(true).await.unwrap().pid.unwrap();
    nix::sys::signal::killpg(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    let started = std::time::Instant::now();
    let mut status = browser.status().await;
    while status.running && started.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(50)).await;
        status = browser.status().await;
    }
    assert!(!status.running);
    let reason = status.reason.unwrap();
    assert!(
        reason.contains("signal 9") || reason.contains("DevTools"),
        "{reason}"
    );
    assert!(matches!(
        browser.content().await,
        Err(Error::NotRunning(Some(_)))
    ));
    // A new one starts after a death.
    browser.start(true).await.unwrap();
    browser.shutdown().await;
}

#[tokio::test]
async fn a_missing_binary_names_the_package() {
    let config = Config {
        path: "/nonexistent".into(),
        ..Config::default()
    };
    let e = Browser::new(config).start(true).await.unwrap_err();
    assert!(
        matches!(&e, Error::BinaryMissing(m) if m.contains("chromium")),
        "{e}"
    );
}
