//! The file service's own error. It names what went wrong; the layer that serves it (the
//! server's file_ops group, the engine's file routes) maps each variant to a row of its
//! error table. The code each variant is meant to become is in its doc comment.

use crate::services::paths::{PathRefusal, RefusalKind};
use std::fmt;
use std::path::PathBuf;

#[derive(Debug)]
pub enum FileError {
    /// The path guard refused the path (the kind says which rule): `path_not_allowed` 403,
    /// `path_denied` 403, `read_only` 403, `symlink_denied` 403, `invalid_path` 400, as
    /// `PathRefusal`'s existing `ErrorCode` impl maps them.
    Refused(PathRefusal),
    /// An uploaded file's name has an extension `paths.upload_extensions` refuses:
    /// `extension_not_allowed` 403.
    ExtensionNotAllowed { name: String },
    /// The target exists and `overwrite` is false (write, upload, move), or `mkdir` of an
    /// existing path: `file_exists` 409.
    Exists(PathBuf),
    /// The file would be over `paths.max_file_bytes` (nothing is left behind):
    /// `payload_too_large` 413.
    TooLarge { path: PathBuf, limit: u64 },
    /// The path (or a directory on the way to it) does not exist: `not_found` 404.
    NotFound(PathBuf),
    /// A directory where a file is needed (read, write over a directory): 400, suggested
    /// code `is_a_directory`.
    IsDirectory(PathBuf),
    /// A file where a directory is needed (list, a parent on the way): 400, suggested code
    /// `not_a_directory`.
    NotDirectory(PathBuf),
    /// Neither a regular file nor a directory (a device, FIFO or socket) where content is
    /// needed: 400, suggested code `not_a_file`.
    NotRegular(PathBuf),
    /// A non-empty directory deleted without `recursive`, or moved over: 409, suggested
    /// code `directory_not_empty`.
    NotEmpty(PathBuf),
    /// A move between two filesystems (only same-filesystem renames are atomic): 400,
    /// suggested code `cross_device`.
    CrossDevice { from: PathBuf, to: PathBuf },
    /// A bad argument other than the path (`depth`, `max_results`, `glob`, `pattern`, an
    /// upload's file name, a move into itself): `invalid_request` 400 with `param`.
    InvalidArgument {
        param: &'static str,
        message: String,
    },
    /// The requested byte range starts past the end: 416 with `Content-Range: bytes
    /// */{size}`; suggested code `range_not_satisfiable`.
    RangeNotSatisfiable { size: u64 },
    /// The request body stream failed while a write was under way (nothing is left
    /// behind); the handler knows what its own body errors mean (e.g. its body limit: 413).
    Body(Box<dyn std::error::Error + Send + Sync>),
    /// A write with metadata where the filesystem keeps no user extended attributes
    /// (nothing is left behind): the engine's `E8004` 501; the server writes no metadata.
    MetadataUnsupported(PathBuf),
    /// What the filesystem said otherwise: 500 (`source.kind()` is `PermissionDenied` when
    /// the operating system refused; a handler may answer 403 for that).
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl FileError {
    pub(crate) fn refused(kind: RefusalKind, message: String) -> FileError {
        FileError::Refused(PathRefusal { kind, message })
    }

    pub(crate) fn io(path: impl Into<PathBuf>, source: impl Into<std::io::Error>) -> FileError {
        FileError::Io {
            path: path.into(),
            source: source.into(),
        }
    }

    /// The refusal kind when the guard refused.
    pub fn refusal(&self) -> Option<RefusalKind> {
        match self {
            FileError::Refused(r) => Some(r.kind),
            _ => None,
        }
    }
}

impl From<PathRefusal> for FileError {
    fn from(refusal: PathRefusal) -> FileError {
        FileError::Refused(refusal)
    }
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Refused(r) => f.write_str(&r.message),
            FileError::ExtensionNotAllowed { name } => {
                write!(f, "`{name}`: uploads with this extension are refused")
            }
            FileError::Exists(p) => write!(f, "`{}` already exists", p.display()),
            FileError::TooLarge { path, limit } => write!(
                f,
                "`{}` would be over the file size limit of {limit} bytes",
                path.display()
            ),
            FileError::NotFound(p) => write!(f, "`{}` does not exist", p.display()),
            FileError::IsDirectory(p) => write!(f, "`{}` is a directory", p.display()),
            FileError::NotDirectory(p) => write!(f, "`{}` is not a directory", p.display()),
            FileError::NotRegular(p) => {
                write!(
                    f,
                    "`{}` is neither a regular file nor a directory",
                    p.display()
                )
            }
            FileError::NotEmpty(p) => {
                write!(f, "`{}` is a directory that is not empty", p.display())
            }
            FileError::CrossDevice { from, to } => write!(
                f,
                "`{}` and `{}` are on different filesystems; a move must stay on one",
                from.display(),
                to.display()
            ),
            FileError::InvalidArgument { message, .. } => f.write_str(message),
            FileError::RangeNotSatisfiable { size } => {
                write!(
                    f,
                    "the range starts past the end of the file ({size} bytes)"
                )
            }
            FileError::Body(e) => write!(f, "the request body failed: {e}"),
            FileError::MetadataUnsupported(p) => write!(
                f,
                "`{}` is on a filesystem that keeps no user extended attributes, where a \
                 file's metadata is kept",
                p.display()
            ),
            FileError::Io { path, source } => write!(f, "`{}`: {source}", path.display()),
        }
    }
}

impl std::error::Error for FileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FileError::Io { source, .. } => Some(source),
            FileError::Body(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}
