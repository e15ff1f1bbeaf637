//! Side effects shared by both fakes: real file writes, sleeps, crashes, hangs.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// What a file change did, in codex's vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Add,
    Update,
    Delete,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Add => "add",
            ChangeKind::Update => "update",
            ChangeKind::Delete => "delete",
        }
    }
}

/// Outcome of [`apply_file_change`].
#[derive(Debug, Clone)]
pub struct Applied {
    pub path: PathBuf,
    pub kind: ChangeKind,
    pub previous: Option<String>,
}

/// Really writes (or deletes) `path` relative to `cwd`, creating parent dirs.
///
/// The fakes must touch the disk because the server's sandbox and diff
/// tracking are what the tests exercise.
pub fn apply_file_change(cwd: &Path, path: &str, content: Option<&str>) -> Result<Applied, String> {
    let full = cwd.join(path);
    let previous = std::fs::read_to_string(&full).ok();
    let kind = match (content, previous.is_some()) {
        (None, _) => ChangeKind::Delete,
        (Some(_), true) => ChangeKind::Update,
        (Some(_), false) => ChangeKind::Add,
    };
    match content {
        Some(text) => {
            if let Some(parent) = full.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            std::fs::write(&full, text)
                .map_err(|e| format!("cannot write {}: {e}", full.display()))?;
        }
        None => {
            std::fs::remove_file(&full)
                .map_err(|e| format!("cannot delete {}: {e}", full.display()))?;
        }
    }
    Ok(Applied {
        path: full,
        kind,
        previous,
    })
}

pub fn sleep_ms(ms: u64) {
    if ms > 0 {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// Blocks until a signal ends the process. No handler is installed, so the
/// default SIGTERM/SIGINT disposition kills it, which is what the hang
/// scenario has to prove.
pub fn hang() -> ! {
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// Simulated crash: a panic-like message on stderr and an abrupt exit,
/// without the terminal event a reader waits for.
pub fn crash(program: &str, exit_code: i32) -> ! {
    crate::out::stderr_line(&format!(
        "thread 'main' panicked at {program}: simulated crash (RT_FAKE scenario)"
    ));
    std::process::exit(exit_code)
}

/// `n` bytes of printable ASCII, in 64-byte lines so it also works as command output.
pub fn large_text(n: usize) -> String {
    const LINE: &[u8; 64] = b"rt-fake large output 0123456789abcdefghijklmnopqrstuvwxyz......\n";
    let mut s = String::with_capacity(n);
    while s.len() < n {
        let take = (n - s.len()).min(LINE.len());
        s.push_str(std::str::from_utf8(&LINE[..take]).unwrap_or(""));
    }
    s
}

/// Splits `text` into `n` pieces on char boundaries (for streamed deltas).
pub fn split_chunks(text: &str, n: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let n = n.clamp(1, chars.len().max(1));
    let size = chars.len().div_ceil(n).max(1);
    let chunks: Vec<String> = chars.chunks(size).map(|c| c.iter().collect()).collect();
    if chunks.is_empty() {
        vec![String::new()]
    } else {
        chunks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_text() {
        assert_eq!(split_chunks("abcdef", 3), vec!["ab", "cd", "ef"]);
        assert_eq!(split_chunks("é€x", 5).concat(), "é€x");
        assert_eq!(split_chunks("", 3), vec![""]);
        assert_eq!(large_text(100).len(), 100);
    }
}
