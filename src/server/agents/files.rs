//! Uploaded files (POST /v1/files): JSON with base64 `data`, held in memory per owner. The
//! routes that will accept a file id (environment files) look them up here.

use crate::error::{ApiError, Code};
use crate::server::agents::input::invalid;
use crate::services::ids;
use base64::Engine;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Mutex;

/// The largest decoded file (the spec's `SVC_AGENTS_MAX_FILE_BYTES` default).
pub const MAX_FILE_BYTES: usize = 10 * 1024 * 1024;

#[derive(Debug, Clone)]
pub struct StoredFile {
    pub owner: String,
    pub filename: String,
    pub bytes: bytes::Bytes,
    pub created_at: i64,
}

/// `POST /v1/files`: an upload as base64 JSON.
#[derive(Debug, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "FileCreate")]
pub struct FileCreate {
    #[schemars(required, with = "String", extend("const" = "user_data"))]
    pub purpose: Option<String>,
    #[schemars(
        required,
        with = "String",
        length(min = 1, max = 255),
        regex(pattern = "^[^/]+$")
    )]
    pub filename: Option<String>,
    /// The bytes in base64, within `SVC_AGENTS_MAX_FILE_BYTES`.
    #[schemars(required, with = "String", extend("contentEncoding" = "base64"))]
    pub data: Option<String>,
}

#[derive(Default)]
pub struct Files {
    files: Mutex<HashMap<String, StoredFile>>,
}

impl Files {
    pub fn create(
        &self,
        owner: &str,
        body: &FileCreate,
        max_bytes: usize,
    ) -> Result<Value, ApiError> {
        match body.purpose.as_deref() {
            Some("user_data") => {}
            Some(other) => {
                return Err(invalid(
                    "purpose",
                    format!("`purpose` must be `user_data`, not `{other}`"),
                ));
            }
            None => return Err(invalid("purpose", "`purpose` is required (`user_data`)")),
        }
        let filename = body
            .filename
            .as_deref()
            .filter(|f| !f.trim().is_empty())
            .ok_or_else(|| invalid("filename", "`filename` is required"))?;
        if filename.len() > 255 || filename.contains(['/', '\0']) {
            return Err(invalid(
                "filename",
                "`filename` is a plain name of up to 255 bytes",
            ));
        }
        let data = body
            .data
            .as_deref()
            .ok_or_else(|| invalid("data", "`data` is required: the file's bytes in base64"))?;
        // Refuse before decoding what cannot fit.
        if data.len() / 4 * 3 > max_bytes + 3 {
            return Err(too_large(max_bytes));
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| invalid("data", format!("`data` is not valid base64: {e}")))?;
        if decoded.len() > max_bytes {
            return Err(too_large(max_bytes));
        }
        let id = format!("file-{}", &ids::new("x")[2..]);
        let file = StoredFile {
            owner: owner.to_owned(),
            filename: filename.to_owned(),
            bytes: decoded.into(),
            created_at: ids::now(),
        };
        let json = to_json(&id, &file);
        self.lock().insert(id, file);
        Ok(json)
    }

    /// The caller's upload with this id; another owner's answers like a missing one.
    pub fn get(&self, owner: &str, id: &str) -> Option<StoredFile> {
        self.lock().get(id).filter(|f| f.owner == owner).cloned()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, StoredFile>> {
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn too_large(max: usize) -> ApiError {
    ApiError::new(
        Code::PayloadTooLarge,
        format!("the file is over the limit of {max} bytes"),
    )
    .with_param("data")
}

fn to_json(id: &str, file: &StoredFile) -> Value {
    crate::server::agents::wire::to_json(&FileObject {
        id: id.to_owned(),
        object: "file",
        bytes: file.bytes.len(),
        created_at: file.created_at,
        filename: file.filename.clone(),
        purpose: "user_data",
        status: "processed",
        expires_at: None,
        status_details: None,
        x_svc: LocalState {
            compute: "local_state",
        },
    })
}

/// An upload, as the OpenAI `FileObject` reads it.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
#[schemars(rename = "FileObject")]
pub struct FileObject {
    pub id: String,
    #[schemars(extend("const" = "file"))]
    pub object: &'static str,
    pub bytes: usize,
    /// Unix seconds.
    pub created_at: i64,
    pub filename: String,
    #[schemars(extend("const" = "user_data"))]
    pub purpose: &'static str,
    #[schemars(extend("const" = "processed"))]
    pub status: &'static str,
    /// Kept until the server stops.
    #[schemars(with = "()")]
    pub expires_at: Option<i64>,
    #[schemars(with = "()")]
    pub status_details: Option<String>,
    pub x_svc: LocalState,
}

/// Held by this server, not a hosted store.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct LocalState {
    #[schemars(extend("const" = "local_state"))]
    pub compute: &'static str,
}
