//! The environment every child of the server starts from (agent runtimes, named commands,
//! and later shells, terminals, code runs and sandboxes). It is built from an explicit base,
//! never the server's own environment: the server's token and every other `SVC_*` variable,
//! cloud credentials and whatever else the server was started with stay with the server.
//!
//! What passes: the variables a program needs to behave like a normal login (`PATH`, `HOME`,
//! the user, the locale, the terminal, the time zone, the temp directory) and the names the
//! operator lists on purpose (`server.child_env` in template.yaml, or
//! `SVC_SERVER_CHILD_ENV`). A listed name ending in `*` passes every variable it prefixes.
//! `SVC_*` names can never be listed.

use std::collections::BTreeMap;

/// Passed to every child when the server has them.
pub const ALWAYS: &[&str] = &[
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "TMPDIR",
];
/// Locale categories (`LC_ALL`, `LC_CTYPE`, ...).
const ALWAYS_PREFIX: &str = "LC_";

/// Cheap to clone (every session holds the server's one base).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildEnv {
    vars: std::sync::Arc<[(String, String)]>,
}

/// Why a name cannot be passed on, or `None` when it is a valid entry.
pub fn invalid_pass_entry(entry: &str) -> Option<String> {
    let name = entry.strip_suffix('*').unwrap_or(entry);
    if name.is_empty() && entry.ends_with('*') {
        return Some("`*` alone would pass the server's whole environment".into());
    }
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Some(format!(
            "`{entry}` is not a variable name (letters, digits and `_`, optionally ending in `*`)"
        ));
    }
    if name.to_ascii_uppercase().starts_with("SVC_") {
        return Some(format!(
            "`{entry}` would pass `SVC_*` variables, which configure the server (its token among them) and never reach a child"
        ));
    }
    None
}

impl ChildEnv {
    /// The base taken from the server's environment `parent`: [`ALWAYS`], the locale
    /// categories, and the operator's `pass` entries (checked with [`invalid_pass_entry`]).
    pub fn from_parent(
        parent: &BTreeMap<String, String>,
        pass: &[String],
    ) -> Result<ChildEnv, String> {
        if let Some(why) = pass.iter().find_map(|e| invalid_pass_entry(e)) {
            return Err(why);
        }
        let passes = |name: &str| {
            ALWAYS.contains(&name)
                || name.starts_with(ALWAYS_PREFIX)
                || pass.iter().any(|entry| match entry.strip_suffix('*') {
                    Some(prefix) => name.starts_with(prefix),
                    None => name == entry,
                })
        };
        let vars = parent
            .iter()
            .filter(|(name, _)| !name.starts_with("SVC_") && passes(name))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect::<Vec<_>>()
            .into();
        Ok(ChildEnv { vars })
    }

    /// The base as seen by `user`: `HOME`, `USER` and `LOGNAME` name that user, not the
    /// server's (a child run as another user cannot use the server's home).
    pub fn for_user(&self, user: &str, home: &std::path::Path) -> ChildEnv {
        let mut vars: Vec<(String, String)> = self
            .vars
            .iter()
            .filter(|(name, _)| !matches!(name.as_str(), "HOME" | "USER" | "LOGNAME"))
            .cloned()
            .collect();
        vars.push(("HOME".into(), home.display().to_string()));
        vars.push(("USER".into(), user.into()));
        vars.push(("LOGNAME".into(), user.into()));
        vars.sort();
        ChildEnv { vars: vars.into() }
    }

    /// The base variables, in name order.
    pub fn vars(&self) -> &[(String, String)] {
        &self.vars
    }

    /// The base followed by `extra`; a later entry of the same name wins when the child
    /// is spawned.
    pub fn with(&self, extra: impl IntoIterator<Item = (String, String)>) -> Vec<(String, String)> {
        let mut all = self.vars.to_vec();
        all.extend(extra);
        all
    }
}

/// Changes made to the child base while the server runs (`POST /system/env`): a name
/// set to a value, or unset (removed, the base's own value included). Every child started
/// afterwards gets the base with these changes; children already running keep what they
/// started with. Shared by all callers: it is the machine's environment for new programs,
/// like a login's profile, not a per-caller setting.
#[derive(Debug, Default)]
pub struct Overlay {
    changes: std::sync::RwLock<BTreeMap<String, Option<String>>>,
}

impl Overlay {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Option<String>>> {
        self.changes.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `set` and `unset` in one step (a reader sees all of them or none).
    pub fn change(&self, set: &BTreeMap<String, String>, unset: &[String]) {
        let mut changes = self.changes.write().unwrap_or_else(|e| e.into_inner());
        for name in unset {
            changes.insert(name.clone(), None);
        }
        for (name, value) in set {
            changes.insert(name.clone(), Some(value.clone()));
        }
    }

    /// The environment a child starts from now: `base` with the changes, by name.
    pub fn view(&self, base: &ChildEnv) -> BTreeMap<String, String> {
        let mut all: BTreeMap<String, String> = base.vars().iter().cloned().collect();
        for (name, change) in self.read().iter() {
            match change {
                Some(value) => all.insert(name.clone(), value.clone()),
                None => all.remove(name),
            };
        }
        all
    }

    /// [`view`](Self::view) followed by `extra` (a route's own variables, which win).
    pub fn with(
        &self,
        base: &ChildEnv,
        extra: impl IntoIterator<Item = (String, String)>,
    ) -> Vec<(String, String)> {
        let mut all: Vec<(String, String)> = self.view(base).into_iter().collect();
        all.extend(extra);
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parent() -> BTreeMap<String, String> {
        [
            ("PATH", "/usr/bin"),
            ("HOME", "/home/me"),
            ("LC_ALL", "C.UTF-8"),
            ("SVC_SERVER_TOKEN", "secret"),
            ("SVC_AGENTS_WORKSPACE", "/w"),
            ("AWS_SECRET_ACCESS_KEY", "aws"),
            ("RT_FAKE_STATE_DIR", "/s"),
            ("RT_FAKE_SEED", "x"),
            ("CI", "true"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    fn names(env: &ChildEnv) -> Vec<&str> {
        env.vars().iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn only_the_base_and_what_the_operator_names_pass() {
        let env = ChildEnv::from_parent(&parent(), &[]).unwrap();
        assert_eq!(names(&env), ["HOME", "LC_ALL", "PATH"]);
        let env = ChildEnv::from_parent(&parent(), &["RT_FAKE_*".into(), "CI".into()]).unwrap();
        assert_eq!(
            names(&env),
            [
                "CI",
                "HOME",
                "LC_ALL",
                "PATH",
                "RT_FAKE_SEED",
                "RT_FAKE_STATE_DIR"
            ]
        );
    }

    #[test]
    fn svc_variables_can_never_be_passed() {
        for entry in ["SVC_SERVER_TOKEN", "SVC_*", "svc_x", "*", "", "A-B"] {
            assert!(
                ChildEnv::from_parent(&parent(), &[entry.to_owned()]).is_err(),
                "{entry:?}"
            );
        }
    }

    #[test]
    fn extra_variables_follow_the_base() {
        let env = ChildEnv::from_parent(&parent(), &[]).unwrap();
        let all = env.with([("HOME".to_owned(), "/other".to_owned())]);
        assert_eq!(
            all.last().unwrap(),
            &("HOME".to_owned(), "/other".to_owned())
        );
    }

    #[test]
    fn the_overlay_sets_and_unsets_over_the_base() {
        let env = ChildEnv::from_parent(&parent(), &["CI".into()]).unwrap();
        let overlay = Overlay::default();
        let set = [("APP_MODE".to_owned(), "blue".to_owned())].into();
        overlay.change(&set, &["CI".to_owned()]);
        let view = overlay.view(&env);
        assert_eq!(view.get("APP_MODE").map(String::as_str), Some("blue"));
        assert!(!view.contains_key("CI"), "unset removes a base variable");
        assert!(view.contains_key("PATH"));
        // Set again after an unset: the newest change holds.
        overlay.change(&[("CI".to_owned(), "1".to_owned())].into(), &[]);
        let all = overlay.with(&env, [("APP_MODE".to_owned(), "red".to_owned())]);
        assert_eq!(
            all.last().unwrap().1,
            "red",
            "the route's own variables come last"
        );
        assert!(all.contains(&("CI".to_owned(), "1".to_owned())));
    }
}
