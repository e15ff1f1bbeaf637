//! Helpers shared by the agents cases; no cases of their own.

pub mod checks;
pub mod responses;
pub mod sessions;
