use super::*;
use axum::http::HeaderMap;
use futures::future::BoxFuture;
use serde_json::json;
use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

const OWNER: &str = "alice";

fn service(allow_dev: bool, retry_ms: u64) -> Webhooks {
    Webhooks::new(&AgentsSettings {
        webhook_allow_http: allow_dev,
        allow_private_urls: allow_dev,
        webhook_retry_base: Duration::from_millis(retry_ms),
        ..AgentsSettings::default()
    })
}

fn param(err: ApiError) -> String {
    err.param.unwrap_or_default()
}

/// A body as the route's extractor types it (a refusal names the failing key).
fn typed<T: serde::de::DeserializeOwned>(body: &Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(body)
        .map_err(|e| ApiError::invalid(e.path().to_string(), e.inner().to_string()))
}

/// An answer as the route writes it.
fn answer<T: serde::Serialize>(answer: T) -> Value {
    serde_json::to_value(answer).unwrap()
}

async fn create(w: &Webhooks, body: &Value) -> Result<Value, ApiError> {
    Ok(answer(w.create(OWNER, typed(body)?).await?))
}

async fn update(w: &Webhooks, id: &str, body: &Value) -> Result<Value, ApiError> {
    Ok(answer(w.update(OWNER, id, typed(body)?).await?))
}

fn rotate(w: &Webhooks, id: &str, body: &Value) -> Result<Value, ApiError> {
    Ok(answer(w.rotate_secret(OWNER, id, typed(body)?)?))
}

async fn test_event(w: &Webhooks, id: &str, body: &Value) -> Result<Value, ApiError> {
    Ok(answer(w.test(OWNER, id, typed(body)?).await?))
}

/// What a receiver got: headers and body of each request.
type Received = Arc<Mutex<Vec<(HeaderMap, Bytes)>>>;

/// A local receiver answering `statuses` in turn (the last one from then on).
async fn receiver(statuses: &'static [u16]) -> (String, Received) {
    let got: Received = Arc::default();
    let calls = Arc::new(AtomicUsize::new(0));
    let record = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |headers: HeaderMap, body: Bytes| {
            let n = calls.fetch_add(1, Ordering::SeqCst);
            record.lock().unwrap().push((headers, body));
            let status = statuses[n.min(statuses.len() - 1)];
            async move { http::StatusCode::from_u16(status).unwrap() }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, got)
}

async fn wait_for(got: &Received, n: usize) {
    for _ in 0..200 {
        if got.lock().unwrap().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{n} deliveries expected, got {}", got.lock().unwrap().len());
}

fn header<'a>(h: &'a HeaderMap, name: &str) -> &'a str {
    h.get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// Checks a delivery's signature the way a receiver would, with the secret alone.
fn verify(secret: &str, headers: &HeaderMap, body: &[u8]) {
    let id = header(headers, "webhook-id");
    let ts: i64 = header(headers, "webhook-timestamp").parse().unwrap();
    assert!(id.starts_with("msg_"), "{id}");
    assert!((ids::now() - ts).abs() < 60);
    assert_eq!(
        Some(header(headers, "webhook-signature")),
        sign::sign(secret, id, ts, body).as_deref()
    );
}

#[tokio::test]
async fn endpoints_keep_their_secret_to_themselves() {
    let w = service(false, 1000);
    let body = json!({"url": "https://hooks.example.com/svc", "event_types": ["idle", "agent.session.failed"], "name": "ci"});
    let created = create(&w, &body).await.unwrap();
    let secret = created["signing_secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    assert_eq!(created["secret"], secret.as_str());
    assert_eq!(
        created["event_types"],
        json!(["agent.session.idle", "agent.session.failed"])
    );
    let id = created["id"].as_str().unwrap();
    let got = answer(w.get(OWNER, id).unwrap());
    let listed = answer(w.list(OWNER));
    for shown in [&got, &listed[0]] {
        assert!(!shown.to_string().contains(&secret[6..]), "{shown}");
        assert!(shown.get("signing_secret").is_none() && shown.get("secret").is_none());
    }
    assert_eq!(param(w.get("bob", id).unwrap_err()), "webhook_endpoint_id");
    assert!(w.list("bob").is_empty());

    let same = update(&w, id, &json!({"name": "ci"})).await.unwrap();
    assert_eq!(same["updated_at"], created["updated_at"]);
    let renamed = update(
        &w,
        id,
        &json!({"name": "nightly", "event_types": ["created"]}),
    )
    .await
    .unwrap();
    assert_eq!(renamed["name"], "nightly");
    assert_eq!(renamed["url"], "https://hooks.example.com/svc");
    assert_eq!(renamed["event_types"], json!(["agent.session.created"]));

    let rotated = rotate(&w, id, &json!({})).unwrap();
    assert_ne!(rotated["signing_secret"], secret.as_str());
    assert!(
        rotated["signing_secret"]
            .as_str()
            .unwrap()
            .starts_with("whsec_")
    );

    assert_eq!(
        answer(w.delete(OWNER, id).unwrap()),
        json!({"id": id, "object": "webhook_endpoint.deleted", "deleted": true})
    );
    assert_eq!(param(w.get(OWNER, id).unwrap_err()), "webhook_endpoint_id");
}

#[tokio::test]
async fn bad_bodies_name_their_param() {
    let w = service(false, 1000);
    let ok = json!({"url": "https://hooks.example.com/", "event_types": ["idle"], "name": "n"});
    let with = |k: &str, v: Value| {
        let mut b = ok.clone();
        b[k] = v;
        b
    };
    for (body, p) in [
        (with("secret", json!("whsec_x")), "secret"),
        (with("url", json!("http://hooks.example.com/")), "url"),
        (with("url", json!("https://127.0.0.1/")), "url"),
        (with("url", json!("https://localhost/")), "url"),
        (with("url", json!(7)), "url"),
        (
            with("event_types", json!(["agent.session.action_required"])),
            "event_types",
        ),
        (
            with("event_types", json!(["batch.completed"])),
            "event_types",
        ),
        (with("name", json!("")), "name"),
        (
            json!({"url": "https://hooks.example.com/", "event_types": ["idle"]}),
            "name",
        ),
        (json!({"name": "n", "event_types": ["idle"]}), "url"),
        (
            json!({"name": "n", "url": "https://hooks.example.com/"}),
            "event_types",
        ),
    ] {
        assert_eq!(param(create(&w, &body).await.unwrap_err()), p, "{body}");
    }
    let id = create(&w, &ok).await.unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let keep = json!({"keep_old_secret_active_for_24_hours": true});
    assert_eq!(
        param(rotate(&w, &id, &keep).unwrap_err()),
        "keep_old_secret_active_for_24_hours"
    );
    let err = test_event(&w, &id, &json!({"event_type": "action_required"})).await;
    assert_eq!(param(err.unwrap_err()), "event_type");
    let err = update(&w, &id, &json!({"url": "https://[::ffff:127.0.0.1]/"})).await;
    assert_eq!(param(err.unwrap_err()), "url");
}

#[tokio::test]
async fn deliveries_are_signed_and_retried_until_accepted() {
    let w = service(true, 10);
    let (url, got) = receiver(&[500, 503, 200]).await;
    let created = create(
        &w,
        &json!({"url": url, "event_types": ["idle"], "name": "n"}),
    )
    .await
    .unwrap();
    let secret = created["signing_secret"].as_str().unwrap();
    let mut sink = w.sink(OWNER);
    let session = json!({"id": "agsess_1", "environment": {"type": "none"}});
    sink.event("agent.session.in_progress", &json!({"session": session}));
    sink.event("agent.session.idle", &json!({"session": session}));
    wait_for(&got, 3).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let got = got.lock().unwrap();
    assert_eq!(
        got.len(),
        3,
        "not subscribed to in_progress; stops at the first 2xx"
    );
    let ids: Vec<&str> = got.iter().map(|(h, _)| header(h, "webhook-id")).collect();
    assert!(
        ids.iter().all(|id| *id == ids[0]),
        "one id across retries: {ids:?}"
    );
    for (headers, body) in got.iter() {
        verify(secret, headers, body);
        let event: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(event["type"], "agent.session.idle");
        assert_eq!(
            event["data"],
            json!({"id": "agsess_1", "environment_type": "none"})
        );
    }
}

#[tokio::test]
async fn the_test_route_reports_the_receivers_status() {
    let w = service(true, 1000);
    let (url, got) = receiver(&[418]).await;
    let created = create(
        &w,
        &json!({"url": url, "event_types": ["idle"], "name": "n"}),
    )
    .await
    .unwrap();
    let id = created["id"].as_str().unwrap();
    let result = test_event(&w, id, &json!({"event_type": "failed"}))
        .await
        .unwrap();
    assert_eq!(result["status_code"], 418);
    assert_eq!(result["event_type"], "agent.session.failed");
    assert_eq!(result["success"], true);
    let (headers, body) = got.lock().unwrap()[0].clone();
    verify(created["signing_secret"].as_str().unwrap(), &headers, &body);
    let unreachable = update(&w, id, &json!({"url": "http://127.0.0.1:1/hook"}))
        .await
        .unwrap();
    assert_eq!(unreachable["url"], "http://127.0.0.1:1/hook");
    let err = test_event(&w, id, &json!({"event_type": "idle"}))
        .await
        .unwrap_err();
    assert_eq!(param(err), "url");
}

/// Webhooks with one `idle` endpoint whose queue will fill: nothing listens on port 1 and
/// the first retry is an hour away, so the worker holds one job. Its owner's sink and an
/// event for it.
async fn stuck_endpoint() -> (Webhooks, Box<dyn Follower>, Value) {
    let w = service(true, 3_600_000);
    create(
        &w,
        &json!({"url": "http://127.0.0.1:1/", "event_types": ["idle"], "name": "n"}),
    )
    .await
    .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let sink = w.sink(OWNER);
    (w, sink, json!({"session": {"id": "agsess_1"}}))
}

#[tokio::test]
async fn a_full_queue_drops_without_waiting() {
    let (w, mut sink, event) = stuck_endpoint().await;
    let started = std::time::Instant::now();
    for _ in 0..QUEUE_CAPACITY + 10 {
        sink.event("agent.session.idle", &event);
    }
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
    assert!(w.dropped() >= 9, "{}", w.dropped());
}

/// A name that resolves to loopback, as a rebinding attacker's would.
fn rebinding(name: String) -> BoxFuture<'static, Result<Vec<SocketAddr>, String>> {
    Box::pin(async move {
        match name.as_str() {
            "rebind.example" => Ok(vec!["127.0.0.1:0".parse().unwrap()]),
            other => Err(format!("{other}: unknown")),
        }
    })
}

/// An endpoint of the test's owner that points at `url`.
fn endpoint_at(url: String) -> Endpoint {
    Endpoint {
        id: "we_1".into(),
        owner: OWNER.into(),
        created_at: 0,
        config: Mutex::new(Config {
            name: "n".into(),
            url,
            event_types: vec![],
            secret: sign::new_secret().unwrap(),
            updated_at: 0,
        }),
        closed: AtomicBool::new(false),
    }
}

#[tokio::test]
async fn a_name_resolving_to_a_private_address_is_never_connected() {
    let (url, got) = receiver(&[200]).await;
    let endpoint = endpoint_at(url.replace("127.0.0.1", "rebind.example"));
    let job = Job::new(Bytes::from_static(b"{}"));
    let strict = Rules {
        allow_http: true,
        allow_private: false,
    };
    let err = Delivery::with_lookup(strict, Duration::ZERO, rebinding)
        .attempt(&endpoint, &job)
        .await
        .unwrap_err();
    assert!(
        err.contains("private or loopback address 127.0.0.1"),
        "{err}"
    );
    assert!(got.lock().unwrap().is_empty());
    // Allowed, the connection goes to the address the lookup gave: the name itself
    // resolves nowhere.
    let dev = Rules {
        allow_http: true,
        allow_private: true,
    };
    let status = Delivery::with_lookup(dev, Duration::ZERO, rebinding)
        .attempt(&endpoint, &job)
        .await;
    assert_eq!(status, Ok(200));
    assert_eq!(got.lock().unwrap().len(), 1);
}

/// Deliveries to one receiver go over one kept connection (a handshake each cost a third
/// of the rate); the name is looked up and checked for the connection, once.
#[tokio::test]
async fn deliveries_to_one_receiver_share_a_checked_connection() {
    use axum::serve::{Listener, ListenerExt};
    let (connections, lookups) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let counted = connections.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .unwrap()
        .tap_io(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
        });
    let port = listener.local_addr().unwrap().port();
    let app = axum::Router::new().route("/hook", axum::routing::post(|| async { "ok" }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    static LOOKUPS: std::sync::OnceLock<Arc<AtomicUsize>> = std::sync::OnceLock::new();
    LOOKUPS.set(lookups.clone()).unwrap();
    fn counting(name: String) -> BoxFuture<'static, Result<Vec<SocketAddr>, String>> {
        LOOKUPS.get().unwrap().fetch_add(1, Ordering::SeqCst);
        rebinding(name)
    }
    let endpoint = endpoint_at(format!("http://rebind.example:{port}/hook"));
    let dev = Rules {
        allow_http: true,
        allow_private: true,
    };
    let delivery = Delivery::with_lookup(dev, Duration::ZERO, counting);
    for _ in 0..3 {
        let job = Job::new(Bytes::from_static(b"{}"));
        assert_eq!(delivery.attempt(&endpoint, &job).await, Ok(200));
    }
    assert_eq!(connections.load(Ordering::SeqCst), 1);
    assert_eq!(lookups.load(Ordering::SeqCst), 1);
}

/// A receiver that stays stuck writes a thinning trail of warnings, not one per event:
/// the 1st, 2nd, 4th... drop of the endpoint, each with its count.
#[tokio::test]
async fn a_stuck_receiver_is_warned_about_at_powers_of_two() {
    let (w, mut sink, event) = stuck_endpoint().await;
    let log = Arc::new(Mutex::new(Vec::<u8>::new()));
    let writer = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || Writer(writer.clone()))
        .finish();
    tracing::subscriber::with_default(subscriber, || {
        for _ in 0..QUEUE_CAPACITY + 200 {
            sink.event("agent.session.idle", &event);
        }
    });
    let dropped = w.dropped();
    assert!((199..=200).contains(&dropped), "{dropped}");
    let log = String::from_utf8(log.lock().unwrap().clone()).unwrap();
    let counts: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("webhook queue full"))
        .filter_map(|l| {
            l.split(" dropped for this endpoint")
                .next()?
                .rsplit('(')
                .next()
        })
        .collect();
    assert_eq!(
        counts,
        ["1", "2", "4", "8", "16", "32", "64", "128"],
        "{log}"
    );
}

/// A log line sink for a test's subscriber.
struct Writer(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Writer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
