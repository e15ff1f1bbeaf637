//! Where a file given to an environment may go: a path relative to the workspace, or an
//! absolute one under it (the workspace directory itself, or `/workspace`, the name the SDKs
//! use), never outside it and never into a place that configures git, ssh, a shell or an
//! agent tool. Purely lexical; `fs` then writes without following links.

use crate::error::{ApiError, Code};
use crate::server::agents::input::invalid;
use std::path::{Component, Path, PathBuf};

/// A normalized path relative to a workspace: no `.`, no `..`, no root, never empty.
pub type RelPath = PathBuf;

/// The name the SDKs give the workspace root.
pub const VIRTUAL_ROOT: &str = "/workspace";

/// Directories that configure version control, remote access or an agent tool.
const REFUSED_DIRS: &[&str] = &[
    ".git",
    ".ssh",
    ".gnupg",
    ".aws",
    ".codex",
    ".claude",
    ".cursor",
    ".gemini",
    ".windsurf",
    ".continue",
    ".aider",
    ".rt-one",
    ".rt-two",
];
/// Files that instruct a runtime, configure its MCP servers, or run in every shell.
const REFUSED_FILES: &[&str] = &[
    ".mcp.json",
    "agents.md",
    "agents.override.md",
    "claude.md",
    "claude.local.md",
    "gemini.md",
    ".cursorrules",
    ".windsurfrules",
    ".clinerules",
    ".aider.conf.yml",
    "copilot-instructions.md",
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".inputrc",
    "config.fish",
    ".envrc",
    ".gitconfig",
    ".netrc",
];

pub fn refused(code: Code, message: String) -> ApiError {
    ApiError::new(code, message).with_param("path")
}

/// `raw` as a path relative to `workspace`, or why it cannot be written.
pub fn relative(raw: &str, workspace: &Path) -> Result<RelPath, ApiError> {
    if raw.is_empty() || raw.contains('\0') || raw.len() > 4096 {
        return Err(invalid(
            "path",
            "a path is 1 to 4096 bytes with no NUL byte",
        ));
    }
    let path = Path::new(raw);
    let inside = if path.is_absolute() {
        let stripped = path
            .strip_prefix(workspace)
            .or_else(|_| path.strip_prefix(VIRTUAL_ROOT))
            .map_err(|_| {
                refused(
                    Code::PathRefused,
                    format!("`{raw}` is outside the workspace `{}`", workspace.display()),
                )
            })?;
        stripped.to_path_buf()
    } else {
        path.to_path_buf()
    };
    let mut rel = PathBuf::new();
    for component in inside.components() {
        match component {
            Component::Normal(part) => rel.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(refused(
                    Code::PathRefused,
                    format!("`{raw}` contains `..`; paths stay inside the workspace"),
                ));
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(refused(
                    Code::PathRefused,
                    format!("`{raw}` is outside the workspace"),
                ));
            }
        }
    }
    if rel.as_os_str().is_empty() {
        return Err(invalid(
            "path",
            "the path names the workspace itself, not a file",
        ));
    }
    check_refused_names(&rel, raw)?;
    Ok(rel)
}

/// The refused names on every component of a directory path (a workspace): none may be a
/// refused directory or file name.
pub fn check_component_names(dir: &Path, raw: &str) -> Result<(), ApiError> {
    for part in dir.components().filter_map(|c| match c {
        Component::Normal(p) => Some(p.to_string_lossy().to_lowercase()),
        _ => None,
    }) {
        if REFUSED_DIRS.contains(&part.as_str()) || REFUSED_FILES.contains(&part.as_str()) {
            return Err(refused(
                Code::PathRefused,
                format!(
                    "`{raw}` passes through `{part}`, which configures git, remote access, a shell or an agent tool"
                ),
            ));
        }
    }
    Ok(())
}

fn check_refused_names(rel: &Path, raw: &str) -> Result<(), ApiError> {
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_lowercase())
        .collect();
    let (file, dirs) = parts.split_last().expect("a relative path is never empty");
    if let Some(dir) = dirs.iter().find(|d| REFUSED_DIRS.contains(&d.as_str())) {
        return Err(refused(
            Code::PathRefused,
            format!(
                "`{raw}` is under `{dir}/`, which configures git, remote access or an agent tool"
            ),
        ));
    }
    if REFUSED_DIRS.contains(&file.as_str()) || REFUSED_FILES.contains(&file.as_str()) {
        return Err(refused(
            Code::PathRefused,
            format!("`{raw}` instructs or configures a runtime, git or a shell, and is refused"),
        ));
    }
    Ok(())
}

/// How a workspace-relative path is shown: under the workspace directory.
pub fn shown(workspace: &Path, rel: &Path) -> String {
    workspace.join(rel).display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(raw: &str) -> Result<String, Code> {
        relative(raw, Path::new("/tmp/ws"))
            .map(|p| p.display().to_string())
            .map_err(|e| e.code)
    }

    #[test]
    fn paths_map_into_the_workspace() {
        assert_eq!(rel("a/b.txt"), Ok("a/b.txt".into()));
        assert_eq!(rel("./a/./b.txt"), Ok("a/b.txt".into()));
        assert_eq!(rel("/tmp/ws/src/x.rs"), Ok("src/x.rs".into()));
        assert_eq!(rel("/workspace/src/x.rs"), Ok("src/x.rs".into()));
        assert_eq!(
            rel("docs/.github-notes.md"),
            Ok("docs/.github-notes.md".into())
        );
    }

    #[test]
    fn escapes_and_configuration_are_refused() {
        for bad in [
            "../x",
            "a/../../x",
            "/etc/passwd",
            "/tmp/wsx/a",
            ".git/config",
            "sub/.git/hooks/pre-commit",
            ".ssh/authorized_keys",
            ".codex/config.toml",
            ".claude/settings.json",
            ".mcp.json",
            "AGENTS.md",
            "pkg/CLAUDE.md",
            "GEMINI.md",
            ".bashrc",
            "x/.zshrc",
            ".envrc",
            ".github/copilot-instructions.md",
            ".git",
        ] {
            assert_eq!(rel(bad), Err(Code::PathRefused), "{bad}");
        }
        for bad in ["", ".", "/tmp/ws", "a\0b"] {
            assert_eq!(rel(bad), Err(Code::InvalidRequest), "{bad:?}");
        }
    }
}
