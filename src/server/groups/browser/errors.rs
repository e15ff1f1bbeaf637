//! The browser service's errors as rows of the server table.

use crate::error::{Code, ErrorCode};
use crate::services::browser::Error;

impl ErrorCode for Error {
    fn error_code(&self) -> Code {
        match self {
            Error::BinaryMissing(_) | Error::Launch(_) => Code::BrowserUnavailable,
            Error::AlreadyRunning { .. } => Code::BrowserRunning,
            Error::NotRunning(_) => Code::BrowserNotRunning,
            Error::UrlInvalid(_) => Code::UrlInvalid,
            Error::UrlDenied(_) => Code::UrlDenied,
            Error::NavigationFailed(_) => Code::NavigationFailed,
            Error::SelectorInvalid(_) => Code::InvalidRequest,
            Error::SelectorNotFound(_) => Code::SelectorNotFound,
            Error::Timeout(_) => Code::BrowserTimeout,
            // DevTools refusing a well-formed call is not the caller's doing.
            Error::Devtools(_) => Code::Internal,
        }
    }

    fn param(&self) -> Option<String> {
        match self {
            Error::UrlInvalid(_) | Error::UrlDenied(_) | Error::NavigationFailed(_) => {
                Some("url".into())
            }
            Error::SelectorInvalid(_) | Error::SelectorNotFound(_) => Some("selector".into()),
            _ => None,
        }
    }
}
