//! Seated readers: live readers of a log whose frames the log writes itself, from one task
//! per log, instead of each reader's own task being woken to write them.
//!
//! Why: a thousand followers of a session each woken for each event cost a thousand task
//! wakes and polls per event before a single write, where one task writing the frame to a
//! thousand sockets is the physical floor (`benches/fan_out/mod.rs`). A reader with nothing
//! left to send takes a seat; the log's writer hands each new batch of events to every
//! seated reader's [`Sink`], which writes without waiting. A sink that cannot take a batch
//! whole (its socket is full, its connection is busy) ends the seat and wakes its reader,
//! which goes on sending by itself from the seat's position: nothing is lost or sent twice.
//! The log knows nothing of what a sink writes to (HTTP framing is the sink's).

use super::{Event, EventLog};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Where a seated reader's frames go.
pub trait Sink: Send + Sync + 'static {
    /// Takes the frames of `events`, in order, without waiting.
    fn offer(&self, events: &[Arc<Event>]) -> Offered;
}

/// What a sink did with a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offered {
    /// Written whole.
    Written,
    /// Taken, part of it still to be written by the sink's connection, which its reader's
    /// task drives: the seat ends and the reader is woken.
    Owed,
    /// Nothing taken: the seat ends and the reader sends them itself.
    Refused,
}

/// The most events offered in one batch (a sink may write each as a slice of its own).
pub const MAX_BATCH: usize = 32;

/// Seats written to between two yields of the writer.
const SEATS_PER_TURN: usize = 256;

/// A reader's seat: taken at a position, ended by the reader ([`Seat::leave`]) or by the
/// log's writer (the reader is woken: [`Seat::returned`]).
pub struct Seat {
    state: Mutex<SeatState>,
    returned: tokio::sync::Notify,
    sink: Box<dyn Sink>,
    /// The event after which the reader's stream ends: written, then the seat ends.
    ends: fn(&Event) -> bool,
}

struct SeatState {
    /// The last event the reader's stream holds (sent by it, or written by the sink).
    position: u64,
    seated: bool,
    /// The event that ends the stream was written.
    ended: bool,
}

/// Where a seat's reader stands once it has left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Left {
    pub position: u64,
    pub ended: bool,
}

impl Seat {
    /// Until the writer ends the seat (at once if it already has).
    pub async fn returned(&self) {
        self.returned.notified().await;
    }

    /// Ends the seat (if the writer has not): from here only the reader sends.
    pub fn leave(&self) -> Left {
        let mut state = self.lock();
        state.seated = false;
        Left {
            position: state.position,
            ended: state.ended,
        }
    }

    fn lock(&self) -> MutexGuard<'_, SeatState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn seated(&self) -> bool {
        self.lock().seated
    }

    /// Ends the seat from the writer's side and wakes the reader.
    fn give_back(&self, state: &mut SeatState) {
        state.seated = false;
        self.returned.notify_one();
    }
}

/// A log's seats and whether its writer task runs.
#[derive(Default)]
pub(super) struct Seats {
    list: Mutex<SeatList>,
    /// A seat was taken: the writer looks at once (it may be behind the log).
    poke: tokio::sync::Notify,
    /// Batches sinks took whole, for the tests' proof that readers were seated.
    #[cfg(test)]
    written: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct SeatList {
    seats: Vec<Arc<Seat>>,
    /// Taken since the writer last looked.
    fresh: Vec<Arc<Seat>>,
    writing: bool,
}

impl Seats {
    fn lock(&self) -> MutexGuard<'_, SeatList> {
        self.list.lock().unwrap_or_else(PoisonError::into_inner)
    }

    #[cfg(test)]
    pub(super) fn written(&self) -> u64 {
        self.written.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[cfg(test)]
    pub(super) fn count(&self) -> usize {
        let list = self.lock();
        list.seats.len() + list.fresh.len()
    }
}

/// Seats a reader of `owner`'s log whose stream holds the events up to `position`; the
/// log's writer task starts with the first seat and ends with the last. The reader waits
/// on [`Seat::returned`] and calls [`Seat::leave`] before it sends anything itself.
pub fn seat<O>(
    owner: &Arc<O>,
    position: u64,
    sink: Box<dyn Sink>,
    ends: fn(&Event) -> bool,
) -> Arc<Seat>
where
    O: AsRef<EventLog> + Send + Sync + 'static,
{
    let log = (**owner).as_ref();
    let seat = Arc::new(Seat {
        state: Mutex::new(SeatState {
            position,
            seated: true,
            ended: false,
        }),
        returned: tokio::sync::Notify::new(),
        sink,
        ends,
    });
    let start = {
        let mut list = log.seats.lock();
        list.fresh.push(Arc::clone(&seat));
        !std::mem::replace(&mut list.writing, true)
    };
    if start {
        tokio::spawn(write_seats(Arc::clone(owner)));
    } else {
        log.seats.poke.notify_one();
    }
    seat
}

/// The log's writer: after each push (or burst), each seated reader is handed what came
/// after its position. Ends when no seat is left.
async fn write_seats<O: AsRef<EventLog> + Send + Sync + 'static>(owner: Arc<O>) {
    let log = (*owner).as_ref();
    let mut newest = log.subscribe();
    // After a push every seat is looked at; after a new seat only the new ones (a thousand
    // readers seating one by one would otherwise cost a million looks).
    let mut all = true;
    loop {
        let seats = {
            let mut list = log.seats.lock();
            let fresh = std::mem::take(&mut list.fresh);
            list.seats.extend(fresh.iter().cloned());
            if all {
                list.seats.retain(|seat| seat.seated());
            }
            if list.seats.is_empty() {
                list.writing = false;
                return;
            }
            if all { list.seats.clone() } else { fresh }
        };
        // Readers seated together stand at the same position: one read of the log for all.
        let mut batch: Option<(u64, super::Slice)> = None;
        let mut behind = false;
        for (n, seat) in seats.iter().enumerate() {
            behind |= write_to(log, seat, &mut batch);
            if n % SEATS_PER_TURN == SEATS_PER_TURN - 1 {
                // A pass over thousands of seats takes tens of milliseconds: the thread's
                // other tasks get their turn between stretches of it.
                tokio::task::yield_now().await;
            }
        }
        if behind {
            // A batch was cut at `MAX_BATCH`: the rest now, not at the next push.
            tokio::task::yield_now().await;
            all = true;
            continue;
        }
        all = tokio::select! {
            changed = newest.changed() => {
                if changed.is_err() {
                    // Cannot happen (the sender lives in the log, which `owner` keeps);
                    // if it did, the next seat would start a writer again.
                    log.seats.lock().writing = false;
                    return;
                }
                true
            }
            () = log.seats.poke.notified() => false,
        };
    }
}

/// Hands `seat` the events after its position; whether it still has more to take.
fn write_to(log: &EventLog, seat: &Seat, batch: &mut Option<(u64, super::Slice)>) -> bool {
    let mut state = seat.lock();
    if !state.seated {
        return false;
    }
    if batch.as_ref().is_none_or(|(at, _)| *at != state.position) {
        *batch = Some((state.position, log.after(state.position)));
    }
    let Some((_, slice)) = batch.as_ref() else {
        return false;
    };
    if slice.dropped.is_some() {
        // Its position is older than what the log keeps: the reader tells the gap.
        seat.give_back(&mut state);
        return false;
    }
    let mut events = &slice.events[..slice.events.len().min(MAX_BATCH)];
    let end = events.iter().position(|e| (seat.ends)(e));
    if let Some(i) = end {
        events = &events[..=i];
    }
    let Some(last) = events.last() else {
        return false;
    };
    match seat.sink.offer(events) {
        Offered::Written => {
            #[cfg(test)]
            log.seats
                .written
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            state.position = last.seq;
            if end.is_some() {
                state.ended = true;
                seat.give_back(&mut state);
                return false;
            }
            slice.events.len() > events.len()
        }
        Offered::Owed => {
            state.position = last.seq;
            state.ended = end.is_some();
            seat.give_back(&mut state);
            false
        }
        Offered::Refused => {
            seat.give_back(&mut state);
            false
        }
    }
}
