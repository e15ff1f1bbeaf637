//! Environment variables shared by both fakes.
//!
//! Everything the fakes read from the environment goes through here so the
//! README list stays complete.

use std::path::PathBuf;

/// Overrides the conversation store directory for both fakes.
pub const STATE_DIR: &str = "RT_FAKE_STATE_DIR";
/// Path of a JSON script file choosing the scenario.
pub const SCRIPT: &str = "RT_FAKE_SCRIPT";
/// Seed mixed into every generated id.
pub const SEED: &str = "RT_FAKE_SEED";
/// `1` makes durations 0 and timestamps fixed.
pub const FIXED_CLOCK: &str = "RT_FAKE_FIXED_CLOCK";
/// `1` makes a missing API key fail the turn like the real CLIs do.
pub const REQUIRE_KEY: &str = "RT_FAKE_REQUIRE_KEY";
/// `0` skips the MCP initialize handshake and sends only `tools/call`.
pub const MCP_HANDSHAKE: &str = "RT_FAKE_MCP_HANDSHAKE";
/// Socket timeout of the MCP client in milliseconds.
pub const MCP_TIMEOUT_MS: &str = "RT_FAKE_MCP_TIMEOUT_MS";

/// Reads a variable, treating an empty value as unset (shells often export `VAR=`).
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// True when the variable is set to something truthy (`1`, `true`, `yes`).
pub fn flag(name: &str) -> bool {
    matches!(
        var(name).as_deref().map(str::to_ascii_lowercase).as_deref(),
        Some("1" | "true" | "yes" | "on")
    )
}

/// Whether one of the named API key variables is present.
///
/// The value is never returned so it cannot end up in output by accident.
pub fn key_present(names: &[&str]) -> Option<&'static str> {
    const KNOWN: [&str; 3] = ["OPENAI_API_KEY", "CODEX_API_KEY", "ANTHROPIC_API_KEY"];
    names
        .iter()
        .find(|n| var(n).is_some())
        .and_then(|n| KNOWN.iter().find(|k| *k == n).copied())
}

/// Store directory: `RT_FAKE_STATE_DIR`, else the CLI specific default.
pub fn state_dir(defaults: &[(&str, &str)]) -> PathBuf {
    if let Some(dir) = var(STATE_DIR) {
        return PathBuf::from(dir);
    }
    // `defaults` is an ordered list of (env var, subdirectory of it).
    for (name, sub) in defaults {
        if let Some(base) = var(name) {
            return PathBuf::from(base).join(sub);
        }
    }
    PathBuf::from(".").join(".rt-fake")
}

/// The seed for id generation.
pub fn seed() -> String {
    var(SEED).unwrap_or_else(|| "rt-fake".to_string())
}

/// Parses a millisecond timeout variable.
pub fn millis(name: &str, default: u64) -> u64 {
    var(name).and_then(|v| v.parse().ok()).unwrap_or(default)
}
