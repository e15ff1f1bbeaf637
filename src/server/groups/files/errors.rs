//! The file service's errors as rows of the server table. The guard's refusals keep the
//! rows every path route shares (`PathRefusal`'s own mapping); the rest name what the
//! routes found at a path.

use crate::error::{Code, ErrorCode};
use crate::services::files::FileError;

impl ErrorCode for FileError {
    fn error_code(&self) -> Code {
        match self {
            FileError::Refused(refusal) => refusal.error_code(),
            FileError::ExtensionNotAllowed { .. } => Code::ExtensionNotAllowed,
            FileError::Exists(_) => Code::FileExists,
            FileError::TooLarge { .. } => Code::PayloadTooLarge,
            FileError::NotFound(_) => Code::NotFound,
            FileError::IsDirectory(_) => Code::IsADirectory,
            FileError::NotDirectory(_) => Code::NotADirectory,
            FileError::NotRegular(_) => Code::NotAFile,
            FileError::NotEmpty(_) => Code::DirectoryNotEmpty,
            // Only a rename on one filesystem is atomic; the caller picks another `to`.
            FileError::CrossDevice { .. } | FileError::InvalidArgument { .. } => {
                Code::InvalidRequest
            }
            FileError::RangeNotSatisfiable { .. } => Code::RangeNotSatisfiable,
            FileError::Body(e) if over_body_limit(e.as_ref()) => Code::PayloadTooLarge,
            FileError::Body(_) => Code::InvalidRequest,
            // A name over the filesystem's limit is the caller's path, not a failure.
            FileError::Io { source, .. }
                if source.raw_os_error() == Some(nix::errno::Errno::ENAMETOOLONG as i32) =>
            {
                Code::InvalidPath
            }
            // The server's routes write no metadata: only a bug reaches this.
            FileError::MetadataUnsupported(_) | FileError::Io { .. } => Code::Internal,
        }
    }

    fn param(&self) -> Option<String> {
        match self {
            FileError::InvalidArgument { param, .. } => Some((*param).to_owned()),
            FileError::CrossDevice { .. } => Some("to".to_owned()),
            FileError::ExtensionNotAllowed { .. } => Some("file".to_owned()),
            _ => None,
        }
    }
}

/// Whether a body stream failed because the pipeline's body limit cut it (the limit is
/// somewhere in the error's source chain).
pub(super) fn over_body_limit(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(e);
    while let Some(e) = current {
        if e.is::<http_body_util::LengthLimitError>() || e.is::<BodyLimit>() {
            return true;
        }
        current = e.source();
    }
    false
}

/// The body limit, as a wrapper that does not keep the limit's own error (a multipart
/// reader) says it.
#[derive(Debug)]
pub(super) struct BodyLimit;

impl std::fmt::Display for BodyLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body is over the size limit")
    }
}

impl std::error::Error for BodyLimit {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::paths::{PathRefusal, RefusalKind};
    use std::path::PathBuf;

    #[test]
    fn every_service_error_names_a_row() {
        let p = || PathBuf::from("/w/a");
        let cases = [
            (
                FileError::Refused(PathRefusal {
                    kind: RefusalKind::Symlink,
                    message: "link".into(),
                }),
                "symlink_denied",
            ),
            (
                FileError::ExtensionNotAllowed {
                    name: "a.sh".into(),
                },
                "extension_not_allowed",
            ),
            (FileError::Exists(p()), "file_exists"),
            (
                FileError::TooLarge {
                    path: p(),
                    limit: 1,
                },
                "payload_too_large",
            ),
            (FileError::NotFound(p()), "not_found"),
            (FileError::IsDirectory(p()), "is_a_directory"),
            (FileError::NotDirectory(p()), "not_a_directory"),
            (FileError::NotRegular(p()), "not_a_file"),
            (FileError::NotEmpty(p()), "directory_not_empty"),
            (
                FileError::CrossDevice { from: p(), to: p() },
                "invalid_request",
            ),
            (
                FileError::RangeNotSatisfiable { size: 3 },
                "range_not_satisfiable",
            ),
            (
                FileError::Body(Box::new(std::io::Error::other("reset"))),
                "invalid_request",
            ),
            (
                FileError::Io {
                    path: p(),
                    source: std::io::Error::other("disk on fire"),
                },
                "internal_error",
            ),
            (
                FileError::Io {
                    path: p(),
                    source: std::io::Error::from_raw_os_error(nix::libc::ENAMETOOLONG),
                },
                "invalid_path",
            ),
        ];
        for (error, code) in cases {
            assert_eq!(error.error_code().as_str(), code, "{error}");
        }
        assert_eq!(
            FileError::Body(Box::new(BodyLimit)).error_code(),
            Code::PayloadTooLarge
        );
    }

    #[tokio::test]
    async fn the_pipelines_body_limit_is_recognised_through_the_body() {
        use http_body_util::BodyExt;
        let limited = http_body_util::Limited::new(
            http_body_util::Full::new(bytes::Bytes::from_static(b"0123456789")),
            4,
        );
        let body = axum::body::Body::new(limited);
        let cut = body.collect().await.unwrap_err();
        let e: Box<dyn std::error::Error + Send + Sync> = cut.into();
        assert_eq!(FileError::Body(e).error_code(), Code::PayloadTooLarge);
    }
}
