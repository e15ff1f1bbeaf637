//! The socket's low-water mark (`SO_RCVLOWAT`) while a drain thread waits on it: its wait
//! ends once the socket holds a batch worth moving, not at every segment that arrives.
//!
//! A non-blocking `splice(2)` from a TCP socket takes what is queued at that instant, and
//! `poll(2)` wakes at the first byte: an upload of 100 MiB on loopback became 550 to 1,450
//! small batches and 190 to 580 waits, each batch a splice in and a splice out, about 10%
//! under a blocking receiver (whose splice keeps reading while more comes). With the mark
//! the same upload is 120 to 280 batches and a few dozen waits: at or over the blocking
//! receiver in a model of both, and the zero-copy PUT of `benches/files.rs` went from 0.82
//! to 0.88 of its TCP floor to 0.90 to 0.97. The socket must stay non-blocking (the
//! runtime shares it), so the thread cannot block in `splice` itself.
//!
//! The mark is the socket's, not the descriptor's: the runtime would see it too (a read
//! readiness held back until that many bytes). So it is set only while the thread owns the
//! socket's intake, never above the bytes still due (the last ones must still wake the
//! wait; a peer's end wakes it whatever the mark), and put back to 1 (the default) when
//! the thread stops, however it stops. Setting it back wakes a waiter the kernel held
//! (Linux checks readiness on every change), so nothing the runtime waits for is lost.

// The macro names its helpers unqualified: they must be in scope where it expands.
use nix::{libc, setsockopt_impl, sockopt_impl};
use std::os::fd::BorrowedFd;

sockopt_impl!(
    /// `SO_RCVLOWAT` (nix has none of its own).
    RcvLowat,
    SetOnly,
    libc::SOL_SOCKET,
    libc::SO_RCVLOWAT,
    i32
);

/// The batch a waiting drain asks for: a quarter of the pipe it splices through (runs of
/// 64 KiB to 512 KiB measured alike on loopback).
pub(super) const BATCH: usize = 256 * 1024;

/// The mark on one socket, back to 1 when dropped.
pub(super) struct LowWater<'a> {
    socket: BorrowedFd<'a>,
    /// The mark set last (1: the kernel's default, as found).
    set: i32,
}

impl<'a> LowWater<'a> {
    pub(super) fn new(socket: BorrowedFd<'a>) -> LowWater<'a> {
        LowWater { socket, set: 1 }
    }

    /// Asks the next wait to end only once `bytes` are queued (at least 1). A refusal
    /// leaves the mark as it was: the wait then ends earlier, which is only slower.
    pub(super) fn wait_for(&mut self, bytes: usize) {
        let bytes = i32::try_from(bytes.max(1)).unwrap_or(i32::MAX);
        if bytes != self.set && set(self.socket, bytes) {
            self.set = bytes;
        }
    }
}

impl Drop for LowWater<'_> {
    fn drop(&mut self) {
        if self.set != 1 {
            set(self.socket, 1);
        }
    }
}

fn set(socket: BorrowedFd<'_>, bytes: i32) -> bool {
    nix::sys::socket::setsockopt(&socket, RcvLowat, &bytes).is_ok()
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use nix::getsockopt_impl;
    use std::io::{Read, Write};
    use std::os::fd::AsFd;

    sockopt_impl!(ReadLowat, GetOnly, libc::SOL_SOCKET, libc::SO_RCVLOWAT, i32);

    /// The socket's mark now.
    pub(in crate::zero_copy) fn mark(socket: &impl AsFd) -> i32 {
        nix::sys::socket::getsockopt(socket, ReadLowat).unwrap()
    }

    fn pair() -> (std::net::TcpStream, std::net::TcpStream) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let near = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (far, _) = listener.accept().unwrap();
        (near, far)
    }

    #[test]
    fn the_mark_is_set_and_put_back_when_dropped() {
        let (_near, far) = pair();
        {
            let mut low = LowWater::new(far.as_fd());
            low.wait_for(BATCH);
            assert_eq!(mark(&far), BATCH as i32);
            low.wait_for(0);
            assert_eq!(mark(&far), 1, "never 0: a wait must need a byte");
            low.wait_for(10);
        }
        assert_eq!(mark(&far), 1);
    }

    /// What the drain relies on: a wait ends at the mark, and at the peer's end below it.
    #[test]
    fn a_wait_ends_at_the_mark_or_at_the_peers_end() {
        use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
        let (mut near, mut far) = pair();
        let readable = |far: &std::net::TcpStream, ms: u16| {
            let mut fds = [PollFd::new(far.as_fd(), PollFlags::POLLIN)];
            poll(&mut fds, PollTimeout::from(ms)).unwrap() == 1
        };
        let mut low = LowWater::new(far.as_fd());
        low.wait_for(1000);
        near.write_all(&[7; 999]).unwrap();
        assert!(!readable(&far, 100), "999 bytes are under the mark");
        near.write_all(&[7]).unwrap();
        assert!(readable(&far, 2000), "1,000 bytes reach it");
        low.wait_for(2000);
        near.shutdown(std::net::Shutdown::Write).unwrap();
        assert!(
            readable(&far, 2000),
            "the peer's end wakes the wait below the mark"
        );
        drop(low);
        let mut got = Vec::new();
        far.read_to_end(&mut got).unwrap();
        assert_eq!(got.len(), 1000);
    }
}
