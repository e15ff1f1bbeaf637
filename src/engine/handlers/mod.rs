//! The engine's handlers, one file per resource; [`handler`] binds a row of the route table
//! to its handler (the router asks for every row, and a test checks none is missing).

mod code;
mod commands;
mod engine;
mod files;
mod sandboxes;
mod support;
mod terminal;

use super::state::Shared;
use axum::routing::{MethodFilter, MethodRouter, on};

/// The handler of a row, bound to the method the row gives.
pub type Bind = fn(MethodFilter) -> MethodRouter<Shared>;

pub fn handler(id: &str) -> Option<Bind> {
    Some(match id {
        "health" => |m| on(m, engine::health),
        "shutdown" => |m| on(m, engine::shutdown),
        "providers_list" => |m| on(m, engine::providers),
        "sandboxes_create" => |m| on(m, sandboxes::create),
        "sandboxes_list" => |m| on(m, sandboxes::list),
        "sandboxes_connect" => |m| on(m, sandboxes::connect),
        "sandboxes_info" => |m| on(m, sandboxes::info),
        "sandboxes_kill" => |m| on(m, sandboxes::kill),
        "sandboxes_running" => |m| on(m, sandboxes::running),
        "sandboxes_timeout" => |m| on(m, sandboxes::timeout),
        "sandboxes_pause" => |m| on(m, sandboxes::pause),
        "sandboxes_resume" => |m| on(m, sandboxes::resume),
        "sandboxes_port_url" => |m| on(m, sandboxes::port_url),
        "commands_run" => |m| on(m, commands::run),
        "commands_stream" => |m| on(m, commands::stream),
        "processes_list" => |m| on(m, commands::processes),
        "processes_signal" => |m| on(m, commands::signal),
        "processes_stdin" => |m| on(m, commands::stdin),
        "processes_kill" => |m| on(m, commands::kill),
        "files_read" => |m| on(m, files::read),
        "files_write" => |m| on(m, files::write),
        "files_list" => |m| on(m, files::list),
        "files_info" => |m| on(m, files::info),
        "files_exists" => |m| on(m, files::exists),
        "files_mkdir" => |m| on(m, files::mkdir),
        "files_move" => |m| on(m, files::rename),
        "files_remove" => |m| on(m, files::remove),
        "files_watch" => |m| on(m, files::watch),
        "code_run" => |m| on(m, code::run),
        "code_contexts_create" => |m| on(m, code::create_context),
        "code_contexts_list" => |m| on(m, code::list_contexts),
        "code_contexts_restart" => |m| on(m, code::restart_context),
        "code_contexts_delete" => |m| on(m, code::delete_context),
        "terminal" => |m| on(m, terminal::connect),
        _ => return None,
    })
}
