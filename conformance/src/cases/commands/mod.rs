//! `commands/*`: named commands, listed and run.

use crate::Case;

mod run;

pub fn cases() -> Vec<Case> {
    run::cases()
}
