//! The environment of a sandbox's processes: a clean, minimal one built for the sandbox,
//! never the engine's own (the engine's token, cloud credentials and every `SVC_*`
//! variable stay with the engine). From the engine it takes only what `child_env` passes
//! to any child and a machine's programs need to be found and speak the locale (`PATH`,
//! the locale, the time zone); the rest is the sandbox's: `HOME` its folder, `TMPDIR`
//! inside it, the user, the variables given at create, and the mark every process of the
//! sandbox carries ([`MARK`]), by which its processes are found in `/proc`.

use crate::services::child_env::ChildEnv;
use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

/// The variable that marks a sandbox's processes: `SVC_SANDBOX_ID=<id>`.
pub const MARK: &str = "SVC_SANDBOX_ID";
/// The temp folder, inside the sandbox's folder.
pub const TMP: &str = ".tmp";
/// `PATH` when the engine has none.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// What a terminal's `TERM` is.
pub const TERM: &str = "xterm-256color";

/// `SVC_SANDBOX_ID=<id>`, as it appears in `/proc/<pid>/environ`.
pub fn mark_entry(id: &str) -> String {
    format!("{MARK}={id}")
}

/// The base of every process of sandbox `id` whose folder is `home`, with the variables
/// given at create; the mark comes last, so nothing given can remove it.
pub fn base(home: &Path, id: &str, envs: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let parent: BTreeMap<String, String> = std::env::vars().collect();
    let passed = ChildEnv::from_parent(&parent, &[]).unwrap_or_default();
    let mut env: Vec<(String, String)> = passed
        .vars()
        .iter()
        .filter(|(name, _)| {
            matches!(name.as_str(), "PATH" | "LANG" | "LANGUAGE" | "TZ") || name.starts_with("LC_")
        })
        .cloned()
        .collect();
    if !env.iter().any(|(name, _)| name == "PATH") {
        env.push(("PATH".into(), DEFAULT_PATH.into()));
    }
    if !env.iter().any(|(name, _)| name == "LANG") {
        env.push(("LANG".into(), "C.UTF-8".into()));
    }
    let user = user_name().to_owned();
    env.extend([
        ("HOME".to_owned(), home.display().to_string()),
        ("TMPDIR".to_owned(), home.join(TMP).display().to_string()),
        ("USER".to_owned(), user.clone()),
        ("LOGNAME".to_owned(), user),
        ("SHELL".to_owned(), "/bin/sh".to_owned()),
    ]);
    env.extend(envs.iter().map(|(k, v)| (k.clone(), v.clone())));
    env.push((MARK.to_owned(), id.to_owned()));
    env
}

/// The base of every process of an isolated sandbox `id`: as [`base`], with the machine's
/// paths and its default user (`HOME` /home/user, `TMPDIR` /tmp, `USER` user) and the
/// system's `PATH` (the engine's may name folders the machine does not have).
pub fn inside(id: &str, envs: &BTreeMap<String, String>) -> Vec<(String, String)> {
    use crate::services::namespaces::{HOME, TMP, USER};
    let mut env: Vec<(String, String)> = base(Path::new(HOME), id, &BTreeMap::new())
        .into_iter()
        .filter(|(name, _)| {
            matches!(name.as_str(), "LANG" | "LANGUAGE" | "TZ") || name.starts_with("LC_")
        })
        .collect();
    env.extend([
        ("PATH".to_owned(), DEFAULT_PATH.to_owned()),
        ("HOME".to_owned(), HOME.to_owned()),
        ("TMPDIR".to_owned(), TMP.to_owned()),
        ("USER".to_owned(), USER.to_owned()),
        ("LOGNAME".to_owned(), USER.to_owned()),
        ("SHELL".to_owned(), "/bin/bash".to_owned()),
    ]);
    // What was given at create comes after, so it wins (a later entry does at a spawn).
    env.extend(envs.iter().map(|(k, v)| (k.clone(), v.clone())));
    env.push((MARK.to_owned(), id.to_owned()));
    env
}

/// `env` followed by `extra`, the mark of `id` last again (a later entry wins).
pub fn with(
    env: &[(String, String)],
    extra: &BTreeMap<String, String>,
    id: &str,
) -> Vec<(String, String)> {
    let mut all = env.to_vec();
    all.extend(extra.iter().map(|(k, v)| (k.clone(), v.clone())));
    all.push((MARK.to_owned(), id.to_owned()));
    all
}

/// The value `name` has in `env` (the last entry wins, as at a spawn).
pub fn get<'a>(env: &'a [(String, String)], name: &str) -> Option<&'a str> {
    env.iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The name of the user the engine runs as (every sandbox process runs as it): read once,
/// since every command checks its `user` against it.
pub fn user_name() -> &'static str {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(read_user_name)
}

fn read_user_name() -> String {
    let uid = std::fs::metadata("/proc/self").map(|m| m.uid()).ok();
    let from_passwd = uid.and_then(|uid| {
        let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
        passwd.lines().find_map(|line| {
            let mut fields = line.split(':');
            let name = fields.next()?;
            let id: u32 = fields.nth(1)?.parse().ok()?;
            (id == uid).then(|| name.to_owned())
        })
    });
    from_passwd
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .or_else(|| uid.map(|u| u.to_string()))
        .unwrap_or_else(|| "unknown".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_is_the_sandbox_s_not_the_engine_s() {
        let envs = [("API_KEY".to_owned(), "k".to_owned())].into();
        let env = base(Path::new("/s/sb_1/root"), "sb_1", &envs);
        assert_eq!(get(&env, "HOME"), Some("/s/sb_1/root"));
        assert_eq!(get(&env, "TMPDIR"), Some("/s/sb_1/root/.tmp"));
        assert_eq!(get(&env, "API_KEY"), Some("k"));
        assert_eq!(get(&env, MARK), Some("sb_1"));
        assert!(get(&env, "PATH").is_some());
        assert_eq!(get(&env, "USER"), Some(user_name()));
        for (name, _) in &env {
            assert!(
                !name.starts_with("SVC_") || name == MARK,
                "{name} comes from the engine"
            );
            assert!(!name.starts_with("CARGO"), "{name} comes from the engine");
        }
        // The mark cannot be replaced by the variables of a command.
        let extra = [(MARK.to_owned(), "sb_other".to_owned())].into();
        assert_eq!(get(&with(&env, &extra, "sb_1"), MARK), Some("sb_1"));
    }
}
