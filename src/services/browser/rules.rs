//! Which URLs the browser may load: the server's one URL guard (`services::url_guard`: the
//! special-purpose address registries) plus the operator's host lists and the private
//! blocks the operator admits (loopback for a page served by a test). Judged twice: before
//! a navigation, to answer a typed refusal, and by the proxy on every request Chromium
//! makes (redirects, frames, scripts, forms), on the very addresses it then connects to.

use crate::services::url_guard;
use std::net::{IpAddr, SocketAddr};

/// The operator's rules for browser URLs.
#[derive(Debug, Clone, Default)]
pub struct UrlRules {
    /// Host patterns (`example.com`, `*.example.com`); when not empty, every other host is
    /// refused.
    pub allow: Vec<String>,
    /// Host patterns refused whatever `allow` says.
    pub deny: Vec<String>,
    /// Address blocks admitted although the guard calls them private (`127.0.0.0/8`).
    pub private_allowed: Vec<Block>,
}

/// An address block, `addr/prefix`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    pub addr: IpAddr,
    pub prefix: u8,
}

impl Block {
    /// `127.0.0.0/8`, `::1/128`, a bare address (a block of one), or `loopback` (both
    /// loopback blocks).
    pub fn parse_list(text: &str) -> Result<Vec<Block>, String> {
        let mut out = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if item == "loopback" {
                out.push(Block::parse("127.0.0.0/8")?);
                out.push(Block::parse("::1/128")?);
            } else {
                out.push(Block::parse(item)?);
            }
        }
        Ok(out)
    }

    fn parse(item: &str) -> Result<Block, String> {
        let (addr, prefix) = item.split_once('/').unwrap_or((item, ""));
        let addr: IpAddr = addr
            .parse()
            .map_err(|_| format!("`{item}` is not an address block (like 127.0.0.0/8)"))?;
        let width = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            "" => width,
            p => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= width)
                .ok_or_else(|| format!("`{item}`: the prefix must be 0 to {width}"))?,
        };
        Ok(Block { addr, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let (net, ip, width) = match (self.addr, ip) {
            (IpAddr::V4(n), IpAddr::V4(i)) => (u32::from(n) as u128, u32::from(i) as u128, 32),
            (IpAddr::V6(n), IpAddr::V6(i)) => (u128::from(n), u128::from(i), 128),
            _ => return false,
        };
        let shift = width - u32::from(self.prefix);
        shift >= width || (net >> shift) == (ip >> shift)
    }
}

/// Why a URL is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not a URL, or a scheme the browser may not load (`file:`, `javascript:`, `data:`...).
    Invalid(String),
    /// The operator's lists or the private-address rule refuse it.
    Denied(String),
    /// The host does not resolve, or nothing answers at its addresses.
    Unreachable(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Invalid(m) | Refusal::Denied(m) | Refusal::Unreachable(m) => f.write_str(m),
        }
    }
}

fn matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.trim_end_matches('.').to_ascii_lowercase();
    match pattern.strip_prefix("*.") {
        Some(suffix) => host.ends_with(&format!(".{suffix}")),
        None => host == pattern,
    }
}

impl UrlRules {
    /// A navigation target: http or https with a host, then [`UrlRules::host`].
    pub fn parse(&self, raw: &str) -> Result<url::Url, Refusal> {
        let url = url::Url::parse(raw)
            .map_err(|e| Refusal::Invalid(format!("`{raw}` is not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal::Invalid(format!(
                "`{}:` URLs cannot be navigated to: only http and https",
                url.scheme()
            )));
        }
        if url.host().is_none() {
            return Err(Refusal::Invalid(format!("`{raw}` has no host")));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(Refusal::Invalid(
                "a URL with a user name or password cannot be navigated to".into(),
            ));
        }
        Ok(url)
    }

    /// The host lists and the names reserved for local machines, before any lookup.
    pub fn host(&self, host: &str) -> Result<(), Refusal> {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        if let Some(p) = self.deny.iter().find(|p| matches(p, &host)) {
            return Err(Refusal::Denied(format!(
                "`{host}` is refused by the deny list (`{p}`)"
            )));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|p| matches(p, &host)) {
            return Err(Refusal::Denied(format!(
                "`{host}` is not on the allow list"
            )));
        }
        // A literal address is judged as an address (it may be an admitted block); a name
        // reserved for the local network (`localhost`, `.local`, `.internal`) only when no
        // private block is admitted at all, else by the addresses it resolves to.
        if host.parse::<IpAddr>().is_err()
            && self.private_allowed.is_empty()
            && url_guard::is_private(&host)
        {
            return Err(Refusal::Denied(format!(
                "`{host}` names the local machine or network"
            )));
        }
        Ok(())
    }

    /// The addresses a connection to `host` may use: every one must be public or inside an
    /// admitted block (a name with one refused address is refused whole: the connection
    /// could pick it).
    pub fn addresses(
        &self,
        host: &str,
        addrs: Vec<SocketAddr>,
    ) -> Result<Vec<SocketAddr>, Refusal> {
        if let Some(a) = addrs.iter().find(|a| {
            url_guard::is_private_ip(a.ip())
                && !self.private_allowed.iter().any(|b| b.contains(a.ip()))
        }) {
            return Err(Refusal::Denied(format!(
                "`{host}` is the private, loopback, link-local or metadata address {}",
                a.ip()
            )));
        }
        Ok(addrs)
    }

    /// Resolves `host` (a name or a literal address) and judges every address.
    pub async fn resolve(&self, host: &str, port: u16) -> Result<Vec<SocketAddr>, Refusal> {
        self.host(host)?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let addrs = match bare.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => url_guard::lookup(bare)
                .await
                .map_err(Refusal::Unreachable)?
                .into_iter()
                .map(|a| SocketAddr::new(a.ip(), port))
                .collect(),
        };
        self.addresses(bare, addrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], deny: &[&str], private: &str) -> UrlRules {
        UrlRules {
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
            private_allowed: Block::parse_list(private).unwrap(),
        }
    }

    #[test]
    fn only_http_and_https_urls_with_a_host_are_navigable() {
        let r = UrlRules::default();
        for bad in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "data:text/html,hi",
            "about:blank",
            "chrome://settings",
            "not a url",
            "http://user:pw@example.com/",
        ] {
            assert!(matches!(r.parse(bad), Err(Refusal::Invalid(_))), "{bad}");
        }
        assert!(r.parse("https://example.com/a?b").is_ok());
    }

    #[tokio::test]
    async fn private_addresses_are_refused_in_every_spelling() {
        let r = UrlRules::default();
        for url in [
            "http://127.0.0.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://169.254.169.254/latest/meta-data",
            "http://10.0.0.1/",
            "http://localhost:8080/",
        ] {
            let u = r.parse(url).unwrap();
            let host = u.host_str().unwrap();
            let got = r.resolve(host, 80).await;
            assert!(matches!(got, Err(Refusal::Denied(_))), "{url}: {got:?}");
        }
    }

    #[tokio::test]
    async fn an_admitted_block_admits_only_itself() {
        let r = rules(&[], &[], "loopback");
        assert!(r.resolve("127.0.0.1", 80).await.is_ok());
        assert!(r.resolve("[::1]", 80).await.is_ok());
        assert!(matches!(
            r.resolve("10.0.0.1", 80).await,
            Err(Refusal::Denied(_))
        ));
        assert!(matches!(
            r.resolve("169.254.169.254", 80).await,
            Err(Refusal::Denied(_))
        ));
    }

    #[test]
    fn host_lists_decide_before_any_lookup() {
        let r = rules(&["*.example.com", "example.org"], &["bad.example.com"], "");
        assert!(r.host("a.example.com").is_ok());
        assert!(r.host("EXAMPLE.org.").is_ok());
        assert!(matches!(r.host("bad.example.com"), Err(Refusal::Denied(_))));
        assert!(matches!(r.host("example.net"), Err(Refusal::Denied(_))));
        assert!(matches!(r.host("example.com"), Err(Refusal::Denied(_))));
    }

    #[test]
    fn blocks_parse_and_contain() {
        let b = Block::parse_list("10.0.0.0/8, ::1, loopback").unwrap();
        assert_eq!(b.len(), 4);
        assert!(b[0].contains("10.9.9.9".parse().unwrap()));
        assert!(!b[0].contains("11.0.0.1".parse().unwrap()));
        assert!(b[1].contains("::1".parse().unwrap()));
        assert!(!b[1].contains("::2".parse().unwrap()));
        assert!(Block::parse_list("0.0.0.0/0").unwrap()[0].contains("8.8.8.8".parse().unwrap()));
        assert!(Block::parse_list("10.0.0.0/33").is_err());
        assert!(Block::parse_list("nope").is_err());
    }
}
