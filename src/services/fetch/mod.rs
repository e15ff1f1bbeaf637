//! `http_fetch`'s client: one request to a URL a caller gives, under [`UrlRules`]. The
//! rules are checked on the URL, on every redirect's target (a redirect policy), and on
//! the very addresses the connection uses (a DNS resolver that resolves, then lets the
//! connection go only to addresses the URL guard admits), so a name that resolves to a
//! private address, now or after a change (DNS rebinding), is never reached. No proxy, no
//! pooled connection (each fetch resolves afresh), a time limit over the whole exchange
//! and a cap on the body kept.

pub mod rules;

use crate::services::url_guard;
pub use rules::{Refusal, UrlRules};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

/// Redirects followed before the fetch fails.
pub const MAX_REDIRECTS: usize = 10;

/// Why a fetch did not answer.
#[derive(Debug)]
pub enum Error {
    /// The URL (or a redirect's) is malformed or refused.
    Refused(Refusal),
    /// A member of the request is malformed (`param` names it).
    BadRequest {
        param: &'static str,
        message: String,
    },
    /// The time limit ran out.
    TimedOut(String),
    /// The exchange failed (connection refused, TLS, too many redirects, ...).
    Failed(String),
}

/// One request.
#[derive(Debug, Clone)]
pub struct Request {
    pub url: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub timeout: Duration,
    pub max_bytes: usize,
}

/// Its answer.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: u16,
    /// Lower-case names; several values of one name joined by `, `.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The body went on past `max_bytes` and was cut there.
    pub truncated: bool,
}

/// Methods a caller may send: the usual ones. `CONNECT` (a tunnel) and `TRACE` (reflects
/// the request, headers included) are refused.
const METHODS: &[&str] = &["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];

/// Headers the client sets itself: the connection's framing and target.
const OWN_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-connection",
];

/// The resolver of the fetch client: the connection can only go to addresses the URL
/// guard admitted in this very lookup (private ones only for a host an exact allow entry
/// names).
struct GuardedResolver {
    rules: Arc<UrlRules>,
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let rules = self.rules.clone();
        let name = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = url_guard::lookup(&name).await?;
            let addrs = url_guard::admit(rules.opens_private(&name), &name, addrs)
                .map_err(Refusal::Denied)?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The client, built on first use under the operator's rules.
#[derive(Debug, Default)]
pub struct Fetcher {
    rules: Arc<UrlRules>,
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl Fetcher {
    pub fn new(rules: UrlRules) -> Fetcher {
        Fetcher {
            rules: Arc::new(rules),
            client: OnceLock::new(),
        }
    }

    pub fn rules(&self) -> &UrlRules {
        &self.rules
    }

    fn client(&self) -> Result<&reqwest::Client, Error> {
        self.client
            .get_or_init(|| {
                let rules = self.rules.clone();
                let redirects = reqwest::redirect::Policy::custom(move |attempt| {
                    if attempt.previous().len() >= MAX_REDIRECTS {
                        return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
                    }
                    match rules.judge(attempt.url()) {
                        Ok(()) => attempt.follow(),
                        Err(refusal) => attempt.error(refusal),
                    }
                });
                reqwest::Client::builder()
                    .dns_resolver(Arc::new(GuardedResolver {
                        rules: self.rules.clone(),
                    }))
                    .redirect(redirects)
                    // A proxy would connect to a host never checked.
                    .no_proxy()
                    // Every fetch resolves and checks afresh.
                    .pool_max_idle_per_host(0)
                    .user_agent(concat!("svc-http-fetch/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| format!("the fetch client could not start: {e}"))
            })
            .as_ref()
            .map_err(|e| Error::Failed(e.clone()))
    }

    /// Sends `req` and reads at most `req.max_bytes` of the answer's body.
    pub async fn fetch(&self, req: Request) -> Result<Response, Error> {
        let url = self.rules.parse(&req.url).map_err(Error::Refused)?;
        self.rules.judge(&url).map_err(Error::Refused)?;
        let method = req.method.to_ascii_uppercase();
        if !METHODS.contains(&method.as_str()) {
            return Err(Error::BadRequest {
                param: "method",
                message: format!(
                    "method `{}` is not one of {}",
                    req.method,
                    METHODS.join(", ")
                ),
            });
        }
        let method =
            reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| Error::BadRequest {
                param: "method",
                message: e.to_string(),
            })?;
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &req.headers {
            let bad = |why: String| Error::BadRequest {
                param: "headers",
                message: why,
            };
            let header = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| bad(format!("`{name}` is not a header name")))?;
            if OWN_HEADERS.contains(&header.as_str()) {
                return Err(bad(format!("`{name}` is set by the client itself")));
            }
            let value = reqwest::header::HeaderValue::from_str(value)
                .map_err(|_| bad(format!("the value of `{name}` is not a header value")))?;
            headers.append(header, value);
        }
        let mut builder = self
            .client()?
            .request(method, url)
            .headers(headers)
            .timeout(req.timeout);
        if let Some(body) = req.body {
            builder = builder.body(body);
        }
        let mut response = builder.send().await.map_err(|e| failure(&e, req.timeout))?;
        let status = response.status().as_u16();
        let headers = header_list(response.headers());
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| failure(&e, req.timeout))?
        {
            let room = req.max_bytes - body.len();
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        Ok(Response {
            status,
            headers,
            body,
            truncated,
        })
    }
}

fn header_list(map: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, value) in map {
        let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
        match out.iter_mut().find(|(n, _)| n == name.as_str()) {
            Some((_, joined)) => {
                joined.push_str(", ");
                joined.push_str(&value);
            }
            None => out.push((name.as_str().to_owned(), value)),
        }
    }
    out
}

/// A client error as ours: a refusal of the rules (by the resolver or the redirect
/// policy) wherever it sits in the chain, a timeout, or a failure with its causes.
fn failure(e: &reqwest::Error, timeout: Duration) -> Error {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut causes = Vec::new();
    while let Some(c) = cause {
        if let Some(refusal) = c.downcast_ref::<Refusal>() {
            return Error::Refused(refusal.clone());
        }
        causes.push(c.to_string());
        cause = c.source();
    }
    causes.dedup();
    if e.is_timeout() {
        return Error::TimedOut(format!(
            "no complete answer within {} s",
            timeout.as_secs_f64()
        ));
    }
    Error::Failed(causes.join(": "))
}

#[cfg(test)]
mod tests;
