//! The message of a caught panic, for the runner's failures and the snapshot checks' reports
//! alike (a leaf, so neither imports the other for it).

use std::any::Any;

/// The text of a panic payload (`&str` or `String`; anything else is opaque).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "<non-string panic payload>".to_string()
    }
}
