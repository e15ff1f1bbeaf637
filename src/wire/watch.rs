//! A file watch's events as the wire's [`WatchChange`], for every stream that relays a
//! watch of the file service (the server's `GET /files/watch`, the engine's `local`
//! `.../files/watch`): each renders them here and only wraps the failures in its own error
//! body. The shapes and names are `wire::files`'s; this reads the service's events into them.
//!
//! - `create`, `modify`, `delete`: `{path, type, entry?}`; `rename`: `{path, from, type,
//!   entry?}` (`path` the new name). `type` is what the kernel reported (`file`, `dir`,
//!   `symlink`, `other`; a delete says only `dir` or `file`), `entry` the entry info of the
//!   path as it is when the event is rendered (absent when it is gone or refused).
//! - `overflow`: `{path, message}`: events were lost; list the path again to resynchronize.
//! - the three failures ([`Rendered::Unwatched`], [`Rendered::Gone`],
//!   [`Rendered::Failed`]) carry their message; the caller chooses the error row.

use super::{Change, Deleted, Overflow, WatchChange};
use crate::services::files::watch::WatchEvent;
use crate::services::files::{Entry, FileService};
use std::path::Path;

/// One watch event, ready for a stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Rendered {
    /// A change or an overflow (boxed: a change with its entry is many times a message).
    Event(Box<WatchChange>),
    /// A directory cannot be watched (the system's watch limit): changes in it are not
    /// seen, and the stream goes on.
    Unwatched(String),
    /// The watched path was deleted or moved away: the stream ends after this.
    Gone(String),
    /// Reading the kernel's events failed: the stream ends after this.
    Failed(String),
}

impl Rendered {
    /// Nothing follows this one.
    pub fn ends(&self) -> bool {
        matches!(self, Rendered::Gone(_) | Rendered::Failed(_))
    }
}

/// Renders `event` of the watch on `watched`; `files` gives the entries (a few system
/// calls: it blocks briefly).
pub fn render(event: WatchEvent, files: &FileService, watched: &Path) -> Rendered {
    render_named(event, files, watched, &mut |_| (None, None))
}

/// Names an entry's owner and group (`None` where it has none).
pub type NameOwners<'a> = dyn FnMut(&Entry) -> (Option<String>, Option<String>) + 'a;

/// [`render`] with each entry's owner and group named by `owners` (the engine names them
/// as the sandbox sees them, as its entry routes do).
pub fn render_named(
    event: WatchEvent,
    files: &FileService,
    watched: &Path,
    owners: &mut NameOwners<'_>,
) -> Rendered {
    let mut change = |path: &Path, from: Option<&Path>, kind| {
        let entry = files.watched_entry(path);
        let mut change = Change::new(path, from, kind, entry.as_ref());
        if let (Some(info), Some(entry)) = (change.entry.as_mut(), entry.as_ref()) {
            (info.owner, info.group) = owners(entry);
        }
        change
    };
    let change = match event {
        WatchEvent::Create { path, kind } => WatchChange::Create(change(&path, None, kind)),
        WatchEvent::Modify { path, kind } => WatchChange::Modify(change(&path, None, kind)),
        WatchEvent::Delete { path, kind } => WatchChange::Delete(Deleted::new(&path, kind)),
        WatchEvent::Rename { from, to, kind } => {
            WatchChange::Rename(change(&to, Some(&from), kind))
        }
        WatchEvent::Overflow => WatchChange::Overflow(Overflow::new(
            watched,
            "some events were lost (the reader fell behind, or the kernel's queue \
             overflowed); list the path again to resynchronize",
        )),
        WatchEvent::Unwatched { path, reason } => {
            return Rendered::Unwatched(format!(
                "`{}` is not watched, so changes in it are not seen: {reason}",
                path.display()
            ));
        }
        WatchEvent::Gone { path } => {
            return Rendered::Gone(format!(
                "`{}` was deleted or moved away; the watch has ended",
                path.display()
            ));
        }
        WatchEvent::Failed { reason } => {
            return Rendered::Failed(format!("the watch failed: {reason}"));
        }
    };
    Rendered::Event(Box::new(change))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::services::files::EntryKind;
    use crate::services::paths::{PathGuard, PathRules};
    use serde_json::json;
    use std::path::PathBuf;

    /// A file service on `root` that refuses `.env` files (the server's watch tests use it
    /// too).
    pub(crate) fn files_on(root: &Path) -> FileService {
        let guard = PathGuard::from_section(&PathRules {
            allow: Some(vec![root.to_path_buf()]),
            deny: vec!["**/.env".into()],
            ..PathRules::default()
        })
        .unwrap();
        FileService::new(guard, root)
    }

    #[test]
    fn changes_carry_the_entry_as_it_is_now() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let files = files_on(&root);
        std::fs::write(root.join("b.txt"), "abc").unwrap();
        let rendered = render(
            WatchEvent::Rename {
                from: root.join("a.txt"),
                to: root.join("b.txt"),
                kind: EntryKind::File,
            },
            &files,
            &root,
        );
        let Rendered::Event(change) = rendered else {
            panic!("{rendered:?}")
        };
        let data = change.data();
        assert_eq!(change.name(), "rename");
        assert_eq!(data["from"], root.join("a.txt").display().to_string());
        assert_eq!(data["path"], root.join("b.txt").display().to_string());
        assert_eq!(data["type"], "file");
        assert_eq!(data["entry"]["size"], 3);
        // A path the rules refuse is named but never described.
        std::fs::write(root.join(".env"), "secret").unwrap();
        let Rendered::Event(change) = render(
            WatchEvent::Modify {
                path: root.join(".env"),
                kind: EntryKind::File,
            },
            &files,
            &root,
        ) else {
            panic!()
        };
        assert!(change.data().get("entry").is_none(), "{change:?}");
    }

    #[test]
    fn a_delete_and_an_overflow_name_only_paths() {
        let root = PathBuf::from("/nowhere");
        let files = files_on(&root);
        assert_eq!(
            render(
                WatchEvent::Delete {
                    path: root.join("x"),
                    kind: EntryKind::Dir
                },
                &files,
                &root
            ),
            Rendered::Event(Box::new(WatchChange::Delete(Deleted {
                path: "/nowhere/x".into(),
                type_: "dir".into()
            })))
        );
        let Rendered::Event(change) = render(WatchEvent::Overflow, &files, &root) else {
            panic!()
        };
        assert_eq!(
            (change.name(), &change.data()["path"]),
            ("overflow", &json!("/nowhere"))
        );
    }

    #[test]
    fn only_gone_and_failed_end_the_stream() {
        let root = PathBuf::from("/nowhere");
        let files = files_on(&root);
        let unwatched = render(
            WatchEvent::Unwatched {
                path: root.join("d"),
                reason: "limit".into(),
            },
            &files,
            &root,
        );
        assert!(matches!(&unwatched, Rendered::Unwatched(m) if m.contains("limit")));
        assert!(!unwatched.ends());
        assert!(render(WatchEvent::Gone { path: root.clone() }, &files, &root).ends());
        assert!(render(WatchEvent::Failed { reason: "x".into() }, &files, &root).ends());
    }
}
