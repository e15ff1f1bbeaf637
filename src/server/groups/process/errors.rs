//! The supervisor's errors as rows of the server table.

use crate::error::{Code, ErrorCode};
use crate::services::supervisor::Error;

impl ErrorCode for Error {
    fn error_code(&self) -> Code {
        match self {
            // Another owner's pid is indistinguishable from a missing one.
            Error::NotFound => Code::NotFound,
            Error::Exited => Code::ProcessExited,
            Error::StdinClosed => Code::StdinClosed,
            Error::UnsupportedSignal(_) => Code::InvalidRequest,
            Error::ShuttingDown => Code::ShuttingDown,
            Error::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => Code::ProcessInvalid,
            Error::Spawn(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                Code::ProcessInvalid
            }
            Error::Spawn(_) | Error::Stdin(_) => Code::Internal,
        }
    }

    fn param(&self) -> Option<String> {
        match self {
            Error::UnsupportedSignal(_) => Some("signal".into()),
            Error::NotFound => Some("pid".into()),
            _ => None,
        }
    }
}
