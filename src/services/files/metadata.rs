//! A file's metadata: string pairs its writer attached to it, kept on the file itself as
//! user extended attributes `user.e2b.<key>`, where E2B's envd keeps them, so a file
//! carries them through a copy that keeps xattrs (`cp -a`, `tar --xattrs`) and a program
//! inside sees them with `getfattr`. The rules are envd's: printable US-ASCII keys and
//! values, a key of 1 to [`MAX_KEY_BYTES`] bytes, at most [`MAX_TOTAL_BYTES`] in all, so
//! every set that passes here fits the inode's xattr block of ext4.

use nix::errno::Errno;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::fd::{AsFd, AsRawFd};
use std::path::PathBuf;

/// The namespace of the attributes: `user.` is the one an unprivileged process may write,
/// `e2b.` keeps them apart from other tools' `user.*` ones (and is envd's own).
pub const XATTR_PREFIX: &str = "user.e2b.";
/// The kernel's limit on an attribute name (255) less the prefix.
pub const MAX_KEY_BYTES: usize = 255 - XATTR_PREFIX.len();
/// The most one file's metadata may take: every key with its prefix, plus every value.
pub const MAX_TOTAL_BYTES: usize = 4096;

/// A valid set of metadata (see the module's rules); empty is none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Metadata(BTreeMap<String, String>);

impl Metadata {
    /// `pairs` checked against the rules; the message says which pair breaks which.
    pub fn new(pairs: BTreeMap<String, String>) -> Result<Metadata, String> {
        let mut total = 0;
        for (key, value) in &pairs {
            if key.is_empty() {
                return Err("a metadata key must not be empty".into());
            }
            if key.len() > MAX_KEY_BYTES {
                return Err(format!(
                    "the metadata key {key:?} is over {MAX_KEY_BYTES} bytes"
                ));
            }
            printable("key", key, key)?;
            printable("value of the key", key, value)?;
            total += XATTR_PREFIX.len() + key.len() + value.len();
        }
        if total > MAX_TOTAL_BYTES {
            return Err(format!(
                "the metadata takes {total} bytes (each key with its `{XATTR_PREFIX}` prefix, \
                 and each value); at most {MAX_TOTAL_BYTES} fit on a file"
            ));
        }
        Ok(Metadata(pairs))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn pairs(&self) -> &BTreeMap<String, String> {
        &self.0
    }

    pub fn into_pairs(self) -> BTreeMap<String, String> {
        self.0
    }

    /// Bytes the pairs hold (for a store that counts what it keeps).
    pub fn bytes(&self) -> u64 {
        self.0.iter().map(|(k, v)| (k.len() + v.len()) as u64).sum()
    }
}

fn printable(what: &str, key: &str, text: &str) -> Result<(), String> {
    match text.bytes().position(|b| !(0x20..=0x7e).contains(&b)) {
        None => Ok(()),
        Some(at) => Err(format!(
            "the metadata {what} {key:?} has a byte that is not printable US-ASCII at {at}"
        )),
    }
}

/// Why the metadata could not be set on a file.
#[derive(Debug)]
pub enum WriteFailure {
    /// The filesystem keeps no user extended attributes (tmpfs before Linux 6.6, some
    /// network filesystems, or one mounted without `user_xattr`).
    Unsupported,
    /// No room for them (a full disk, or a filesystem's smaller xattr space).
    NoRoom,
    Other(Errno),
}

/// Sets `metadata` on the open file `fd` (a new file, which has none: nothing to remove).
pub fn write(fd: impl AsFd, metadata: &Metadata) -> Result<(), WriteFailure> {
    for (key, value) in metadata.pairs() {
        let name = format!("{XATTR_PREFIX}{key}");
        let flags = rustix::fs::XattrFlags::empty();
        if let Err(e) = rustix::fs::fsetxattr(fd.as_fd(), name.as_str(), value.as_bytes(), flags) {
            let errno = Errno::from_raw(e.raw_os_error());
            return Err(match errno {
                // EOPNOTSUPP is the same number on Linux.
                Errno::ENOTSUP => WriteFailure::Unsupported,
                Errno::ENOSPC | Errno::E2BIG | Errno::EDQUOT => WriteFailure::NoRoom,
                other => WriteFailure::Other(other),
            });
        }
    }
    Ok(())
}

/// The metadata of `name` in the directory `dir` (the directory itself for `None`), read
/// without following a link: through `/proc/self/fd`, which reaches the open directory
/// itself, never a path that could be swapped under the read. Best effort, as envd reads
/// it: what cannot be read (no `/proc`, no permission, a filesystem without xattrs) is no
/// metadata, and an attribute whose key or value is not UTF-8 (set by hand inside) is
/// left out rather than failing the entry.
pub fn read(dir: &impl AsFd, name: Option<&OsStr>) -> BTreeMap<String, String> {
    let mut path = PathBuf::from(format!("/proc/self/fd/{}", dir.as_fd().as_raw_fd()));
    let follow = match name {
        Some(name) => {
            path.push(name);
            false
        }
        // The magic link is followed to the directory it stands for.
        None => true,
    };
    let mut pairs = BTreeMap::new();
    for attr in names(&path, follow) {
        let Some(key) = attr.strip_prefix(XATTR_PREFIX) else {
            continue;
        };
        if let Some(value) = value(&path, &attr, follow) {
            pairs.insert(key.to_owned(), value);
        }
    }
    pairs
}

/// The attribute names of `path`, UTF-8 ones only.
fn names(path: &std::path::Path, follow: bool) -> Vec<String> {
    let query = if follow {
        rustix::fs::listxattr_query(path)
    } else {
        rustix::fs::llistxattr_query(path)
    };
    let Ok(size) = query else {
        return Vec::new();
    };
    if size == 0 {
        return Vec::new(); // the common case: one call
    }
    let mut buf = vec![0u8; size];
    let listed = if follow {
        rustix::fs::listxattr(path, &mut buf[..])
    } else {
        rustix::fs::llistxattr(path, &mut buf[..])
    };
    // Grown meanwhile (ERANGE): read again next time, as if there were none now.
    let Ok(len) = listed else {
        return Vec::new();
    };
    buf[..len]
        .split(|b| *b == 0)
        .filter_map(|n| std::str::from_utf8(n).ok())
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
        .collect()
}

fn value(path: &std::path::Path, attr: &str, follow: bool) -> Option<String> {
    let query = if follow {
        rustix::fs::getxattr_query(path, attr)
    } else {
        rustix::fs::lgetxattr_query(path, attr)
    };
    let mut buf = vec![0u8; query.ok()?];
    let len = if buf.is_empty() {
        0
    } else if follow {
        rustix::fs::getxattr(path, attr, &mut buf[..]).ok()?
    } else {
        rustix::fs::lgetxattr(path, attr, &mut buf[..]).ok()?
    };
    buf.truncate(len);
    String::from_utf8(buf).ok()
}
