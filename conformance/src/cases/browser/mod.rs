//! The browser group (issue 13, opt-in): one real Chromium per server. Each case that
//! drives the browser has a profile (a server) of its own: the browser is one per server,
//! and cases of one profile run at the same time. Cases tagged `needs:browser` skip only
//! when no browser binary is installed.

mod lifecycle;
mod page;
mod refusals;
mod support;

use crate::Case;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(lifecycle::cases());
    all.extend(page::cases());
    all.extend(refusals::cases());
    all
}
