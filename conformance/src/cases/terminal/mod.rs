//! `terminal/*`: the terminal group (issue 12): the HTTP routes on the main port and the
//! WebSocket on the terminal port, on the `terminal` profile (`support.rs`, with the
//! helpers). Every case needs the terminal listener's URL (`needs:terminal-port`).

use crate::Case;

mod connect;
mod create;
mod guard;
mod manage;
mod slow;
mod support;

pub fn cases() -> Vec<Case> {
    [
        create::cases(),
        guard::cases(),
        manage::cases(),
        connect::cases(),
        slow::cases(),
    ]
    .concat()
}
