//! What the engine and sandbox commands share, apart from any one of them: printing to
//! stdout, reporting a failure, reading `K=V`, reading stdin as it comes. Printing: `println!` panics when the
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

/// A child's exit code as `svc`'s own status: one out of a status's range is still a
/// failure, never 0.
pub(super) fn status_of(exit_code: i32) -> u8 {
    u8::try_from(exit_code).unwrap_or(1)
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

/// Stdin's bytes as they come, in reads of up to `chunk` bytes. A thread reads: a blocking
/// read of a terminal cannot be cancelled, and the thread must not hold the runtime (or the
/// exit) when the other side ends first.
pub(super) fn stdin_chunks(
    thread_name: &str,
    chunk: usize,
) -> tokio::sync::mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    let _ = std::thread::Builder::new()
        .name(thread_name.to_owned())
        .spawn(move || {
            use std::io::Read;
            let mut stdin = std::io::stdin();
            let mut buf = vec![0u8; chunk];
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.blocking_send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
    rx
}
