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

    fn modifies(self) -> bool {
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
        Ok(PathGuard {
            allow: allow.iter().map(|p| normalize(p)).collect(),
            read_only: section.read_only.iter().map(|p| normalize(p)).collect(),
            deny_patterns: section.deny.clone(),
            deny,
            symlinks: section.symlinks.unwrap_or_default(),
        })
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
        if raw.is_empty() || raw.contains('\0') || raw.len() > MAX_PATH_BYTES {
            return Err(refuse(
                RefusalKind::Invalid,
                format!("a path must be 1 to {MAX_PATH_BYTES} bytes with no NUL byte"),
            ));
        }
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
        if self.deny.is_match(path) {
            return Err(refuse(
                RefusalKind::Denied,
                format!("`{}` matches a deny pattern", path.display()),
            ));
        }
        if op.modifies() && self.read_only.iter().any(|root| path.starts_with(root)) {
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
