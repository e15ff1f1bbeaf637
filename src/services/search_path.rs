//! Where a program name leads: the one lookup of a name on a search path, for the command
//! rules, the server's launcher and the tools that make sandboxes (it depends on nothing,
//! so any of them may use it).

use std::path::{Path, PathBuf};

/// The file a program name runs: a name with a `/` is a path (relative to `cwd`), any other
/// name is looked up on `search_path`. `None` when no executable file is there.
pub fn resolve(name: &str, search_path: &str, cwd: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if name.contains('/') {
        let path = cwd.join(name);
        return executable(&path).then_some(path);
    }
    search_path
        .split(':')
        .filter(|dir| !dir.is_empty())
        .map(|dir| cwd.join(dir).join(name))
        .find(|p| executable(p))
}
