//! The provider's `Sandbox` on a local sandbox: every call goes to the module that does
//! it; each checks first that the sandbox exists (and runs, for what starts processes).

use super::super::provider::{
    ByteStream, CodeOutcome, CommandOutcome, EventStream, FileRead, ProcessInfo, ProviderResult,
    Sandbox, TerminalIo, TerminalOpen, UploadBody,
};
use super::sandbox::LocalSandbox;
use super::{code, commands, files, lifecycle, processes, terminal};
use crate::error::engine::{Code, EngineError};
use crate::wire::{
    CodeRunBody, CommandBody, ContextRecord, CreateContext, EntryInfo, MkdirBody, MoveBody,
    PortUrl, SandboxRecord, WriteQuery,
};
use async_trait::async_trait;

#[async_trait]
impl Sandbox for LocalSandbox {
    async fn info(&self) -> ProviderResult<SandboxRecord> {
        self.core.life.alive()?;
        Ok(self.core.record())
    }

    async fn kill(&self) -> ProviderResult<SandboxRecord> {
        lifecycle::end(&self.core, true).await
    }

    async fn set_timeout(&self, seconds: u64) -> ProviderResult<SandboxRecord> {
        lifecycle::set_timeout(&self.core, seconds).await
    }

    /// Stops every process of the sandbox; its expiry still counts while it is paused.
    async fn pause(&self) -> ProviderResult<SandboxRecord> {
        lifecycle::pause(&self.core).await
    }

    async fn resume(&self) -> ProviderResult<SandboxRecord> {
        lifecycle::resume(&self.core).await
    }

    /// Sandboxes share the machine's loopback: a port is reached there, no headers.
    async fn port_url(&self, port: u16) -> ProviderResult<PortUrl> {
        self.core.life.alive()?;
        if port == 0 {
            return Err(EngineError::new(
                Code::InvalidArgument,
                "`port` must be 1 to 65535, not 0",
            ));
        }
        Ok(PortUrl {
            url: format!("http://127.0.0.1:{port}"),
            headers: Default::default(),
        })
    }

    async fn run(&self, body: CommandBody) -> ProviderResult<CommandOutcome> {
        commands::run(&self.core, body).await
    }

    async fn stream(&self, body: CommandBody) -> ProviderResult<EventStream> {
        commands::stream(&self.core, body).await
    }

    async fn processes(&self) -> ProviderResult<Vec<ProcessInfo>> {
        processes::list(&self.core)
    }

    async fn host_pids(&self) -> ProviderResult<Option<Vec<u32>>> {
        self.core.life.alive()?;
        Ok(Some(self.core.live().iter().map(|f| f.stat.pid).collect()))
    }

    async fn signal(&self, pid: u32, signal: i32) -> ProviderResult<()> {
        processes::signal(&self.core, pid, signal)
    }

    async fn stdin(&self, pid: u32, data: Vec<u8>, close: bool) -> ProviderResult<()> {
        processes::stdin(&self.core, pid, &data, close).await
    }

    async fn kill_process(&self, pid: u32) -> ProviderResult<()> {
        processes::kill(&self.core, pid).await
    }

    async fn read_file(&self, path: &str) -> ProviderResult<FileRead> {
        files::read(&self.core, path).await
    }

    async fn write_file(&self, query: WriteQuery, body: ByteStream) -> ProviderResult<EntryInfo> {
        files::write(&self.core, query, body).await
    }

    async fn write_upload(&self, query: WriteQuery, body: UploadBody) -> ProviderResult<EntryInfo> {
        files::write_upload(&self.core, query, body).await
    }

    async fn list_files(&self, path: &str, depth: u32) -> ProviderResult<Vec<EntryInfo>> {
        files::list(&self.core, path, depth).await
    }

    async fn file_info(&self, path: &str) -> ProviderResult<EntryInfo> {
        files::info(&self.core, path).await
    }

    async fn file_exists(&self, path: &str) -> ProviderResult<bool> {
        files::exists(&self.core, path).await
    }

    async fn mkdir(&self, body: MkdirBody) -> ProviderResult<EntryInfo> {
        files::mkdir(&self.core, body).await
    }

    async fn rename(&self, body: MoveBody) -> ProviderResult<EntryInfo> {
        files::rename(&self.core, body).await
    }

    async fn remove(&self, path: &str, recursive: bool) -> ProviderResult<String> {
        files::remove(&self.core, path, recursive).await
    }

    async fn watch(&self, path: &str, recursive: bool) -> ProviderResult<EventStream> {
        files::watch(&self.core, path, recursive).await
    }

    async fn code_run(&self, body: CodeRunBody) -> ProviderResult<CodeOutcome> {
        code::run(&self.core, body).await
    }

    async fn code_run_stream(&self, body: CodeRunBody) -> ProviderResult<EventStream> {
        code::run_stream(&self.core, body).await
    }

    async fn context_create(&self, body: CreateContext) -> ProviderResult<ContextRecord> {
        code::create_context(&self.core, body).await
    }

    async fn context_list(&self) -> ProviderResult<Vec<ContextRecord>> {
        code::list_contexts(&self.core)
    }

    async fn context_restart(&self, id: &str) -> ProviderResult<ContextRecord> {
        code::restart_context(&self.core, id).await
    }

    async fn context_delete(&self, id: &str) -> ProviderResult<()> {
        code::delete_context(&self.core, id)
    }

    async fn terminal(&self, open: &TerminalOpen) -> ProviderResult<TerminalIo> {
        terminal::open(&self.core, open).await
    }
}
