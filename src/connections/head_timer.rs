//! hyper's HTTP/1 header timer for one connection, with one timer-wheel entry for the
//! connection's life rather than one per request.
//!
//! hyper arms its header timer each time it waits for a request head and drops it once the
//! head has come. With tokio's timer that is, per request, a new `Sleep` entered into the
//! runtime's timer wheel and taken out again, each under the wheel's lock: about 5% of a
//! `GET /health` under load (`benches/pipeline.rs`, with and without the timer). Here the
//! deadline a request's wait gets is a plain `Instant`, and the connection keeps one tokio
//! `Sleep` that the next wait takes over. Deadlines only move later, so a kept entry rings
//! early at worst (at an earlier request's deadline): it is then moved to the current
//! deadline, once per header timeout of an idle connection.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

type WheelEntry = Pin<Box<tokio::time::Sleep>>;

/// The connection's timer (one per connection, given to its hyper builder).
#[derive(Clone, Default)]
pub(super) struct HeadTimer {
    /// The wheel entry between two waits.
    kept: Arc<Mutex<Option<WheelEntry>>>,
}

impl hyper::rt::Timer for HeadTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(self.now() + duration)
    }

    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        let entry = self.kept.lock().unwrap_or_else(|e| e.into_inner()).take();
        Box::pin(HeadDeadline {
            deadline,
            entry,
            kept: self.kept.clone(),
        })
    }

    /// tokio's clock, as hyper's own tokio timer has it (a runtime with paused time included).
    fn now(&self) -> Instant {
        tokio::time::Instant::now().into_std()
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<HeadDeadline>() {
            Some(waiting) => waiting.get_mut().deadline = new_deadline,
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// One wait for a request head: ready at `deadline`.
struct HeadDeadline {
    deadline: Instant,
    /// Entered into the wheel on the first poll (or taken over from the connection), at
    /// `deadline` or earlier.
    entry: Option<WheelEntry>,
    kept: Arc<Mutex<Option<WheelEntry>>>,
}

impl hyper::rt::Sleep for HeadDeadline {}

impl Future for HeadDeadline {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let deadline = tokio::time::Instant::from_std(this.deadline);
        let entry = this
            .entry
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        // A kept entry is set at this wait's deadline or an earlier one (deadlines only
        // move later); one set later (by a reset to an earlier deadline) is moved back.
        if entry.deadline() > deadline {
            entry.as_mut().reset(deadline);
        }
        loop {
            if entry.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if tokio::time::Instant::now() >= deadline {
                return Poll::Ready(());
            }
            // Rang at an earlier wait's deadline: on to this one's.
            entry.as_mut().reset(deadline);
        }
    }
}

impl Drop for HeadDeadline {
    fn drop(&mut self) {
        if let Some(entry) = self.entry.take() {
            *self.kept.lock().unwrap_or_else(|e| e.into_inner()) = Some(entry);
        }
    }
}

#[cfg(test)]
mod tests {
    //! In real time, checking only that nothing rings early (a loaded machine can only make
    //! a wait longer), with deadlines short enough to keep the tests quick.
    use super::*;
    use hyper::rt::Timer;
    use std::future::poll_fn;

    const WAIT: Duration = Duration::from_millis(300);

    /// Polls `sleep` once: whether it is ready.
    async fn ready(sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>) -> bool {
        poll_fn(|cx| Poll::Ready(sleep.as_mut().poll(cx).is_ready())).await
    }

    #[tokio::test]
    async fn a_wait_rings_at_its_deadline_and_not_before() {
        let timer = HeadTimer::default();
        let started = Instant::now();
        let mut wait = timer.sleep(WAIT);
        assert!(!ready(&mut wait).await);
        (&mut wait).await;
        assert!(started.elapsed() >= WAIT, "{:?}", started.elapsed());
        assert!(ready(&mut wait).await, "and stays rung");
    }

    /// The next request's wait takes over the kept entry, whose deadline (the earlier
    /// wait's) passes first: the wait goes on to its own deadline.
    #[tokio::test]
    async fn a_kept_entry_that_rings_early_does_not_end_a_later_wait() {
        let timer = HeadTimer::default();
        let mut first = timer.sleep(WAIT);
        assert!(!ready(&mut first).await);
        drop(first);
        assert!(timer.kept.lock().unwrap().is_some(), "the entry is kept");
        tokio::time::sleep(WAIT / 2).await;
        let started = Instant::now();
        let mut second = timer.sleep(WAIT);
        assert!(timer.kept.lock().unwrap().is_none(), "and taken over");
        (&mut second).await;
        assert!(
            started.elapsed() >= WAIT,
            "rang after {:?}, at the first wait's deadline",
            started.elapsed()
        );
    }

    #[tokio::test]
    async fn a_reset_wait_rings_at_its_new_deadline() {
        let timer = HeadTimer::default();
        let started = Instant::now();
        let mut wait = timer.sleep(WAIT / 3);
        assert!(!ready(&mut wait).await);
        timer.reset(&mut wait, timer.now() + WAIT);
        (&mut wait).await;
        assert!(started.elapsed() >= WAIT, "{:?}", started.elapsed());
    }
}
