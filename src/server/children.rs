//! What keeps the server's children from the server, set once at start and for the whole
//! process (README, "Security"):
//! - the tokens it read from its environment are scrubbed from its environment block
//!   ([`environ_block`]), which `/proc/<server>/environ` shows to root;
//! - the server is not dumpable (`PR_SET_DUMPABLE` 0): `/proc/<server>/environ`, `mem`,
//!   `fd`, `maps` and the like are root's and refuse every process that lacks
//!   `CAP_SYS_PTRACE`, a child of the same user included (a child of a root server has it:
//!   hence `process.run_as`);
//! - the server and every child are child subreapers, so nothing a child starts outlives a
//!   kill, a timeout or its own end by leaving its process group
//!   ([`supervisor::trees`](crate::services::supervisor::trees));
//! - children run as `process.run_as` when the operator set it; else, when identity tokens
//!   are written in the config file, children see that file empty (a mount namespace of
//!   their own, [`hidden`]) where the machine allows.

use crate::server::config::Settings;
use crate::services::namespaces::hidden;
use crate::services::{before_exec, child_user, environ_block, supervisor};

/// Applies them to this process; answers what does not hold here, for the log.
pub fn guard_children(settings: &Settings) -> Vec<String> {
    let mut warnings = Vec::new();
    // Tokens read from the environment stay in the block `/proc/<pid>/environ` shows (to
    // root, whatever the dumpable flag): their bytes go, now that the settings hold them.
    let is_token = |name: &str, value: &[u8]| {
        name == crate::server::config::env::SERVER_TOKEN
            || settings.identities.holds_token(value)
            || settings.identities.holds_token(value.trim_ascii())
    };
    if let Err(e) = environ_block::scrub(is_token) {
        warnings.push(format!(
            "the tokens read from the environment stay in the server's environment block \
             ({e}): a root child can read them under /proc"
        ));
    }
    if let Err(e) = nix::sys::prctl::set_dumpable(false) {
        warnings.push(format!(
            "the server stays dumpable ({e}): a child of its user can read its environment \
             and memory under /proc"
        ));
    }
    if let Err(why) = supervisor::keep_whole_trees() {
        warnings.push(format!(
            "children keep only their process groups ({why}): a child that leaves its group \
             (setsid) outlives a kill or a timeout"
        ));
    }
    match &settings.run_as {
        Some(user) => child_user::run_children_as(user.clone()),
        None if nix::unistd::geteuid().is_root() => warnings.push(
            "the server runs as root and so do its children, which can therefore read its \
             memory, environment and files: set `process.run_as` (README, Security)"
                .into(),
        ),
        None => {
            if let Some(file) = settings
                .source
                .as_deref()
                .filter(|_| settings.tokens_in_file)
            {
                // Children share the server's user: only a view of their own keeps the file
                // from them.
                if let Err(why) = hide(std::path::Path::new(file)) {
                    warnings.push(format!(
                        "identity tokens are written in the config file, which every child \
                         can read (children run as the server's user, and {why}): give them \
                         with `token_env`, or run the server as root with `process.run_as`"
                    ));
                }
            }
        }
    }
    warnings
}

/// Makes `file` show empty to every later child, once a trial child joined the view.
fn hide(file: &std::path::Path) -> Result<(), String> {
    let hidden = hidden::make(&[file])?;
    before_exec::trial(before_exec::Steps {
        join_cgroup: None,
        keep: Vec::new(),
        become_id: None,
        subreaper: false,
        hide: before_exec::Steps::hide(Some(hidden), None),
        enter: None,
    })?;
    hidden::install(hidden);
    Ok(())
}
