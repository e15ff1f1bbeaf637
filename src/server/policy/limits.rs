//! Rate and concurrency limits of one endpoint. Rates are per identity (one noisy caller
//! cannot starve another); concurrency is for the endpoint as a whole, and a permit lives as
//! long as the response body or socket that holds it.

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde::Serialize;
use std::num::NonZeroU32;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Rate {
    pub count: u32,
    pub per: Per,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    Second,
    Minute,
    Hour,
}

impl Rate {
    pub fn display(&self) -> String {
        let unit = match self.per {
            Per::Second => "s",
            Per::Minute => "m",
            Per::Hour => "h",
        };
        format!("{}/{unit}", self.count)
    }
}

/// `10/s`, `60/m`, `1000/h`.
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    let bad = || format!("`{text}` is not a rate; write N/s, N/m or N/h with N > 0");
    let (count, unit) = text.trim().split_once('/').ok_or_else(bad)?;
    let count: u32 = count.trim().parse().map_err(|_| bad())?;
    if count == 0 {
        return Err(bad());
    }
    let per = match unit.trim() {
        "s" | "sec" | "second" => Per::Second,
        "m" | "min" | "minute" => Per::Minute,
        "h" | "hour" => Per::Hour,
        _ => return Err(bad()),
    };
    Ok(Rate { count, per })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitSpec {
    pub rate: Option<Rate>,
    pub burst: Option<u32>,
    pub concurrency: Option<u32>,
    pub body_bytes: u64,
    pub body_bytes_explicit: bool,
}

impl LimitSpec {
    pub fn describe(&self) -> serde_json::Value {
        serde_json::json!({
            "rate": self.rate.map(|r| r.display()),
            "burst": self.rate.map(|r| self.burst.unwrap_or(r.count)),
            "concurrency": self.concurrency,
            "body_bytes": self.body_bytes,
        })
    }
}

pub struct Limiter {
    rate: Option<DefaultKeyedRateLimiter<String>>,
    concurrency: Option<Arc<Semaphore>>,
}

pub enum Refusal {
    Rate { retry_after_secs: u64 },
    Concurrency,
}

impl Limiter {
    pub fn new(spec: &LimitSpec) -> Limiter {
        let rate = spec.rate.map(|rate| {
            let count = NonZeroU32::new(rate.count).expect("validated > 0");
            let quota = match rate.per {
                Per::Second => Quota::per_second(count),
                Per::Minute => Quota::per_minute(count),
                Per::Hour => Quota::per_hour(count),
            };
            let burst = spec.burst.and_then(NonZeroU32::new).unwrap_or(count);
            RateLimiter::keyed(quota.allow_burst(burst))
        });
        let concurrency = spec
            .concurrency
            .map(|n| Arc::new(Semaphore::new(n as usize)));
        Limiter { rate, concurrency }
    }

    pub fn is_unlimited(&self) -> bool {
        self.rate.is_none() && self.concurrency.is_none()
    }

    /// Takes one unit of rate for `identity` and, when limited, one concurrency permit.
    pub fn admit(&self, identity: &str) -> Result<Option<OwnedSemaphorePermit>, Refusal> {
        if let Some(rate) = &self.rate
            && let Err(not_until) = rate.check_key(&identity.to_owned())
        {
            let wait = not_until.wait_time_from(DefaultClock::default().now());
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            return Err(Refusal::Rate {
                retry_after_secs: secs.max(1),
            });
        }
        match &self.concurrency {
            Some(semaphore) => semaphore
                .clone()
                .try_acquire_owned()
                .map(Some)
                .map_err(|_| Refusal::Concurrency),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse() {
        assert_eq!(
            parse_rate("10/s"),
            Ok(Rate {
                count: 10,
                per: Per::Second
            })
        );
        assert_eq!(parse_rate(" 60 / m ").unwrap().per, Per::Minute);
        for bad in ["", "10", "0/s", "x/s", "10/d", "-1/s"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn burst_then_refusal_with_retry_after() {
        let limiter = Limiter::new(&LimitSpec {
            rate: Some(Rate {
                count: 2,
                per: Per::Minute,
            }),
            burst: None,
            concurrency: None,
            body_bytes: 1,
            body_bytes_explicit: false,
        });
        assert!(limiter.admit("a").is_ok());
        assert!(limiter.admit("a").is_ok());
        match limiter.admit("a") {
            Err(Refusal::Rate { retry_after_secs }) => {
                assert!((1..=30).contains(&retry_after_secs))
            }
            _ => panic!("third call within the minute must be refused"),
        }
        assert!(limiter.admit("b").is_ok(), "rates are per identity");
    }

    #[test]
    fn concurrency_permit_is_released_on_drop() {
        let limiter = Limiter::new(&LimitSpec {
            rate: None,
            burst: None,
            concurrency: Some(1),
            body_bytes: 1,
            body_bytes_explicit: false,
        });
        let permit = limiter.admit("a").ok().flatten();
        assert!(permit.is_some());
        assert!(matches!(limiter.admit("b"), Err(Refusal::Concurrency)));
        drop(permit);
        assert!(limiter.admit("b").is_ok());
    }
}
