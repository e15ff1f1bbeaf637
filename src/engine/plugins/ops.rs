//! The provider traits over a plugin: every operation is one request named by its route id
//! (`engine::routes`), its parameters the route's body or query, its result the route's
//! answer, except that bytes travel as base64 (`*_b64`) and byte bodies as chunks.

use super::body;
use super::call::{Call, Target};
use super::host::Host;
use super::results::{self, CodeResult, Processes, RunResult, Size, decode};
use super::stream::{self, Changes, Output, Render};
use crate::engine::provider::{
    ByteStream, CodeOutcome, CommandOutcome, EventStream, FileBody, FileRead, ProcessInfo,
    Provider, ProviderResult, Sandbox,
};
use crate::error::engine::{Code, EngineError};
use crate::wire::{
    CodeRunBody, CommandBody, Connection, ContextList, ContextRecord, CreateContext, CreateSandbox,
    EntryInfo, EntryList, Exists, ListSandboxes, MkdirBody, MoveBody, PortUrl, ProviderRecord,
    Removed, SandboxList, SandboxRecord, WriteQuery,
};
use async_trait::async_trait;
use base64::Engine as _;
use serde::de::{DeserializeOwned, IgnoredAny};
use serde_json::{Value, json};
use std::sync::Arc;

impl Host {
    async fn call(
        &self,
        op: &'static str,
        target: &Target<'_>,
        params: Value,
    ) -> ProviderResult<Call> {
        Call::start(&self.conn()?, op, target, params).await
    }

    async fn ask<T: DeserializeOwned>(
        &self,
        op: &'static str,
        target: &Target<'_>,
        params: Value,
    ) -> ProviderResult<T> {
        self.call(op, target, params).await?.answer().await
    }

    /// A record is the plugin's, whatever it wrote in `provider`.
    fn own(&self, mut record: SandboxRecord) -> SandboxRecord {
        record.provider = self.id();
        record
    }
}

#[async_trait]
impl Provider for Host {
    fn record(&self) -> ProviderRecord {
        Host::record(self)
    }

    async fn create(
        &self,
        conn: &Connection,
        body: CreateSandbox,
    ) -> ProviderResult<SandboxRecord> {
        let target = Target {
            connection: conn,
            sandbox_id: None,
        };
        let record = self.ask("sandboxes_create", &target, json!(body)).await?;
        Ok(self.own(record))
    }

    async fn list(
        &self,
        conn: &Connection,
        query: &ListSandboxes,
    ) -> ProviderResult<Vec<SandboxRecord>> {
        let target = Target {
            connection: conn,
            sandbox_id: None,
        };
        let list: SandboxList = self.ask("sandboxes_list", &target, json!(query)).await?;
        Ok(list.sandboxes.into_iter().map(|r| self.own(r)).collect())
    }

    async fn connect(&self, conn: &Connection, id: &str) -> ProviderResult<Arc<dyn Sandbox>> {
        let target = Target {
            connection: conn,
            sandbox_id: Some(id),
        };
        let _: SandboxRecord = self.ask("sandboxes_connect", &target, json!({})).await?;
        let host = self
            .me()
            .ok_or_else(|| EngineError::new(Code::Internal, "the plugin host is gone"))?;
        Ok(Arc::new(PluginSandbox {
            host,
            connection: conn.clone(),
            sandbox_id: id.to_owned(),
        }))
    }
}

/// A session's handle: the connection and the sandbox id go with every request, and the
/// plugin's current process serves it (a restarted plugin too).
pub struct PluginSandbox {
    host: Arc<Host>,
    connection: Connection,
    sandbox_id: String,
}

impl PluginSandbox {
    fn target(&self) -> Target<'_> {
        Target {
            connection: &self.connection,
            sandbox_id: Some(&self.sandbox_id),
        }
    }

    async fn ask<T: DeserializeOwned>(&self, op: &'static str, params: Value) -> ProviderResult<T> {
        self.host.ask(op, &self.target(), params).await
    }

    async fn record(&self, op: &'static str, params: Value) -> ProviderResult<SandboxRecord> {
        Ok(self.host.own(self.ask(op, params).await?))
    }

    async fn open(
        &self,
        op: &'static str,
        params: Value,
        render: impl Render,
    ) -> ProviderResult<EventStream> {
        let call = self.host.call(op, &self.target(), params).await?;
        stream::open_stream(call, render).await
    }
}

#[async_trait]
impl Sandbox for PluginSandbox {
    async fn info(&self) -> ProviderResult<SandboxRecord> {
        self.record("sandboxes_info", json!({})).await
    }

    async fn kill(&self) -> ProviderResult<SandboxRecord> {
        self.record("sandboxes_kill", json!({})).await
    }

    async fn set_timeout(&self, seconds: u64) -> ProviderResult<SandboxRecord> {
        self.record("sandboxes_timeout", json!({ "timeout": seconds }))
            .await
    }

    async fn pause(&self) -> ProviderResult<SandboxRecord> {
        self.record("sandboxes_pause", json!({})).await
    }

    async fn resume(&self) -> ProviderResult<SandboxRecord> {
        self.record("sandboxes_resume", json!({})).await
    }

    async fn port_url(&self, port: u16) -> ProviderResult<PortUrl> {
        self.ask("sandboxes_port_url", json!({ "port": port }))
            .await
    }

    async fn run(&self, body: CommandBody) -> ProviderResult<CommandOutcome> {
        let r: RunResult = self.ask("commands_run", json!(body)).await?;
        let plugin = self.host.id();
        Ok(CommandOutcome {
            pid: r.pid,
            stdout: decode(&plugin, "stdout_b64", &r.stdout_b64)?,
            stderr: decode(&plugin, "stderr_b64", &r.stderr_b64)?,
            exit_code: r.exit_code,
            timed_out: r.timed_out,
        })
    }

    async fn stream(&self, body: CommandBody) -> ProviderResult<EventStream> {
        self.open("commands_stream", json!(body), Output::default())
            .await
    }

    async fn processes(&self) -> ProviderResult<Vec<ProcessInfo>> {
        let list: Processes = self.ask("processes_list", json!({})).await?;
        Ok(list.processes)
    }

    async fn signal(&self, pid: u32, signal: i32) -> ProviderResult<()> {
        let IgnoredAny = self
            .ask("processes_signal", json!({ "pid": pid, "signal": signal }))
            .await?;
        Ok(())
    }

    async fn stdin(&self, pid: u32, data: Vec<u8>, close: bool) -> ProviderResult<()> {
        let data_b64 = base64::engine::general_purpose::STANDARD.encode(data);
        let IgnoredAny = self
            .ask(
                "processes_stdin",
                json!({ "pid": pid, "data_b64": data_b64, "close": close }),
            )
            .await?;
        Ok(())
    }

    async fn kill_process(&self, pid: u32) -> ProviderResult<()> {
        let IgnoredAny = self.ask("processes_kill", json!({ "pid": pid })).await?;
        Ok(())
    }

    async fn read_file(&self, path: &str) -> ProviderResult<FileRead> {
        let mut call = self
            .host
            .call("files_read", &self.target(), json!({ "path": path }))
            .await?;
        let Size { size } = call.answer().await?;
        call.reopen();
        Ok(FileRead {
            size,
            body: FileBody::Stream(body::read_body(call)),
        })
    }

    async fn write_file(&self, query: WriteQuery, body: ByteStream) -> ProviderResult<EntryInfo> {
        let asked = query.metadata.clone().unwrap_or_default();
        let mut call = self
            .host
            .call("files_write", &self.target(), json!(query))
            .await?;
        let written = body::write_body(&mut call, body).await?;
        results::kept_metadata(&self.host.id(), asked.pairs(), written)
    }

    async fn list_files(&self, path: &str, depth: u32) -> ProviderResult<Vec<EntryInfo>> {
        let list: EntryList = self
            .ask("files_list", json!({ "path": path, "depth": depth }))
            .await?;
        results::entries(&self.host.id(), "files_list", list.entries)
    }

    async fn file_info(&self, path: &str) -> ProviderResult<EntryInfo> {
        let info = self.ask("files_info", json!({ "path": path })).await?;
        results::entry(&self.host.id(), "files_info", info)
    }

    async fn file_exists(&self, path: &str) -> ProviderResult<bool> {
        let Exists { exists } = self.ask("files_exists", json!({ "path": path })).await?;
        Ok(exists)
    }

    async fn mkdir(&self, body: MkdirBody) -> ProviderResult<EntryInfo> {
        self.ask("files_mkdir", json!(body)).await
    }

    async fn rename(&self, body: MoveBody) -> ProviderResult<EntryInfo> {
        self.ask("files_move", json!(body)).await
    }

    async fn remove(&self, path: &str, recursive: bool) -> ProviderResult<String> {
        let Removed { path, .. } = self
            .ask(
                "files_remove",
                json!({ "path": path, "recursive": recursive }),
            )
            .await?;
        Ok(path)
    }

    async fn watch(&self, path: &str, recursive: bool) -> ProviderResult<EventStream> {
        let params = json!({ "path": path, "recursive": recursive });
        self.open("files_watch", params, Changes).await
    }

    async fn code_run(&self, body: CodeRunBody) -> ProviderResult<CodeOutcome> {
        let r: CodeResult = self.ask("code_run", json!(body)).await?;
        let plugin = self.host.id();
        Ok(CodeOutcome {
            stdout: decode(&plugin, "stdout_b64", &r.stdout_b64)?,
            stderr: decode(&plugin, "stderr_b64", &r.stderr_b64)?,
            exit_code: r.exit_code,
            timed_out: r.timed_out,
            duration_ms: r.duration_ms,
        })
    }

    async fn context_create(&self, body: CreateContext) -> ProviderResult<ContextRecord> {
        self.ask("code_contexts_create", json!(body)).await
    }

    async fn context_list(&self) -> ProviderResult<Vec<ContextRecord>> {
        let list: ContextList = self.ask("code_contexts_list", json!({})).await?;
        Ok(list.contexts)
    }

    async fn context_restart(&self, id: &str) -> ProviderResult<ContextRecord> {
        self.ask("code_contexts_restart", json!({ "context_id": id }))
            .await
    }

    async fn context_delete(&self, id: &str) -> ProviderResult<()> {
        let IgnoredAny = self
            .ask("code_contexts_delete", json!({ "context_id": id }))
            .await?;
        Ok(())
    }
}
