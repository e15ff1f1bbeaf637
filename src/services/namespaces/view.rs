//! The paths of a machine, as the engine reaches them: what a caller names (absolute in
//! the machine, or relative to `/home/user`) is the same file a command inside names.
//! The machine's writable folders, `/home/user` and `/tmp`, are folders of the engine's on
//! the host; every other place inside is the read-only system, which the engine's file
//! operations do not reach (a command reads it).

use super::{HOME, TMP};
use std::path::{Component, Path, PathBuf};

/// A machine's writable folders and the host folders behind them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    home: PathBuf,
    tmp: PathBuf,
}

/// A path the view does not reach.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewError {
    /// The path inside, normalized.
    pub path: PathBuf,
}

impl std::fmt::Display for ViewError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "`{}` is not in the sandbox's own folders: files are read and written under \
             {HOME} and {TMP} (relative paths start at {HOME}); the rest is the system, \
             read-only",
            self.path.display()
        )
    }
}

impl std::error::Error for ViewError {}

impl View {
    /// `home` and `tmp`: the host folders behind `/home/user` and `/tmp`.
    pub fn new(home: PathBuf, tmp: PathBuf) -> View {
        View { home, tmp }
    }

    /// The host folder behind `/home/user`.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The host folder behind `/tmp`.
    pub fn tmp(&self) -> &Path {
        &self.tmp
    }

    /// `raw` normalized inside the machine (`.` dropped, `..` pops, never above `/`).
    pub fn inside(raw: &str) -> PathBuf {
        let mut path = PathBuf::from("/");
        let joined = Path::new(HOME).join(raw);
        for part in joined.components() {
            match part {
                Component::ParentDir => {
                    path.pop();
                }
                Component::Normal(name) => path.push(name),
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
        path
    }

    /// The host path of `raw`, or why the view does not reach it.
    pub fn to_host(&self, raw: &str) -> Result<PathBuf, ViewError> {
        let inside = View::inside(raw);
        for (shown, host) in self.folders() {
            if let Ok(rest) = inside.strip_prefix(shown) {
                return Ok(if rest.as_os_str().is_empty() {
                    host.to_path_buf()
                } else {
                    host.join(rest)
                });
            }
        }
        Err(ViewError { path: inside })
    }

    /// The path inside of `host`, when it is in one of the machine's folders.
    pub fn to_inside(&self, host: &Path) -> Option<PathBuf> {
        self.folders().into_iter().find_map(|(shown, folder)| {
            let rest = host.strip_prefix(folder).ok()?;
            Some(if rest.as_os_str().is_empty() {
                PathBuf::from(shown)
            } else {
                Path::new(shown).join(rest)
            })
        })
    }

    /// `text` (a message) with the host folders named as the machine names them, so no
    /// answer tells a caller where the engine keeps a sandbox.
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for (shown, folder) in self.folders() {
            out = out.replace(&folder.display().to_string(), shown);
        }
        out
    }

    fn folders(&self) -> [(&'static str, &Path); 2] {
        [(HOME, &self.home), (TMP, &self.tmp)]
    }
}
