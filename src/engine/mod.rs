//! The local engine, protocol `svc-engine/1` (spec part B): one loopback daemon that hosts
//! the provider layer, so the command line and every client reach sandboxes through the
//! same code. Started on demand by the client (`crate::client`), guarded against browsers
//! and DNS rebinding, gone after its idle timeout.
//!
//! - [`crate::wire`] (outside the engine): every body, record and event of the protocol;
//! - [`routes`]: the route table; [`app`]: the router built from it, with the guards;
//! - [`daemon`]: the state folder, the lock, the descriptor, the idle exit;
//! - [`provider`]: the trait every provider kind implements; [`local`]: the builtin one;
//!   [`memory`]: the in-process (`node`) one; [`rest`]: a remote svc-engine/1 service;
//!   [`plugins`]: child processes speaking plugin protocol version 1 (`exec`).

pub mod app;
pub mod daemon;
pub mod e2b;
pub mod errors;
mod extract;
mod guard;
mod handlers;
pub mod local;
pub mod memory;
pub mod openapi;
pub mod plugins;
pub mod provider;
pub mod rest;
pub mod routes;
pub mod sessions;
pub mod state;
pub mod table;

#[cfg(test)]
mod tests;

pub use app::app;
pub use state::EngineState;
