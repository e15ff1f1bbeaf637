//! The dev_tools group (issue 13, opt-in): code runs and their contexts, the languages,
//! and `http_fetch` under the URL rules, against a page server the cases run themselves.

mod code;
mod fetch;
mod page_server;

use crate::Case;

pub fn cases() -> Vec<Case> {
    let mut all = Vec::new();
    all.extend(code::cases());
    all.extend(fetch::cases());
    all
}
