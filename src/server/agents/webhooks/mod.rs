//! Webhook endpoints (agents spec 2.11, 4.10, 6), in memory: each owner's endpoints, their
//! one-time secrets, and deliveries of session events signed per Standard Webhooks.
//! A session's log is followed by a sink (see `sink`) that only queues; all sending
//! happens on each endpoint's own task.

mod address;
mod deliver;
pub mod events;
pub mod sign;
pub mod wire;

use crate::error::{ApiError, Code};
use crate::server::agents::input::{invalid, not_found};
use crate::server::agents::settings::AgentsSettings;
use crate::server::agents::wire::Deleted;
use crate::services::event_log::Follower;
use crate::services::ids;
pub use address::Rules;
use bytes::Bytes;
use deliver::{Delivery, Job};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::mpsc;
use wire::{
    Compute, EventTypes, RotateSecret, TestDelivery, TestEvent, TestResult, WebhookEndpoint,
    WebhookEndpointCreate, WebhookEndpointUpdate,
};

/// Deliveries waiting per endpoint; beyond it new events for that endpoint are dropped
/// (and counted) rather than making a session wait.
pub const QUEUE_CAPACITY: usize = 1024;

pub struct Webhooks {
    inner: Arc<Inner>,
}

struct Inner {
    entries: Mutex<Vec<Entry>>,
    rules: Rules,
    delivery: Arc<Delivery>,
    dropped: AtomicU64,
}

struct Entry {
    endpoint: Arc<Endpoint>,
    /// Dropping it (on delete) ends the endpoint's worker once its queue is drained.
    queue: mpsc::Sender<Job>,
    /// Deliveries dropped because this endpoint's queue was full.
    dropped: Arc<AtomicU64>,
}

pub struct Endpoint {
    id: String,
    owner: String,
    created_at: i64,
    config: Mutex<Config>,
    /// Set on delete: the worker stops before its next attempt.
    closed: AtomicBool,
}

struct Config {
    name: String,
    url: String,
    event_types: Vec<&'static str>,
    /// Never serialized except in the create and rotate answers.
    secret: String,
    updated_at: i64,
}

impl Endpoint {
    fn config(&self) -> MutexGuard<'_, Config> {
        self.config.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Where to deliver and with which secret, as of now.
    fn target(&self) -> (String, String) {
        let c = self.config();
        (c.url.clone(), c.secret.clone())
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    fn answer(&self) -> WebhookEndpoint {
        let c = self.config();
        WebhookEndpoint {
            id: self.id.clone(),
            object: "webhook_endpoint",
            name: c.name.clone(),
            url: c.url.clone(),
            event_types: c.event_types.clone(),
            created_at: self.created_at,
            updated_at: c.updated_at,
            signing_secret_hint: (),
            x_svc: Compute {
                compute: "local_state",
            },
            signing_secret: None,
            secret: None,
        }
    }

    /// The one-time answer. The SDK reads `signing_secret`; the spec calls it `secret`.
    fn answer_with_secret(&self) -> WebhookEndpoint {
        let secret = self.config().secret.clone();
        WebhookEndpoint {
            signing_secret: Some(secret.clone()),
            secret: Some(secret),
            ..self.answer()
        }
    }
}

impl Webhooks {
    pub fn new(settings: &AgentsSettings) -> Webhooks {
        let rules = Rules {
            allow_http: settings.webhook_allow_http,
            allow_private: settings.allow_private_urls,
        };
        Webhooks {
            inner: Arc::new(Inner {
                entries: Mutex::new(Vec::new()),
                rules,
                delivery: Arc::new(Delivery::new(rules, settings.webhook_retry_base)),
                dropped: AtomicU64::new(0),
            }),
        }
    }

    fn entries(&self) -> MutexGuard<'_, Vec<Entry>> {
        self.inner.entries()
    }

    /// Another owner's endpoint answers exactly like a missing one.
    fn find(&self, owner: &str, id: &str) -> Result<Arc<Endpoint>, ApiError> {
        self.entries()
            .iter()
            .find(|e| e.endpoint.id == id && e.endpoint.owner == owner)
            .map(|e| e.endpoint.clone())
            .ok_or_else(|| not_found("webhook endpoint", "webhook_endpoint_id", id))
    }

    pub async fn create(
        &self,
        owner: &str,
        body: WebhookEndpointCreate,
    ) -> Result<WebhookEndpoint, ApiError> {
        let name = name(body.name)?.ok_or_else(|| invalid("name", "`name` is required"))?;
        let url = body
            .url
            .ok_or_else(|| invalid("url", "`url` is required"))?;
        let event_types = events::parse_list(body.event_types.as_ref())?;
        // Last: the only check that may wait (on DNS).
        self.inner.rules.check_resolving(&url, "url").await?;
        let now = ids::now();
        let endpoint = Arc::new(Endpoint {
            id: ids::new("we"),
            owner: owner.to_owned(),
            created_at: now,
            config: Mutex::new(Config {
                name,
                url,
                event_types,
                secret: new_secret()?,
                updated_at: now,
            }),
            closed: AtomicBool::new(false),
        });
        let (queue, rx) = mpsc::channel(QUEUE_CAPACITY);
        tokio::spawn(deliver::worker(
            endpoint.clone(),
            rx,
            self.inner.delivery.clone(),
        ));
        let answer = endpoint.answer_with_secret();
        self.entries().push(Entry {
            endpoint,
            queue,
            dropped: Arc::default(),
        });
        Ok(answer)
    }

    pub fn list(&self, owner: &str) -> Vec<WebhookEndpoint> {
        self.entries()
            .iter()
            .filter(|e| e.endpoint.owner == owner)
            .map(|e| e.endpoint.answer())
            .collect()
    }

    pub fn get(&self, owner: &str, id: &str) -> Result<WebhookEndpoint, ApiError> {
        Ok(self.find(owner, id)?.answer())
    }

    /// Changes what is given; `updated_at` moves only when something actually changed.
    pub async fn update(
        &self,
        owner: &str,
        id: &str,
        body: WebhookEndpointUpdate,
    ) -> Result<WebhookEndpoint, ApiError> {
        let endpoint = self.find(owner, id)?;
        let name = name(body.name)?;
        let url = body.url;
        let event_types = body
            .event_types
            .map(|list| events::parse_list(Some(&list)))
            .transpose()?;
        if let Some(url) = &url {
            self.inner.rules.check_resolving(url, "url").await?;
        }
        {
            let mut c = endpoint.config();
            let before = (c.name.clone(), c.url.clone(), c.event_types.clone());
            if let Some(name) = name {
                c.name = name;
            }
            if let Some(url) = url {
                c.url = url;
            }
            if let Some(event_types) = event_types {
                c.event_types = event_types;
            }
            if before != (c.name.clone(), c.url.clone(), c.event_types.clone()) {
                c.updated_at = ids::now();
            }
        }
        // Deleted while the URL was being resolved: answer like any missing endpoint.
        self.find(owner, id)?;
        Ok(endpoint.answer())
    }

    pub fn delete(&self, owner: &str, id: &str) -> Result<Deleted, ApiError> {
        let endpoint = self.find(owner, id)?;
        endpoint.closed.store(true, Ordering::Relaxed);
        self.entries()
            .retain(|e| !Arc::ptr_eq(&e.endpoint, &endpoint));
        Ok(Deleted::new(id, "webhook_endpoint.deleted"))
    }

    /// A new secret, at once: deliveries from now on (retries included) use it, and there
    /// is no window in which the old one still signs.
    pub fn rotate_secret(
        &self,
        owner: &str,
        id: &str,
        body: RotateSecret,
    ) -> Result<WebhookEndpoint, ApiError> {
        let endpoint = self.find(owner, id)?;
        if body.keep_old_secret_active_for_24_hours == Some(true) {
            return Err(invalid(
                "keep_old_secret_active_for_24_hours",
                "keeping the old secret active is not supported: a rotation replaces the secret at once",
            ));
        }
        let secret = new_secret()?;
        {
            let mut c = endpoint.config();
            c.secret = secret;
            c.updated_at = ids::now();
        }
        Ok(endpoint.answer_with_secret())
    }

    /// Signs and sends one sample event now, once, and reports the receiver's status. A
    /// receiver that cannot be reached is a 400 naming `url`, since no status exists.
    pub async fn test(
        &self,
        owner: &str,
        id: &str,
        body: TestEvent,
    ) -> Result<TestResult, ApiError> {
        let endpoint = self.find(owner, id)?;
        let raw = body
            .event_type
            .ok_or_else(|| invalid("event_type", "`event_type` is required"))?;
        let kind = events::parse(&raw, "event_type")?;
        let job = Job::new(Bytes::from(events::sample(kind).to_string()));
        let status = self
            .inner
            .delivery
            .attempt(&endpoint, &job)
            .await
            .map_err(|why| invalid("url", format!("the test delivery failed: {why}")))?;
        Ok(TestResult {
            object: "webhook_endpoint.test",
            webhook_endpoint_id: endpoint.id.clone(),
            event_type: kind,
            status_code: status,
            success: true,
            x_svc: TestDelivery {
                compute: "none",
                webhook_id: job.msg_id,
            },
        })
    }

    pub fn event_types() -> EventTypes {
        EventTypes {
            object: "list",
            data: &events::ACCEPTED,
        }
    }

    /// What follows a session of `owner` from its first event, to deliver them.
    pub fn sink(&self, owner: &str) -> Box<dyn Follower> {
        Box::new(OwnerSink {
            owner: owner.to_owned(),
            inner: self.inner.clone(),
        })
    }

    /// Deliveries dropped because an endpoint's queue was full, since start.
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }
}

impl Inner {
    fn entries(&self) -> MutexGuard<'_, Vec<Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

struct OwnerSink {
    owner: String,
    inner: Arc<Inner>,
}

impl Follower for OwnerSink {
    /// Runs under the session's log lock: it only looks up the subscribed endpoints and
    /// queues, never waits. It follows the session for its whole life.
    fn event(&mut self, kind: &str, event: &Value) -> bool {
        self.deliver(kind, event);
        true
    }
}

impl OwnerSink {
    fn deliver(&self, kind: &str, event: &Value) {
        let Some(kind) = events::ACCEPTED.iter().find(|k| **k == kind) else {
            return;
        };
        let queues: Vec<(String, mpsc::Sender<Job>, Arc<AtomicU64>)> = self
            .inner
            .entries()
            .iter()
            .filter(|e| {
                e.endpoint.owner == self.owner && e.endpoint.config().event_types.contains(kind)
            })
            .map(|e| (e.endpoint.id.clone(), e.queue.clone(), e.dropped.clone()))
            .collect();
        if queues.is_empty() {
            return;
        }
        let body = Bytes::from(events::body(kind, &event["session"]).to_string());
        for (id, queue, dropped_here) in queues {
            // The slot first: a full queue costs no delivery id.
            let Ok(slot) = queue.try_reserve() else {
                let in_all = self.inner.dropped.fetch_add(1, Ordering::Relaxed) + 1;
                let here = dropped_here.fetch_add(1, Ordering::Relaxed) + 1;
                if worth_a_warning(here) {
                    tracing::warn!(endpoint = %id, "webhook queue full: `{kind}` dropped ({here} dropped for this endpoint, {in_all} in all; warned at the 1st, 2nd, 4th, 8th... drop of each endpoint)");
                }
                continue;
            };
            slot.send(Job::new(body.clone()));
        }
    }
}

/// Whether the `n`th drop of one endpoint is logged: a receiver that stays stuck would
/// otherwise write a line for every event, so the lines thin out as the count grows (the
/// 1st, 2nd, 4th, 8th...), each with the count so far; `dropped()` has the exact total.
fn worth_a_warning(n: u64) -> bool {
    n.is_power_of_two()
}

/// `name`: a non-empty string when given.
fn name(name: Option<String>) -> Result<Option<String>, ApiError> {
    match name {
        Some(n) if n.trim().is_empty() => Err(invalid("name", "`name` must not be empty")),
        other => Ok(other),
    }
}

fn new_secret() -> Result<String, ApiError> {
    sign::new_secret().map_err(|e| {
        ApiError::new(
            Code::Internal,
            format!("no random source for the signing secret: {e}"),
        )
    })
}

#[cfg(test)]
mod tests;
