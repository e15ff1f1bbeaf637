//! An SSE answer as a stream of typed events: the body's chunks through the parser, each
//! event read by the route's own `parse`. The stream ends after `end`, or with the error of
//! an `error` event, or with a transport error when the body stops before `end`.

use super::error::{ClientError, ClientResult};
use super::types::Step;
use crate::services::sse_parser::{SseEvent, SseParser};
use futures::stream::{BoxStream, StreamExt};
use std::collections::VecDeque;

pub type EventStream<T> = BoxStream<'static, ClientResult<T>>;

struct State<F> {
    body: BoxStream<'static, reqwest::Result<bytes::Bytes>>,
    parser: SseParser,
    ready: VecDeque<SseEvent>,
    parse: F,
    done: bool,
}

pub(crate) fn typed<T, F>(response: reqwest::Response, parse: F) -> EventStream<T>
where
    T: Send + 'static,
    F: Fn(&str, &str) -> ClientResult<Step<T>> + Send + 'static,
{
    let state = State {
        body: response.bytes_stream().boxed(),
        parser: SseParser::new(),
        ready: VecDeque::new(),
        parse,
        done: false,
    };
    futures::stream::unfold(state, |mut state| async move {
        loop {
            if state.done {
                return None;
            }
            if let Some(event) = state.ready.pop_front() {
                match (state.parse)(&event.event, &event.data) {
                    Ok(Step::Event(item)) => return Some((Ok(item), state)),
                    Ok(Step::Skip) => continue,
                    Ok(Step::End) => return None,
                    Err(e) => {
                        state.done = true;
                        return Some((Err(e), state));
                    }
                }
            }
            match state.body.next().await {
                Some(Ok(chunk)) => state.ready.extend(state.parser.push(&chunk)),
                Some(Err(e)) => {
                    state.done = true;
                    return Some((Err(ClientError::transport(&e)), state));
                }
                None => {
                    state.done = true;
                    let e = ClientError::Transport("the event stream ended before `end`".into());
                    return Some((Err(e), state));
                }
            }
        }
    })
    .boxed()
}
