//! The conformance cases, one folder per group. A case's id is
//! `group/area/nnn`, and it is defined under `cases/<group>/`, in a file
//! named for its area when the file holds one area (`pipeline/auth/*` in
//! `pipeline/auth.rs`) or for its subject when it holds several. Each
//! folder's `mod.rs` gathers its files' `cases()`; helper modules hold none.
//! Each folder tests one [`Contract`], which its cases' profiles configure.

use crate::{Case, Contract};

/// One group folder: its name (the first segment of every id it holds), the
/// contract its cases test, and its cases.
pub struct Group {
    pub name: &'static str,
    pub contract: Contract,
    pub cases: fn() -> Vec<Case>,
}

/// Declares the group folders and lists them in run order. A group's name is
/// its module's, so it cannot drift from the folder.
macro_rules! groups {
    ($($folder:ident: $contract:ident),* $(,)?) => {
        $(pub mod $folder;)*

        /// Every group folder, in run order.
        pub static GROUPS: &[Group] = &[$(Group {
            name: stringify!($folder),
            contract: Contract::$contract,
            cases: $folder::cases,
        }),*];
    };
}

groups! {
    core: Server,
    pipeline: Server,
    commands: Server,
    files: Server,
    process: Server,
    terminal: Server,
    system: Server,
    dev_tools: Server,
    browser: Server,
    agents: Server,
    engine: Engine,
    e2b: Engine,
}

pub fn all() -> Vec<Case> {
    GROUPS.iter().flat_map(|g| (g.cases)()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case lives in the folder its id names (`pipeline/auth/001` under
    /// `cases/pipeline/`), and tests that folder's contract.
    #[test]
    fn every_case_lives_in_the_folder_its_id_names() {
        let mut misplaced = Vec::new();
        for group in GROUPS {
            let cases = (group.cases)();
            assert!(!cases.is_empty(), "cases/{}/ holds no cases", group.name);
            for case in &cases {
                if case.group() != group.name {
                    misplaced.push(format!(
                        "{} is defined under cases/{}/",
                        case.id, group.name
                    ));
                }
                if case.contract() != group.contract {
                    misplaced.push(format!(
                        "{}: profile {} configures the {}, but cases/{}/ tests the {}",
                        case.id,
                        case.profile.name,
                        case.contract(),
                        group.name,
                        group.contract
                    ));
                }
            }
        }
        assert!(misplaced.is_empty(), "{}", misplaced.join("\n"));
    }

    #[test]
    fn every_contract_has_a_folder() {
        for contract in Contract::ALL {
            assert!(
                GROUPS.iter().any(|g| g.contract == *contract),
                "no case folder tests the {contract}"
            );
        }
    }
}
