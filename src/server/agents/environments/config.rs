//! What environments, templates and a session's inline `environment` share: the hosted-only
//! keys that are refused, the workspace directory rules, the variable names that are refused,
//! and the file list. Checked the same way wherever they can be sent.

use crate::error::{ApiError, Code};
use crate::server::agents::environments::paths::{self, RelPath};
use crate::server::agents::environments::wire::{FileParam, unknown};
pub use crate::server::agents::environments::wire::{REFUSED_KEYS, join};
use crate::server::agents::files::Files;
use crate::server::agents::input::invalid;
use crate::server::agents::wire::Object;
use base64::Engine;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// Directories no environment may use as its workspace, nor anything under them: the system
/// trees a runtime must never write into.
const SYSTEM_TREES: &[&str] = &["/etc", "/proc", "/sys", "/dev", "/boot", "/run"];
/// Roots that may hold a workspace below them, but are not one themselves.
const SYSTEM_ROOTS: &[&str] = &[
    "/", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/usr", "/var", "/opt", "/home", "/root",
    "/srv", "/mnt", "/media", "/tmp", "/snap",
];

/// A file to place in a workspace: where, and its bytes (an uploaded file is copied when the
/// request is accepted, so a later change of the upload cannot alter what was checked).
#[derive(Debug, Clone)]
pub struct FileSpec {
    pub path: RelPath,
    pub bytes: bytes::Bytes,
    pub file_id: Option<String>,
}

use crate::services::env_rules::refused_env_name;

/// `env`: names that a shell would accept, values without NUL, and none of the refused names.
pub fn env(
    given: Option<&BTreeMap<String, String>>,
    param: &str,
) -> Result<BTreeMap<String, String>, ApiError> {
    let Some(given) = given else {
        return Ok(BTreeMap::new());
    };
    for (name, v) in given {
        let p = format!("{param}.{name}");
        let valid = !name.is_empty()
            && name.len() <= 256
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(invalid(
                p,
                format!(
                    "`{name}` is not a variable name (letters, digits and `_`, not starting with a digit)"
                ),
            ));
        }
        if let Some(why) = refused_env_name(name) {
            return Err(invalid(
                p,
                format!("the variable `{name}` is refused: {why}"),
            ));
        }
        if v.contains('\0') || v.len() > 32 * 1024 {
            return Err(invalid(p, "a value is at most 32 KiB, with no NUL byte"));
        }
    }
    Ok(given.clone())
}

/// Refuses the hosted-only keys (`hosted` pairs each with whether it was given).
pub fn refuse_hosted_keys(hosted: [(&str, bool); 8], prefix: &str) -> Result<(), ApiError> {
    match hosted.into_iter().find(|(_, given)| *given) {
        Some((key, _)) => Err(invalid(
            join(prefix, key),
            format!("`{key}` needs a hosted container, which this local server does not provision"),
        )),
        None => Ok(()),
    }
}

/// `workspace_directory`: absolute, no `..`, not a system directory, and no component that
/// configures git, remote access, a shell or an agent tool (the rules of environment files,
/// applied to every component: a workspace inside `.git` or `.ssh` would let its files land
/// there).
pub fn workspace_directory(raw: &str, param: &str) -> Result<PathBuf, ApiError> {
    let path = Path::new(raw);
    if !path.is_absolute() || raw.contains('\0') || raw.len() > 4096 {
        return Err(invalid(
            param,
            "`workspace_directory` must be an absolute path",
        ));
    }
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(invalid(
            param,
            "`workspace_directory` must not contain `..`",
        ));
    }
    let clean: PathBuf = path.components().collect();
    paths::check_component_names(&clean, raw).map_err(|e| e.with_param(param))?;
    let refused = SYSTEM_ROOTS.iter().any(|r| clean == Path::new(r))
        || SYSTEM_TREES.iter().any(|t| clean.starts_with(t));
    if refused {
        return Err(invalid(
            param,
            format!(
                "`{}` is a system directory and cannot be a workspace",
                clean.display()
            ),
        ));
    }
    Ok(clean)
}

/// The `files` list: `{type: inline, path, data}` (base64) or `{type: file_id, path, file_id}`.
/// Paths are checked here, before anything is written.
pub fn files(
    list: Option<&[Object<FileParam>]>,
    param: &str,
    owner: &str,
    uploads: &Files,
    workspace: &Path,
    max_bytes: usize,
) -> Result<Vec<FileSpec>, ApiError> {
    let mut out: Vec<FileSpec> = Vec::new();
    for (i, Object(entry)) in list.unwrap_or_default().iter().enumerate() {
        let spec = file(
            entry,
            &format!("{param}[{i}]"),
            owner,
            uploads,
            workspace,
            max_bytes,
        )?;
        if out.iter().any(|f| f.path == spec.path) {
            return Err(invalid(
                format!("{param}[{i}].path"),
                format!("`{}` is listed twice", spec.path.display()),
            ));
        }
        out.push(spec);
    }
    Ok(out)
}

/// One file entry (also the body of POST .../files, with `prefix` empty).
pub fn file(
    entry: &FileParam,
    prefix: &str,
    owner: &str,
    uploads: &Files,
    workspace: &Path,
    max_bytes: usize,
) -> Result<FileSpec, ApiError> {
    let kind = match entry.kind.as_deref() {
        Some(kind) => kind,
        None if entry.file_id.is_some() => "file_id",
        None => "inline",
    };
    let (content_key, other) = match kind {
        "inline" => ("data", entry.file_id.as_ref().map(|_| "file_id")),
        "file_id" => ("file_id", entry.data.as_ref().map(|_| "data")),
        other => {
            return Err(invalid(
                join(prefix, "type"),
                format!("a file's `type` is `inline` or `file_id`, not `{other}`"),
            ));
        }
    };
    if let Some(key) = other {
        return Err(unknown(&join(prefix, key)));
    }
    let raw = entry
        .path
        .as_deref()
        .ok_or_else(|| invalid(join(prefix, "path"), "`path` is required"))?;
    let path = paths::relative(raw, workspace).map_err(|e| e.with_param(join(prefix, "path")))?;
    let (bytes, file_id) = if kind == "inline" {
        let data = entry.data.as_deref().ok_or_else(|| {
            invalid(
                join(prefix, "data"),
                "`data` is required: the file's bytes in base64",
            )
        })?;
        if data.len() / 4 * 3 > max_bytes + 3 {
            return Err(too_large(max_bytes, join(prefix, "data")));
        }
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| {
                invalid(
                    join(prefix, "data"),
                    format!("`data` is not valid base64: {e}"),
                )
            })?;
        (bytes::Bytes::from(decoded), None)
    } else {
        let id = entry
            .file_id
            .as_deref()
            .ok_or_else(|| invalid(join(prefix, "file_id"), "`file_id` is required"))?;
        let stored = uploads.get(owner, id).ok_or_else(|| {
            invalid(
                join(prefix, "file_id"),
                format!("no uploaded file with id `{id}` (upload it with POST /v1/files)"),
            )
        })?;
        (stored.bytes, Some(id.to_owned()))
    };
    if bytes.len() > max_bytes {
        return Err(too_large(max_bytes, join(prefix, content_key)));
    }
    Ok(FileSpec {
        path,
        bytes,
        file_id,
    })
}

fn too_large(max: usize, param: String) -> ApiError {
    ApiError::new(
        Code::PayloadTooLarge,
        format!("the file is over the limit of {max} bytes (SVC_AGENTS_MAX_FILE_BYTES)"),
    )
    .with_param(param)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_directories() {
        for ok in ["/workspace", "/srv/app", "/tmp/ws/x", "/home/me/project"] {
            assert!(workspace_directory(ok, "w").is_ok(), "{ok}");
        }
        for bad in [
            "relative", "/", "/etc", "/etc/x", "/proc/1", "/usr", "/a/../b", "/tmp", "/sys/fs",
        ] {
            assert!(workspace_directory(bad, "w").is_err(), "{bad}");
        }
    }
}
