//! Where a webhook may go: https only, no userinfo, no query, and never a private or
//! loopback address, whether written literally or reached through a name. Names are
//! resolved again for every new connection and it goes only to the addresses checked
//! then, so a name that re-resolves to a private host (DNS rebinding) is caught; a kept
//! connection still goes to the address checked when it was made.

use crate::error::ApiError;
use crate::server::agents::input::invalid;
use crate::services::url_guard::{self, is_private_ip, lookup, url_host_is_private};
pub use crate::services::url_guard::{Lookup, system_lookup};
use std::net::SocketAddr;
use url::{Host, Url};

/// Longer URLs are refused: no receiver needs one, and they only bloat every answer.
const MAX_URL_LEN: usize = 2048;

#[derive(Debug, Clone, Copy, Default)]
pub struct Rules {
    /// `SVC_AGENTS_WEBHOOK_ALLOW_HTTP`
    pub allow_http: bool,
    /// `SVC_AGENTS_ALLOW_PRIVATE_URLS`
    pub allow_private: bool,
}

impl Rules {
    /// The rules a URL's text can be judged by, including a literal address.
    pub fn check(&self, raw: &str, param: &str) -> Result<Url, ApiError> {
        let bad = |why: String| invalid(param, why);
        if raw.len() > MAX_URL_LEN {
            return Err(bad(format!("`{param}` is longer than {MAX_URL_LEN} bytes")));
        }
        let url = Url::parse(raw).map_err(|e| bad(format!("`{param}` is not a URL: {e}")))?;
        match url.scheme() {
            "https" => {}
            "http" if self.allow_http => {}
            _ => {
                return Err(bad(format!(
                    "`{param}` must be an https URL (SVC_AGENTS_WEBHOOK_ALLOW_HTTP=1 allows http for local development)"
                )));
            }
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad(format!(
                "`{param}` must not carry a user name or password"
            )));
        }
        if url.query().is_some() {
            return Err(bad(format!("`{param}` must not have a query string")));
        }
        let Some(private) = url_host_is_private(&url) else {
            return Err(bad(format!("`{param}` has no host")));
        };
        if private && !self.allow_private {
            return Err(bad(private_message(param)));
        }
        Ok(url)
    }

    /// `check`, then the name's current addresses. A name that does not resolve now is
    /// accepted: every delivery resolves and checks again.
    pub async fn check_resolving(&self, raw: &str, param: &str) -> Result<Url, ApiError> {
        let url = self.check(raw, param)?;
        if let Some(Host::Domain(name)) = url.host()
            && !self.allow_private
            && let Ok(addrs) = lookup(name).await
            && addrs.iter().any(|a| is_private_ip(a.ip()))
        {
            return Err(invalid(param, private_message(param)));
        }
        Ok(url)
    }

    /// The addresses a delivery may connect to for `name` (see [`url_guard::admit`]).
    fn admit(&self, name: &str, addrs: Vec<SocketAddr>) -> Result<Vec<SocketAddr>, String> {
        url_guard::admit(self.allow_private, name, addrs)
    }
}

fn private_message(param: &str) -> String {
    format!(
        "`{param}` points to a private, loopback or link-local address (SVC_AGENTS_ALLOW_PRIVATE_URLS=1 allows it for local development)"
    )
}

/// The delivery client's resolver: the connection can only go to addresses `Rules`
/// accepted in this very lookup.
pub struct CheckedResolver {
    pub rules: Rules,
    pub lookup: Lookup,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let (rules, lookup) = (self.rules, self.lookup);
        let name = name.as_str().to_owned();
        Box::pin(async move {
            let addrs = rules.admit(&name, lookup(name.clone()).await?)?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: Rules = Rules {
        allow_http: false,
        allow_private: false,
    };
    const DEV: Rules = Rules {
        allow_http: true,
        allow_private: true,
    };

    fn refused(rules: Rules, url: &str) -> String {
        let err = rules.check(url, "url").expect_err(url);
        assert_eq!(err.param.as_deref(), Some("url"), "{url}");
        err.message
    }

    #[test]
    fn only_public_https_urls_without_userinfo_or_query() {
        for ok in [
            "https://hooks.example.com/svc",
            "https://8.8.8.8:8443/x",
            "https://[2001:4860::8888]/x",
            "https://hooks.example.com/path#frag",
        ] {
            STRICT.check(ok, "url").expect(ok);
        }
        assert!(refused(STRICT, "http://hooks.example.com/").contains("https"));
        assert!(refused(STRICT, "ftp://hooks.example.com/").contains("https"));
        assert!(refused(STRICT, "https://user:pw@hooks.example.com/").contains("user"));
        assert!(refused(STRICT, "https://user@hooks.example.com/").contains("user"));
        assert!(refused(STRICT, "https://hooks.example.com/?a=1").contains("query"));
        assert!(refused(STRICT, "https://hooks.example.com/?").contains("query"));
        assert!(refused(STRICT, "not a url").contains("not a URL"));
        let long = format!("https://hooks.example.com/{}", "a".repeat(MAX_URL_LEN));
        assert!(refused(STRICT, &long).contains("longer"));
    }

    #[test]
    fn private_hosts_in_any_spelling_are_refused() {
        for url in [
            "https://localhost/x",
            "https://LOCALHOST./x",
            "https://127.0.0.1/x",
            "https://2130706433/x",
            "https://0x7f.0.0.1/x",
            "https://0/x",
            "https://10.0.0.5/x",
            "https://169.254.169.254/latest/meta-data",
            "https://[::1]/x",
            "https://[::]/x",
            "https://[fe80::1]/x",
            "https://[fd12::1]/x",
            "https://[::ffff:127.0.0.1]/x",
            "https://[::ffff:a00:1]/x",
            "https://db.internal/x",
        ] {
            assert!(refused(STRICT, url).contains("private"), "{url}");
        }
    }

    #[test]
    fn the_development_switches_open_http_and_private_hosts() {
        DEV.check("http://127.0.0.1:9/hook", "url").unwrap();
        DEV.check("https://[::1]/hook", "url").unwrap();
        let http_only = Rules {
            allow_http: true,
            allow_private: false,
        };
        http_only.check("http://hooks.example.com/", "url").unwrap();
        assert!(refused(http_only, "http://127.0.0.1/").contains("private"));
        // Userinfo and queries stay refused in development.
        refused(DEV, "http://u@127.0.0.1/");
        refused(DEV, "http://127.0.0.1/?q");
    }

    #[tokio::test]
    async fn names_resolving_to_private_addresses_are_refused_at_delivery() {
        // `localhost` is caught by name at creation; at delivery its addresses decide.
        let addrs = system_lookup("localhost".into()).await.unwrap();
        let err = STRICT.admit("localhost", addrs.clone()).unwrap_err();
        assert!(err.contains("private"), "{err}");
        assert!(DEV.admit("localhost", addrs).is_ok());
        let mixed = vec!["8.8.8.8:0".parse().unwrap(), "[::1]:0".parse().unwrap()];
        let err = STRICT.admit("mixed.example", mixed).unwrap_err();
        assert!(err.contains("::1"), "{err}");
        let public = vec!["8.8.8.8:0".parse().unwrap()];
        assert_eq!(STRICT.admit("dns.example", public.clone()), Ok(public));
    }
}
