//! The terminal service's errors as rows of the server table.

use crate::error::{Code, ErrorCode};
use crate::services::pty::Error;

impl ErrorCode for Error {
    fn error_code(&self) -> Code {
        match self {
            // A terminal whose shell has exited is gone, like one that never was.
            Error::NotFound(_) | Error::Ended => Code::NotFound,
            Error::InvalidSize { .. } => Code::InvalidRequest,
            // The caller named a shell that is not there (or not a program).
            Error::Spawn { source, .. }
                if matches!(
                    source.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                ) =>
            {
                Code::InvalidRequest
            }
            Error::ShuttingDown => Code::ShuttingDown,
            // The server opens no sandbox's multiplexer (`Spec::ptmx_in` is the engine's).
            Error::Spawn { .. } | Error::Io(_) | Error::NoMultiplexer(_) => Code::Internal,
        }
    }

    fn param(&self) -> Option<String> {
        match self {
            Error::NotFound(_) | Error::Ended => Some("id".into()),
            Error::InvalidSize { param, .. } => Some((*param).into()),
            Error::Spawn { .. } if self.error_code() == Code::InvalidRequest => {
                Some("shell".into())
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_service_error_names_a_row() {
        let io = |kind: std::io::ErrorKind| std::io::Error::from(kind);
        let spawn = |kind| Error::Spawn {
            shell: "/bin/zsh".into(),
            source: io(kind),
        };
        let cases = [
            (Error::NotFound("pty_1".into()), "not_found", Some("id")),
            (Error::Ended, "not_found", Some("id")),
            (
                Error::InvalidSize {
                    param: "rows",
                    value: 0,
                },
                "invalid_request",
                Some("rows"),
            ),
            (
                spawn(std::io::ErrorKind::NotFound),
                "invalid_request",
                Some("shell"),
            ),
            (
                spawn(std::io::ErrorKind::PermissionDenied),
                "invalid_request",
                Some("shell"),
            ),
            (
                spawn(std::io::ErrorKind::OutOfMemory),
                "internal_error",
                None,
            ),
            (
                Error::Io(io(std::io::ErrorKind::Other)),
                "internal_error",
                None,
            ),
            (Error::ShuttingDown, "shutting_down", None),
        ];
        for (error, code, param) in cases {
            assert_eq!(error.error_code().as_str(), code, "{error}");
            assert_eq!(error.param().as_deref(), param, "{error}");
        }
    }
}
