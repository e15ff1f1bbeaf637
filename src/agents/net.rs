//! Which hosts count as private: the one rule behind MCP credential URLs and webhook
//! endpoints, so a caller cannot make the server reach its own machine or network.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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

/// A name reserved for the local machine or network, or a literal private address.
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

/// Loopback, private, link-local, unspecified, shared (CGNAT), multicast, broadcast and
/// reserved ranges; IPv6 forms that embed an IPv4 address are judged by that address.
pub fn is_private_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => is_private_v6(v6),
    }
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0
        || a == 100 && (64..128).contains(&b)
        || a == 198 && (18..20).contains(&b)
        || a >= 240
}

fn is_private_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_private_v4(v4);
    }
    let embedded = |hi: u16, lo: u16| Ipv4Addr::from(((hi as u32) << 16) | lo as u32);
    // IPv4-compatible (::a.b.c.d, deprecated) and the NAT64 well-known prefix 64:ff9b::/96
    // reach the embedded IPv4 address.
    if s[..6] == [0; 6] || s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return ip.is_loopback() || ip.is_unspecified() || is_private_v4(embedded(s[6], s[7]));
    }
    // 6to4 (2002::/16) carries its IPv4 address in the next 32 bits.
    if s[0] == 0x2002 && is_private_v4(embedded(s[1], s[2])) {
        return true;
    }
    ip.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
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
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:808:808::1",
            "localhost.example.com",
        ] {
            assert!(!is_private(host), "{host}");
        }
    }
}
