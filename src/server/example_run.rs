//! The documented examples are true, for every group that lists [`Route`]s: each route's
//! example runs against the real router and its answer is the one `docs/endpoints.md`
//! shows. The loop, the request and the comparison are written here once; what a group
//! needs of its own (a fixture, a server state per example or one for all, what varies by
//! run, a check of a kind the others lack) its `examples.rs` says through a [`Harness`].
//! `registry`'s test walks the groups. (Was one copy of this loop per group.)

use crate::server::example::{Example, ExampleBody, FormPart};
use crate::server::route::Route;
use axum::body::{Body, Bytes};
use http_body_util::BodyExt;
use serde_json::{Map, Value};
use tower::ServiceExt;

const BOUNDARY: &str = "svc-example-boundary";

/// Where one example is sent.
pub(crate) struct Call {
    pub app: axum::Router,
    /// (as documented, as here): applied to the request's target, its JSON body and its
    /// text form parts, and undone on the strings of both answers before they are compared.
    pub swaps: Vec<(&'static str, String)>,
}

impl Call {
    fn swap(&self, text: &str) -> String {
        self.swaps
            .iter()
            .fold(text.to_owned(), |t, (doc, here)| t.replace(doc, here))
    }

    /// The example's path and query as sent here.
    pub fn target(&self, x: &Example) -> String {
        self.swap(x.target)
    }
}

/// What came back.
pub(crate) struct Answer {
    pub status: u16,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn json(&self, what: &str) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("{what}: {e}: {}", String::from_utf8_lossy(&self.body)))
    }
}

/// What a group's examples need of their own. The runner checks, for every example, the
/// status, each header shown (exactly) and the body: a JSON answer as JSON without the
/// members [`Harness::keep`] leaves out, an event stream frame by frame likewise, anything
/// else byte for byte, unless [`Harness::compare`] takes the body over.
pub(crate) trait Harness: Sized {
    /// Members whose values vary by run, left out at any depth.
    const VOLATILE: &'static [&'static str] = &[];
    /// Whether a documented answer that is not JSON is an event stream.
    const STREAMS: bool = false;

    /// Once per group; `Err(why)` skips the group (printed), e.g. without a browser.
    async fn start() -> Result<Self, String>;

    /// The router and the swaps of one example, its fixtures laid out.
    async fn prepare(&mut self, route: &Route) -> Call;

    /// The answer of a call the router cannot take in one shot (a WebSocket handshake
    /// over a socket); `None`: the runner sends the example to `call.app`.
    async fn send(&mut self, _route: &Route, _call: &Call) -> Option<Answer> {
        None
    }

    /// Whether a member of `object` is compared.
    fn keep(&self, _object: &Map<String, Value>, key: &str) -> bool {
        !Self::VOLATILE.contains(&key)
    }

    /// A comparison of the body the generic one cannot make; `true` when it made it.
    fn compare(&self, _route: &Route, _call: &Call, _answer: &Answer, _what: &str) -> bool {
        false
    }

    /// After each example.
    async fn finish(&mut self) {}

    /// After the last example.
    async fn end(self) {}
}

/// The example as an HTTP request, the swaps applied.
pub(crate) fn request(x: &Example, call: &Call) -> http::Request<Body> {
    let builder = http::Request::builder()
        .method(x.method)
        .uri(call.target(x));
    match &x.body {
        ExampleBody::None => builder.body(Body::empty()),
        ExampleBody::Json(json) => builder
            .header("content-type", "application/json")
            .body(Body::from(call.swap(json))),
        ExampleBody::Raw(raw) => builder.body(Body::from(*raw)),
        ExampleBody::Headers(headers) => headers
            .iter()
            .fold(builder, |b, (name, value)| b.header(*name, *value))
            .body(Body::empty()),
        ExampleBody::Form(parts) => {
            let mut body = String::new();
            for part in *parts {
                body.push_str(&format!("--{BOUNDARY}\r\n"));
                match part {
                    FormPart::Text(name, value) => body.push_str(&format!(
                        "Content-Disposition: form-data; name=\"{name}\"\r\n\r\n{}\r\n",
                        call.swap(value)
                    )),
                    FormPart::File(name, file, content) => body.push_str(&format!(
                        "Content-Disposition: form-data; name=\"{name}\"; filename=\"{file}\"\r\n\r\n{content}\r\n"
                    )),
                }
            }
            body.push_str(&format!("--{BOUNDARY}--\r\n"));
            builder
                .header(
                    "content-type",
                    format!("multipart/form-data; boundary={BOUNDARY}"),
                )
                .body(Body::from(body))
        }
    }
    .unwrap()
}

/// `v` with the members the harness leaves out dropped and the swaps undone.
fn comparable<H: Harness>(harness: &H, v: &Value, call: &Call) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| harness.keep(map, k))
                .map(|(k, v)| (k.clone(), comparable(harness, v, call)))
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| comparable(harness, i, call)).collect())
        }
        Value::String(s) => Value::String(
            call.swaps
                .iter()
                .fold(s.clone(), |t, (doc, here)| t.replace(here.as_str(), doc)),
        ),
        other => other.clone(),
    }
}

/// An event stream's frames, each data member made comparable.
fn frames<H: Harness>(harness: &H, text: &str, call: &Call) -> Vec<(String, Value)> {
    text.split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|frame| {
            let mut event = String::new();
            let mut data = Value::Null;
            for line in frame.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = name.to_owned();
                } else if let Some(json) = line.strip_prefix("data: ") {
                    data = comparable(harness, &serde_json::from_str(json).unwrap(), call);
                }
            }
            (event, data)
        })
        .collect()
}

/// Runs every example of `routes`, in order, through `H`.
pub(crate) async fn run<H: Harness>(routes: &[&Route]) {
    let mut harness = match H::start().await {
        Ok(harness) => harness,
        Err(why) => {
            eprintln!("skipped: {why}");
            return;
        }
    };
    for route in routes {
        let x = route.example;
        let what = format!("{:?}: {}", route.id(), x.curl());
        let call = harness.prepare(route).await;
        let answer = match harness.send(route, &call).await {
            Some(answer) => answer,
            None => {
                let response = call.app.clone().oneshot(request(x, &call)).await.unwrap();
                let status = response.status().as_u16();
                let headers = response.headers().clone();
                let body = response.into_body().collect().await.unwrap().to_bytes();
                Answer {
                    status,
                    headers,
                    body,
                }
            }
        };
        let text = String::from_utf8_lossy(&answer.body);
        assert_eq!(answer.status, x.status, "{what}: {text}");
        for (name, value) in x.headers {
            assert_eq!(
                answer.headers.get(*name).and_then(|v| v.to_str().ok()),
                Some(*value),
                "{what}: header {name}"
            );
        }
        if !harness.compare(route, &call, &answer, &what) {
            match serde_json::from_str::<Value>(x.answer) {
                Ok(documented) => assert_eq!(
                    comparable(&harness, &answer.json(&what), &call),
                    comparable(&harness, &documented, &call),
                    "{what}"
                ),
                Err(_) if H::STREAMS => assert_eq!(
                    frames(&harness, &text, &call),
                    frames(&harness, x.answer, &call),
                    "{what}"
                ),
                Err(_) => assert_eq!(&answer.body[..], x.answer.as_bytes(), "{what}"),
            }
        }
        harness.finish().await;
    }
    harness.end().await;
}
