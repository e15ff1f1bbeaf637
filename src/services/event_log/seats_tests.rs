//! Seated readers: the log writes their frames from one task, hands a seat back when its
//! sink cannot take a batch or the stream's end was written, and never loses or repeats
//! an event between the seat and the reader.

use super::seats::{self, MAX_BATCH, Offered, Sink};
use super::{Event, EventLog};
use serde_json::json;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A log behind an `Arc`, as a session holds it.
struct Owner(EventLog);

impl AsRef<EventLog> for Owner {
    fn as_ref(&self) -> &EventLog {
        &self.0
    }
}

/// Records the sequence numbers of each batch and answers what it is told to.
#[derive(Clone)]
struct Recorder {
    batches: Arc<Mutex<Vec<Vec<u64>>>>,
    answer: Arc<Mutex<Offered>>,
}

impl Recorder {
    fn new(answer: Offered) -> Recorder {
        Recorder {
            batches: Arc::default(),
            answer: Arc::new(Mutex::new(answer)),
        }
    }

    fn batches(&self) -> Vec<Vec<u64>> {
        self.batches.lock().unwrap().clone()
    }
}

impl Sink for Recorder {
    fn offer(&self, events: &[Arc<Event>]) -> Offered {
        let answer = *self.answer.lock().unwrap();
        if answer != Offered::Refused {
            self.batches
                .lock()
                .unwrap()
                .push(events.iter().map(|e| e.seq).collect());
        }
        answer
    }
}

fn never_ends(_: &Event) -> bool {
    false
}

fn ends_at_stop(event: &Event) -> bool {
    event.kind == "stop"
}

fn owner() -> Arc<Owner> {
    Arc::new(Owner(EventLog::new("agsess_seats", 100)))
}

/// Lets the writer task run until `done` holds (or fails after a while).
async fn until(what: &str, done: impl Fn() -> bool) {
    for _ in 0..2000 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("never: {what}");
}

/// Waits until the writer hands the seat back (or fails after a while).
async fn handed_back(seat: &seats::Seat) {
    tokio::time::timeout(Duration::from_secs(5), seat.returned())
        .await
        .expect("handed back");
}

/// Whether the seat was handed back (without waiting).
fn returned(seat: &seats::Seat) -> bool {
    futures::FutureExt::now_or_never(seat.returned()).is_some()
}

#[tokio::test]
async fn a_seated_reader_gets_each_burst_as_one_batch_and_is_not_woken() {
    let owner = owner();
    let sink = Recorder::new(Offered::Written);
    let seat = seats::seat(&owner, 0, Box::new(sink.clone()), never_ends);
    owner.0.push("a", json!({}));
    until("the first push written", || sink.batches().len() == 1).await;
    {
        let _burst = owner.0.burst();
        owner.0.push("b", json!({}));
        owner.0.push("c", json!({}));
    }
    until("the burst written", || sink.batches().len() == 2).await;
    assert_eq!(sink.batches(), [vec![1], vec![2, 3]]);
    assert!(
        !returned(&seat),
        "a seat whose sink takes everything is not handed back"
    );
    let left = seat.leave();
    assert_eq!((left.position, left.ended), (3, false));
    owner.0.push("d", json!({}));
    until("the writer let the seat go and ended", || {
        owner.0.seats.count() == 0
    })
    .await;
    assert_eq!(
        sink.batches().len(),
        2,
        "nothing written after the reader left"
    );
}

#[tokio::test]
async fn a_seat_behind_the_log_is_caught_up_at_once_and_the_end_hands_it_back() {
    let owner = owner();
    for kind in ["a", "b"] {
        owner.0.push(kind, json!({}));
    }
    let sink = Recorder::new(Offered::Written);
    let seat = seats::seat(&owner, 1, Box::new(sink.clone()), ends_at_stop);
    until("caught up", || sink.batches() == [vec![2]]).await;
    owner.0.push("stop", json!({}));
    owner.0.push("after", json!({}));
    handed_back(&seat).await;
    assert_eq!(
        sink.batches(),
        [vec![2], vec![3]],
        "written up to the end, not past it"
    );
    let left = seat.leave();
    assert_eq!((left.position, left.ended), (3, true));
}

#[tokio::test]
async fn a_refused_batch_hands_the_seat_back_where_it_was() {
    let owner = owner();
    let sink = Recorder::new(Offered::Refused);
    let seat = seats::seat(&owner, 0, Box::new(sink.clone()), never_ends);
    owner.0.push("a", json!({}));
    handed_back(&seat).await;
    let left = seat.leave();
    assert_eq!(
        (left.position, left.ended),
        (0, false),
        "the reader sends event 1 itself"
    );
}

#[tokio::test]
async fn an_owed_batch_counts_as_sent_and_hands_the_seat_back() {
    let owner = owner();
    let sink = Recorder::new(Offered::Owed);
    let seat = seats::seat(&owner, 0, Box::new(sink.clone()), never_ends);
    owner.0.push("a", json!({}));
    handed_back(&seat).await;
    assert_eq!(
        seat.leave().position,
        1,
        "its connection writes the rest of event 1"
    );
}

#[tokio::test]
async fn a_position_older_than_the_kept_history_is_the_readers_to_tell() {
    let owner = Arc::new(Owner(EventLog::new("agsess_cap", 2)));
    for kind in ["a", "b", "c"] {
        owner.0.push(kind, json!({}));
    }
    let sink = Recorder::new(Offered::Written);
    let seat = seats::seat(&owner, 0, Box::new(sink.clone()), never_ends);
    handed_back(&seat).await;
    assert_eq!(seat.leave().position, 0);
    assert!(
        sink.batches().is_empty(),
        "no frame past a gap the reader has not told"
    );
}

#[tokio::test]
async fn a_long_burst_goes_out_in_batches_without_waiting_for_another_push() {
    let owner = owner();
    let sink = Recorder::new(Offered::Written);
    let _seat = seats::seat(&owner, 0, Box::new(sink.clone()), never_ends);
    {
        let _burst = owner.0.burst();
        for _ in 0..MAX_BATCH + 5 {
            owner.0.push("a", json!({}));
        }
    }
    until("both batches", || sink.batches().len() == 2).await;
    let sizes: Vec<usize> = sink.batches().iter().map(Vec::len).collect();
    assert_eq!(sizes, [MAX_BATCH, 5]);
    let all: Vec<u64> = sink.batches().concat();
    assert_eq!(all, (1..=(MAX_BATCH as u64 + 5)).collect::<Vec<_>>());
}

#[tokio::test]
async fn the_writer_ends_with_its_last_seat_and_a_new_seat_starts_another() {
    let owner = owner();
    let first = Recorder::new(Offered::Written);
    let seat = seats::seat(&owner, 0, Box::new(first.clone()), never_ends);
    seat.leave();
    owner.0.push("a", json!({}));
    until("no seat left", || owner.0.seats.count() == 0).await;
    let second = Recorder::new(Offered::Written);
    let _seat = seats::seat(&owner, 1, Box::new(second.clone()), never_ends);
    owner.0.push("b", json!({}));
    until("the new seat written", || second.batches() == [vec![2]]).await;
    assert!(first.batches().is_empty());
}

#[tokio::test]
async fn a_long_pass_lets_the_thread_s_other_tasks_run_between_stretches() {
    const SEATED: usize = 600;
    let owner = owner();
    // One recorder behind every seat: its batches are the seats written so far.
    let written = Recorder::new(Offered::Written);
    let _seats: Vec<_> = (0..SEATED)
        .map(|_| seats::seat(&owner, 0, Box::new(written.clone()), never_ends))
        .collect();
    // The writer has looked at its new seats (nothing to write) and waits for a push.
    until("the seats taken", || owner.0.seats.count() == SEATED).await;
    tokio::time::sleep(Duration::from_millis(5)).await;
    owner.0.push("a", json!({}));
    // On this one thread the probe runs after the writer's first stretch, not its end.
    let probe = {
        let written = written.clone();
        tokio::spawn(async move { written.batches().len() })
    };
    until("every seat written", || written.batches().len() == SEATED).await;
    let at = probe.await.unwrap();
    assert!(
        at < SEATED,
        "another task ran during the pass (after {at} of {SEATED} seats)"
    );
}
