//! The audit log: one JSON line per call (`audit: all`) or per refusal (`audit: deny`),
//! written by a thread of its own so a slow disk never holds a request. The query string
//! is never logged: it may carry values the caller considers private.

use crate::error::ErrorMeta;
use crate::server::config::AuditMode;
use axum::response::Response;
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

/// What the pipeline learned about a call, carried to the audit on the response.
#[derive(Debug, Clone)]
pub struct AuditInfo {
    pub endpoint: Option<&'static str>,
    pub identity: Option<String>,
}

pub struct Audit {
    mode: AuditMode,
    sink: Option<mpsc::Sender<String>>,
}

impl Audit {
    /// Opens the file now, so a bad path stops the server at start-up with its name.
    pub fn start(mode: AuditMode, file: Option<&Path>) -> std::io::Result<Audit> {
        let sink = match (mode, file) {
            (AuditMode::Off, _) | (_, None) => None,
            (_, Some(path)) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .map_err(|e| {
                        std::io::Error::new(e.kind(), format!("audit file {}: {e}", path.display()))
                    })?;
                let (tx, rx) = mpsc::channel::<String>();
                std::thread::Builder::new()
                    .name("svc-audit".into())
                    .spawn(move || write_lines(file, rx))?;
                Some(tx)
            }
        };
        Ok(Audit { mode, sink })
    }

    pub fn off() -> Audit {
        Audit {
            mode: AuditMode::Off,
            sink: None,
        }
    }

    /// Whether any call is written (`all` or `deny`): with the audit off, the pipeline
    /// carries nothing for it and reads no clock.
    pub fn records(&self) -> bool {
        self.mode != AuditMode::Off
    }

    pub fn record(
        &self,
        method: &http::Method,
        path: &str,
        info: Option<&AuditInfo>,
        response: &Response,
        duration: Duration,
    ) {
        if self.mode == AuditMode::Off {
            return;
        }
        let error = response.extensions().get::<ErrorMeta>();
        let denied = error.is_some_and(|e| e.code.is_denial());
        if self.mode == AuditMode::Deny && !denied {
            return;
        }
        let line = json!({
            "time": humantime::format_rfc3339_millis(SystemTime::now()).to_string(),
            "identity": info.and_then(|i| i.identity.clone()),
            "endpoint": info.and_then(|i| i.endpoint),
            "method": method.as_str(),
            "path": path,
            "decision": if denied { "deny" } else { "allow" },
            "code": error.map(|e| e.code.as_str()),
            "rule": error.and_then(|e| e.rule.clone()),
            "status": response.status().as_u16(),
            "duration_ms": duration.as_secs_f64() * 1000.0,
        })
        .to_string();
        match &self.sink {
            Some(tx) => {
                if tx.send(line.clone()).is_err() {
                    tracing::warn!(target: "svc::server::audit", "{line}");
                }
            }
            None => tracing::info!(target: "svc::server::audit", "{line}"),
        }
    }
}

fn write_lines(file: std::fs::File, rx: mpsc::Receiver<String>) {
    let mut out = std::io::BufWriter::new(file);
    while let Ok(line) = rx.recv() {
        let mut ok = writeln!(out, "{line}").is_ok();
        // Write what queued up meanwhile, then flush once: readers see whole lines promptly.
        while let Ok(more) = rx.try_recv() {
            ok &= writeln!(out, "{more}").is_ok();
        }
        ok &= out.flush().is_ok();
        if !ok {
            tracing::error!(target: "svc::server::audit", "cannot write the audit file");
        }
    }
}
