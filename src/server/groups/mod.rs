//! The groups' handlers: thin layers that read a request, call a service or the agents
//! domain, and shape the answer.

pub mod agents;
pub mod browser;
pub mod commands;
pub mod core;
pub mod dev_tools;
pub mod files;
pub mod process;
pub mod system;
pub mod terminal;
