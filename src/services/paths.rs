//! The path guard: the one place that decides whether a path may be touched. Every route
//! that takes a path (files, process and shell `cwd`, terminals, code) asks it, and so does
//! `POST /capabilities/check`, which answers without touching anything but metadata.

use globset::{Glob, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Component, Path, PathBuf};

pub const MAX_PATH_BYTES: usize = 4096;

/// The operator's path rules, as written in `template.yaml` (`paths:`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathRules {
    pub allow: Option<Vec<PathBuf>>,
    #[serde(default)]
    pub read_only: Vec<PathBuf>,
    #[serde(default)]
    pub deny: Vec<String>,
    pub symlinks: Option<SymlinkPolicy>,
    /// The largest file the file service writes (a write or an upload past it is refused and
    /// leaves nothing behind). Default [`DEFAULT_MAX_FILE_BYTES`].
    pub max_file_bytes: Option<u64>,
    /// Which extensions an uploaded file's name may have. Default: every name.
    #[serde(default)]
    pub upload_extensions: ExtensionRules,
    /// The most file parts one upload may hold (more is refused, nothing written): each
    /// part is a file made, and a staged file holds two descriptors until the upload
    /// commits. Default [`DEFAULT_MAX_UPLOAD_FILES`].
    pub max_upload_files: Option<usize>,
}

/// Upload parts allowed by default: far more than a person uploads at once, far fewer
/// than would fill a directory or the descriptor table.
pub const DEFAULT_MAX_UPLOAD_FILES: usize = 1000;

/// The largest file written by default: 1 GiB (a sandbox's disk is the real bound; this
/// keeps one request from filling it).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 1 << 30;

/// Upload extensions (`paths.upload_extensions`): names without the dot, compared without
/// regard to case. A name is refused when its extension is in `deny`, or when `allow` is
/// given and its extension is not in it (a name without an extension then needs `""` in
/// `allow`). The extension is what follows the last dot of the name (`a.tar.gz` is `gz`;
/// `.bashrc` and `Makefile` have none).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ExtensionRules {
    pub allow: Option<Vec<String>>,
    #[serde(default)]
    pub deny: Vec<String>,
}

impl ExtensionRules {
    /// Whether a file named `name` may be uploaded.
    pub fn admits(&self, name: &str) -> bool {
        let extension = Path::new(name)
            .extension()
            .map(|e| e.to_string_lossy().to_lowercase())
            .unwrap_or_default();
        let listed = |list: &[String]| {
            list.iter()
                .any(|e| e.trim_start_matches('.').to_lowercase() == extension)
        };
        if !extension.is_empty() && listed(&self.deny) {
            return false;
        }
        match &self.allow {
            Some(allow) => listed(allow),
            None => true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum SymlinkPolicy {
    /// Follow links anywhere.
    Allow,
    /// Refuse any path with a symlink on it.
    Deny,
    /// Follow links whose target stays under an allowed directory.
    #[default]
    Within,
}

/// Rules that cannot be used, naming the key (`paths.allow[0]: ...`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleError(pub String);

impl fmt::Display for RuleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RuleError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    List,
    Write,
    Delete,
    Exec,
}

impl Op {
    pub fn parse(s: &str) -> Option<Op> {
        match s {
            "read" => Some(Op::Read),
            "list" => Some(Op::List),
            "write" => Some(Op::Write),
            "delete" => Some(Op::Delete),
            "exec" => Some(Op::Exec),
            _ => None,
        }
    }

    /// Write and delete change the filesystem; read-only directories refuse them.
    pub fn modifies(self) -> bool {
        matches!(self, Op::Write | Op::Delete)
    }
}

/// Which rule refuses a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefusalKind {
    /// Outside every allowed directory.
    NotAllowed,
    /// Matches a deny pattern.
    Denied,
    /// A write or delete in a read-only directory.
    ReadOnly,
    /// A symbolic link the link policy refuses.
    Symlink,
    /// Empty, with a NUL byte, or too long.
    Invalid,
}

/// A refused path: the rule, and a message naming the path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathRefusal {
    pub kind: RefusalKind,
    pub message: String,
}

impl fmt::Display for PathRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for PathRefusal {}

#[derive(Debug, Clone)]
pub struct PathGuard {
    allow: Vec<PathBuf>,
    read_only: Vec<PathBuf>,
    deny_patterns: Vec<String>,
    deny: GlobSet,
    symlinks: SymlinkPolicy,
    max_file_bytes: u64,
    upload_extensions: ExtensionRules,
    max_upload_files: usize,
}

impl PathGuard {
    pub fn from_section(section: &PathRules) -> Result<PathGuard, RuleError> {
        let allow = section
            .allow
            .clone()
            .unwrap_or_else(|| vec![PathBuf::from("/")]);
        for (i, p) in allow.iter().enumerate() {
            require_absolute(&format!("paths.allow[{i}]"), p)?;
        }
        for (i, p) in section.read_only.iter().enumerate() {
            require_absolute(&format!("paths.read_only[{i}]"), p)?;
        }
        let mut builder = GlobSetBuilder::new();
        for (i, pattern) in section.deny.iter().enumerate() {
            let glob = Glob::new(pattern).map_err(|e| {
                RuleError(format!("paths.deny[{i}]: `{pattern}` is not a glob: {e}"))
            })?;
            builder.add(glob);
        }
        let deny = builder
            .build()
            .map_err(|e| RuleError(format!("paths.deny: {e}")))?;
        if section.max_file_bytes == Some(0) {
            return Err(RuleError("paths.max_file_bytes: must be at least 1".into()));
        }
        if section.max_upload_files == Some(0) {
            return Err(RuleError(
                "paths.max_upload_files: must be at least 1".into(),
            ));
        }
        let ext = &section.upload_extensions;
        for (key, list) in [
            ("allow", ext.allow.as_deref().unwrap_or_default()),
            ("deny", &ext.deny),
        ] {
            for (i, e) in list.iter().enumerate() {
                if e.trim_start_matches('.').contains(['.', '/', '\0']) {
                    return Err(RuleError(format!(
                        "paths.upload_extensions.{key}[{i}]: `{e}` must be one extension without a dot"
                    )));
                }
            }
        }
        Ok(PathGuard {
            allow: allow.iter().map(|p| normalize(p)).collect(),
            read_only: section.read_only.iter().map(|p| normalize(p)).collect(),
            deny_patterns: section.deny.clone(),
            deny,
            symlinks: section.symlinks.unwrap_or_default(),
            max_file_bytes: section.max_file_bytes.unwrap_or(DEFAULT_MAX_FILE_BYTES),
            upload_extensions: section.upload_extensions.clone(),
            max_upload_files: section.max_upload_files.unwrap_or(DEFAULT_MAX_UPLOAD_FILES),
        })
    }

    /// The allowed directories, normalized.
    pub fn allowed(&self) -> &[PathBuf] {
        &self.allow
    }

    pub fn symlinks(&self) -> SymlinkPolicy {
        self.symlinks
    }

    /// `paths.max_file_bytes`, or its default.
    pub fn max_file_bytes(&self) -> u64 {
        self.max_file_bytes
    }

    /// `paths.max_upload_files`, or its default.
    pub fn max_upload_files(&self) -> usize {
        self.max_upload_files
    }

    /// `paths.upload_extensions`.
    pub fn upload_extensions(&self) -> &ExtensionRules {
        &self.upload_extensions
    }

    /// The most specific allowed directory holding the normalized `path`.
    pub fn root_of(&self, path: &Path) -> Option<&Path> {
        self.allow
            .iter()
            .filter(|root| path.starts_with(root))
            .max_by_key(|root| root.as_os_str().len())
            .map(PathBuf::as_path)
    }

    /// Refuses a raw path that is empty, holds a NUL byte or is over [`MAX_PATH_BYTES`].
    pub fn validate(raw: &str) -> Result<(), PathRefusal> {
        if raw.is_empty() || raw.contains('\0') || raw.len() > MAX_PATH_BYTES {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("a path must be 1 to {MAX_PATH_BYTES} bytes with no NUL byte"),
            ));
        }
        Ok(())
    }

    /// The rules alone on a normalized absolute path, without looking at the filesystem:
    /// inside an allowed directory, neither it nor a directory above it matched by a deny
    /// pattern, and not under a read-only directory when `op` modifies.
    pub fn judge(&self, path: &Path, op: Op) -> Result<(), PathRefusal> {
        self.check_rules(path, op)
    }

    /// Whether a deny pattern matches `path` or a directory above it.
    pub fn is_denied(&self, path: &Path) -> bool {
        !self.deny_patterns.is_empty() && path.ancestors().any(|p| self.deny.is_match(p))
    }

    /// Refuses a regular file of more than one name (`stat`'s `st_nlink`) while deny rules
    /// exist: the rules judge names, and a hard link is another name for the same bytes
    /// (`ln .env notes` made `.env` readable as `notes`). Which other names a file has
    /// cannot be asked of the kernel, so any file of several names is refused, for reading
    /// and for writing; without deny rules there is nothing to get past.
    pub fn check_links(
        &self,
        path: &Path,
        stat: &nix::sys::stat::FileStat,
    ) -> Result<(), PathRefusal> {
        use nix::sys::stat::SFlag;
        let regular = stat.st_mode & SFlag::S_IFMT.bits() == SFlag::S_IFREG.bits();
        if self.deny_patterns.is_empty() || !regular || stat.st_nlink <= 1 {
            return Ok(());
        }
        Err(PathRefusal {
            kind: RefusalKind::Denied,
            message: format!(
                "`{}`: a file with several names (hard links) is refused while deny rules exist",
                path.display()
            ),
        })
    }

    /// Whether a deny pattern matches `path` itself (for the entries of a directory already
    /// judged, whose ancestors are known not to match).
    pub fn matches_deny(&self, path: &Path) -> bool {
        !self.deny_patterns.is_empty() && self.deny.is_match(path)
    }

    /// Whether `op` would be refused at `path` as read-only.
    pub fn is_read_only(&self, path: &Path, op: Op) -> bool {
        op.modifies() && self.read_only.iter().any(|root| path.starts_with(root))
    }

    /// Whether a read-only directory lies strictly below `path` (so removing or moving
    /// `path` would change it).
    pub fn read_only_below(&self, path: &Path) -> Option<&Path> {
        self.read_only
            .iter()
            .find(|root| root.starts_with(path) && root.as_path() != path)
            .map(PathBuf::as_path)
    }

    /// What `/capabilities` shows of the rules (never the patterns themselves, which may
    /// describe what an operator wants hidden).
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "allow": self.allow,
            "read_only": self.read_only,
            "deny_count": self.deny_patterns.len(),
            "symlinks": self.symlinks,
        })
    }

    /// Decides for `raw` (absolute, or relative to `base`). Returns the normalized path.
    pub fn check(&self, raw: &str, op: Op, base: &Path) -> Result<PathBuf, PathRefusal> {
        Self::validate(raw)?;
        let path = normalize(&base.join(raw));
        self.check_rules(&path, op)?;
        match self.symlinks {
            SymlinkPolicy::Allow => {}
            SymlinkPolicy::Deny => {
                if let Some(link) = first_symlink(&path) {
                    return Err(refuse(
                        RefusalKind::Symlink,
                        format!(
                            "`{}` is a symbolic link and links are refused",
                            link.display()
                        ),
                    ));
                }
            }
            SymlinkPolicy::Within => {
                if let Some(link) = first_symlink(&path) {
                    let target = resolve_existing(&path);
                    if self.check_rules(&target, op).is_err() {
                        return Err(refuse(
                            RefusalKind::Symlink,
                            format!(
                                "`{}` is a symbolic link leading outside the allowed directories",
                                link.display()
                            ),
                        ));
                    }
                }
            }
        }
        Ok(path)
    }

    fn check_rules(&self, path: &Path, op: Op) -> Result<(), PathRefusal> {
        if !self.allow.iter().any(|root| path.starts_with(root)) {
            return Err(refuse(
                RefusalKind::NotAllowed,
                format!("`{}` is outside the allowed directories", path.display()),
            ));
        }
        if self.is_denied(path) {
            return Err(refuse(
                RefusalKind::Denied,
                format!("`{}` matches a deny pattern", path.display()),
            ));
        }
        if self.is_read_only(path, op) {
            return Err(refuse(
                RefusalKind::ReadOnly,
                format!("`{}` is in a read-only directory", path.display()),
            ));
        }
        Ok(())
    }
}

fn refuse(kind: RefusalKind, message: String) -> PathRefusal {
    PathRefusal { kind, message }
}

fn require_absolute(key: &str, path: &Path) -> Result<(), RuleError> {
    if !path.is_absolute() {
        return Err(RuleError(format!(
            "{key}: `{}` must be an absolute path",
            path.display()
        )));
    }
    Ok(())
}

/// Lexical normalization: `.` dropped, `..` pops (never above `/`), no filesystem access,
/// so a path that does not exist yet can still be judged.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// The first existing component of `path` that is a symbolic link.
fn first_symlink(path: &Path) -> Option<PathBuf> {
    let mut current = PathBuf::from("/");
    for component in path.components().skip(1) {
        current.push(component);
        match std::fs::symlink_metadata(&current) {
            Ok(meta) if meta.file_type().is_symlink() => return Some(current),
            Ok(_) => {}
            Err(_) => return None,
        }
    }
    None
}

/// Canonicalizes the longest existing prefix and appends the rest.
fn resolve_existing(path: &Path) -> PathBuf {
    let mut existing = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = existing.canonicalize() {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return normalize(&out);
        }
        match (
            existing.file_name().map(|n| n.to_owned()),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests;
