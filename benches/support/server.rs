//! The server the benchmarks run against: the main listener of `svc serve`
//! (`svc::server::serve_main`) in process on a free port, the agents group on.

use std::sync::Arc;
use svc::server::config::{LoadOptions, Settings};
use svc::server::{AppState, SharedState};

/// `svc` with the agents group, a workspace in `dir`, and `extra` variables; its base URL.
pub async fn serve(dir: &std::path::Path, extra: &[(&str, &str)]) -> (String, SharedState) {
    serve_with_connections(dir, extra, None).await
}

/// [`serve`], with `server.connections.max` set to `max_connections` when given (as a
/// template's `server.connections.max` would), for a bench that holds more connections open
/// than the default cap (1,024) lets in.
pub async fn serve_with_connections(
    dir: &std::path::Path,
    extra: &[(&str, &str)],
    max_connections: Option<usize>,
) -> (String, SharedState) {
    // The process's own variables (PATH, RT_FAKE_STATE_DIR) minus any SVC_* configuration;
    // the fakes' RT_FAKE_* variables are passed on to the runtimes on purpose.
    let mut env: std::collections::BTreeMap<String, String> = std::env::vars()
        .filter(|(k, _)| !k.starts_with("SVC_"))
        .collect();
    env.extend([
        ("SVC_SERVER_CHILD_ENV".to_owned(), "RT_FAKE_*".to_owned()),
        ("SVC_SERVER_ENABLED_GROUPS".to_owned(), "agents".to_owned()),
        (
            "SVC_AGENTS_WORKSPACE".to_owned(),
            dir.join("workspace").display().to_string(),
        ),
    ]);
    env.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    let mut settings = Settings::load_with_env(&LoadOptions::default(), &env).unwrap();
    if let Some(max) = max_connections {
        settings.connections.max = max;
    }
    let state = AppState::with_settings(settings);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // The main listener as `svc serve` runs it (TCP_NODELAY, file answers by `sendfile`).
    let server = svc::server::serve_main(listener, Arc::clone(&state));
    tokio::spawn(async move { server.await.unwrap() });
    (format!("http://{addr}"), state)
}

/// A bare axum `app` (a floor) on a free port of this runtime, TCP_NODELAY set as svc sets
/// it on its connections (each frame leaves when written); its base URL.
pub async fn serve_bare(app: axum::Router) -> String {
    use axum::serve::ListenerExt;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}
