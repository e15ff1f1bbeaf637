//! The process group (issue 12): shells run to completion and streamed, processes that
//! outlive a request, the guards of every route that starts a child, and the server's
//! stop ending them all.

mod escape;
mod guard;
mod processes;
mod shell;
mod shutdown;
mod stream;
mod support;

use crate::Case;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(shell::cases());
    all.extend(stream::cases());
    all.extend(processes::cases());
    all.extend(guard::cases());
    all.extend(shutdown::cases());
    all.extend(escape::cases());
    all
}
