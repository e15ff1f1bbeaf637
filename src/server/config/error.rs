//! The configuration's one error: a message naming the key (and the file line where the YAML
//! parser knows it). A leaf, so every part that reads its own section of the configuration
//! (identities, the agents group, the path guard, named commands) can return it without
//! importing the whole configuration.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}
