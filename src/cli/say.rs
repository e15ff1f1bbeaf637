//! Printing to stdout for the engine and sandbox commands. `println!` panics when the
//! reader has gone (`id=$(svc sandbox create | head -1)` closes the pipe after the first
//! line): here the rest of the output is dropped instead, and the command ends as it would
//! have.

macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

pub(crate) use say;
