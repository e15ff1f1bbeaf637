//! Scripted fakes of the Codex CLI (`rt-one`) and Claude Code (`rt-two`).
//!
//! Both binaries copy the argv and the stdout line formats of the real CLIs
//! (codex-cli 0.171.0, Claude Code 2.1.332) so that adapter code can be tested
//! without the real programs or API keys. See README.md for the contract.

pub mod clock;
pub mod effects;
pub mod env;
pub mod ids;
pub mod mcp;
pub mod one;
pub mod out;
pub mod plugin;
pub mod script;
pub mod store;
pub mod toml_lite;
pub mod two;

/// Version of the real Codex CLI whose formats `rt-one` copies.
pub const CODEX_VERSION: &str = "0.171.0";
/// Version of the real Claude Code whose formats `rt-two` copies.
pub const CLAUDE_VERSION: &str = "2.1.332";
