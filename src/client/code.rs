//! Code runs and code contexts (a context keeps an interpreter's state between runs).

use super::Client;
use super::error::ClientResult;
use super::types::{CodeResult, RawCodeResult, items};
use crate::engine::wire::{CodeRunBody, ContextRecord, CreateContext};
use reqwest::Method;
use serde_json::Value;

impl Client {
    /// `POST .../code/run`.
    pub async fn code_run(&self, id: &str, body: &CodeRunBody) -> ClientResult<CodeResult> {
        let raw: RawCodeResult = self
            .send_json(&|c, e| {
                Ok(
                    c.request(e, Method::POST, &["sandboxes", id, "code", "run"], &[])?
                        .json(body),
                )
            })
            .await?;
        raw.into_result()
    }

    /// `POST .../code/contexts` (201 and the context).
    pub async fn create_context(
        &self,
        id: &str,
        body: &CreateContext,
    ) -> ClientResult<ContextRecord> {
        self.send_json(&|c, e| {
            Ok(
                c.request(e, Method::POST, &["sandboxes", id, "code", "contexts"], &[])?
                    .json(body),
            )
        })
        .await
    }

    /// `GET .../code/contexts`.
    pub async fn list_contexts(&self, id: &str) -> ClientResult<Vec<ContextRecord>> {
        let value: Value = self
            .send_json(&|c, e| {
                c.request(e, Method::GET, &["sandboxes", id, "code", "contexts"], &[])
            })
            .await?;
        items(value, "contexts")
    }

    /// `POST .../code/contexts/:context_id/restart`: its interpreter starts over.
    pub async fn restart_context(&self, id: &str, context_id: &str) -> ClientResult<ContextRecord> {
        self.send_json(&|c, e| {
            Ok(c.request(
                e,
                Method::POST,
                &["sandboxes", id, "code", "contexts", context_id, "restart"],
                &[],
            )?
            .json(&serde_json::json!({})))
        })
        .await
    }

    /// `DELETE .../code/contexts/:context_id`.
    pub async fn delete_context(&self, id: &str, context_id: &str) -> ClientResult<()> {
        self.send(&|c, e| {
            c.request(
                e,
                Method::DELETE,
                &["sandboxes", id, "code", "contexts", context_id],
                &[],
            )
        })
        .await?;
        Ok(())
    }
}
