//! The services' own errors, each mapped to a row of the engine's table (spec 7.2: 404 not
//! found, 400 a bad value, 500 anything else). The server maps the same errors to its own
//! table in its groups; services know neither.

use crate::error::engine::{Code, EngineErrorCode};
use crate::services::code_run::contexts::Error as ContextError;
use crate::services::files::FileError;
use crate::services::paths::RefusalKind;
use crate::services::pty::Error as PtyError;
use crate::services::supervisor::Error as ProcessError;

impl EngineErrorCode for FileError {
    fn engine_code(&self) -> Code {
        match self {
            FileError::Refused(r) if r.kind == RefusalKind::Invalid => Code::InvalidArgument,
            FileError::Refused(_) => Code::PathNotAllowed,
            FileError::ExtensionNotAllowed { .. } => Code::PathNotAllowed,
            FileError::Exists(_) => Code::FileExists,
            FileError::TooLarge { .. } => Code::InvalidArgument,
            FileError::NotFound(_) => Code::FileNotFound,
            FileError::IsDirectory(_)
            | FileError::NotDirectory(_)
            | FileError::NotRegular(_)
            | FileError::NotEmpty(_) => Code::WrongFileType,
            FileError::CrossDevice { .. }
            | FileError::InvalidArgument { .. }
            | FileError::RangeNotSatisfiable { .. }
            | FileError::Body(_) => Code::InvalidArgument,
            // A capability this sandbox's disk lacks, not a bad request: the same write
            // without metadata works.
            FileError::MetadataUnsupported(_) => Code::FeatureNotSupported,
            FileError::Io { .. } => Code::Internal,
        }
    }

    fn suggestion(&self) -> Option<String> {
        match self {
            FileError::NotEmpty(_) => Some("pass `recursive=true` to remove it whole".into()),
            FileError::MetadataUnsupported(_) => Some(
                "write the file without metadata, or keep the engine's state folder on a \
                 filesystem with user extended attributes (ext4, xfs, btrfs)"
                    .into(),
            ),
            _ => None,
        }
    }
}

impl EngineErrorCode for ProcessError {
    fn engine_code(&self) -> Code {
        match self {
            ProcessError::NotFound => Code::ProcessNotFound,
            ProcessError::Exited | ProcessError::StdinClosed => Code::ProcessExited,
            ProcessError::UnsupportedSignal(_) => Code::InvalidArgument,
            ProcessError::Spawn(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Code::InvalidArgument
            }
            _ => Code::Internal,
        }
    }
}

impl EngineErrorCode for PtyError {
    fn engine_code(&self) -> Code {
        match self {
            PtyError::NotFound(_) => Code::NotFound,
            PtyError::Ended => Code::ProcessExited,
            PtyError::InvalidSize { .. } => Code::InvalidArgument,
            // The sandbox replaced its own `/dev/pts`: a path of the sandbox of the wrong type.
            PtyError::NoMultiplexer(_) => Code::WrongFileType,
            PtyError::Spawn { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
                Code::InvalidArgument
            }
            _ => Code::Internal,
        }
    }
}

impl EngineErrorCode for ContextError {
    fn engine_code(&self) -> Code {
        match self {
            ContextError::BadId(_) | ContextError::EnvMismatch => Code::InvalidArgument,
            ContextError::Io(_) => Code::Internal,
        }
    }
}
