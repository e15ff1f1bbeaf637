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
use axum::routing::{MethodRouter, delete, get, post, put};

pub fn handler(id: &str) -> Option<MethodRouter<Shared>> {
    Some(match id {
        "health" => get(engine::health),
        "shutdown" => post(engine::shutdown),
        "providers_list" => get(engine::providers),
        "sandboxes_create" => post(sandboxes::create),
        "sandboxes_list" => get(sandboxes::list),
        "sandboxes_connect" => post(sandboxes::connect),
        "sandboxes_info" => get(sandboxes::info),
        "sandboxes_kill" => delete(sandboxes::kill),
        "sandboxes_running" => get(sandboxes::running),
        "sandboxes_timeout" => post(sandboxes::timeout),
        "sandboxes_pause" => post(sandboxes::pause),
        "sandboxes_resume" => post(sandboxes::resume),
        "sandboxes_port_url" => get(sandboxes::port_url),
        "commands_run" => post(commands::run),
        "commands_stream" => post(commands::stream),
        "processes_list" => get(commands::processes),
        "processes_signal" => post(commands::signal),
        "processes_stdin" => post(commands::stdin),
        "processes_kill" => delete(commands::kill),
        "files_read" => get(files::read),
        "files_write" => put(files::write),
        "files_list" => get(files::list),
        "files_info" => get(files::info),
        "files_exists" => get(files::exists),
        "files_mkdir" => post(files::mkdir),
        "files_move" => post(files::rename),
        "files_remove" => delete(files::remove),
        "files_watch" => get(files::watch),
        "code_run" => post(code::run),
        "code_contexts_create" => post(code::create_context),
        "code_contexts_list" => get(code::list_contexts),
        "code_contexts_restart" => post(code::restart_context),
        "code_contexts_delete" => delete(code::delete_context),
        "terminal" => get(terminal::connect),
        _ => return None,
    })
}
