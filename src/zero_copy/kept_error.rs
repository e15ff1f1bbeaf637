//! A thread's error, kept to be told to whoever waits on it, as often as asked (an
//! `io::Error` is not `Clone`): the drain's and the sending thread's; and the guard that
//! stops such a thread's work if the thread unwinds.

use std::io;
use std::sync::Mutex;

#[derive(Debug, Default)]
pub(super) struct KeptError(Mutex<Option<io::Error>>);

impl KeptError {
    pub(super) fn keep(&self, error: io::Error) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = Some(error);
    }

    /// A copy of the kept error (its OS code where it has one), or `otherwise` when none
    /// was kept.
    pub(super) fn told(&self, otherwise: &'static str) -> io::Error {
        let error = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match error.as_ref() {
            Some(e) => e
                .raw_os_error()
                .map(io::Error::from_raw_os_error)
                .unwrap_or_else(|| io::Error::new(e.kind(), e.to_string())),
            None => io::Error::other(otherwise),
        }
    }
}

/// Runs its closure if the thread unwinds while it is held (the drain and the sending thread
/// have no panicking path today): whoever waits then gets an error instead of waiting for
/// bytes that never come.
pub(super) struct OnUnwind<F: FnMut()>(pub(super) F);

impl<F: FnMut()> Drop for OnUnwind<F> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            (self.0)();
        }
    }
}
