//! The fetch client against a local server (wiremock on loopback, opened by an exact
//! allow entry): the page, the cap, redirects judged again, the resolver's refusal.

use super::*;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn request(url: String) -> Request {
    Request {
        url,
        method: "GET".into(),
        headers: Vec::new(),
        body: None,
        timeout: Duration::from_secs(5),
        max_bytes: 1024,
    }
}

async fn server() -> (MockServer, Fetcher) {
    let server = MockServer::start().await;
    let host = server.address().to_string();
    let rules = UrlRules::from_lists(&[host], &[]).unwrap();
    (server, Fetcher::new(rules))
}

#[tokio::test]
async fn a_page_its_cap_and_a_refused_redirect() {
    let (server, fetcher) = server().await;
    Mock::given(method("GET"))
        .and(path("/page"))
        .respond_with(ResponseTemplate::new(200).set_body_string("hello"))
        .mount(&server)
        .await;
    Mock::given(path("/big"))
        .respond_with(ResponseTemplate::new(200).set_body_bytes(vec![b'a'; 5000]))
        .mount(&server)
        .await;
    Mock::given(path("/away"))
        .respond_with(
            ResponseTemplate::new(302).insert_header("location", "http://127.0.0.2:9/secret"),
        )
        .mount(&server)
        .await;
    let page = fetcher
        .fetch(request(format!("{}/page", server.uri())))
        .await
        .unwrap();
    assert_eq!(
        (page.status, page.body.as_slice(), page.truncated),
        (200, &b"hello"[..], false)
    );
    let big = fetcher
        .fetch(request(format!("{}/big", server.uri())))
        .await
        .unwrap();
    assert_eq!((big.body.len(), big.truncated), (1024, true));
    let away = fetcher
        .fetch(request(format!("{}/away", server.uri())))
        .await;
    assert!(
        matches!(away, Err(Error::Refused(Refusal::Denied(_)))),
        "{away:?}"
    );
}

#[tokio::test]
async fn bad_members_and_unreachable_hosts() {
    let (server, fetcher) = server().await;
    let mut req = request(format!("{}/x", server.uri()));
    req.method = "TRACE".into();
    assert!(matches!(
        fetcher.fetch(req).await,
        Err(Error::BadRequest {
            param: "method",
            ..
        })
    ));
    let mut req = request(format!("{}/x", server.uri()));
    req.headers = vec![("Host".into(), "elsewhere".into())];
    assert!(matches!(
        fetcher.fetch(req).await,
        Err(Error::BadRequest {
            param: "headers",
            ..
        })
    ));
    let refused = fetcher.fetch(request("http://10.0.0.1/".into())).await;
    assert!(matches!(refused, Err(Error::Refused(Refusal::Denied(_)))));
    // An allowed host where nothing listens: a failure, not a refusal.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let fetcher = Fetcher::new(UrlRules::from_lists(&[addr.to_string()], &[]).unwrap());
    let failed = fetcher.fetch(request(format!("http://{addr}/"))).await;
    assert!(matches!(failed, Err(Error::Failed(_))), "{failed:?}");
}

#[tokio::test]
async fn the_resolver_refuses_a_name_that_resolves_to_loopback() {
    use reqwest::dns::Resolve;
    use std::str::FromStr;
    let strict = GuardedResolver {
        rules: Arc::new(UrlRules::default()),
    };
    let name = reqwest::dns::Name::from_str("localhost").unwrap();
    let err = match strict.resolve(name).await {
        Ok(_) => panic!("localhost resolved through the guard"),
        Err(e) => e,
    };
    assert!(err.downcast_ref::<Refusal>().is_some(), "{err}");
    let open = GuardedResolver {
        rules: Arc::new(UrlRules::from_lists(&["localhost".into()], &[]).unwrap()),
    };
    let name = reqwest::dns::Name::from_str("localhost").unwrap();
    assert!(open.resolve(name).await.is_ok());
}
