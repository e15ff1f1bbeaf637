//! How long the `rest` provider waits for its remote: every call crosses a network, so
//! every wait has a bound (a remote that stops answering is `E9002`, never a hang).

use crate::wire::COMMAND_TIMEOUT_DEFAULT_S;
use std::time::Duration;

/// What a command or code run's call gets beyond the run's own `timeout`: the remote's
/// time to start it, gather its output and answer.
const RUN_MARGIN: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Opening the TCP connection.
    pub connect: Duration,
    /// A JSON call, from the request to the answer's last byte; the head of a stream, a
    /// file read or a terminal's handshake.
    pub call: Duration,
    /// The longest silence of an open stream (event streams get a keep-alive every 15 s),
    /// a file's body, an upload, or a terminal (pinged meanwhile).
    pub idle: Duration,
}

impl Default for Timeouts {
    fn default() -> Timeouts {
        Timeouts {
            connect: Duration::from_secs(5),
            call: Duration::from_secs(60),
            idle: Duration::from_secs(60),
        }
    }
}

impl Timeouts {
    /// The limit of a command or code run's call: the call's own, or the run's `timeout`
    /// (seconds, default 60) and a margin when that is longer; `None` for `timeout: 0`,
    /// a run that asked for no limit (the connection's TCP keep-alive still notices a
    /// remote machine that is gone).
    pub fn for_run(&self, timeout: Option<u64>) -> Option<Duration> {
        match timeout.unwrap_or(COMMAND_TIMEOUT_DEFAULT_S) {
            0 => None,
            seconds => Some(self.call.max(Duration::from_secs(seconds) + RUN_MARGIN)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_waits_for_its_own_timeout_and_a_margin() {
        let t = Timeouts::default();
        assert_eq!(t.for_run(None), Some(Duration::from_secs(70)));
        assert_eq!(t.for_run(Some(1)), Some(Duration::from_secs(60)));
        assert_eq!(t.for_run(Some(600)), Some(Duration::from_secs(610)));
        assert_eq!(t.for_run(Some(0)), None);
    }
}
