//! The engine's front door (spec 5, Engine): it listens on loopback only, and that is not
//! enough on its own: a web page can reach loopback through the browser, directly (it
//! sends an `Origin`) or by DNS rebinding (its `Host` names the attacker's domain). So a
//! request is refused unless its `Host` is a loopback name or address and it carries no
//! `Origin`; then it needs the descriptor's token, compared in constant time. WebSocket
//! upgrades pass the same door.

use crate::error::engine::{Code, EngineError};
use http::HeaderMap;
use std::net::IpAddr;
use subtle::ConstantTimeEq;

/// Why a request is refused at the door, or `None`: the door's own rules ([`check_door`]),
/// then the token.
pub fn check(uri: &http::Uri, headers: &HeaderMap, token: &str) -> Option<EngineError> {
    check_door(uri, headers).or_else(|| check_token(headers, token))
}

/// The rules of every door of the engine process (`/v1` and the E2B front), whatever token
/// it then asks for: no `Origin`, exactly one `Host` and loopback, and an absolute-form
/// request line naming loopback too ([`check_authority`]).
pub fn check_door(uri: &http::Uri, headers: &HeaderMap) -> Option<EngineError> {
    if headers.contains_key(http::header::ORIGIN) {
        return Some(EngineError::new(
            Code::Forbidden,
            "requests with an Origin header (web pages) are refused",
        ));
    }
    // Exactly one Host, and loopback: a second one could be what a proxy acts on.
    let hosts: Vec<&str> = headers
        .get_all(http::header::HOST)
        .iter()
        .map(|h| h.to_str().unwrap_or(""))
        .collect();
    let host = hosts.first().copied().unwrap_or("");
    if hosts.len() != 1 || !host_is_loopback(host) {
        return Some(EngineError::new(
            Code::Forbidden,
            format!(
                "Host `{}` is not a loopback name or address",
                hosts.join(", ")
            ),
        ));
    }
    check_authority(uri)
}

/// `/v1`'s token: exactly one `Authorization: Bearer`, the descriptor's.
fn check_token(headers: &HeaderMap, token: &str) -> Option<EngineError> {
    let message = match credential(
        headers,
        http::header::AUTHORIZATION.as_str(),
        "Bearer ",
        token,
    ) {
        Ok(()) => return None,
        Err(Refused::Missing) => {
            "missing `Authorization: Bearer <token>` (the token is in the engine descriptor)"
        }
        Err(Refused::Several) => "more than one `Authorization`: send the token once",
        Err(Refused::Wrong) => "wrong token: the engine was restarted, or this is another engine",
    };
    Some(EngineError::new(Code::Unauthorized, message))
}

/// Why a credential is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Not sent (or sent empty).
    Missing,
    /// Sent more than once: a credential sent twice is no credential (which copy a proxy or
    /// a client library acts on is anyone's guess).
    Several,
    /// Not the expected one.
    Wrong,
}

/// Whether the request presents header `name` exactly once, and its value after `prefix`
/// is `expected`, compared in constant time. Every door of the engine process asks this.
pub fn credential(
    headers: &HeaderMap,
    name: &str,
    prefix: &str,
    expected: &str,
) -> Result<(), Refused> {
    let mut all = headers.get_all(name).iter();
    let value = match (all.next(), all.next()) {
        (None, _) => return Err(Refused::Missing),
        (Some(_), Some(_)) => return Err(Refused::Several),
        (Some(one), None) => one.to_str().unwrap_or(""),
    };
    if value.is_empty() {
        return Err(Refused::Missing);
    }
    let presented = value.strip_prefix(prefix).ok_or(Refused::Wrong)?;
    if bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
        Ok(())
    } else {
        Err(Refused::Wrong)
    }
}

/// Why an absolute-form request line (`GET http://host/...`) is refused: its authority is
/// what a proxy or the URL's own reading acts on, so it must be loopback as `Host` must.
fn check_authority(uri: &http::Uri) -> Option<EngineError> {
    let authority = uri.authority()?;
    (!host_is_loopback(authority.as_str())).then(|| {
        EngineError::new(
            Code::Forbidden,
            format!("the request line names `{authority}`, not a loopback name or address"),
        )
    })
}

/// `localhost`, an address of 127.0.0.0/8 or `::1`, with or without a port (`[::1]:8080`).
pub fn host_is_loopback(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        // `[v6]` or `[v6]:port`
        match rest.split_once(']') {
            Some((addr, tail)) if tail.is_empty() || valid_port(tail) => addr,
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if valid_port(&format!(":{port}")) => name,
            Some(_) => return false,
            None => host,
        }
    };
    if name.eq_ignore_ascii_case("localhost") {
        return true;
    }
    name.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

fn valid_port(tail: &str) -> bool {
    tail.strip_prefix(':')
        .is_some_and(|p| !p.is_empty() && p.parse::<u16>().is_ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn loopback_hosts_pass_and_look_alikes_do_not() {
        for ok in [
            "127.0.0.1:8080",
            "127.0.0.1",
            "127.1.2.3:1",
            "localhost",
            "LOCALHOST:9",
            "[::1]:8080",
            "[::1]",
        ] {
            assert!(host_is_loopback(ok), "{ok}");
        }
        for bad in [
            "",
            "evil.example",
            "localhost.evil.example",
            "localhost.evil.example:80",
            "127.0.0.1.nip.io",
            "10.0.0.1:80",
            "[::2]:80",
            "[::1]x",
            "127.0.0.1:",
            "127.0.0.1:99999",
            "::1",
        ] {
            assert!(!host_is_loopback(bad), "{bad}");
        }
    }

    #[test]
    fn an_empty_host_and_a_foreign_request_line_are_refused() {
        assert!(!host_is_loopback(""));
        assert!(!host_is_loopback(" "));
        let foreign: http::Uri = "http://evil.example/v1/health".parse().unwrap();
        assert!(check_authority(&foreign).is_some());
        let own: http::Uri = "http://127.0.0.1:4000/v1/health".parse().unwrap();
        assert!(check_authority(&own).is_none());
        let origin_form: http::Uri = "/v1/health".parse().unwrap();
        assert!(check_authority(&origin_form).is_none());
    }

    #[test]
    fn origin_then_host_then_token() {
        let uri: http::Uri = "/v1/health".parse().unwrap();
        let at_health = |h: &HeaderMap, t: &str| check(&uri, h, t);
        let good = [("host", "127.0.0.1:1"), ("authorization", "Bearer t0k")];
        assert!(at_health(&headers(&good), "t0k").is_none());
        let with_origin = headers(&[
            ("host", "127.0.0.1:1"),
            ("authorization", "Bearer t0k"),
            ("origin", "http://127.0.0.1:1"),
        ]);
        assert_eq!(
            at_health(&with_origin, "t0k").unwrap().code,
            Code::Forbidden
        );
        let rebound = headers(&[("host", "evil.example"), ("authorization", "Bearer t0k")]);
        assert_eq!(at_health(&rebound, "t0k").unwrap().code, Code::Forbidden);
        let wrong = headers(&[("host", "[::1]:1"), ("authorization", "Bearer nope")]);
        assert_eq!(at_health(&wrong, "t0k").unwrap().code, Code::Unauthorized);
        let none = headers(&[("host", "localhost:1")]);
        assert_eq!(at_health(&none, "t0k").unwrap().code, Code::Unauthorized);
        let foreign: http::Uri = "http://evil.example/v1/health".parse().unwrap();
        let refused = check(&foreign, &headers(&good), "t0k").unwrap();
        assert_eq!(refused.code, Code::Forbidden);
        assert!(check_door(&foreign, &headers(&[("host", "127.0.0.1:1")])).is_some());
        let twice = headers(&[
            ("host", "127.0.0.1:1"),
            ("authorization", "Bearer t0k"),
            ("authorization", "Bearer t0k"),
        ]);
        assert_eq!(at_health(&twice, "t0k").unwrap().code, Code::Unauthorized);
    }

    #[test]
    fn a_credential_is_one_header_with_the_expected_value() {
        let once = headers(&[("x-api-key", "k")]);
        assert_eq!(credential(&once, "x-api-key", "", "k"), Ok(()));
        assert_eq!(credential(&once, "x-api-key", "", "j"), Err(Refused::Wrong));
        let twice = headers(&[("x-api-key", "k"), ("x-api-key", "k")]);
        assert_eq!(
            credential(&twice, "x-api-key", "", "k"),
            Err(Refused::Several)
        );
        assert_eq!(
            credential(&once, "x-access-token", "", "k"),
            Err(Refused::Missing)
        );
        let empty = headers(&[("x-api-key", "")]);
        assert_eq!(
            credential(&empty, "x-api-key", "", "k"),
            Err(Refused::Missing)
        );
        let basic = headers(&[("authorization", "Basic k")]);
        assert_eq!(
            credential(&basic, "authorization", "Bearer ", "k"),
            Err(Refused::Wrong)
        );
    }
}
