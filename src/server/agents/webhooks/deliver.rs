//! Sending: one signed POST per attempt, and the per-endpoint worker that retries with
//! exponential backoff. Each endpoint has its own worker and bounded queue, so deliveries
//! to one endpoint keep the order of the events and a slow or failing receiver delays
//! only its own queue, never a session.

use super::address::{CheckedResolver, Lookup, Rules, system_lookup};
use super::{Endpoint, sign};
use crate::services::ids;
use bytes::Bytes;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::sync::mpsc;

/// Attempts per delivery, the first included.
pub const ATTEMPTS: u32 = 5;
/// Each pause is this many times the previous one.
const BACKOFF_FACTOR: u32 = 4;
/// One attempt, from connecting to the receiver's status line.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a connection to a receiver is kept unused for the next delivery.
const KEEP_IDLE: Duration = Duration::from_secs(30);

/// One event for one endpoint. The id stays the same across retries so the receiver can
/// drop duplicates; the timestamp and signature are made anew for each attempt.
pub struct Job {
    pub msg_id: String,
    pub body: Bytes,
}

impl Job {
    pub fn new(body: Bytes) -> Job {
        Job {
            msg_id: ids::new("msg"),
            body,
        }
    }
}

pub struct Delivery {
    rules: Rules,
    lookup: Lookup,
    retry_base: Duration,
    /// Built on first use: most servers never deliver a webhook.
    client: OnceLock<Result<reqwest::Client, String>>,
}

impl Delivery {
    pub fn new(rules: Rules, retry_base: Duration) -> Delivery {
        Delivery::with_lookup(rules, retry_base, system_lookup)
    }

    pub fn with_lookup(rules: Rules, retry_base: Duration, lookup: Lookup) -> Delivery {
        Delivery {
            rules,
            lookup,
            retry_base,
            client: OnceLock::new(),
        }
    }

    fn client(&self) -> Result<&reqwest::Client, String> {
        self.client
            .get_or_init(|| {
                reqwest::Client::builder()
                    .dns_resolver(Arc::new(CheckedResolver {
                        rules: self.rules,
                        lookup: self.lookup,
                    }))
                    // A redirect or a proxy would send the request somewhere never checked.
                    .redirect(reqwest::redirect::Policy::none())
                    .no_proxy()
                    // Kept connections: each was made to addresses the resolver checked
                    // (or a literal the rules checked) and a kept one still goes there, so
                    // only a new connection needs a new lookup. One connection per
                    // delivery cost a handshake each: 0.33 to 0.59 of a bare sender's rate.
                    .pool_idle_timeout(KEEP_IDLE)
                    .timeout(ATTEMPT_TIMEOUT)
                    .user_agent(concat!("svc-webhooks/", env!("CARGO_PKG_VERSION")))
                    .build()
                    .map_err(|e| format!("the webhook HTTP client could not start: {e}"))
            })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Sends `job` once to where `endpoint` points now, signed with its current secret.
    /// `Ok` carries the receiver's status, whatever it is.
    pub async fn attempt(&self, endpoint: &Endpoint, job: &Job) -> Result<u16, String> {
        let (raw_url, secret) = endpoint.target();
        let url = self.rules.check(&raw_url, "url").map_err(|e| e.message)?;
        let timestamp = ids::now();
        let signature = sign::sign(&secret, &job.msg_id, timestamp, &job.body)
            .ok_or("the endpoint's secret is not base64")?;
        let response = self
            .client()?
            .post(url)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header("webhook-id", &job.msg_id)
            .header("webhook-timestamp", timestamp.to_string())
            .header("webhook-signature", signature)
            .body(job.body.clone())
            .send()
            .await
            .map_err(|e| describe(&e))?;
        Ok(response.status().as_u16())
    }

    /// The pause after failed attempt `n` (1-based): base, 4 x base, 16 x base, ...
    pub fn backoff(&self, n: u32) -> Duration {
        self.retry_base
            .saturating_mul(BACKOFF_FACTOR.saturating_pow(n.saturating_sub(1)))
    }
}

/// Delivers the queue of one endpoint until the endpoint is deleted.
pub async fn worker(
    endpoint: Arc<Endpoint>,
    mut queue: mpsc::Receiver<Job>,
    delivery: Arc<Delivery>,
) {
    while let Some(job) = queue.recv().await {
        for n in 1..=ATTEMPTS {
            if endpoint.is_closed() {
                return;
            }
            let outcome = delivery.attempt(&endpoint, &job).await;
            let why = match outcome {
                Ok(status) if (200..300).contains(&status) => break,
                Ok(status) => format!("the receiver answered {status}"),
                Err(why) => why,
            };
            if n == ATTEMPTS {
                tracing::warn!(endpoint = %endpoint.id, msg = %job.msg_id, "webhook delivery given up after {ATTEMPTS} attempts: {why}");
                break;
            }
            let pause = delivery.backoff(n);
            tracing::debug!(endpoint = %endpoint.id, msg = %job.msg_id, "webhook attempt {n} failed ({why}); retrying in {pause:?}");
            tokio::time::sleep(pause).await;
        }
    }
}

/// The error and its causes: reqwest's own message names only the URL, the cause says
/// what happened (refused, timed out, a private address).
fn describe(e: &reqwest::Error) -> String {
    let mut out = if e.is_timeout() {
        "the receiver did not answer in time".to_owned()
    } else {
        e.to_string()
    };
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        out.push_str(": ");
        out.push_str(&cause.to_string());
        source = cause.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_fourfold_from_the_base() {
        let d = Delivery::new(Rules::default(), Duration::from_millis(100));
        let pauses: Vec<u128> = (1..ATTEMPTS).map(|n| d.backoff(n).as_millis()).collect();
        assert_eq!(pauses, [100, 400, 1600, 6400]);
        let zero = Delivery::new(Rules::default(), Duration::ZERO);
        assert_eq!(zero.backoff(3), Duration::ZERO);
    }
}
