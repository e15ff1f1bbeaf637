//! The wire of `svc-engine/1` (spec part B), spelled once: the descriptor and the
//! connection, every request body and query, every answer and every stream event of the
//! engine's routes, with the protocol's bounds (list sizes, signals, timeouts). A leaf: the
//! engine's handlers serialize these, the client, the `rest` provider and the plugin host
//! read them, and the engine's OpenAPI document is generated from them. Request bodies deny
//! unknown fields; the connection's own fields may also travel in a POST body (spec 5.4)
//! and are taken out before the body is read (`engine::extract`).

mod code;
mod commands;
mod connection;
mod files;
mod json_text;
pub mod output;
mod providers;
mod sandboxes;
mod terminal;
pub mod watch;

pub use code::*;
pub use commands::*;
pub use connection::*;
pub use files::*;
pub use providers::*;
pub use sandboxes::*;
pub use terminal::*;

use serde::{Deserialize, Serialize};

/// `POST /v1/shutdown`: the engine stops after this answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Stopping {
    #[schemars(extend("const" = true))]
    pub stopping: bool,
    pub pid: u32,
}

/// The body of a POST that takes no fields of its own (connect, pause, resume, restart):
/// `{}`, or the connection's fields alone.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(deny_unknown_fields)]
pub struct NoFields {}
