//! A bare TCP relay: the least any hop between a client and an engine does, each byte moved
//! from one socket to the other through a pipe with `splice(2)` (one thread each way, the
//! pipe as large as the engine's), with no HTTP, no provider and no process of its own. The
//! floor of the `rest` hop: the same client reaches the same engine through it.

use nix::fcntl::{FcntlArg, SpliceFFlags, fcntl, splice};
use std::net::{SocketAddr, TcpListener, TcpStream};

/// Starts a relay to `target`; the address it listens on.
pub fn start(target: SocketAddr) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(client) = client else { continue };
            let Ok(server) = TcpStream::connect(target) else {
                continue;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let (Ok(client_again), Ok(server_again)) = (client.try_clone(), server.try_clone())
            else {
                continue;
            };
            std::thread::spawn(move || pump(client, server));
            std::thread::spawn(move || pump(server_again, client_again));
        }
    });
    addr
}

/// Moves what `from` receives into `to` until `from` closes, then closes `to`'s sending side.
fn pump(from: TcpStream, to: TcpStream) {
    let Ok((read, write)) = nix::unistd::pipe() else {
        return;
    };
    let _ = fcntl(&write, FcntlArg::F_SETPIPE_SZ(1024 * 1024));
    // No SPLICE_F_MORE into the socket: it corks the last segment of an answer until the
    // kernel's 200 ms timer sends it.
    let flags = SpliceFFlags::SPLICE_F_MOVE;
    loop {
        let moved = match splice(&from, None, &write, None, 1024 * 1024, flags) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mut left = moved;
        while left > 0 {
            match splice(&read, None, &to, None, left, flags) {
                Ok(0) | Err(_) => return,
                Ok(n) => left -= n,
            }
        }
    }
    let _ = to.shutdown(std::net::Shutdown::Write);
}
