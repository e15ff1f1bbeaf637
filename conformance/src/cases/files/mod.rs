//! `files/*`: the file_ops group (issue 11): one file per route's area, `guard.rs` for the
//! path guard on every route; helpers in `support.rs`.

use crate::Case;

mod delete;
mod download;
mod exists;
mod guard;
mod info;
mod list;
mod mkdir;
mod r#move;
mod read;
mod search;
mod support;
mod upload;
mod watch;
mod write;
mod write_large;

pub fn cases() -> Vec<Case> {
    [
        read::cases(),
        write::cases(),
        write_large::cases(),
        list::cases(),
        info::cases(),
        exists::cases(),
        mkdir::cases(),
        r#move::cases(),
        delete::cases(),
        upload::cases(),
        download::cases(),
        search::cases(),
        watch::cases(),
        guard::cases(),
    ]
    .concat()
}
