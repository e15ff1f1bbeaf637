//! `commands/*`: named commands, listed and run.

use crate::Case;

mod list;
mod run;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(list::cases());
    all.extend(run::cases());
    all
}
