//! One running Chromium: the child (spawned by the supervisor: a process group of its own,
//! reaped by its owner task, killed with its group when dropped or when the server stops),
//! its profile directory, its proxy, and the DevTools connection with the one page every
//! operation drives.

use super::proxy::Proxy;
use super::{Config, Error, LAUNCH_TIMEOUT};
use crate::services::supervisor::{Chunk, Process, Spec, Stream};
use chromiumoxide::handler::HandlerConfig;
use chromiumoxide::handler::viewport::Viewport;
use chromiumoxide::{Browser as Cdp, Page};
use futures::StreamExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// The viewport every page gets (and a screenshot's size).
pub const VIEWPORT: (u32, u32) = (1280, 720);

pub struct Session {
    pub process: Process,
    pub page: Page,
    pub proxy: Proxy,
    /// Kept so the connection lives as long as the session.
    _cdp: Cdp,
    handler: JoinHandle<()>,
    /// Set when the DevTools connection ended (the browser closed it or died).
    pub disconnected: Arc<Mutex<Option<String>>>,
    profile: PathBuf,
    /// Serializes the page operations (one page, one caller at a time).
    pub op: tokio::sync::Mutex<()>,
}

/// A fresh profile directory (mode 0700) under the temp dir.
fn profile_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(crate::services::ids::new("svc-browser"));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

fn args(config: &Config, headless: bool, profile: &std::path::Path, proxy: &Proxy) -> Vec<String> {
    let mut args = vec![
        "--remote-debugging-port=0".to_owned(),
        format!("--user-data-dir={}", profile.display()),
        // Every request through the guarding proxy, loopback included (Chromium bypasses
        // the proxy for loopback unless told `<-loopback>`).
        format!("--proxy-server=http://{}", proxy.addr),
        "--proxy-bypass-list=<-loopback>".to_owned(),
        // UDP would leave the proxy: no QUIC, no WebRTC outside the proxy.
        "--disable-quic".to_owned(),
        "--force-webrtc-ip-handling-policy=disable_non_proxied_udp".to_owned(),
        "--dns-prefetch-disable".to_owned(),
        // Nothing the browser would do on its own: updates, sync, metrics, first-run UI.
        "--no-first-run".to_owned(),
        "--no-default-browser-check".to_owned(),
        "--disable-background-networking".to_owned(),
        "--disable-component-update".to_owned(),
        "--disable-sync".to_owned(),
        "--disable-default-apps".to_owned(),
        "--disable-extensions".to_owned(),
        "--metrics-recording-only".to_owned(),
        "--password-store=basic".to_owned(),
        "--mute-audio".to_owned(),
        // Containers often have a small /dev/shm.
        "--disable-dev-shm-usage".to_owned(),
        format!("--window-size={},{}", VIEWPORT.0, VIEWPORT.1),
    ];
    if headless {
        args.push("--headless=new".to_owned());
    }
    // Chromium's sandbox refuses to run as root; CI runs as root, so there (and only
    // there) it runs without it. The proxy and the URL rules do not depend on it.
    if config.as_root {
        args.push("--no-sandbox".to_owned());
    }
    args.push("about:blank".to_owned());
    args
}

/// The environment the browser gets: not the server's (no secrets), only what a browser
/// needs to find itself and a display.
fn env(profile: &std::path::Path) -> Vec<(String, String)> {
    let mut env = vec![("HOME".to_owned(), profile.display().to_string())];
    for name in [
        "PATH",
        "LANG",
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "XAUTHORITY",
        "TZ",
    ] {
        if let Ok(v) = std::env::var(name) {
            env.push((name.to_owned(), v));
        }
    }
    env
}

/// Reads stderr until Chromium prints its DevTools address.
async fn devtools_url(chunks: &mut mpsc::Receiver<Chunk>, stderr: &mut String) -> Option<String> {
    while let Some(chunk) = chunks.recv().await {
        if chunk.stream == Stream::Stderr {
            stderr.push_str(&String::from_utf8_lossy(&chunk.bytes));
            if let Some(at) = stderr.find("DevTools listening on ")
                && let Some(line) = stderr[at..].lines().next()
                && stderr[at..].contains('\n')
            {
                return Some(line["DevTools listening on ".len()..].trim().to_owned());
            }
        }
    }
    None
}

fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(5)..].join(" | ")
}

impl Session {
    pub async fn launch(config: &Config, headless: bool) -> Result<Session, Error> {
        let bin = super::binary::find(config.binary.as_deref(), &config.path)
            .map_err(Error::BinaryMissing)?;
        let proxy = Proxy::start(config.rules.clone())
            .await
            .map_err(|e| Error::Launch(format!("the browser's proxy could not start: {e}")))?;
        let profile =
            profile_dir().map_err(|e| Error::Launch(format!("no profile directory: {e}")))?;
        let spec = Spec {
            program: bin.display().to_string(),
            args: args(config, headless, &profile, &proxy),
            cwd: Some(profile.clone()),
            env: env(&profile),
            // The server's own tool: its profile folder is the server's.
            server_tool: true,
            ..Spec::default()
        };
        let started = async {
            let (process, mut chunks) = Process::spawn_followed(&spec).map_err(|e| {
                Error::Launch(format!("{} could not be started: {e}", spec.program))
            })?;
            let mut stderr = String::new();
            let url = tokio::time::timeout(LAUNCH_TIMEOUT, devtools_url(&mut chunks, &mut stderr))
                .await
                .map_err(|_| {
                    Error::Launch(format!(
                        "the browser did not open DevTools within {LAUNCH_TIMEOUT:?}: {}",
                        tail(&stderr)
                    ))
                })?
                .ok_or_else(|| {
                    Error::Launch(format!("the browser exited at start: {}", tail(&stderr)))
                })?;
            // From here the rings keep its output; nobody waits on this reader.
            drop(chunks);
            Ok::<_, Error>((process, url))
        };
        let (process, url) = match started.await {
            Ok(v) => v,
            Err(e) => {
                let _ = std::fs::remove_dir_all(&profile);
                return Err(e);
            }
        };
        match Session::connect(process, &url, proxy, profile.clone()).await {
            Ok(s) => Ok(s),
            Err(e) => {
                let _ = std::fs::remove_dir_all(&profile);
                Err(e)
            }
        }
    }

    async fn connect(
        process: Process,
        url: &str,
        proxy: Proxy,
        profile: PathBuf,
    ) -> Result<Session, Error> {
        let config = HandlerConfig {
            // A certificate error is an error: the page is not what it claims to be.
            ignore_https_errors: false,
            viewport: Some(Viewport {
                width: VIEWPORT.0,
                height: VIEWPORT.1,
                ..Viewport::default()
            }),
            request_timeout: super::CALL_TIMEOUT,
            ..HandlerConfig::default()
        };
        let connected = tokio::time::timeout(LAUNCH_TIMEOUT, Cdp::connect_with_config(url, config))
            .await
            .map_err(|_| Error::Launch("connecting to DevTools timed out".into()))?
            .map_err(|e| Error::Launch(format!("connecting to DevTools failed: {e}")))?;
        let (cdp, mut handler) = connected;
        let disconnected: Arc<Mutex<Option<String>>> = Arc::default();
        let flag = disconnected.clone();
        let handler = tokio::spawn(async move {
            let mut why = "the DevTools connection closed".to_owned();
            while let Some(event) = handler.next().await {
                // Unknown or malformed messages are skipped; a broken socket ends it.
                if let Err(chromiumoxide::error::CdpError::Ws(e)) = event {
                    why = format!("the DevTools connection failed: {e}");
                    break;
                }
            }
            *flag.lock().unwrap_or_else(|e| e.into_inner()) = Some(why);
        });
        let page = tokio::time::timeout(LAUNCH_TIMEOUT, cdp.new_page("about:blank"))
            .await
            .map_err(|_| Error::Launch("opening a page timed out".into()))?
            .map_err(|e| Error::Launch(format!("opening a page failed: {e}")))?;
        Ok(Session {
            process,
            page,
            proxy,
            _cdp: cdp,
            handler,
            disconnected,
            profile,
            op: tokio::sync::Mutex::new(()),
        })
    }

    pub fn pid(&self) -> u32 {
        self.process.pid()
    }

    /// Why this browser is gone, if it is: its process ended, or DevTools went away.
    pub fn gone(&self) -> Option<String> {
        if let Some(exit) = self.process.exit() {
            let how = match (exit.code(), exit.signal()) {
                (Some(c), _) => format!("exit code {c}"),
                (_, Some(s)) => format!("signal {s}"),
                _ => exit.wait_error.unwrap_or_else(|| "unknown".into()),
            };
            let stderr =
                String::from_utf8_lossy(&self.process.tail(Stream::Stderr, 2048)).into_owned();
            return Some(format!("the browser exited ({how}): {}", tail(&stderr)));
        }
        self.disconnected
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Ends the browser's whole group (TERM, grace, KILL), the DevTools task and the proxy,
    /// and removes the profile directory.
    pub async fn stop(&self) {
        self.process.stop(crate::services::supervisor::GRACE).await;
    }
}

impl Drop for Session {
    /// Whatever way a session ends (stopped, died, dropped with the server), its DevTools
    /// task ends and its profile is removed; the [`Process`] field kills the group if it
    /// still runs.
    fn drop(&mut self) {
        self.handler.abort();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}
