//! A session's event log: every event gets the next sequence number and is kept (up to a
//! cap) for replay; live readers wait on a watch of the newest number and read from the
//! log, so a slow reader costs no memory beyond the capped log itself. A live reader with
//! nothing left to send may instead take a seat ([`seats`]): the log writes its frames.

use serde_json::{Value, json};
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use tokio::sync::watch;

pub mod seats;
#[cfg(test)]
mod seats_tests;

/// Follows a log from a position, handed each event in order as it is appended, until it
/// answers `false` (a session's webhook deliveries, a response's translation of its
/// session's events). It runs in the pusher's task, under the log's lock: no task and no
/// wake stand between an event and what the follower makes of it. So it must never block,
/// nor take a lock that anyone holds while pushing to this log. A follower that panics is
/// logged and skipped for that event; it, the log and its readers go on.
pub trait Follower: Send {
    fn event(&mut self, kind: &str, event: &Value) -> bool;
}

pub struct EventLog {
    inner: Mutex<Inner>,
    newest: watch::Sender<u64>,
    /// Added to every event of a session's log; `None` for response streams.
    session_id: Option<String>,
    cap: usize,
    /// Open bursts: while any is open, pushes wait to wake readers until it closes.
    bursts: std::sync::atomic::AtomicUsize,
    /// Readers whose frames the log writes itself ([`seats`]).
    seats: seats::Seats,
}

/// Events pushed together wake each reader once (see `EventLog::burst`).
pub struct Burst<'a>(&'a EventLog);

impl Drop for Burst<'_> {
    fn drop(&mut self) {
        if self
            .0
            .bursts
            .fetch_sub(1, std::sync::atomic::Ordering::AcqRel)
            == 1
        {
            self.0.newest.send_modify(|_| {});
        }
    }
}

struct Inner {
    events: VecDeque<Arc<Event>>,
    next_seq: u64,
    followers: Vec<Box<dyn Follower>>,
}

#[derive(Debug)]
pub struct Event {
    pub seq: u64,
    pub kind: String,
    /// The whole SSE frame, rendered once and shared by every reader.
    pub frame: bytes::Bytes,
    /// Where the JSON payload (`data:`) lies in `frame`.
    data: std::ops::Range<usize>,
}

impl Event {
    pub fn data(&self) -> &str {
        std::str::from_utf8(&self.frame[self.data.clone()]).unwrap_or_default()
    }

    /// The session settled: a live reader stops here.
    pub fn settles(&self) -> bool {
        matches!(
            self.kind.as_str(),
            "agent.session.idle" | "agent.session.failed"
        )
    }
}

/// What a reader gets for a position: the events after it, and whether some were dropped.
pub struct Slice {
    pub events: Vec<Arc<Event>>,
    pub dropped: Option<(u64, u64)>,
}

impl EventLog {
    pub fn new(session_id: &str, cap: usize) -> EventLog {
        let (newest, _) = watch::channel(0);
        EventLog {
            inner: Mutex::new(Inner {
                events: VecDeque::new(),
                next_seq: 1,
                followers: Vec::new(),
            }),
            newest,
            session_id: Some(session_id.to_owned()),
            cap: cap.max(1),
            bursts: Default::default(),
            seats: Default::default(),
        }
    }

    /// A log whose events carry `type` and `sequence_number` only (response streams).
    pub fn plain(cap: usize) -> EventLog {
        let mut log = EventLog::new("", cap);
        log.session_id = None;
        log
    }

    /// Appends an event of `kind` with the given members; returns its sequence number.
    pub fn push(&self, kind: &str, mut body: Value) -> u64 {
        let mut inner = self.lock();
        let seq = inner.next_seq;
        inner.next_seq += 1;
        let mut event = match &self.session_id {
            Some(session_id) => json!({
                "type": kind,
                "event_id": format!("evt_{seq}"),
                "sequence_number": seq,
                "session_id": session_id,
            }),
            None => json!({"type": kind, "sequence_number": seq}),
        };
        if let (Some(obj), Some(extra)) = (event.as_object_mut(), body.as_object_mut()) {
            obj.append(extra);
        }
        inner
            .followers
            .retain_mut(|follower| goes_on(follower.as_mut(), kind, &event));
        let (frame, data) = render(seq, kind, &event);
        inner.events.push_back(Arc::new(Event {
            seq,
            kind: kind.to_owned(),
            frame,
            data,
        }));
        while inner.events.len() > self.cap {
            inner.events.pop_front();
        }
        drop(inner);
        if self.bursts.load(std::sync::atomic::Ordering::Acquire) > 0 {
            // Recorded without waking anyone: the burst's end wakes readers once for all.
            self.newest.send_if_modified(|newest| {
                *newest = seq;
                false
            });
        } else {
            self.newest.send_replace(seq);
        }
        seq
    }

    /// Until the returned guard drops, pushes wake no reader; then all are woken once. A
    /// thousand followers of a session then cost one wake each per burst of events, not
    /// one per event.
    pub fn burst(&self) -> Burst<'_> {
        self.bursts
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        Burst(self)
    }

    /// Hands `follower` the kept events after `after`, then every event appended, until it
    /// answers `false`. Under the lock throughout, so it misses none and sees none twice.
    pub fn follow(&self, after: u64, mut follower: Box<dyn Follower>) {
        let mut inner = self.lock();
        for e in kept_after(&inner, after) {
            let Ok(event) = serde_json::from_str::<Value>(e.data()) else {
                continue;
            };
            if !goes_on(follower.as_mut(), &e.kind, &event) {
                return;
            }
        }
        inner.followers.push(follower);
    }

    /// Events with a sequence number above `after`.
    pub fn after(&self, after: u64) -> Slice {
        let inner = self.lock();
        let oldest = oldest(&inner);
        let dropped = (after + 1 < oldest).then_some((after + 1, oldest - 1));
        let events = kept_after(&inner, after).cloned().collect();
        Slice { events, dropped }
    }

    /// The log's lock. A panic while it was held (none of our code panics under it, and a
    /// follower's panic is caught) cannot have left the log half-written: every change
    /// under it is one push or pop, so a poisoned lock is taken as it is.
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Batches the log wrote to seated readers' sinks ([`seats`]).
    #[cfg(test)]
    pub(crate) fn seated_batches(&self) -> u64 {
        self.seats.written()
    }

    pub fn newest(&self) -> u64 {
        *self.newest.borrow()
    }

    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.newest.subscribe()
    }
}

/// The SSE frame of an event and where its JSON lies in it, written into one buffer: every
/// event of every turn passes here, and JSON made through `Display` and then copied into
/// a second string cost twice what writing it once in place does.
fn render(seq: u64, kind: &str, event: &Value) -> (bytes::Bytes, std::ops::Range<usize>) {
    use std::io::Write;
    let mut frame = Vec::with_capacity(256);
    // Writes to a `Vec` cannot fail, nor can a `Value` fail to serialize (its keys are
    // strings and its numbers finite); were it ever to, the data would read `null`.
    let _ = write!(frame, "id: {seq}\nevent: {kind}\ndata: ");
    let start = frame.len();
    if serde_json::to_writer(&mut frame, event).is_err() {
        frame.truncate(start);
        frame.extend_from_slice(b"null");
    }
    let data = start..frame.len();
    frame.extend_from_slice(b"\n\n");
    (bytes::Bytes::from(frame), data)
}

/// The sequence number of the oldest event kept (the next one when none is).
fn oldest(inner: &Inner) -> u64 {
    inner.events.front().map_or(inner.next_seq, |e| e.seq)
}

/// The kept events with a sequence number above `after`. Sequence numbers are contiguous:
/// the first is found by arithmetic, so a live reader's wake costs nothing for the history
/// it already has.
fn kept_after(inner: &Inner, after: u64) -> impl Iterator<Item = &Arc<Event>> {
    let skip = usize::try_from((after + 1).saturating_sub(oldest(inner))).unwrap_or(usize::MAX);
    inner.events.range(skip.min(inner.events.len())..)
}

/// Hands an event to a follower: whether it goes on following. A panic is logged and the
/// event skipped for it, so it neither poisons the log nor reaches the caller that pushed,
/// and the follower (a response still to be ended, webhooks still to be delivered) goes on.
fn goes_on(follower: &mut dyn Follower, kind: &str, event: &Value) -> bool {
    catch_unwind(AssertUnwindSafe(|| follower.event(kind, event))).unwrap_or_else(|_| {
        tracing::error!(
            kind,
            sequence_number = event["sequence_number"].as_u64(),
            "an event log's follower panicked; the event is skipped for it"
        );
        true
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records the sequence numbers it is handed; stops after an event of kind `stop`, and
    /// panics at one of kind `boom`.
    struct Recorder(Arc<Mutex<Vec<u64>>>);

    impl Follower for Recorder {
        fn event(&mut self, kind: &str, event: &Value) -> bool {
            assert_ne!(kind, "boom", "a follower's bug");
            let seq = event["sequence_number"].as_u64().expect("numbered");
            self.0.lock().unwrap().push(seq);
            kind != "stop"
        }
    }

    fn recorder() -> (Box<Recorder>, Arc<Mutex<Vec<u64>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        (Box::new(Recorder(seen.clone())), seen)
    }

    #[test]
    fn a_follower_sees_what_came_after_its_position_then_each_push_until_it_stops() {
        let log = EventLog::new("agsess_f", 100);
        for _ in 0..3 {
            log.push("t", json!({}));
        }
        let (follower, seen) = recorder();
        log.follow(1, follower);
        assert_eq!(
            *seen.lock().unwrap(),
            [2, 3],
            "the kept events after 1, at once"
        );
        log.push("t", json!({}));
        log.push("stop", json!({}));
        log.push("t", json!({}));
        assert_eq!(
            *seen.lock().unwrap(),
            [2, 3, 4, 5],
            "nothing after it stopped"
        );
        assert!(
            log.lock().followers.is_empty(),
            "a stopped follower is let go"
        );

        // One that stops among the kept events is never kept.
        let (follower, seen) = recorder();
        let log = EventLog::new("agsess_g", 100);
        log.push("stop", json!({}));
        log.follow(0, follower);
        assert_eq!(*seen.lock().unwrap(), [1]);
        assert!(log.lock().followers.is_empty());
    }

    #[test]
    fn a_follower_that_panics_while_it_catches_up_goes_on_live() {
        let log = EventLog::new("agsess_p", 100);
        let (first, first_seen) = recorder();
        let (second, second_seen) = recorder();
        log.follow(0, first);
        log.push("boom", json!({}));
        log.follow(0, second);
        assert_eq!(
            *second_seen.lock().unwrap(),
            Vec::<u64>::new(),
            "the kept event it panicked on is skipped for it"
        );
        let (third, third_seen) = recorder();
        log.follow(1, third);
        log.push("t", json!({}));
        assert_eq!(*first_seen.lock().unwrap(), [2]);
        assert_eq!(*second_seen.lock().unwrap(), [2]);
        assert_eq!(
            *third_seen.lock().unwrap(),
            [2],
            "a follower that came later goes on"
        );
        assert_eq!(log.after(0).events.len(), 2, "the log kept both events");
    }

    #[tokio::test]
    async fn a_burst_wakes_readers_once_at_its_end() {
        let log = EventLog::new("agsess_1", 100);
        let mut reader = log.subscribe();
        reader.borrow_and_update();
        {
            let _burst = log.burst();
            log.push("a", json!({}));
            log.push("b", json!({}));
            assert!(!reader.has_changed().unwrap(), "no wake inside the burst");
            assert_eq!(log.newest(), 2, "the position is already visible");
        }
        assert!(reader.has_changed().unwrap(), "one wake when it ends");
        reader.borrow_and_update();
        log.push("c", json!({}));
        assert!(
            reader.has_changed().unwrap(),
            "outside a burst every push wakes"
        );
        assert_eq!(log.after(0).events.len(), 3);
    }

    #[test]
    fn sequence_numbers_and_replay() {
        let log = EventLog::new("agsess_x", 3);
        for i in 0..5 {
            log.push("t", json!({"n": i}));
        }
        let slice = log.after(0);
        assert_eq!(
            slice.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [3, 4, 5]
        );
        assert_eq!(slice.dropped, Some((1, 2)));
        let slice = log.after(3);
        assert_eq!(
            slice.events.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [4, 5]
        );
        assert_eq!(slice.dropped, None);
        let v: Value = serde_json::from_str(slice.events[0].data()).unwrap();
        assert!(
            slice.events[0]
                .frame
                .starts_with(b"id: 4\nevent: t\ndata: {")
        );
        assert_eq!(v["event_id"], "evt_4");
        assert_eq!(v["session_id"], "agsess_x");
        assert_eq!(v["n"], 3);
    }

    #[test]
    fn a_follower_from_the_start_sees_every_event_once_in_order() {
        struct Seen(Arc<Mutex<Vec<String>>>);
        impl Follower for Seen {
            fn event(&mut self, kind: &str, event: &Value) -> bool {
                self.0
                    .lock()
                    .unwrap()
                    .push(format!("{kind}:{}", event["n"]));
                true
            }
        }
        let log = EventLog::new("agsess_x", 10);
        log.push("a", json!({"n": 1}));
        let seen = Arc::new(Mutex::new(Vec::new()));
        log.follow(0, Box::new(Seen(seen.clone())));
        log.push("b", json!({"n": 2}));
        assert_eq!(*seen.lock().unwrap(), ["a:1", "b:2"]);
    }

    #[test]
    fn a_panicking_follower_neither_poisons_the_log_nor_loses_events() {
        struct PanicsFirst(Arc<Mutex<Vec<u64>>>);
        impl Follower for PanicsFirst {
            fn event(&mut self, _: &str, event: &Value) -> bool {
                let seq = event["sequence_number"].as_u64().unwrap_or_default();
                if seq == 1 {
                    panic!("the follower fails on its first event");
                }
                self.0.lock().unwrap().push(seq);
                true
            }
        }
        let log = EventLog::new("agsess_x", 10);
        let seen = Arc::new(Mutex::new(Vec::new()));
        log.follow(0, Box::new(PanicsFirst(seen.clone())));
        for n in 1..=3 {
            assert_eq!(log.push("t", json!({"n": n})), n, "push {n} still works");
        }
        assert_eq!(
            *seen.lock().unwrap(),
            [2, 3],
            "the follower goes on after its panic"
        );
        assert_eq!(
            log.after(0)
                .events
                .iter()
                .map(|e| e.seq)
                .collect::<Vec<_>>(),
            [1, 2, 3],
            "readers see every event"
        );
        assert_eq!(log.newest(), 3);
    }
}
