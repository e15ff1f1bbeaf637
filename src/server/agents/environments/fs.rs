//! The agents layer's face of the link-safe file service ([`crate::services::beneath`]):
//! its errors answered as the agents rows, with the messages and `param` these routes have
//! always given (`agents.path_refused` for a link or a non-directory on the way,
//! `agents.file_exists`, `invalid_request` for an I/O error; `param` `path`).

use crate::error::{ApiError, Code, ErrorCode};
use crate::services::beneath::{self, BeneathError};
pub use crate::services::beneath::{Written, read_beneath, regular_files, without_links};
use std::os::fd::OwnedFd;
use std::path::Path;

impl ErrorCode for BeneathError {
    fn error_code(&self) -> Code {
        match self {
            BeneathError::Link(_) | BeneathError::NotDirectory(_) => Code::PathRefused,
            BeneathError::Exists(_) => Code::AgentsFileExists,
            BeneathError::Io(..) => Code::InvalidRequest,
        }
    }

    fn param(&self) -> Option<String> {
        Some("path".into())
    }
}

/// [`beneath::open_dir_nofollow`], answered as the agents rows.
pub fn open_dir_nofollow(path: &Path, create: bool) -> Result<Option<OwnedFd>, ApiError> {
    Ok(beneath::open_dir_nofollow(path, create)?)
}

/// [`beneath::write_beneath`] into a workspace, answered as the agents rows.
pub fn write_beneath(workspace: &Path, rel: &Path, bytes: &[u8]) -> Result<Written, ApiError> {
    Ok(beneath::write_beneath(workspace, rel, bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_keep_their_rows_messages_and_param() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        let rel = Path::new("a.txt");
        write_beneath(&ws, rel, b"one").unwrap();
        let e = write_beneath(&ws, rel, b"two").unwrap_err();
        assert_eq!(e.code, Code::AgentsFileExists);
        assert_eq!(e.param.as_deref(), Some("path"));
        assert_eq!(
            e.message,
            format!(
                "`{}` already exists with different content",
                ws.join(rel).display()
            )
        );
        std::os::unix::fs::symlink(tmp.path(), ws.join("link")).unwrap();
        let e = write_beneath(&ws, Path::new("link/x"), b"x").unwrap_err();
        assert_eq!(e.code, Code::PathRefused);
        assert_eq!(e.param.as_deref(), Some("path"));
        assert_eq!(
            e.message,
            format!(
                "`{}` is a symbolic link; links are never followed in a workspace",
                ws.join("link").display()
            )
        );
    }
}
