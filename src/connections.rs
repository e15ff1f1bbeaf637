//! What every listener (the server's main and terminal ports, the engine's) does for its
//! connections besides HTTP itself, so that one client cannot cost another its requests.
//!
//! A request refused before its body was read ([`close_after_refused_body`]): hyper cannot
//! go on to a next request on that connection until the rest of the body has gone by, and
//! when it has not arrived yet hyper ends the connection, which a keep-alive client only
//! learns when its next request is lost. So such an answer says `Connection: close`, and the
//! connection's stream closes lingering (`zero_copy::Stream`): its sending side first, then
//! the client's unread bytes drained for a moment, so the kernel does not answer them with
//! a reset that would destroy the answer on its way.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderValue, header};

/// Marks an error answer to a request that carries a body as its connection's last: the
/// body may not have been read (a refusal by the pipeline, the path guard, a bad query),
/// and a client told opens a new connection instead of losing its next request.
pub async fn close_after_refused_body(request: Request, next: Next) -> Response {
    let has_body = request.headers().contains_key(header::TRANSFER_ENCODING)
        || request
            .headers()
            .get(header::CONTENT_LENGTH)
            .is_some_and(|len| len.as_bytes() != b"0");
    let mut answer = next.run(request).await;
    let refused = answer.status().is_client_error() || answer.status().is_server_error();
    if has_body && refused {
        answer
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    answer
}
