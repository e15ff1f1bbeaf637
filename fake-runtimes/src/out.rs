//! Line output. Every line is flushed at once: the server under test reads
//! the stream while the turn runs, so buffering would hide timing bugs.

use serde_json::Value;
use std::io::Write;

/// Where JSON lines go: straight to stdout, or kept for a final summary
/// (Claude's `--output-format json|text`).
#[derive(Debug, Default)]
pub struct Out {
    collect: Option<Vec<Value>>,
}

impl Out {
    pub fn streaming() -> Self {
        Out { collect: None }
    }

    pub fn collecting() -> Self {
        Out {
            collect: Some(Vec::new()),
        }
    }

    /// Emits one JSON value as one line.
    pub fn json(&mut self, value: Value) {
        match &mut self.collect {
            Some(lines) => lines.push(value),
            None => raw_stdout(&value.to_string()),
        }
    }

    /// Lines kept in collecting mode.
    pub fn collected(&self) -> &[Value] {
        self.collect.as_deref().unwrap_or(&[])
    }
}

/// Writes a line to stdout and flushes it.
///
/// A closed stdout means the reader is gone; carrying on would only burn CPU,
/// so the process ends like a shell pipeline member would.
pub fn raw_stdout(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let ok = stdout
        .write_all(line.as_bytes())
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    if ok.is_err() {
        std::process::exit(141);
    }
}

/// Writes a line to stderr; errors are ignored because stderr is best effort.
pub fn stderr_line(line: &str) {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{line}");
    let _ = stderr.flush();
}
