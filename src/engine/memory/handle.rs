//! The provider's `Sandbox` on a memory sandbox: what it declares (the lifecycle, files,
//! watch) goes to the module that does it; commands, processes, code, terminals and ports
//! keep the trait's defaults (501 `E8004`).

use super::super::provider::{ByteStream, EventStream, FileRead, ProviderResult, Sandbox};
use super::sandbox::MemorySandbox;
use super::{files, lifecycle, watch};

use crate::wire::{EntryInfo, MkdirBody, MoveBody, SandboxRecord, WriteQuery};
use async_trait::async_trait;

#[async_trait]
impl Sandbox for MemorySandbox {
    async fn info(&self) -> ProviderResult<SandboxRecord> {
        lifecycle::info(&self.core)
    }

    async fn kill(&self) -> ProviderResult<SandboxRecord> {
        lifecycle::end(&self.core, true)
    }

    async fn set_timeout(&self, seconds: u64) -> ProviderResult<SandboxRecord> {
        lifecycle::set_timeout(&self.core, seconds)
    }

    async fn pause(&self) -> ProviderResult<SandboxRecord> {
        lifecycle::pause(&self.core)
    }

    async fn resume(&self) -> ProviderResult<SandboxRecord> {
        lifecycle::resume(&self.core)
    }

    async fn read_file(&self, path: &str) -> ProviderResult<FileRead> {
        files::read(&self.core, path)
    }

    async fn write_file(&self, query: WriteQuery, body: ByteStream) -> ProviderResult<EntryInfo> {
        files::write(&self.core, query, body).await
    }

    async fn list_files(&self, path: &str, depth: u32) -> ProviderResult<Vec<EntryInfo>> {
        files::list(&self.core, path, depth)
    }

    async fn file_info(&self, path: &str) -> ProviderResult<EntryInfo> {
        files::info(&self.core, path)
    }

    async fn file_exists(&self, path: &str) -> ProviderResult<bool> {
        files::exists(&self.core, path)
    }

    async fn mkdir(&self, body: MkdirBody) -> ProviderResult<EntryInfo> {
        files::mkdir(&self.core, body)
    }

    async fn rename(&self, body: MoveBody) -> ProviderResult<EntryInfo> {
        files::rename(&self.core, body)
    }

    async fn remove(&self, path: &str, recursive: bool) -> ProviderResult<String> {
        files::remove(&self.core, path, recursive)
    }

    async fn watch(&self, path: &str, recursive: bool) -> ProviderResult<EventStream> {
        watch::watch(&self.core, path, recursive)
    }
}
