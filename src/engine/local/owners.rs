//! Who owns a sandbox's file, by name, as a program inside would read it with `ls -l`
//! (envd answers names too): in an isolated sandbox by its own `/etc/passwd` and
//! `/etc/group` (`user`, `root`, and `nobody` / `nogroup` for a host id the machine does
//! not map); without isolation by the host's accounts, or the id as a number when it has
//! no name. A listing asks for the same few ids again and again: each is looked up once.

use super::sandbox::Core;
use crate::services::files::Entry;
use std::collections::HashMap;

/// The names of one answer's owners.
#[derive(Default)]
pub struct Owners {
    users: HashMap<u32, String>,
    groups: HashMap<u32, String>,
}

impl Owners {
    /// The owner's and the group's names of `entry` (`None` for an entry without ids).
    pub fn of(&mut self, core: &Core, entry: &Entry) -> (Option<String>, Option<String>) {
        let user = entry.uid.map(|uid| {
            self.users
                .entry(uid)
                .or_insert_with(|| user_name(core, uid))
                .clone()
        });
        let group = entry.gid.map(|gid| {
            self.groups
                .entry(gid)
                .or_insert_with(|| group_name(core, gid))
                .clone()
        });
        (user, group)
    }
}

fn user_name(core: &Core, uid: u32) -> String {
    match &core.isolated {
        Some(isolated) => isolated.tools.ids.user_name(uid).to_owned(),
        None => nix::unistd::User::from_uid(uid.into())
            .ok()
            .flatten()
            .map_or_else(|| uid.to_string(), |u| u.name),
    }
}

fn group_name(core: &Core, gid: u32) -> String {
    match &core.isolated {
        // The gid bwrap maps to `user` for an ordinary engine is the engine's real one.
        Some(isolated) => isolated
            .tools
            .ids
            .group_name(gid, nix::unistd::getgid().as_raw())
            .to_owned(),
        None => nix::unistd::Group::from_gid(gid.into())
            .ok()
            .flatten()
            .map_or_else(|| gid.to_string(), |g| g.name),
    }
}
