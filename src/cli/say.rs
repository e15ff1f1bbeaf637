//! What the engine and sandbox commands share, apart from any one of them: printing to
//! stdout, reporting a failure, reading `K=V`. Printing: `println!` panics when the
//! reader has gone (`id=$(svc sandbox create | head -1)` closes the pipe after the first
//! line): here the rest of the output is dropped instead, and the command ends as it would
//! have.

use std::process::ExitCode;

macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

pub(crate) use say;

/// `K=V` of `--env` and `--metadata`.
pub(super) fn parse_pair(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected K=V, got `{text}`")),
    }
}

/// Any failure of a sandbox command: its message on stderr, exit 1.
pub(super) fn report(result: Result<(), crate::client::ClientError>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("svc: error: {e}");
            ExitCode::FAILURE
        }
    }
}
