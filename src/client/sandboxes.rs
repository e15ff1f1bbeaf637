//! The engine's own routes (health, shutdown, providers) and the sandbox routes.

use super::Client;
use super::error::{ClientError, ClientResult};
use super::launch::pid_alive;
use super::transport::{error_of, no_engine_running, read_json};
use super::types::items;
use crate::wire::{
    CreateSandbox, Descriptor, Health, ListSandboxes, PortUrl, ProviderRecord, Running,
    SandboxList, SandboxRecord, SetTimeout,
};
use reqwest::Method;
use serde_json::Value;
use std::time::{Duration, Instant};

impl Client {
    /// `GET /v1/health` (starts an engine when none runs, unless the options say not to).
    pub async fn health(&self) -> ClientResult<Health> {
        self.get(&["health"], &[]).await
    }

    /// The running engine's descriptor and health, never starting one.
    pub async fn running_engine(&self) -> ClientResult<(Descriptor, Health)> {
        let state_dir = &self.options().state_dir;
        let engine = Descriptor::read(state_dir)
            .filter(|d| pid_alive(d.pid))
            .ok_or_else(|| no_engine_running(state_dir))?;
        let health = self.health_of(&engine).await.map_err(|e| match e {
            ClientError::Transport(message) => ClientError::NoEngine(format!(
                "the engine of pid {} does not answer: {message}",
                engine.pid
            )),
            other => other,
        })?;
        Ok((engine, health))
    }

    /// `POST /v1/shutdown`, then waits up to `wait` for the engine's process to be gone.
    /// Never starts an engine: `Ok(None)` when none ran.
    pub async fn stop_engine(&self, wait: Duration) -> ClientResult<Option<Descriptor>> {
        let state_dir = &self.options().state_dir;
        let Some(engine) = Descriptor::read(state_dir).filter(|d| pid_alive(d.pid)) else {
            return Ok(None);
        };
        let sent = self
            .request(&engine, Method::POST, &["shutdown"], &[])?
            .json(&serde_json::json!({}))
            .send()
            .await;
        match sent {
            Ok(response) if response.status().is_success() => {}
            Ok(response) => return Err(error_of(response).await),
            // It may have gone between the check and the request.
            Err(_) if !pid_alive(engine.pid) => {}
            Err(e) => return Err(ClientError::transport(&e)),
        }
        self.set_engine(None);
        let deadline = Instant::now() + wait;
        while pid_alive(engine.pid) {
            if Instant::now() >= deadline {
                return Err(ClientError::NoEngine(format!(
                    "the engine (pid {}) was asked to stop but still runs after {} s",
                    engine.pid,
                    wait.as_secs_f32()
                )));
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(Some(engine))
    }

    /// `GET /v1/providers`.
    pub async fn providers(&self) -> ClientResult<Vec<ProviderRecord>> {
        let value: Value = self.get(&["providers"], &[]).await?;
        items(value, "providers")
    }

    /// `POST /v1/sandboxes` (201 and the record).
    pub async fn create(&self, body: &CreateSandbox) -> ClientResult<SandboxRecord> {
        self.post(&["sandboxes"], body).await
    }

    /// `GET /v1/sandboxes?status=&limit=&offset=`.
    pub async fn list(&self, query: &ListSandboxes) -> ClientResult<Vec<SandboxRecord>> {
        let mut pairs = Vec::new();
        if let Some(status) = query.status
            && let Ok(Value::String(name)) = serde_json::to_value(status)
        {
            pairs.push(("status", name));
        }
        if let Some(limit) = query.limit {
            pairs.push(("limit", limit.to_string()));
        }
        if let Some(offset) = query.offset {
            pairs.push(("offset", offset.to_string()));
        }
        let list: SandboxList = self.get(&["sandboxes"], &pairs).await?;
        Ok(list.sandboxes)
    }

    /// `POST /v1/sandboxes/:id/connect`.
    pub async fn connect(&self, id: &str) -> ClientResult<SandboxRecord> {
        self.sandbox_action(id, "connect").await
    }

    /// `GET /v1/sandboxes/:id`.
    pub async fn info(&self, id: &str) -> ClientResult<SandboxRecord> {
        self.get(&["sandboxes", id], &[]).await
    }

    /// `DELETE /v1/sandboxes/:id`: the sandbox's last record.
    pub async fn kill(&self, id: &str) -> ClientResult<SandboxRecord> {
        read_json(self.delete(&["sandboxes", id], &[]).await?).await
    }

    /// `GET /v1/sandboxes/:id/running`.
    pub async fn is_running(&self, id: &str) -> ClientResult<bool> {
        let running: Running = self.get(&["sandboxes", id, "running"], &[]).await?;
        Ok(running.running)
    }

    /// `POST /v1/sandboxes/:id/timeout`: the remaining lifetime, from now.
    pub async fn set_timeout(&self, id: &str, seconds: u64) -> ClientResult<SandboxRecord> {
        let body = SetTimeout { timeout: seconds };
        self.post(&["sandboxes", id, "timeout"], &body).await
    }

    /// `POST /v1/sandboxes/:id/pause`.
    pub async fn pause(&self, id: &str) -> ClientResult<SandboxRecord> {
        self.sandbox_action(id, "pause").await
    }

    /// `POST /v1/sandboxes/:id/resume`.
    pub async fn resume(&self, id: &str) -> ClientResult<SandboxRecord> {
        self.sandbox_action(id, "resume").await
    }

    /// `GET /v1/sandboxes/:id/ports/:port/url`.
    pub async fn port_url(&self, id: &str, port: u16) -> ClientResult<PortUrl> {
        let port = port.to_string();
        self.get(&["sandboxes", id, "ports", &port, "url"], &[])
            .await
    }

    /// `POST /v1/sandboxes/:id/<action>` with `{}`: a POST's body may carry the
    /// connection's fields (spec 5.4), so an engine may read one; an empty object means none.
    async fn sandbox_action(&self, id: &str, action: &str) -> ClientResult<SandboxRecord> {
        self.post(&["sandboxes", id, action], &serde_json::json!({}))
            .await
    }
}
