//! Services know nothing of HTTP, so they can be tested directly and shared by every group
//! that needs them (the path guard by file, process and terminal routes; the supervisor by
//! commands, shells and agent runtimes).

pub mod before_exec;
pub mod beneath;
pub mod browser;
pub mod cgroup;
pub mod child_env;
pub mod child_user;
pub mod code_run;
pub mod commands;
pub mod env_rules;
pub mod environ_block;
pub mod event_log;
pub mod exec_rules;
pub mod fetch;
pub mod files;
pub mod ids;
pub mod namespaces;
pub mod open_files;
pub mod output_json;
pub mod paging;
pub mod paths;
pub mod proc_scan;
pub mod pty;
pub mod search_path;
pub mod spawn;
pub mod sse_parser;
pub mod supervisor;
pub mod system;
pub mod url_guard;
pub mod utf8_carry;
