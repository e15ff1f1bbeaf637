//! The agents group's services: runtimes, adapters, sessions and turns. Nothing here knows
//! HTTP; `routes::agents` is a thin layer over it.

pub mod adapters;
pub mod agent_spec;
pub mod definitions;
pub mod environments;
pub mod files;
pub mod injection;
pub mod input;
pub mod mapper;
pub mod model;
pub mod responses;
pub mod runtimes;
pub mod session_handle;
pub mod sessions;
pub mod settings;
#[cfg(test)]
pub mod test_support;
pub mod turn;
pub mod vaults;
pub mod webhooks;
pub mod wire;

pub use sessions::Agents;
