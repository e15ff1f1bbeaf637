//! A bounded byte ring for one output stream of a child: it keeps at most `capacity` bytes,
//! counts every byte ever written, and answers "everything since offset N" with what it
//! still holds and how much of it was dropped. Bytes are kept as written (never decoded),
//! so non-UTF-8 output survives byte-exact.

use std::collections::VecDeque;

/// Which bytes a full ring keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// The newest `capacity` bytes (a long-running process's output, a stderr tail).
    Newest,
    /// The first `capacity` bytes; the rest is counted and dropped (a bounded run's capped
    /// output, which reports `truncated`).
    First,
}

#[derive(Debug)]
pub struct Ring {
    capacity: usize,
    retention: Retention,
    kept: VecDeque<u8>,
    total: u64,
    closed: bool,
}

/// What a reader gets from [`Ring::read_from`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replay {
    /// Offset, in everything ever written, of the first byte of `bytes`.
    pub offset: u64,
    pub bytes: Vec<u8>,
    /// Bytes between the offset asked for and `offset` that the ring no longer holds.
    pub dropped: u64,
    /// Everything ever written: the offset to ask from next time.
    pub total: u64,
    /// The stream has ended (EOF on the pipe): nothing will follow `total`.
    pub closed: bool,
}

impl Replay {
    /// Bytes were written after the end of `bytes` that are not kept (a [`Retention::First`]
    /// ring that filled up).
    pub fn truncated(&self) -> bool {
        self.offset + (self.bytes.len() as u64) < self.total
    }
}

impl Ring {
    pub fn new(capacity: usize, retention: Retention) -> Ring {
        Ring {
            capacity,
            retention,
            kept: VecDeque::new(),
            total: 0,
            closed: false,
        }
    }

    pub fn write(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        match self.retention {
            Retention::Newest if chunk.len() >= self.capacity => {
                self.kept.clear();
                self.kept.extend(&chunk[chunk.len() - self.capacity..]);
            }
            Retention::Newest => {
                let excess = (self.kept.len() + chunk.len()).saturating_sub(self.capacity);
                self.kept.drain(..excess);
                self.kept.extend(chunk);
            }
            Retention::First => {
                let room = self.capacity.saturating_sub(self.kept.len());
                self.kept.extend(&chunk[..room.min(chunk.len())]);
            }
        }
    }

    /// Marks the end of the stream.
    pub fn close(&mut self) {
        self.closed = true;
    }

    pub fn total(&self) -> u64 {
        self.total
    }

    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Offset of the first byte kept.
    fn start(&self) -> u64 {
        match self.retention {
            Retention::Newest => self.total - self.kept.len() as u64,
            Retention::First => 0,
        }
    }

    /// Everything kept from offset `from` on.
    pub fn read_from(&self, from: u64) -> Replay {
        let start = self.start();
        let end = start + self.kept.len() as u64;
        let offset = from.max(start).min(self.total);
        let bytes = if offset < end {
            self.kept
                .range((offset - start) as usize..)
                .copied()
                .collect()
        } else {
            Vec::new()
        };
        Replay {
            offset,
            bytes,
            dropped: start.saturating_sub(from),
            total: self.total,
            closed: self.closed,
        }
    }

    /// The last `n` bytes kept (or fewer).
    pub fn tail(&self, n: usize) -> Vec<u8> {
        let skip = self.kept.len().saturating_sub(n);
        self.kept.range(skip..).copied().collect()
    }
}
