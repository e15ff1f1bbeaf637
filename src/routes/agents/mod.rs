//! Thin handlers of the agents group: they read the request, call `agents::Agents`, and
//! shape the answer.

mod definitions;
mod environments;
mod lists;
mod refusals;
mod responses;
mod responses_ws;
mod sessions;
mod stream;
mod vaults;
mod webhooks;

pub use definitions::*;
pub use environments::*;
pub use lists::*;
pub use refusals::refusal;
pub use responses::*;
pub use responses_ws::responses_connect;
pub use sessions::*;
pub use stream::events_stream;
pub use vaults::*;
pub use webhooks::*;
