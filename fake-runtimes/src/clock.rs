//! Wall clock with a fixed mode so snapshots of the output stay stable.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Timestamp used by every line when the clock is fixed: 2025-01-01T00:00:00Z.
pub const FIXED_EPOCH_MS: u64 = 1_735_689_600_000;

#[derive(Debug, Clone)]
pub struct Clock {
    fixed: bool,
    start: Instant,
}

impl Clock {
    pub fn new(fixed: bool) -> Self {
        Clock {
            fixed,
            start: Instant::now(),
        }
    }

    pub fn from_env() -> Self {
        Clock::new(crate::env::flag(crate::env::FIXED_CLOCK))
    }

    pub fn is_fixed(&self) -> bool {
        self.fixed
    }

    /// Milliseconds since the process started (0 when fixed).
    pub fn elapsed_ms(&self) -> u64 {
        if self.fixed {
            0
        } else {
            u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
        }
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> u64 {
        if self.fixed {
            return FIXED_EPOCH_MS;
        }
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            .unwrap_or(FIXED_EPOCH_MS)
    }

    /// RFC 3339 timestamp with milliseconds, like Claude Code's `timestamp` fields.
    pub fn now_rfc3339(&self) -> String {
        rfc3339(self.now_ms())
    }
}

/// Formats epoch milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ` without a date crate.
pub fn rfc3339(epoch_ms: u64) -> String {
    let secs = epoch_ms / 1000;
    let millis = epoch_ms % 1000;
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(rfc3339(FIXED_EPOCH_MS), "2025-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(rfc3339(951_782_400_123), "2000-02-29T00:00:00.123Z");
    }
}
