//! What the code interpreter's front remembers of each sandbox's code contexts: the default
//! context of each language (a run without a context uses it) and each context's language
//! and run count (`number_of_executions`), so a run neither makes a context nor lists them
//! all. A context deleted here is forgotten with its count and any default that named it;
//! one deleted through `/v1` when a run meets `ContextNotFound`; all of a sandbox's when it
//! is killed here or an envd call finds it gone (it timed out, or was killed through `/v1`).

use crate::wire::ContextRecord;
use std::collections::HashMap;
use std::sync::Mutex;

/// Each sandbox's default context per language, and the language and run count of each
/// context the front has seen, all keyed by sandbox so a sandbox's end forgets them.
#[derive(Default)]
pub struct Contexts {
    inner: Mutex<Known>,
}

#[derive(Default)]
struct Known {
    /// (sandbox, engine language) → the context a run without one uses.
    defaults: HashMap<(String, String), String>,
    /// (sandbox, context) → its engine language and how many runs it has had.
    contexts: HashMap<(String, String), (String, u64)>,
}

fn key(a: &str, b: &str) -> (String, String) {
    (a.to_owned(), b.to_owned())
}

impl Contexts {
    pub(super) fn default_of(&self, sandbox: &str, language: &str) -> Option<String> {
        lock(&self.inner)
            .defaults
            .get(&key(sandbox, language))
            .cloned()
    }

    pub(super) fn language_of(&self, sandbox: &str, context: &str) -> Option<String> {
        let known = lock(&self.inner);
        known
            .contexts
            .get(&key(sandbox, context))
            .map(|(language, _)| language.clone())
    }

    /// Notes a context of the sandbox and its language (its run count kept when known).
    pub(super) fn saw(&self, sandbox: &str, context: &str, language: &str) {
        let mut known = lock(&self.inner);
        let entry = known.contexts.entry(key(sandbox, context)).or_default();
        entry.0 = language.to_owned();
    }

    /// One more run of the context: its count. A context forgotten meanwhile (deleted by a
    /// concurrent call) is not noted again, which would give it no language: the run is
    /// its first as far as the front knows.
    pub(super) fn count(&self, sandbox: &str, context: &str) -> u64 {
        match lock(&self.inner).contexts.get_mut(&key(sandbox, context)) {
            Some(entry) => {
                entry.1 += 1;
                entry.1
            }
            None => 1,
        }
    }

    /// Forgets a context that is gone, and any default that named it.
    pub(super) fn forget(&self, sandbox: &str, context: &str) {
        let mut known = lock(&self.inner);
        known.contexts.remove(&key(sandbox, context));
        known
            .defaults
            .retain(|(s, _), c| !(s == sandbox && c == context));
    }

    /// The sandbox's contexts as a listing shows them: each noted with its language (its
    /// run count kept). One the listing lacks is not forgotten: it may have been made after
    /// the listing was read (a concurrent first run's default), and one deleted through
    /// `/v1` is forgotten when a run meets `ContextNotFound`.
    pub(super) fn listed(&self, sandbox: &str, all: &[ContextRecord]) {
        let mut known = lock(&self.inner);
        for record in all {
            let entry = known
                .contexts
                .entry(key(sandbox, &record.context_id))
                .or_default();
            entry.0 = record.language.clone();
        }
    }

    pub(super) fn restarted(&self, sandbox: &str, context: &str) {
        if let Some(entry) = lock(&self.inner).contexts.get_mut(&key(sandbox, context)) {
            entry.1 = 0;
        }
    }

    /// The default for `language` once `made` was made for it: the first noted wins when
    /// two first runs made one each (the other's maker deletes it).
    pub(super) fn settle_default(&self, sandbox: &str, language: &str, made: String) -> String {
        let mut known = lock(&self.inner);
        known
            .defaults
            .entry(key(sandbox, language))
            .or_insert(made)
            .clone()
    }

    pub fn forget_sandbox(&self, sandbox: &str) {
        let mut known = lock(&self.inner);
        known.defaults.retain(|(s, _), _| s != sandbox);
        known.contexts.retain(|(s, _), _| s != sandbox);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, language: &str) -> ContextRecord {
        ContextRecord {
            context_id: id.into(),
            language: language.into(),
            cwd: "/".into(),
            created_at: String::new(),
        }
    }

    #[test]
    fn a_context_gone_takes_its_count_and_its_default_with_it() {
        let known = Contexts::default();
        known.saw("s", "c1", "bash");
        assert_eq!(known.settle_default("s", "bash", "c1".into()), "c1");
        assert_eq!(known.settle_default("s", "bash", "c2".into()), "c1");
        assert_eq!((known.count("s", "c1"), known.count("s", "c1")), (1, 2));
        known.forget("s", "c1");
        assert_eq!(known.default_of("s", "bash"), None);
        assert_eq!(known.language_of("s", "c1"), None);
        assert_eq!(known.count("s", "c1"), 1);
        known.restarted("s", "c1");
        assert_eq!(known.count("s", "c1"), 1);
    }

    #[test]
    fn a_count_after_a_concurrent_forget_does_not_bring_the_context_back() {
        let known = Contexts::default();
        known.saw("s", "c1", "bash");
        known.settle_default("s", "bash", "c1".into());
        // A run ended on c1 while a delete forgot it: the count notes nothing.
        known.forget("s", "c1");
        assert_eq!(known.count("s", "c1"), 1);
        assert_eq!(
            known.language_of("s", "c1"),
            None,
            "no context without a language"
        );
        assert_eq!(known.count("s", "c1"), 1);
        assert_eq!(known.default_of("s", "bash"), None);
    }

    #[test]
    fn a_listing_notes_new_contexts_and_forgets_none_it_did_not_see() {
        let known = Contexts::default();
        known.saw("t", "other", "bash");
        // A listing read before a concurrent first run made its default...
        let listing = [record("new", "bash")];
        known.saw("s", "made", "python3");
        assert_eq!(known.settle_default("s", "python3", "made".into()), "made");
        // ...does not forget it when it is noted: the run's state lives in that context.
        known.listed("s", &listing);
        assert_eq!(known.default_of("s", "python3").as_deref(), Some("made"));
        assert_eq!(known.language_of("s", "made").as_deref(), Some("python3"));
        assert_eq!(known.language_of("s", "new").as_deref(), Some("bash"));
        assert_eq!(known.language_of("t", "other").as_deref(), Some("bash"));
        known.forget_sandbox("s");
        assert_eq!(known.language_of("s", "new"), None);
    }
}
