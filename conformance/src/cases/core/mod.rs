//! `core/*`: what every server answers whatever its configuration: health
//! and the capabilities document.

use crate::Case;

mod capabilities;
mod health;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(health::cases());
    all.extend(capabilities::cases());
    all
}
