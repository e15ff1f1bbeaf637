//! The conformance cases, one folder per group. A case's id is
//! `group/area/nnn`, and it is defined under `cases/<group>/`, in a file
//! named for its area when the file holds one area (`pipeline/auth/*` in
//! `pipeline/auth.rs`) or for its subject when it holds several. Each
//! folder's `mod.rs` gathers its files' `cases()`; helper modules hold none.

use crate::Case;

/// One group folder: its name (the first segment of every id it holds) and
/// its cases.
pub struct Group {
    pub name: &'static str,
    pub cases: fn() -> Vec<Case>,
}

/// Declares the group folders and lists them in run order. A group's name is
/// its module's, so it cannot drift from the folder.
macro_rules! groups {
    ($($folder:ident),* $(,)?) => {
        $(pub mod $folder;)*

        /// Every group folder, in run order.
        pub static GROUPS: &[Group] = &[$(Group { name: stringify!($folder), cases: $folder::cases }),*];
    };
}

groups!(core, pipeline, commands, agents);

pub fn all() -> Vec<Case> {
    GROUPS.iter().flat_map(|g| (g.cases)()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case lives in the folder its id names: `pipeline/auth/001` under
    /// `cases/pipeline/`.
    #[test]
    fn every_case_lives_in_the_folder_its_id_names() {
        let mut misplaced = Vec::new();
        for group in GROUPS {
            let cases = (group.cases)();
            assert!(!cases.is_empty(), "cases/{}/ holds no cases", group.name);
            misplaced.extend(
                cases
                    .iter()
                    .filter(|c| c.group() != group.name)
                    .map(|c| format!("{} is defined under cases/{}/", c.id, group.name)),
            );
        }
        assert!(misplaced.is_empty(), "{}", misplaced.join("\n"));
    }
}
