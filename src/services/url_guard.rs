//! Which hosts a URL given by a caller may reach: the one rule behind webhook endpoints and
//! MCP credential URLs now, and `http_fetch` and browser navigation next, so a caller cannot
//! make the server reach its own machine, its network or any address that is not a public
//! destination.
//!
//! Addresses are judged by one table, the IANA special-purpose address registries
//! (`iana-ipv4-special-registry`, `iana-ipv6-special-registry`), read as: an address inside a
//! block that the registry does not mark "globally reachable: true" is refused; the most
//! specific block decides, so the few globally reachable exceptions inside a refused block
//! (anycast services in `192.0.0.0/24` and `2001::/23`) stay reachable. Multicast, which the
//! registries leave to their own registries, is refused too: it is never a unicast target.

use futures::future::BoxFuture;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// A lookup taking longer is treated as failed.
const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

/// Whether a parsed URL's host is private; `None` when it has none. `url` has already read
/// the decimal, hex and short spellings of an address (`https://2130706433/`) as the
/// address, so they are judged as one.
pub fn url_host_is_private(url: &url::Url) -> Option<bool> {
    Some(match url.host()? {
        url::Host::Domain(name) => is_private(name),
        url::Host::Ipv4(ip) => is_private_ip(ip.into()),
        url::Host::Ipv6(ip) => is_private_ip(ip.into()),
    })
}

/// A name reserved for the local machine or network, or a literal address that is not
/// globally reachable.
pub fn is_private(host: &str) -> bool {
    // A trailing dot names the same host (`localhost.`).
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host == "localhost"
        || host.ends_with(".localhost")
        || host.ends_with(".local")
        || host.ends_with(".internal")
    {
        return true;
    }
    host.parse::<IpAddr>().is_ok_and(is_private_ip)
}

/// Not globally reachable by the special-purpose registries (or multicast). IPv6 forms
/// whose registry row is reachable only through an embedded IPv4 address (the NAT64
/// well-known prefix) are judged by that address.
pub fn is_private_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => !reachable_v4(v4),
        IpAddr::V6(v6) => !reachable_v6(v6),
    }
}

/// One registry row: a block and whether the registry marks it globally reachable.
struct Block<const N: usize> {
    network: [u8; N],
    prefix: u32,
    reachable: bool,
}

const fn v4(a: u8, b: u8, c: u8, d: u8, prefix: u32, reachable: bool) -> Block<4> {
    Block {
        network: [a, b, c, d],
        prefix,
        reachable,
    }
}

/// IPv4 special-purpose registry (RFC 6890 and its updates), plus multicast.
const V4_BLOCKS: &[Block<4>] = &[
    v4(0, 0, 0, 0, 8, false),          // "this network"
    v4(10, 0, 0, 0, 8, false),         // private use
    v4(100, 64, 0, 0, 10, false),      // shared address space (CGNAT)
    v4(127, 0, 0, 0, 8, false),        // loopback
    v4(169, 254, 0, 0, 16, false),     // link local
    v4(172, 16, 0, 0, 12, false),      // private use
    v4(192, 0, 0, 0, 24, false),       // IETF protocol assignments
    v4(192, 0, 0, 9, 32, true),        // port control protocol anycast
    v4(192, 0, 0, 10, 32, true),       // traversal using relays around NAT anycast
    v4(192, 0, 2, 0, 24, false),       // documentation (TEST-NET-1)
    v4(192, 31, 196, 0, 24, true),     // AS112-v4
    v4(192, 52, 193, 0, 24, true),     // AMT
    v4(192, 88, 99, 0, 24, false),     // deprecated 6to4 relay anycast
    v4(192, 168, 0, 0, 16, false),     // private use
    v4(192, 175, 48, 0, 24, true),     // direct delegation AS112 service
    v4(198, 18, 0, 0, 15, false),      // benchmarking
    v4(198, 51, 100, 0, 24, false),    // documentation (TEST-NET-2)
    v4(203, 0, 113, 0, 24, false),     // documentation (TEST-NET-3)
    v4(224, 0, 0, 0, 4, false),        // multicast
    v4(240, 0, 0, 0, 4, false),        // reserved
    v4(255, 255, 255, 255, 32, false), // limited broadcast
];

const fn v6(segments: [u16; 8], prefix: u32, reachable: bool) -> Block<16> {
    let mut network = [0u8; 16];
    let mut i = 0;
    while i < 8 {
        network[2 * i] = (segments[i] >> 8) as u8;
        network[2 * i + 1] = segments[i] as u8;
        i += 1;
    }
    Block {
        network,
        prefix,
        reachable,
    }
}

/// IPv6 special-purpose registry, plus multicast and the deprecated forms that carry an
/// IPv4 address (IPv4-compatible, IPv4-translated) or a site (site-local).
const V6_BLOCKS: &[Block<16>] = &[
    v6([0, 0, 0, 0, 0, 0, 0, 0], 96, false), // IPv4-compatible (deprecated), ::, ::1
    v6([0, 0, 0, 0, 0, 0xffff, 0, 0], 96, false), // IPv4-mapped
    v6([0, 0, 0, 0, 0xffff, 0, 0, 0], 96, false), // IPv4-translated (SIIT)
    v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, true), // NAT64 well-known prefix
    v6([0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, false), // local-use IPv4/IPv6 translation
    v6([0x100, 0, 0, 0, 0, 0, 0, 0], 64, false), // discard-only
    v6([0x100, 0, 0, 1, 0, 0, 0, 0], 64, false), // dummy IPv6 prefix
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 23, false), // IETF protocol assignments
    v6([0x2001, 0, 0, 0, 0, 0, 0, 0], 32, false), // Teredo
    v6([0x2001, 1, 0, 0, 0, 0, 0, 1], 128, true), // port control protocol anycast
    v6([0x2001, 1, 0, 0, 0, 0, 0, 2], 128, true), // TURN anycast
    v6([0x2001, 1, 0, 0, 0, 0, 0, 3], 128, true), // DNS-SD service registration protocol anycast
    v6([0x2001, 2, 0, 0, 0, 0, 0, 0], 48, false), // benchmarking
    v6([0x2001, 3, 0, 0, 0, 0, 0, 0], 32, true), // AMT
    v6([0x2001, 4, 0x112, 0, 0, 0, 0, 0], 48, true), // AS112-v6
    v6([0x2001, 0x10, 0, 0, 0, 0, 0, 0], 28, false), // ORCHID (deprecated)
    v6([0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28, true), // ORCHIDv2
    v6([0x2001, 0x30, 0, 0, 0, 0, 0, 0], 28, true), // drone remote ID DETs
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, false), // documentation
    v6([0x2002, 0, 0, 0, 0, 0, 0, 0], 16, false), // 6to4 (not marked globally reachable)
    v6([0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0], 48, true), // direct delegation AS112 service
    v6([0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, false), // documentation
    v6([0x5f00, 0, 0, 0, 0, 0, 0, 0], 16, false), // segment routing SIDs
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, false), // unique local
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, false), // link-local unicast
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, false), // site-local (deprecated)
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8, false), // multicast
];

/// The most specific block holding `addr`, if any.
fn most_specific<'a, const N: usize>(
    blocks: &'a [Block<N>],
    addr: &[u8; N],
) -> Option<&'a Block<N>> {
    let bits = |bytes: &[u8; N]| -> u128 {
        bytes
            .iter()
            .fold(0u128, |acc, b| (acc << 8) | u128::from(*b))
    };
    let (addr, width) = (bits(addr), (N * 8) as u32);
    blocks
        .iter()
        .filter(|b| {
            let mask = match b.prefix {
                0 => 0,
                p => u128::MAX << (width - p) & (u128::MAX >> (128 - width)),
            };
            addr & mask == bits(&b.network) & mask
        })
        .max_by_key(|b| b.prefix)
}

fn reachable_v4(ip: Ipv4Addr) -> bool {
    most_specific(V4_BLOCKS, &ip.octets()).is_none_or(|b| b.reachable)
}

fn reachable_v6(ip: Ipv6Addr) -> bool {
    match most_specific(V6_BLOCKS, &ip.octets()) {
        None => true,
        Some(block) if !block.reachable => false,
        // The NAT64 well-known prefix reaches the IPv4 address in its last 32 bits.
        Some(block) if block.prefix == 96 => {
            let o = ip.octets();
            reachable_v4(Ipv4Addr::new(o[12], o[13], o[14], o[15]))
        }
        Some(_) => true,
    }
}

/// The addresses `name` resolves to now, with a time limit.
pub async fn lookup(name: &str) -> Result<Vec<SocketAddr>, String> {
    let found = tokio::time::timeout(LOOKUP_TIMEOUT, tokio::net::lookup_host((name, 0)))
        .await
        .map_err(|_| format!("resolving `{name}` timed out"))?
        .map_err(|e| format!("`{name}` does not resolve: {e}"))?;
    let addrs: Vec<SocketAddr> = found.collect();
    if addrs.is_empty() {
        return Err(format!("`{name}` has no address"));
    }
    Ok(addrs)
}

/// How a name becomes addresses: the system's resolver, or a fixed table in tests.
pub type Lookup = fn(String) -> BoxFuture<'static, Result<Vec<SocketAddr>, String>>;

pub fn system_lookup(name: String) -> BoxFuture<'static, Result<Vec<SocketAddr>, String>> {
    Box::pin(async move { lookup(&name).await })
}

/// The addresses a connection for `name` may use: all of them, once every one is globally
/// reachable (a name with one private address is refused whole, since the connection could
/// pick it). Checked on the very lookup the connection uses, so a name that re-resolves to
/// a private address later (DNS rebinding) is caught then.
pub fn admit(
    allow_private: bool,
    name: &str,
    addrs: Vec<SocketAddr>,
) -> Result<Vec<SocketAddr>, String> {
    if !allow_private && let Some(a) = addrs.iter().find(|a| is_private_ip(a.ip())) {
        return Err(format!(
            "`{name}` resolves to the private or loopback address {}",
            a.ip()
        ));
    }
    Ok(addrs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_hosts_are_recognized() {
        for host in [
            "localhost",
            "LOCALHOST.",
            "a.localhost",
            "printer.local",
            "svc.internal",
            "127.0.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "10.1.2.3",
            "192.168.0.1",
            "172.16.5.5",
            "169.254.169.254",
            "100.64.0.1",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "::",
            "::1",
            "[::1]",
            "fd00::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:a9fe:a9fe",
            "::127.0.0.1",
            "64:ff9b::7f00:1",
            "64:ff9b::a00:1",
            "2002:7f00:1::",
            "2002:c0a8:101::1",
        ] {
            assert!(is_private(host), "{host}");
        }
        for host in [
            "example.com",
            "8.8.8.8",
            "1.1.1.1",
            "2001:4860::8888",
            "64:ff9b::808:808",
            "localhost.example.com",
        ] {
            assert!(!is_private(host), "{host}");
        }
    }

    /// Every row of the registries, tested at its first and last address, and the
    /// neighbours just outside the refused blocks.
    #[test]
    fn the_special_purpose_registries_row_by_row() {
        let refused = [
            "0.0.0.0",
            "0.255.255.255",
            "10.0.0.0",
            "10.255.255.255",
            "100.64.0.0",
            "100.127.255.255",
            "127.0.0.0",
            "127.255.255.255",
            "169.254.0.0",
            "169.254.255.255",
            "172.16.0.0",
            "172.31.255.255",
            "192.0.0.0",
            "192.0.0.8",
            "192.0.0.170",
            "192.0.0.171",
            "192.0.0.255",
            "192.0.2.0",
            "192.0.2.255",
            "192.88.99.0",
            "192.88.99.255",
            "192.168.0.0",
            "192.168.255.255",
            "198.18.0.0",
            "198.19.255.255",
            "198.51.100.0",
            "198.51.100.255",
            "203.0.113.0",
            "203.0.113.255",
            "224.0.0.0",
            "239.255.255.255",
            "240.0.0.0",
            "255.255.255.254",
            "255.255.255.255",
            "::",
            "::1",
            "::8.8.8.8",
            "::ffff:0:0",
            "::ffff:8.8.8.8",
            "::ffff:0:8.8.8.8",
            "::ffff:0:0:0",
            "64:ff9b::10.0.0.1",
            "64:ff9b:1::",
            "64:ff9b:1:ffff:ffff:ffff:ffff:ffff",
            "64:ff9b:1::7f00:1",
            "100::",
            "100::ffff:ffff:ffff:ffff",
            "100:0:0:1::1",
            "2001::",
            "2001:0:ffff:ffff:ffff:ffff:ffff:ffff",
            "2001:1::4",
            "2001:2::",
            "2001:2:0:ffff:ffff:ffff:ffff:ffff",
            "2001:10::1",
            "2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff",
            "2001:db8::",
            "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff",
            "2002::",
            "2002:808:808::1",
            "3fff::1",
            "5f00::1",
            "fc00::",
            "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "fe80::",
            "febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "fec0::1",
            "ff00::",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
        ];
        for addr in refused {
            let ip: IpAddr = addr.parse().expect(addr);
            assert!(is_private_ip(ip), "{addr} must be refused");
        }
        let reachable = [
            "1.0.0.0",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.0.9",
            "192.0.0.10",
            "192.0.1.0",
            "192.0.3.0",
            "192.31.196.1",
            "192.52.193.1",
            "192.88.98.255",
            "192.88.100.0",
            "192.175.48.1",
            "198.17.255.255",
            "198.20.0.0",
            "198.51.99.255",
            "198.51.101.0",
            "203.0.112.255",
            "203.0.114.0",
            "223.255.255.255",
            "64:ff9b::8.8.8.8",
            "2001:1::1",
            "2001:1::2",
            "2001:1::3",
            "2001:3::1",
            "2001:4:112::1",
            "2001:20::1",
            "2001:30::1",
            "2001:200::1",
            "2001:db7:ffff::1",
            "2001:db9::1",
            "2001:4860:4860::8888",
            "2620:4f:8000::1",
            "2a00:1450::1",
            "3ffe:ffff::1",
            "4000::1",
            "fbff::1",
            // Each differs from a refused block only in the top bit, so a mask that loses
            // bit 127 (`u128::MAX >> 1` for the IPv6 width) would judge it inside that block.
            "7c00::1",
            "7dff:ffff::1",
            "7e80::1",
            "7f00::1",
            "8000::",
            "8000::1",
            "8064:ff9b::a00:1",
            "a001:db8::1",
        ];
        for addr in reachable {
            let ip: IpAddr = addr.parse().expect(addr);
            assert!(!is_private_ip(ip), "{addr} must stay reachable");
        }
    }
}
