//! Which URLs `http_fetch` may reach: the operator's allow and deny lists over hosts, and
//! the one URL guard (`services::url_guard`) for private, loopback, link-local and
//! metadata addresses. A private host is reachable only when an allow entry names it
//! exactly (no `*`): that is how an operator opens one local service (a test page on
//! `127.0.0.1:8080`) without opening the machine.

use crate::services::url_guard;
use url::Url;

/// One `url_allow` / `url_deny` entry: `host`, `host:port`, `*.domain` (the domain's
/// subdomains, not the domain itself) or `*.domain:port`. Hosts are compared as `url`
/// reads them, so `127.1` and `2130706433` are the entry `127.0.0.1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    text: String,
    host: HostMatch,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum HostMatch {
    Exact(String),
    Suffix(String),
}

impl HostPattern {
    pub fn parse(entry: &str) -> Result<HostPattern, String> {
        let bad = |why: &str| format!("`{entry}` is not a host pattern: {why}");
        let (wild, rest) = match entry.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, entry),
        };
        if rest.is_empty() || rest.contains(['/', '?', '#', '@', '*']) {
            return Err(bad("give `host`, `host:port` or `*.domain`"));
        }
        let url = Url::parse(&format!("http://{rest}/")).map_err(|e| bad(&e.to_string()))?;
        let host = url.host_str().ok_or_else(|| bad("no host"))?.to_owned();
        // `Url` drops port 80 for http: an entry naming it keeps it.
        let port = url.port().or_else(|| rest.ends_with(":80").then_some(80));
        if wild && !matches!(url.host(), Some(url::Host::Domain(_))) {
            return Err(bad("`*.` takes a domain name, not an address"));
        }
        Ok(HostPattern {
            text: entry.to_owned(),
            host: if wild {
                HostMatch::Suffix(format!(".{host}"))
            } else {
                HostMatch::Exact(host)
            },
            port,
        })
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    fn matches(&self, host: &str, port: Option<u16>) -> bool {
        let host_ok = match &self.host {
            HostMatch::Exact(h) => h == host,
            HostMatch::Suffix(s) => host.ends_with(s.as_str()),
        };
        host_ok && self.port.is_none_or(|p| Some(p) == port)
    }

    /// Names `host` exactly (not through `*.`).
    fn names(&self, host: &str) -> bool {
        matches!(&self.host, HostMatch::Exact(h) if h == host)
    }
}

/// A refusal of the rules: the URL is malformed, or it may not be reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    Invalid(String),
    Denied(String),
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refusal::Invalid(m) | Refusal::Denied(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Refusal {}

/// The longest URL judged: longer ones only bloat every answer.
pub const MAX_URL_LEN: usize = 8192;

#[derive(Debug, Clone, Default)]
pub struct UrlRules {
    allow: Vec<HostPattern>,
    deny: Vec<HostPattern>,
}

impl UrlRules {
    pub fn from_lists(allow: &[String], deny: &[String]) -> Result<UrlRules, String> {
        let parse = |key: &str, list: &[String]| {
            list.iter()
                .map(|e| HostPattern::parse(e).map_err(|why| format!("{key}: {why}")))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(UrlRules {
            allow: parse("dev_tools.url_allow", allow)?,
            deny: parse("dev_tools.url_deny", deny)?,
        })
    }

    pub fn allow(&self) -> impl Iterator<Item = &str> {
        self.allow.iter().map(HostPattern::text)
    }

    pub fn deny(&self) -> impl Iterator<Item = &str> {
        self.deny.iter().map(HostPattern::text)
    }

    /// Reads `raw` as an http or https URL.
    pub fn parse(&self, raw: &str) -> Result<Url, Refusal> {
        if raw.len() > MAX_URL_LEN {
            return Err(Refusal::Invalid(format!(
                "the URL is longer than {MAX_URL_LEN} bytes"
            )));
        }
        let url = Url::parse(raw).map_err(|e| Refusal::Invalid(format!("`{raw}`: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(Refusal::Invalid(format!(
                "`{raw}`: only http and https URLs are fetched"
            )));
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(Refusal::Invalid(format!("`{raw}` has no host")));
        }
        Ok(url)
    }

    /// Judges `url` (the first one, and every redirect's target): the deny list, then the
    /// allow list, then the URL guard on a literal address or a reserved name.
    pub fn judge(&self, url: &Url) -> Result<(), Refusal> {
        let host = url.host_str().unwrap_or_default();
        let port = url.port_or_known_default();
        if let Some(p) = self.deny.iter().find(|p| p.matches(host, port)) {
            return Err(Refusal::Denied(format!(
                "`{url}`: `dev_tools.url_deny` lists `{}`",
                p.text
            )));
        }
        let allowed_by = self.allow.iter().find(|p| p.matches(host, port));
        if !self.allow.is_empty() && allowed_by.is_none() {
            return Err(Refusal::Denied(format!(
                "`{url}`: `dev_tools.url_allow` has no entry for {host}:{}",
                port.unwrap_or_default()
            )));
        }
        let named = allowed_by.is_some_and(|p| p.names(host));
        if url_guard::url_host_is_private(url) == Some(true) && !named {
            return Err(Refusal::Denied(format!(
                "`{url}` points to a private, loopback, link-local or metadata address (an exact `dev_tools.url_allow` entry opens one)"
            )));
        }
        Ok(())
    }

    /// Whether an allow entry names `host` exactly, so its private addresses may be used.
    pub fn opens_private(&self, host: &str) -> bool {
        self.allow.iter().any(|p| p.names(host))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], deny: &[&str]) -> UrlRules {
        let own = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        UrlRules::from_lists(&own(allow), &own(deny)).unwrap()
    }

    fn judged(r: &UrlRules, raw: &str) -> Result<(), Refusal> {
        r.judge(&r.parse(raw)?)
    }

    #[test]
    fn every_private_spelling_is_refused_by_default() {
        let r = UrlRules::default();
        for url in [
            "http://127.0.0.1/",
            "http://127.1/",
            "http://2130706433/",
            "http://0x7f000001/",
            "http://0177.0.0.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://169.254.169.254/latest/meta-data/",
            "http://10.1.2.3/",
            "http://192.168.1.1/",
            "http://[fd00::1]/",
            "http://[fe80::1]/",
            "http://localhost:8080/",
            "http://LOCALHOST./",
            "http://metadata.google.internal/",
            "http://0/",
        ] {
            assert!(matches!(judged(&r, url), Err(Refusal::Denied(_))), "{url}");
        }
        judged(&r, "https://example.com/x").unwrap();
        judged(&r, "http://93.184.215.14/").unwrap();
    }

    #[test]
    fn malformed_urls_are_invalid() {
        let r = UrlRules::default();
        for url in [
            "not a url",
            "ftp://example.com/",
            "file:///etc/passwd",
            "http://",
        ] {
            assert!(matches!(r.parse(url), Err(Refusal::Invalid(_))), "{url}");
        }
    }

    #[test]
    fn allow_and_deny_lists() {
        let r = rules(
            &["example.com", "*.example.org", "api.test:8443"],
            &["bad.example.org"],
        );
        judged(&r, "https://example.com/").unwrap();
        judged(&r, "https://a.example.org/").unwrap();
        judged(&r, "https://api.test:8443/").unwrap();
        for url in [
            "https://www.example.com/",
            "https://example.org/",
            "https://bad.example.org/",
            "https://api.test/",
            "https://other.test/",
        ] {
            assert!(matches!(judged(&r, url), Err(Refusal::Denied(_))), "{url}");
        }
        let deny_only = rules(&[], &["*.corp.example"]);
        judged(&deny_only, "https://example.com/").unwrap();
        assert!(judged(&deny_only, "https://git.corp.example/").is_err());
    }

    #[test]
    fn only_an_exact_entry_opens_a_private_host() {
        let r = rules(&["127.0.0.1:28461", "*.local"], &[]);
        judged(&r, "http://127.0.0.1:28461/page").unwrap();
        // The same address in another spelling is the same entry.
        judged(&r, "http://127.1:28461/page").unwrap();
        judged(&r, "http://2130706433:28461/page").unwrap();
        for url in [
            "http://127.0.0.1:28462/",
            "http://127.0.0.2:28461/",
            "http://[::1]:28461/",
            "http://localhost:28461/",
            "http://printer.local/",
        ] {
            assert!(matches!(judged(&r, url), Err(Refusal::Denied(_))), "{url}");
        }
        assert!(r.opens_private("127.0.0.1") && !r.opens_private("printer.local"));
    }

    #[test]
    fn bad_entries_are_configuration_errors() {
        for entry in ["", "*.", "http://x/", "a/b", "*.10.0.0.1", "x*y"] {
            assert!(HostPattern::parse(entry).is_err(), "{entry:?}");
        }
        assert_eq!(
            HostPattern::parse("Example.COM").unwrap().host,
            HostMatch::Exact("example.com".into())
        );
    }
}
