//! The proxy every request of the browser goes through (`--proxy-server`, with
//! `<-loopback>` so loopback is not bypassed). Chromium hands it host names, never
//! addresses it resolved itself, so the proxy resolves each host once, judges the
//! addresses with [`UrlRules`], and connects only to those: a name that resolves to a
//! public address for the check and a private one for the connection (DNS rebinding)
//! cannot exist, and every redirect, frame, script, form or WebSocket is a new request
//! judged the same way. Refusals are kept in a short log so a navigation can tell a
//! refused redirect from a page that answered 403.
//!
//! Plain http arrives as `GET http://host/path`; each is forwarded on a connection of its
//! own with `Connection: close`, so a kept-alive browser connection never carries a second
//! request to the first host. https and WebSockets arrive as `CONNECT host:port` and are
//! tunnelled byte for byte (TLS stays end to end; certificate errors fail in Chromium).

use super::rules::{Refusal, UrlRules};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// The longest request head read from the browser.
const MAX_HEAD: usize = 64 * 1024;
/// A head or a connection taking longer is dropped.
const STEP_TIMEOUT: Duration = Duration::from_secs(15);
/// Refusals remembered.
const LOG_LEN: usize = 64;

/// What the proxy refused or could not reach, newest last, each with a sequence number.
#[derive(Debug, Default)]
pub struct RefusalLog {
    next: u64,
    entries: VecDeque<(u64, String, Refusal)>,
}

impl RefusalLog {
    fn push(&mut self, url: String, refusal: Refusal) {
        self.next += 1;
        if self.entries.len() == LOG_LEN {
            self.entries.pop_front();
        }
        self.entries.push_back((self.next, url, refusal));
    }

    /// The sequence number the next refusal will follow.
    pub fn mark(&self) -> u64 {
        self.next
    }

    /// Refusals after `mark`: (url, refusal), oldest first.
    pub fn since(&self, mark: u64) -> Vec<(String, Refusal)> {
        self.entries
            .iter()
            .filter(|(n, _, _)| *n > mark)
            .map(|(_, u, r)| (u.clone(), r.clone()))
            .collect()
    }
}

/// A running proxy; dropping it stops accepting (open tunnels end with the browser).
pub struct Proxy {
    pub addr: SocketAddr,
    pub log: Arc<Mutex<RefusalLog>>,
    task: JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    pub async fn start(rules: UrlRules) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let log: Arc<Mutex<RefusalLog>> = Arc::default();
        let rules = Arc::new(rules);
        let shared = log.clone();
        let task = tokio::spawn(async move {
            let mut tunnels = tokio::task::JoinSet::new();
            while let Ok((stream, _)) = listener.accept().await {
                let (rules, log) = (rules.clone(), shared.clone());
                tunnels.spawn(async move {
                    let _ = serve(stream, &rules, &log).await;
                });
                // Reap finished connections so the set stays small.
                while tunnels.try_join_next().is_some() {}
            }
        });
        Ok(Proxy { addr, log, task })
    }
}

fn lock(log: &Mutex<RefusalLog>) -> std::sync::MutexGuard<'_, RefusalLog> {
    log.lock().unwrap_or_else(|e| e.into_inner())
}

/// Reads the request head (through the blank line) and whatever followed it.
async fn read_head(stream: &mut TcpStream) -> std::io::Result<(Vec<u8>, Vec<u8>)> {
    let mut buf = Vec::with_capacity(4096);
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            return Ok((buf, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(std::io::Error::other("request head too long"));
        }
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

async fn answer(stream: &mut TcpStream, status: &str, reason: &str) -> std::io::Result<()> {
    let body = format!("svc browser proxy: {reason}\n");
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

async fn serve(
    mut client: TcpStream,
    rules: &UrlRules,
    log: &Mutex<RefusalLog>,
) -> std::io::Result<()> {
    let (head, rest) = tokio::time::timeout(STEP_TIMEOUT, read_head(&mut client))
        .await
        .map_err(|_| std::io::Error::other("head timed out"))??;
    let text = String::from_utf8_lossy(&head).into_owned();
    let mut lines = text.split("\r\n");
    let request_line = lines.next().unwrap_or_default();
    let mut parts = request_line.split(' ');
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let connect = method.eq_ignore_ascii_case("CONNECT");
    let (shown, host, port, origin_form) = if connect {
        let Some((host, port)) = target.rsplit_once(':') else {
            return answer(&mut client, "400 Bad Request", "CONNECT needs host:port").await;
        };
        let Ok(port) = port.parse::<u16>() else {
            return answer(&mut client, "400 Bad Request", "bad port").await;
        };
        (
            format!("https://{target}/"),
            host.to_owned(),
            port,
            String::new(),
        )
    } else {
        let Ok(url) = url::Url::parse(target) else {
            return answer(&mut client, "400 Bad Request", "not an absolute URL").await;
        };
        if url.scheme() != "http" {
            return answer(&mut client, "400 Bad Request", "only http is proxied").await;
        }
        let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
            return answer(&mut client, "400 Bad Request", "no host").await;
        };
        let origin = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_owned(),
        };
        (url.to_string(), host.to_owned(), port, origin)
    };
    let mut upstream = match connect_checked(rules, &host, port).await {
        Ok(s) => s,
        Err(refusal) => {
            let status = match refusal {
                Refusal::Unreachable(_) => "502 Bad Gateway",
                _ => "403 Forbidden",
            };
            let reason = refusal.to_string();
            lock(log).push(shown, refusal);
            return answer(&mut client, status, &reason).await;
        }
    };
    if connect {
        client
            .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
            .await?;
    } else {
        let version = parts.next().unwrap_or("HTTP/1.1");
        let mut out = format!("{method} {origin_form} {version}\r\n");
        for line in lines.filter(|l| !l.is_empty()) {
            let name = line.split(':').next().unwrap_or("").trim();
            if [
                "proxy-connection",
                "proxy-authorization",
                "connection",
                "keep-alive",
            ]
            .iter()
            .any(|h| name.eq_ignore_ascii_case(h))
            {
                continue;
            }
            out.push_str(line);
            out.push_str("\r\n");
        }
        out.push_str("connection: close\r\n\r\n");
        upstream.write_all(out.as_bytes()).await?;
    }
    upstream.write_all(&rest).await?;
    tokio::io::copy_bidirectional(&mut client, &mut upstream).await?;
    Ok(())
}

/// Resolves and judges `host`, then connects to the first judged address that answers.
async fn connect_checked(rules: &UrlRules, host: &str, port: u16) -> Result<TcpStream, Refusal> {
    let addrs = rules.resolve(host, port).await?;
    let mut last = String::new();
    for addr in addrs {
        match tokio::time::timeout(STEP_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(stream)) => return Ok(stream),
            Ok(Err(e)) => last = format!("{addr}: {e}"),
            Err(_) => last = format!("{addr}: connection timed out"),
        }
    }
    Err(Refusal::Unreachable(format!(
        "`{host}` cannot be reached ({last})"
    )))
}

#[cfg(test)]
mod tests {
    use super::super::rules::Block;
    use super::*;

    async fn send(proxy: SocketAddr, request: &str) -> String {
        let mut s = TcpStream::connect(proxy).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    /// A one-request origin answering what it received.
    async fn origin() -> SocketAddr {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                let (head, _) = read_head(&mut s).await.unwrap();
                let head = String::from_utf8_lossy(&head).replace("\r\n", "|");
                let reply = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{head}",
                    head.len()
                );
                s.write_all(reply.as_bytes()).await.unwrap();
            }
        });
        addr
    }

    #[tokio::test]
    async fn plain_http_is_forwarded_in_origin_form_with_connection_close() {
        let origin = origin().await;
        let rules = UrlRules {
            private_allowed: Block::parse_list("loopback").unwrap(),
            ..Default::default()
        };
        let proxy = Proxy::start(rules).await.unwrap();
        let got = send(
            proxy.addr,
            &format!("GET http://{origin}/a?b=1 HTTP/1.1\r\nhost: {origin}\r\nproxy-connection: keep-alive\r\n\r\n"),
        )
        .await;
        assert!(got.starts_with("HTTP/1.1 200 OK"), "{got}");
        assert!(got.contains("GET /a?b=1 HTTP/1.1|"), "{got}");
        assert!(got.contains("connection: close"), "{got}");
        assert!(
            !got.to_ascii_lowercase().contains("proxy-connection"),
            "{got}"
        );
        assert_eq!(proxy.log.lock().unwrap().mark(), 0);
    }

    #[tokio::test]
    async fn refused_hosts_are_answered_and_logged_never_connected() {
        let origin = origin().await;
        let proxy = Proxy::start(UrlRules::default()).await.unwrap();
        let got = send(
            proxy.addr,
            &format!("GET http://{origin}/ HTTP/1.1\r\n\r\n"),
        )
        .await;
        assert!(got.starts_with("HTTP/1.1 403"), "{got}");
        let got = send(proxy.addr, "CONNECT 169.254.169.254:443 HTTP/1.1\r\n\r\n").await;
        assert!(got.starts_with("HTTP/1.1 403"), "{got}");
        let log = proxy.log.lock().unwrap().since(0);
        assert_eq!(log.len(), 2);
        assert!(matches!(log[1].1, Refusal::Denied(_)), "{log:?}");
        assert_eq!(log[1].0, "https://169.254.169.254:443/");
    }
}
