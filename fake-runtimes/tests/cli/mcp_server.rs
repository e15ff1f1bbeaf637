//! A tiny HTTP JSON-RPC server on loopback that records what it receives.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone)]
pub struct Recorded {
    pub request_line: String,
    pub authorization: Option<String>,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

pub struct Server {
    pub url: String,
    pub log: Arc<Mutex<Vec<Recorded>>>,
}

impl Server {
    /// Requests received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.log.lock().expect("lock").clone()
    }

    pub fn calls(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.body["method"] == "tools/call")
            .collect()
    }
}

/// Starts the server. `tools/call` answers `echoed <arguments>`, or a
/// JSON-RPC error when the tool is named `boom`.
pub fn start() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind loopback");
    let url = format!("http://{}/mcp", listener.local_addr().expect("addr"));
    let log = Arc::new(Mutex::new(Vec::new()));
    let shared = Arc::clone(&log);
    // The thread lives as long as the test process; each test has its own port.
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let log = Arc::clone(&shared);
            std::thread::spawn(move || handle(stream, &log));
        }
    });
    Server { url, log }
}

fn handle(stream: TcpStream, log: &Mutex<Vec<Recorded>>) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut headers = Vec::new();
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.trim_end().split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    let len = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let mut body = vec![0; len];
    let _ = reader.read_exact(&mut body);
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let authorization = headers
        .iter()
        .find(|(k, _)| k == "authorization")
        .map(|(_, v)| v.clone());
    log.lock().expect("lock").push(Recorded {
        request_line: request_line.trim_end().to_string(),
        authorization,
        headers: headers.clone(),
        body: body.clone(),
    });
    let mut stream = stream;
    let Some(id) = body.get("id").cloned() else {
        let _ = stream
            .write_all(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    let reply = match body["method"].as_str() {
        Some("initialize") => json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "test", "version": "1"}}}),
        Some("tools/call") if body["params"]["name"] == "boom" => {
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32000, "message": "tool exploded"}})
        }
        Some("tools/call") => json!({"jsonrpc": "2.0", "id": id, "result": {
            "content": [{"type": "text", "text": format!("echoed {}", body["params"]["arguments"])}],
            "isError": false}}),
        _ => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
    };
    let text = reply.to_string();
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: sess-1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{text}",
        text.len()
    );
    let _ = stream.write_all(response.as_bytes());
}
