//! A sandbox of the remote engine: every operation is the same route there, its answer
//! read back into the provider's types (and checked: an answer of the wrong shape is
//! `E9001`). Records name `rest` as their provider, the id a caller reaches them by here.

use super::remote::{Empty, Remote};
use super::streams;
use super::{sse, terminal};
use crate::engine::provider::{
    ByteStream, CodeOutcome, CommandOutcome, EventStream, FileRead, ProcessInfo, ProviderResult,
    Sandbox, TerminalIo, TerminalOpen, UploadBody,
};
use crate::wire::{
    CodeResult, CodeRunBody, CommandBody, CommandResult, ContextList, ContextRecord, CreateContext,
    EntryInfo, MkdirBody, MoveBody, PortUrl, ProcessList, SandboxRecord, WriteQuery,
};
use async_trait::async_trait;
use base64::Engine as _;
use reqwest::Method;
use serde_json::{Value, json};
use std::sync::Arc;

/// The provider id records are given.
pub const PROVIDER_ID: &str = "rest";

pub fn ours(mut record: SandboxRecord) -> SandboxRecord {
    record.provider = PROVIDER_ID.to_owned();
    record
}

pub struct RestSandbox {
    pub remote: Arc<Remote>,
    pub id: String,
}

impl RestSandbox {
    /// `["sandboxes", id, tail...]`.
    pub(super) fn at<'a>(&'a self, tail: &[&'a str]) -> Vec<&'a str> {
        let mut segments = vec!["sandboxes", self.id.as_str()];
        segments.extend_from_slice(tail);
        segments
    }

    /// The exact bytes of an answer's stdout and stderr (an answer whose `_b64` twin is not
    /// base64 is garbled).
    fn exact(
        &self,
        output: Result<(Vec<u8>, Vec<u8>), base64::DecodeError>,
    ) -> ProviderResult<(Vec<u8>, Vec<u8>)> {
        output.map_err(|e| {
            self.remote
                .failure
                .garbled(format_args!("an output's `_b64` field is not base64 ({e})"))
        })
    }

    async fn record(&self, method: Method, tail: &[&str]) -> ProviderResult<SandboxRecord> {
        let segments = self.at(tail);
        let record = if method == Method::POST {
            let limit = Some(self.remote.timeouts.call);
            self.remote
                .send(method, &segments, &Empty {}, limit)
                .await?
        } else {
            self.remote.call(method, &segments, &[]).await?
        };
        Ok(ours(record))
    }

    /// A JSON call whose answer only confirms.
    async fn confirm(&self, method: Method, tail: &[&str], body: Value) -> ProviderResult<()> {
        let limit = Some(self.remote.timeouts.call);
        let _: Value = if method == Method::DELETE {
            self.remote.call(method, &self.at(tail), &[]).await?
        } else {
            self.remote
                .send(method, &self.at(tail), &body, limit)
                .await?
        };
        Ok(())
    }

    pub(super) async fn stream_of(
        &self,
        request: reqwest::RequestBuilder,
        ends_with_end: bool,
    ) -> ProviderResult<EventStream> {
        let response = self.remote.open(request).await?;
        let failure = self.remote.failure.clone();
        let chunks = streams::chunks(response, self.remote.timeouts.idle, failure.clone());
        Ok(sse::events(chunks, ends_with_end, failure))
    }
}

#[async_trait]
impl Sandbox for RestSandbox {
    async fn info(&self) -> ProviderResult<SandboxRecord> {
        self.record(Method::GET, &[]).await
    }

    async fn kill(&self) -> ProviderResult<SandboxRecord> {
        self.record(Method::DELETE, &[]).await
    }

    async fn set_timeout(&self, seconds: u64) -> ProviderResult<SandboxRecord> {
        let body = json!({ "timeout": seconds });
        let limit = Some(self.remote.timeouts.call);
        let record = self
            .remote
            .send(Method::POST, &self.at(&["timeout"]), &body, limit)
            .await?;
        Ok(ours(record))
    }

    async fn pause(&self) -> ProviderResult<SandboxRecord> {
        self.record(Method::POST, &["pause"]).await
    }

    async fn resume(&self) -> ProviderResult<SandboxRecord> {
        self.record(Method::POST, &["resume"]).await
    }

    async fn port_url(&self, port: u16) -> ProviderResult<PortUrl> {
        let port = port.to_string();
        let segments = self.at(&["ports", &port, "url"]);
        self.remote.call(Method::GET, &segments, &[]).await
    }

    async fn run(&self, body: CommandBody) -> ProviderResult<CommandOutcome> {
        let limit = self.remote.timeouts.for_run(body.timeout);
        let segments = self.at(&["commands", "run"]);
        let answer: CommandResult = self
            .remote
            .send(Method::POST, &segments, &body, limit)
            .await?;
        let (pid, exit_code, timed_out) = (answer.pid, answer.exit_code, answer.timed_out);
        let (stdout, stderr) = self.exact(answer.printed.exact())?;
        Ok(CommandOutcome {
            pid,
            stdout,
            stderr,
            exit_code,
            timed_out,
        })
    }

    async fn stream(&self, body: CommandBody) -> ProviderResult<EventStream> {
        let request = self
            .remote
            .request(Method::POST, &self.at(&["commands", "stream"]), &[])
            .json(&body);
        self.stream_of(request, true).await
    }

    async fn processes(&self) -> ProviderResult<Vec<ProcessInfo>> {
        let answer: ProcessList = self
            .remote
            .call(Method::GET, &self.at(&["processes"]), &[])
            .await?;
        Ok(answer.processes)
    }

    async fn signal(&self, pid: u32, signal: i32) -> ProviderResult<()> {
        let pid = pid.to_string();
        let body = json!({ "signal": signal });
        self.confirm(Method::POST, &["processes", &pid, "signal"], body)
            .await
    }

    async fn stdin(&self, pid: u32, data: Vec<u8>, close: bool) -> ProviderResult<()> {
        let body = match String::from_utf8(data) {
            Ok(text) => json!({ "data": text, "close": close }),
            Err(e) => {
                let b64 = base64::engine::general_purpose::STANDARD.encode(e.into_bytes());
                json!({ "data_b64": b64, "close": close })
            }
        };
        let pid = pid.to_string();
        self.confirm(Method::POST, &["processes", &pid, "stdin"], body)
            .await
    }

    async fn kill_process(&self, pid: u32) -> ProviderResult<()> {
        let pid = pid.to_string();
        self.confirm(Method::DELETE, &["processes", &pid], Value::Null)
            .await
    }

    async fn read_file(&self, file: &str) -> ProviderResult<FileRead> {
        self.read(file).await
    }

    async fn read_file_spliced(&self, file: &str) -> ProviderResult<FileRead> {
        self.read_spliced(file).await
    }

    async fn write_file(&self, query: WriteQuery, body: ByteStream) -> ProviderResult<EntryInfo> {
        self.write(query, body).await
    }

    /// Passed on socket to socket where it can be (`upload.rs`).
    async fn write_upload(&self, query: WriteQuery, body: UploadBody) -> ProviderResult<EntryInfo> {
        self.write_body(query, body).await
    }

    async fn list_files(&self, file: &str, depth: u32) -> ProviderResult<Vec<EntryInfo>> {
        self.list(file, depth).await
    }

    async fn file_info(&self, file: &str) -> ProviderResult<EntryInfo> {
        self.info_of(file).await
    }

    async fn file_exists(&self, file: &str) -> ProviderResult<bool> {
        self.exists(file).await
    }

    async fn mkdir(&self, body: MkdirBody) -> ProviderResult<EntryInfo> {
        self.make_dir(body).await
    }

    async fn rename(&self, body: MoveBody) -> ProviderResult<EntryInfo> {
        self.move_entry(body).await
    }

    async fn remove(&self, file: &str, recursive: bool) -> ProviderResult<String> {
        self.remove_entry(file, recursive).await
    }

    async fn watch(&self, file: &str, recursive: bool) -> ProviderResult<EventStream> {
        self.watch_path(file, recursive).await
    }

    async fn code_run(&self, body: CodeRunBody) -> ProviderResult<CodeOutcome> {
        let limit = self.remote.timeouts.for_run(body.timeout);
        let segments = self.at(&["code", "run"]);
        let answer: CodeResult = self
            .remote
            .send(Method::POST, &segments, &body, limit)
            .await?;
        let (exit_code, timed_out, duration_ms) =
            (answer.exit_code, answer.timed_out, answer.duration_ms);
        let (stdout, stderr) = self.exact(answer.printed.exact())?;
        Ok(CodeOutcome {
            stdout,
            stderr,
            exit_code,
            timed_out,
            duration_ms,
        })
    }

    async fn context_create(&self, body: CreateContext) -> ProviderResult<ContextRecord> {
        let limit = Some(self.remote.timeouts.call);
        let segments = self.at(&["code", "contexts"]);
        self.remote
            .send(Method::POST, &segments, &body, limit)
            .await
    }

    async fn context_list(&self) -> ProviderResult<Vec<ContextRecord>> {
        let segments = self.at(&["code", "contexts"]);
        let answer: ContextList = self.remote.call(Method::GET, &segments, &[]).await?;
        Ok(answer.contexts)
    }

    async fn context_restart(&self, context_id: &str) -> ProviderResult<ContextRecord> {
        let limit = Some(self.remote.timeouts.call);
        let segments = self.at(&["code", "contexts", context_id, "restart"]);
        self.remote
            .send(Method::POST, &segments, &Empty {}, limit)
            .await
    }

    async fn context_delete(&self, context_id: &str) -> ProviderResult<()> {
        self.confirm(
            Method::DELETE,
            &["code", "contexts", context_id],
            Value::Null,
        )
        .await
    }

    async fn terminal(&self, open: &TerminalOpen) -> ProviderResult<TerminalIo> {
        terminal::open(&self.remote, &self.id, open).await
    }
}
