//! Code runs and code contexts (a context keeps an interpreter's state between runs).

use super::Client;
use super::error::ClientResult;
use super::types::CodeResult;
use crate::wire::{self, CodeRunBody, ContextList, ContextRecord, CreateContext};

impl Client {
    /// `POST .../code/run`.
    pub async fn code_run(&self, id: &str, body: &CodeRunBody) -> ClientResult<CodeResult> {
        let answer: wire::CodeResult = self.post(&["sandboxes", id, "code", "run"], body).await?;
        CodeResult::from_wire(answer)
    }

    /// `POST .../code/contexts` (201 and the context).
    pub async fn create_context(
        &self,
        id: &str,
        body: &CreateContext,
    ) -> ClientResult<ContextRecord> {
        self.post(&["sandboxes", id, "code", "contexts"], body)
            .await
    }

    /// `GET .../code/contexts`.
    pub async fn list_contexts(&self, id: &str) -> ClientResult<Vec<ContextRecord>> {
        let list: ContextList = self
            .get(&["sandboxes", id, "code", "contexts"], &[])
            .await?;
        Ok(list.contexts)
    }

    /// `POST .../code/contexts/:context_id/restart`: its interpreter starts over.
    pub async fn restart_context(&self, id: &str, context_id: &str) -> ClientResult<ContextRecord> {
        let route = ["sandboxes", id, "code", "contexts", context_id, "restart"];
        self.post(&route, &serde_json::json!({})).await
    }

    /// `DELETE .../code/contexts/:context_id`.
    pub async fn delete_context(&self, id: &str, context_id: &str) -> ClientResult<()> {
        self.delete(&["sandboxes", id, "code", "contexts", context_id], &[])
            .await?;
        Ok(())
    }
}
