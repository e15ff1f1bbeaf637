//! Services know nothing of HTTP, so they can be tested directly and shared by every group
//! that needs them (the path guard by file, process and terminal routes; the supervisor by
//! commands, shells and agent runtimes).

pub mod commands;
pub mod paths;
pub mod supervisor;
