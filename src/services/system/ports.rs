//! Listening TCP sockets, from `/proc/net/tcp` and `/proc/net/tcp6`, with the process
//! that holds each when `/proc/<pid>/fd` shows it (a process of another user is not
//! readable without privileges: its sockets are listed without `pid`).

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// `st` of a listening socket in `/proc/net/tcp*`.
const LISTEN: &str = "0A";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listener {
    pub port: u16,
    pub address: IpAddr,
    /// `tcp` or `tcp6`: the table it came from (an IPv6 socket may accept IPv4 too).
    pub protocol: &'static str,
    pub inode: u64,
    pub pid: Option<u32>,
    pub program: Option<String>,
}

/// The listening sockets of one table's text. `v6` says which table it is.
pub fn parse_table(text: &str, v6: bool) -> Vec<Listener> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.get(3) != Some(&LISTEN) {
                return None;
            }
            let (addr, port) = fields.get(1)?.split_once(':')?;
            Some(Listener {
                port: u16::from_str_radix(port, 16).ok()?,
                address: if v6 { ipv6(addr)? } else { ipv4(addr)? },
                protocol: if v6 { "tcp6" } else { "tcp" },
                inode: fields.get(9)?.parse().ok()?,
                pid: None,
                program: None,
            })
        })
        .collect()
}

/// The kernel prints the address as the hex of its 32-bit words in host byte order.
fn word(hex: &str) -> Option<[u8; 4]> {
    let raw = u32::from_str_radix(hex, 16).ok()?;
    Some(if cfg!(target_endian = "little") {
        raw.to_le_bytes()
    } else {
        raw.to_be_bytes()
    })
}

fn ipv4(hex: &str) -> Option<IpAddr> {
    (hex.len() == 8).then_some(())?;
    Some(IpAddr::V4(Ipv4Addr::from(word(hex)?)))
}

fn ipv6(hex: &str) -> Option<IpAddr> {
    (hex.len() == 32).then_some(())?;
    let mut bytes = [0u8; 16];
    for i in 0..4 {
        bytes[4 * i..4 * i + 4].copy_from_slice(&word(hex.get(8 * i..8 * i + 8)?)?);
    }
    Some(IpAddr::V6(Ipv6Addr::from(bytes)))
}

/// The inode of a socket link target (`socket:[12345]`).
pub fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

/// Which visible process holds each socket inode (the lowest pid when several share it).
fn holders() -> HashMap<u64, u32> {
    let mut found: HashMap<u64, u32> = HashMap::new();
    for pid in super::process_ids() {
        let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if let Some(inode) = std::fs::read_link(fd.path())
                .ok()
                .and_then(|t| socket_inode(&t.to_string_lossy()))
            {
                found
                    .entry(inode)
                    .and_modify(|p| *p = (*p).min(pid))
                    .or_insert(pid);
            }
        }
    }
    found
}

/// Every listening TCP socket, sorted by port then address.
pub fn listening() -> Vec<Listener> {
    let mut all = Vec::new();
    for (path, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        // A kernel without IPv6 has no tcp6 table: nothing listens there.
        if let Ok(text) = std::fs::read_to_string(path) {
            all.extend(parse_table(&text, v6));
        }
    }
    let holders = holders();
    for l in &mut all {
        l.pid = holders.get(&l.inode).copied();
        l.program = l.pid.and_then(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
            Some(comm.trim_end().to_owned())
        });
    }
    all.sort_by_key(|l| (l.port, l.address));
    all.dedup_by(|a, b| a.inode == b.inode && a.port == b.port && a.address == b.address);
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:A345 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 52861 1 0000 100 0 0 10 0
   1: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 100 1 0000 100 0 0 10 0
   2: 0100007F:A345 0100007F:C000 01 00000000:00000000 00:00000000 00000000     0        0 777 1 0000 100 0 0 10 0
";
    const TCP6: &str = "  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:0050 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4243 1 0000 100 0 0 10 0
";

    #[test]
    fn only_listening_sockets_with_their_addresses() {
        let v4 = parse_table(TCP, false);
        assert_eq!(v4.len(), 2, "the established socket is not listed");
        assert_eq!(v4[0].port, 0xA345);
        assert_eq!(v4[0].address, "127.0.0.1".parse::<IpAddr>().unwrap());
        assert_eq!(v4[0].inode, 52861);
        assert_eq!(v4[1].port, 22);
        assert_eq!(v4[1].address, "0.0.0.0".parse::<IpAddr>().unwrap());
        let v6 = parse_table(TCP6, true);
        assert_eq!(v6[0].address, "::1".parse::<IpAddr>().unwrap());
        assert_eq!(v6[0].port, 8080);
        assert_eq!(v6[0].protocol, "tcp6");
        assert_eq!(v6[1].address, "::ffff:127.0.0.1".parse::<IpAddr>().unwrap());
        assert!(parse_table("header\n garbage line\n", false).is_empty());
    }

    #[test]
    fn a_socket_this_test_opens_is_listed_with_its_pid() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let found = listening().into_iter().find(|l| l.port == port).unwrap();
        assert_eq!(found.pid, Some(std::process::id()));
        assert!(found.program.is_some());
        assert_eq!(socket_inode("socket:[99]"), Some(99));
        assert_eq!(socket_inode("pipe:[99]"), None);
    }
}
