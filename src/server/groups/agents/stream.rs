//! GET .../events: the session's events as server-sent events. With `after` (or
//! `Last-Event-ID`) the kept history after that position is replayed and the stream
//! closes; without it the stream follows live until the session next settles.
//!
//! The body reads the session's log directly (no task or channel per reader) and sends
//! frames rendered once for all readers, so a thousand followers cost little more than one.

use crate::error::{ApiError, ApiResult, Code, EventForm};
use crate::server::SharedState;
use crate::server::agents::session_handle::SessionHandle;
use crate::server::auth::Identity;
use crate::server::endpoints::EndpointId;
use crate::server::extract::{Path, Query};
use crate::server::openapi::op::{Answer, Doc, Event as SseEvent, json_schema};
use crate::server::route::{Bound, on};
use crate::services::event_log::seats::{self, Offered, Seat, Sink};
use crate::services::event_log::{Event, EventLog};
use crate::zero_copy::{Channel, direct};
use axum::Extension;
use axum::body::Body;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::MethodFilter;
use bytes::Bytes;
use http::HeaderMap;
use serde::Deserialize;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

pub const KEEPALIVE: Duration = Duration::from_secs(15);

/// The most handed to one connection at a time. Small enough that a reader which stops
/// reading costs little (hyper holds a few chunks, at most its write buffer), large enough
/// that a burst of small events still goes out in one write.
pub const CHUNK: usize = 32 * 1024;

/// `include_obfuscation`, which the OpenAI SDK sends, is ignored: nothing to obfuscate locally.
#[derive(Debug, Deserialize)]
pub struct StreamQuery {
    after: Option<String>,
}

/// `0`, `7` or `evt_7`.
fn position(raw: &str, param: &str) -> Result<u64, ApiError> {
    raw.trim()
        .strip_prefix("evt_")
        .unwrap_or(raw.trim())
        .parse()
        .map_err(|_| {
            ApiError::invalid(
                param,
                format!("`{raw}` is not an event position (0, N or evt_N)"),
            )
        })
}

pub async fn events_stream(
    State(app): State<SharedState>,
    Extension(identity): Extension<Identity>,
    Path(id): Path<String>,
    Query(query): Query<StreamQuery>,
    Seating(slot): Seating,
    headers: HeaderMap,
) -> ApiResult<Response> {
    let handle = app.agents.get(&identity.id, &id)?;
    let after = match (&query.after, headers.get("last-event-id")) {
        (Some(raw), _) => Some(position(raw, "after")?),
        (None, Some(v)) => Some(position(v.to_str().unwrap_or_default(), "Last-Event-ID")?),
        (None, None) => None,
    };
    let position = after.unwrap_or_else(|| handle.log.newest());
    let mut reader = Reader::new(handle, position, after.is_some());
    reader.seat_on(slot);
    Ok(sse(reader))
}

/// The connection's slot for chunks written from outside hyper, when the answer to this
/// request is a chunked body the log may write chunks into: HTTP/1.1 (an HTTP/1.0 answer
/// runs to the close), a GET (a HEAD has no body), over a connection that has one.
pub struct Seating(Option<direct::Slot>);

impl<S: Sync> axum::extract::FromRequestParts<S> for Seating {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut http::request::Parts,
        state: &S,
    ) -> Result<Seating, Self::Rejection> {
        if parts.version != http::Version::HTTP_11 || parts.method != http::Method::GET {
            return Ok(Seating(None));
        }
        let Channel(channel) = Channel::from_request_parts(parts, state).await?;
        Ok(Seating(channel.map(|c| c.direct().clone())))
    }
}

/// The streaming response for a reader.
pub fn sse<S: Source>(reader: Reader<S>) -> Response {
    let body = futures::stream::unfold(reader, |mut reader| async move {
        reader
            .next()
            .await
            .map(|chunk| (Ok::<_, std::convert::Infallible>(chunk), reader))
    });
    (
        [
            (http::header::CONTENT_TYPE, "text/event-stream"),
            (http::header::CACHE_CONTROL, "no-cache"),
        ],
        Body::from_stream(body),
    )
        .into_response()
}

/// Where a stream's events come from and when a live stream ends.
pub trait Source: Send + Sync + 'static {
    fn log(&self) -> &EventLog;
    /// The stream's subject went away (a deleted session).
    fn gone(&self) -> bool;
    /// A live stream closes after this event.
    fn ends_with(&self, event: &Event) -> bool;
    /// The gap signal for dropped positions `from..=to`.
    fn gap(&self, from: u64, to: u64) -> Bytes;
    /// A seat for a reader at `position` whose frames `sink` takes, where the source's log
    /// seats readers (`event_log::seats`).
    fn seat(&self, _position: u64, _sink: Box<dyn Sink>) -> Option<Arc<Seat>> {
        None
    }
}

impl Source for Arc<SessionHandle> {
    fn log(&self) -> &EventLog {
        &self.log
    }

    fn gone(&self) -> bool {
        self.lock().deleted
    }

    fn ends_with(&self, event: &Event) -> bool {
        event.settles()
    }

    fn gap(&self, from: u64, to: u64) -> Bytes {
        gap(&self.id, from, to)
    }

    fn seat(&self, position: u64, sink: Box<dyn Sink>) -> Option<Arc<Seat>> {
        Some(seats::seat(self, position, sink, Event::settles))
    }
}

/// A reader's connection as its seat's sink: a batch is one chunk of the answer's body.
struct Chunks(direct::Slot);

impl Sink for Chunks {
    fn offer(&self, events: &[Arc<Event>]) -> Offered {
        let mut frames: [&[u8]; seats::MAX_BATCH] = [&[]; seats::MAX_BATCH];
        for (frame, event) in frames.iter_mut().zip(events) {
            *frame = &event.frame;
        }
        match self
            .0
            .send_chunk(&frames[..events.len().min(seats::MAX_BATCH)])
        {
            direct::Sent::Written => Offered::Written,
            direct::Sent::Owed => Offered::Owed,
            direct::Sent::Refused => Offered::Refused,
        }
    }
}

pub struct Reader<S: Source> {
    source: S,
    newest: watch::Receiver<u64>,
    position: u64,
    replay_only: bool,
    pending: VecDeque<Bytes>,
    done: bool,
    /// One timer for the reader's life, not one per wait: with a thousand followers, arming
    /// a timer on every event would cost more than the event.
    keepalive: tokio::time::Interval,
    /// Where a live reader waits seated: its connection, when the log may write into it.
    chunks: Option<direct::Slot>,
    seat: Option<Arc<Seat>>,
}

impl<S: Source> Reader<S> {
    /// Events after `position`; `replay_only` closes after them, otherwise the stream
    /// follows live until the source's end event.
    pub fn new(source: S, position: u64, replay_only: bool) -> Reader<S> {
        Reader {
            newest: source.log().subscribe(),
            source,
            position,
            replay_only,
            pending: VecDeque::new(),
            done: false,
            keepalive: {
                let mut every =
                    tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                every
            },
            chunks: None,
            seat: None,
        }
    }

    /// A live reader waits seated on its connection's `slot` (`None`: the connection has
    /// none, as over HTTP/2): the log writes its frames until the stream ends or the
    /// connection cannot take them, and the reader's task is not woken for each.
    pub fn seat_on(&mut self, slot: Option<direct::Slot>) {
        self.chunks = slot.filter(|_| !self.replay_only);
    }

    async fn next(&mut self) -> Option<Bytes> {
        loop {
            if let Some(chunk) = self.take() {
                return Some(chunk);
            }
            if self.done {
                return None;
            }
            self.fill();
            if !self.pending.is_empty() || self.done {
                continue;
            }
            if self.source.gone() {
                return None;
            }
            if let Some(seat) = self.take_seat() {
                tokio::select! {
                    () = seat.returned() => {}
                    _ = self.keepalive.tick() => {
                        self.pending.push_back(Bytes::from_static(b": keep-alive\n\n"));
                    }
                }
                self.leave_seat();
                continue;
            }
            // A version pushed since the last read makes `changed` return at once: no
            // event is missed between reading the log and waiting.
            tokio::select! {
                changed = self.newest.changed() => {
                    if changed.is_err() {
                        return None;
                    }
                }
                _ = self.keepalive.tick() => {
                    self.pending.push_back(Bytes::from_static(b": keep-alive\n\n"));
                }
            }
        }
    }

    /// A seat at the reader's position (it has sent everything up to it), when its
    /// connection can take chunks and the source seats readers.
    fn take_seat(&mut self) -> Option<Arc<Seat>> {
        let slot = self.chunks.clone()?;
        // Whatever hyper holds of this answer (its head, the chunk just handed to it) is
        // written before any chunk of the seat's.
        slot.busy();
        let seat = self.source.seat(self.position, Box::new(Chunks(slot)))?;
        self.seat = Some(Arc::clone(&seat));
        Some(seat)
    }

    /// Back from the seat: the log's writes are the reader's position, and the stream ends
    /// when one of them was its end.
    fn leave_seat(&mut self) {
        if let Some(seat) = self.seat.take() {
            let left = seat.leave();
            self.position = left.position;
            self.done |= left.ended;
        }
    }

    /// The next chunk of what is pending, at most `CHUNK` bytes: a frame bigger than that
    /// goes out as slices of itself (shared, never copied), and small frames already there
    /// are coalesced into one chunk, so a burst costs one write per wake. hyper asks for
    /// the next chunk only when its own write buffer has room: a reader that does not
    /// read holds that buffer, never a copy of the backlog.
    fn take(&mut self) -> Option<Bytes> {
        let first = self.pending.front_mut()?;
        if first.len() > CHUNK {
            return Some(first.split_to(CHUNK));
        }
        // How many of the frames at the front fit in one chunk, and their size.
        let (count, size) = self
            .pending
            .iter()
            .scan(0, |size, frame| {
                *size += frame.len();
                (*size <= CHUNK).then_some(*size)
            })
            .enumerate()
            .last()
            .map_or((1, 0), |(i, size)| (i + 1, size));
        if count == 1 {
            return self.pending.pop_front();
        }
        let mut chunk = bytes::BytesMut::with_capacity(size);
        for frame in self.pending.drain(..count) {
            chunk.extend_from_slice(&frame);
        }
        Some(chunk.freeze())
    }

    /// Queues the events after the reader's position: the frames are shared with the log
    /// (a `Bytes` clone is a reference count), not copied.
    fn fill(&mut self) {
        let slice = self.source.log().after(self.position);
        if let Some((from, to)) = slice.dropped {
            self.pending.push_back(self.source.gap(from, to));
        }
        for event in &slice.events {
            self.position = event.seq;
            self.pending.push_back(event.frame.clone());
            if !self.replay_only && self.source.ends_with(event) {
                self.done = true;
                return;
            }
        }
        if self.replay_only {
            self.done = true;
        }
    }
}

impl<S: Source> Drop for Reader<S> {
    /// A stream dropped while seated (its client went) leaves its seat.
    fn drop(&mut self) {
        self.leave_seat();
    }
}

/// The typed gap signal: positions `from..=to` were dropped from the kept history. An
/// `error` event of the session stream's form, built from the `agents.events_dropped` row.
fn gap(session_id: &str, from: u64, to: u64) -> Bytes {
    let error = ApiError::new(
        Code::EventsDropped,
        format!("events {from} to {to} are no longer kept; replay continues after them"),
    )
    .with_param("after");
    let event_id = format!("evt_gap_{from}_{to}");
    Bytes::from(error.sse_event(EventForm::Session {
        session_id,
        event_id: &event_id,
    }))
}

/// Binds this file's handlers to their endpoint rows (the router asks each group).
pub(super) fn handler(id: EndpointId, f: MethodFilter) -> Option<Bound> {
    use EndpointId::*;
    Some(match id {
        AgentsSessionsEventsStream => on(f, events_stream),
        _ => return None,
    })
}

/// The OpenAPI declarations of this file's rows.
pub(super) fn doc(id: EndpointId) -> Option<&'static Doc> {
    [&STREAM].into_iter().find(|d| d.id == id)
}

/// A session's events as SSE: `id: evt_N`, `event: <type>`, `data: <the event>`.
pub(super) const SESSION_EVENTS: &[SseEvent] = &[
    SseEvent::new(
        "agent.session.created",
        "The session exists.",
        session_event,
    ),
    SseEvent::new("agent.session.in_progress", "A turn runs.", session_event),
    SseEvent::new(
        "agent.session.turn.created",
        "A turn was queued.",
        session_event,
    ),
    SseEvent::new(
        "agent.session.turn.in_progress",
        "A turn started.",
        session_event,
    ),
    SseEvent::new(
        "agent.session.turn.item.added",
        "An item of the turn began.",
        session_event,
    ),
    SseEvent::new(
        "agent.session.turn.output_text.delta",
        "Text of the answer.",
        session_event,
    ),
    SseEvent::new(
        "agent.session.turn.output_text.done",
        "The answer's text.",
        session_event,
    ),
    SseEvent::new(
        "agent.session.turn.item.done",
        "An item of the turn ended.",
        session_event,
    ),
    SseEvent::new(
        "agent.session.turn.completed",
        "The turn ended.",
        session_event,
    ),
    SseEvent::new(
        "agent.session.turn.failed",
        "The turn failed.",
        session_event,
    ),
    SseEvent::new(
        "agent.session.turn.cancelled",
        "The turn was cancelled.",
        session_event,
    ),
    SseEvent::new(
        "agent.session.subagent.created",
        "The runtime started a sub-agent.",
        session_event,
    ),
    SseEvent::new(
        "agent.session.idle",
        "The session settled: the stream of a create ends here.",
        session_event,
    ),
    SseEvent::new(
        "agent.session.failed",
        "The session failed: the stream ends here.",
        session_event,
    ),
    SseEvent::new(
        "agent.session.deleted",
        "The session was deleted: the stream ends here.",
        session_event,
    ),
    SseEvent::new(
        "error",
        "`agents.events_dropped`: a replay position older than the kept history (the kept events follow).",
        |_| {
            json_schema!({
                "type": "object",
                "required": ["type", "event_id", "session_id", "error"],
                "properties": {
                    "type": {"const": "error"},
                    "event_id": {"type": "string"},
                    "session_id": {"type": "string"},
                    "error": {"type": "object", "required": ["type", "code", "message"], "properties": {
                        "type": {"type": "string"},
                        "code": {"type": "string"},
                        "message": {"type": "string"},
                        "param": {"type": ["string", "null"]},
                    }},
                },
            })
        },
    ),
];

fn session_event(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    json_schema!({
        "type": "object",
        "required": ["type", "event_id", "session_id"],
        "properties": {
            "type": {"type": "string", "description": "The event's name."},
            "event_id": {"type": "string"},
            "session_id": {"type": "string"},
        },
    })
}

const STREAM: Doc = Doc::new(EndpointId::AgentsSessionsEventsStream, "Stream a session's events")
    .describe("Live from now, or replayed after a position (`after` or `Last-Event-ID`: `N` or `evt_N`) and then live; a live stream ends when the session settles or is deleted.")
    .query(|_| {
        json_schema!({"type": "object", "properties": {"after": {"type": "string", "pattern": "^(evt_)?[0-9]+$", "description": "Replay after this event."}}})
    })
    .headers(&[("Last-Event-ID", "Replay after this event (`after` wins).")])
    .answers(&[Answer::events("The session's events.", SESSION_EVENTS)])
    .errors(&[&[Code::ResourceNotFound]]);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A log that never ends, whose live readers may take seats.
    struct Log(Arc<Owner>);

    struct Owner(EventLog);

    impl AsRef<EventLog> for Owner {
        fn as_ref(&self) -> &EventLog {
            &self.0
        }
    }

    impl Source for Log {
        fn log(&self) -> &EventLog {
            &self.0.0
        }

        fn gone(&self) -> bool {
            false
        }

        fn ends_with(&self, _: &Event) -> bool {
            false
        }

        fn gap(&self, from: u64, to: u64) -> Bytes {
            gap("test", from, to)
        }

        fn seat(&self, position: u64, sink: Box<dyn Sink>) -> Option<Arc<Seat>> {
            Some(seats::seat(&self.0, position, sink, |_| false))
        }
    }

    #[test]
    fn the_gap_signal_is_the_rows_event_as_clients_always_got_it() {
        assert_eq!(
            gap("agsess_1", 1, 2),
            Bytes::from_static(
                b"event: error\ndata: {\"type\":\"error\",\"event_id\":\"evt_gap_1_2\",\"session_id\":\"agsess_1\",\"error\":{\"type\":\"events_dropped\",\"code\":\"agents.events_dropped\",\"message\":\"events 1 to 2 are no longer kept; replay continues after them\",\"param\":\"after\"}}\n\n"
            )
        );
    }

    #[tokio::test]
    async fn pending_frames_go_out_in_bounded_chunks_sharing_large_frames() {
        let log = EventLog::plain(10_000);
        for n in 0..500 {
            log.push("small", json!({ "n": n }));
        }
        let big_text = "x".repeat(5 * CHUNK + 123);
        log.push("big", json!({ "text": big_text }));
        for n in 0..50 {
            log.push("small", json!({ "n": n }));
        }
        let frames: Vec<Bytes> = log
            .after(0)
            .events
            .iter()
            .map(|e| e.frame.clone())
            .collect();
        let big = frames[500].clone();
        assert!(big.len() > 5 * CHUNK);
        let small_before: usize = frames[..500].iter().map(Bytes::len).sum();
        let largest_small = frames[..500].iter().map(Bytes::len).max().unwrap_or(0);

        let mut reader = Reader::new(Log(Arc::new(Owner(log))), 0, true);
        let mut chunks = Vec::new();
        while let Some(chunk) = reader.next().await {
            chunks.push(chunk);
        }

        // Nothing lost, nothing reordered.
        let sent: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
        let want: Vec<u8> = frames.iter().flat_map(|f| f.iter().copied()).collect();
        assert!(
            sent == want,
            "the chunks concatenate to the frames, in order"
        );
        assert!(chunks.iter().all(|c| !c.is_empty() && c.len() <= CHUNK));

        // The small frames before the big one are coalesced: every chunk but the last of
        // them leaves less room than the next frame would need.
        let mut offset = 0;
        let mut before_big = 0;
        while offset < small_before {
            offset += chunks[before_big].len();
            before_big += 1;
        }
        assert_eq!(offset, small_before, "the big frame starts a chunk");
        assert!(before_big > 1 && before_big <= small_before / (CHUNK - largest_small) + 1);
        assert!(
            chunks[..before_big - 1]
                .iter()
                .all(|c| c.len() > CHUNK - largest_small)
        );

        // The big frame goes out as slices of itself, in order: shared, not copied.
        let range = big.as_ptr() as usize..big.as_ptr() as usize + big.len();
        let mut inside = 0;
        for chunk in &chunks[before_big..] {
            let at = chunk.as_ptr() as usize;
            if !range.contains(&at) {
                break;
            }
            assert_eq!(at, range.start + inside, "slice {inside} of the big frame");
            assert!(at + chunk.len() <= range.end);
            inside += chunk.len();
        }
        assert!(
            inside >= big.len() - CHUNK,
            "all but the tail of the big frame is shared: {inside} of {}",
            big.len()
        );
        let after_big: Vec<u8> = chunks[before_big..]
            .iter()
            .flat_map(|c| c.iter().copied())
            .collect();
        assert_eq!(&after_big[..big.len()], &big[..]);
    }

    #[tokio::test]
    async fn a_reader_marks_its_connection_busy_before_it_takes_a_seat() {
        // hyper may still hold the answer's head or the chunk the reader just handed it:
        // nothing may be written into the connection before hyper's next flush.
        let (ours, _peer) = std::os::unix::net::UnixStream::pair().unwrap();
        let slot = direct::Slot::flushed_on(std::os::fd::AsRawFd::as_raw_fd(&ours));
        let owner = Arc::new(Owner(EventLog::plain(100)));
        owner.0.push("first", json!({}));
        let mut reader = Reader::new(Log(Arc::clone(&owner)), 0, false);
        reader.seat_on(Some(slot.clone()));
        let first = reader.next().await.expect("the kept event");
        assert!(first.starts_with(b"id: 1\n"));
        let waiting = futures::FutureExt::now_or_never(reader.next());
        assert!(waiting.is_none(), "seated, waiting");
        assert!(reader.seat.is_some());
        assert_eq!(
            slot.send_chunk(&[b"x"]),
            direct::Sent::Refused,
            "busy until hyper flushes"
        );
    }
}
