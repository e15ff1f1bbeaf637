//! The file routes of a remote sandbox: content streamed both ways (a read is the remote's
//! body as it comes; a write sends the caller's body as it comes, with no total limit but a
//! bound on standing still), the entry routes, and watch.

use super::sandbox::RestSandbox;
use super::streams::{self, Progress};
use crate::engine::provider::{ByteStream, EventStream, FileBody, FileRead, ProviderResult};
use crate::error::engine::EngineError;
use crate::wire::{EntryInfo, EntryList, Exists, MkdirBody, MoveBody, Removed, WriteQuery};
use reqwest::Method;

/// The remote's query of a write.
pub(super) fn write_pairs(query: WriteQuery) -> Vec<(&'static str, String)> {
    let mut pairs = Vec::new();
    pairs.extend(query.path.map(|p| ("path", p)));
    pairs.extend(query.overwrite.map(|o| ("overwrite", o.to_string())));
    pairs.extend(query.parents.map(|p| ("parents", p.to_string())));
    // The remote's query takes it as its JSON text; a remote engine older than the field
    // refuses the unknown parameter (E4001), never drops it.
    pairs.extend(
        query
            .metadata
            .map(|m| ("metadata", serde_json::json!(m.pairs()).to_string())),
    );
    pairs
}

fn path(path: &str) -> [(&'static str, String); 1] {
    [("path", path.to_owned())]
}

impl RestSandbox {
    pub async fn read(&self, file: &str) -> ProviderResult<FileRead> {
        let request =
            self.remote
                .request(Method::GET, &self.at(&["files", "content"]), &path(file));
        let response = self.remote.open(request).await?;
        let size = response.content_length().ok_or_else(|| {
            self.remote
                .failure
                .garbled("a file's bytes came without their length")
        })?;
        let failure = self.remote.failure.clone();
        let chunks = streams::chunks(response, self.remote.timeouts.idle, failure);
        Ok(FileRead {
            size,
            body: FileBody::Stream(streams::file_body(chunks)),
        })
    }

    pub async fn write(&self, query: WriteQuery, body: ByteStream) -> ProviderResult<EntryInfo> {
        self.write_pairs(&write_pairs(query), body).await
    }

    /// The streamed write through reqwest, of the query `pairs`.
    pub async fn write_pairs(
        &self,
        pairs: &[(&'static str, String)],
        body: ByteStream,
    ) -> ProviderResult<EntryInfo> {
        let segments = self.at(&["files", "content"]);
        let progress = Progress::new();
        let request = self
            .remote
            .request(Method::PUT, &segments, pairs)
            .header(http::header::CONTENT_TYPE, "application/octet-stream")
            .body(reqwest::Body::wrap_stream(progress.watch(body)));
        let failure = &self.remote.failure;
        let exchange = async {
            let response = request.send().await.map_err(|e| failure.transport(&e))?;
            let status = response.status();
            let bytes = response.bytes().await.map_err(|e| failure.transport(&e))?;
            Ok::<_, EngineError>((status, bytes))
        };
        // No total limit (a file may be large), but a bound on standing still.
        let (status, bytes) = progress
            .guard(exchange, self.remote.timeouts.call, failure)
            .await?;
        if !status.is_success() {
            return Err(failure.answer(status.as_u16(), &bytes));
        }
        failure.parse(&segments, &bytes)
    }

    pub async fn list(&self, file: &str, depth: u32) -> ProviderResult<Vec<EntryInfo>> {
        let query = [("path", file.to_owned()), ("depth", depth.to_string())];
        let answer: EntryList = self
            .remote
            .call(Method::GET, &self.at(&["files", "list"]), &query)
            .await?;
        Ok(answer.entries)
    }

    pub async fn info_of(&self, file: &str) -> ProviderResult<EntryInfo> {
        let segments = self.at(&["files", "info"]);
        self.remote.call(Method::GET, &segments, &path(file)).await
    }

    pub async fn exists(&self, file: &str) -> ProviderResult<bool> {
        let segments = self.at(&["files", "exists"]);
        let answer: Exists = self
            .remote
            .call(Method::GET, &segments, &path(file))
            .await?;
        Ok(answer.exists)
    }

    pub async fn make_dir(&self, body: MkdirBody) -> ProviderResult<EntryInfo> {
        let limit = Some(self.remote.timeouts.call);
        let segments = self.at(&["files", "mkdir"]);
        self.remote
            .send(Method::POST, &segments, &body, limit)
            .await
    }

    pub async fn move_entry(&self, body: MoveBody) -> ProviderResult<EntryInfo> {
        let limit = Some(self.remote.timeouts.call);
        let segments = self.at(&["files", "move"]);
        self.remote
            .send(Method::POST, &segments, &body, limit)
            .await
    }

    pub async fn remove_entry(&self, file: &str, recursive: bool) -> ProviderResult<String> {
        let query = [
            ("path", file.to_owned()),
            ("recursive", recursive.to_string()),
        ];
        let answer: Removed = self
            .remote
            .call(Method::DELETE, &self.at(&["files"]), &query)
            .await?;
        Ok(answer.path)
    }

    pub async fn watch_path(&self, file: &str, recursive: bool) -> ProviderResult<EventStream> {
        let query = [
            ("path", file.to_owned()),
            ("recursive", recursive.to_string()),
        ];
        let request = self
            .remote
            .request(Method::GET, &self.at(&["files", "watch"]), &query);
        self.stream_of(request, false).await
    }
}
