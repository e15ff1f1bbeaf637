//! The user the server's children run as (`process.run_as`). A child that runs as the
//! server's own user may read whatever the server can: its files (the config file with
//! its tokens, the audit log), and, when the server runs as root, the server's memory,
//! environment and descriptors under `/proc` (root holds `CAP_SYS_PTRACE`). Run as another
//! user, a child reads none of it: the server is not dumpable (`PR_SET_DUMPABLE`), so
//! `/proc/<server>/environ`, `mem` and `fd` answer "permission denied" to any user without
//! that capability, and the server's own files are closed by their mode.
//!
//! Set once at start ([`run_children_as`]); every child the supervisor and the terminal
//! service start afterwards takes it, unless its spec says it is the server's own tool
//! (the browser).

use std::path::PathBuf;
use std::sync::OnceLock;

/// Who a child runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChildUser {
    pub uid: u32,
    pub gid: u32,
    /// Its name (`USER`, `LOGNAME`) and home folder (`HOME`) from the user database; a
    /// number with no entry is named by its number and has `/` for a home.
    pub name: String,
    pub home: PathBuf,
}

static CHILD_USER: OnceLock<ChildUser> = OnceLock::new();

/// Reads `spec`: a user name (`nobody`), a uid (`65534`) or `uid:gid` (`65534:65534`). A
/// name or uid without `:gid` takes the user's primary group (the uid itself for a number
/// with no entry).
pub fn resolve(spec: &str) -> Result<ChildUser, String> {
    use nix::unistd::{Uid, User};
    let (user, gid) = match spec.split_once(':') {
        Some((user, gid)) => {
            let gid = gid
                .parse::<u32>()
                .map_err(|_| format!("`{gid}` is not a group number"))?;
            (user, Some(gid))
        }
        None => (spec, None),
    };
    if user.is_empty() {
        return Err("an empty user".into());
    }
    let entry = match user.parse::<u32>() {
        Ok(uid) => User::from_uid(Uid::from_raw(uid))
            .map_err(|e| format!("cannot read the user database: {e}"))?
            .map(Ok)
            .unwrap_or(Err(uid)),
        Err(_) => Ok(User::from_name(user)
            .map_err(|e| format!("cannot read the user database: {e}"))?
            .ok_or_else(|| format!("no user `{user}` on this machine"))?),
    };
    Ok(match entry {
        Ok(found) => ChildUser {
            uid: found.uid.as_raw(),
            gid: gid.unwrap_or(found.gid.as_raw()),
            name: found.name,
            home: found.dir,
        },
        Err(uid) => ChildUser {
            uid,
            gid: gid.unwrap_or(uid),
            name: uid.to_string(),
            home: PathBuf::from("/"),
        },
    })
}

/// Makes every later child run as `user` (the first call wins).
pub fn run_children_as(user: ChildUser) {
    let _ = CHILD_USER.set(user);
}

/// Who children run as, when not the server's own user.
pub fn child_user() -> Option<&'static ChildUser> {
    CHILD_USER.get()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_a_number_and_a_pair_are_read() {
        let root = resolve("root").unwrap();
        assert_eq!((root.uid, root.gid, root.name.as_str()), (0, 0, "root"));
        assert_eq!(resolve("0").unwrap(), root);
        let pair = resolve("0:7").unwrap();
        assert_eq!((pair.uid, pair.gid), (0, 7));
        let stranger = resolve("4242424").unwrap();
        assert_eq!(
            (stranger.uid, stranger.gid, stranger.name.as_str()),
            (4242424, 4242424, "4242424")
        );
    }

    #[test]
    fn what_names_no_user_is_refused() {
        assert!(
            resolve("no-such-user-here")
                .unwrap_err()
                .contains("no user")
        );
        assert!(resolve("").is_err());
        assert!(resolve("0:x").unwrap_err().contains("group number"));
    }
}
