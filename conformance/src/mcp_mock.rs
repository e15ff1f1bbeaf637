//! A wiremock MCP server (streamable HTTP, JSON answers) with one tool, `echo`. It records
//! the Authorization header and JSON-RPC method of every request and, while answering (the
//! runtime that called is alive), which processes hold a watched secret on their command
//! line. Cases use it to prove what reached an MCP server and what never reached an argv.

use crate::processes::command_lines_containing;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

#[derive(Default, Clone, Debug)]
pub struct Seen {
    pub authorization: Vec<String>,
    pub methods: Vec<String>,
    /// Command lines that held the watched secret while a request was answered.
    pub leaks: Vec<String>,
}

pub struct McpMock {
    server: MockServer,
    seen: Arc<Mutex<Seen>>,
}

struct Answer {
    secret: Option<String>,
    seen: Arc<Mutex<Seen>>,
}

impl Respond for Answer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let method = body["method"].as_str().unwrap_or_default().to_owned();
        if let Ok(mut seen) = self.seen.lock() {
            let auth = request
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            seen.authorization.push(auth.to_owned());
            seen.methods.push(method.clone());
            if let Some(secret) = &self.secret {
                seen.leaks.extend(command_lines_containing(secret));
            }
        }
        let result = match method.as_str() {
            "initialize" => json!({
                "protocolVersion": body["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "conformance-mcp", "version": "1.0.0"},
            }),
            "tools/list" => json!({"tools": [{
                "name": "echo",
                "description": "Echoes its text argument",
                "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            }]}),
            "tools/call" => {
                let text = body["params"]["arguments"]["text"]
                    .as_str()
                    .unwrap_or("(none)");
                json!({"content": [{"type": "text", "text": format!("echo: {text}")}], "isError": false})
            }
            _ => json!({}),
        };
        match body.get("id") {
            Some(id) => ResponseTemplate::new(200)
                .insert_header("content-type", "application/json")
                .set_body_json(json!({"jsonrpc": "2.0", "id": id, "result": result})),
            // Notifications get no answer body.
            None => ResponseTemplate::new(202),
        }
    }
}

impl McpMock {
    /// A server on loopback; with `secret`, command lines are watched for it.
    pub async fn start(secret: Option<&str>) -> McpMock {
        let server = MockServer::start().await;
        let seen = Arc::new(Mutex::new(Seen::default()));
        Mock::given(method("POST"))
            .respond_with(Answer {
                secret: secret.map(str::to_owned),
                seen: seen.clone(),
            })
            .mount(&server)
            .await;
        // The optional server-to-client stream is not offered.
        Mock::given(method("GET"))
            .respond_with(ResponseTemplate::new(405))
            .mount(&server)
            .await;
        Mock::given(method("DELETE"))
            .respond_with(ResponseTemplate::new(200))
            .mount(&server)
            .await;
        McpMock { server, seen }
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.server.uri())
    }

    pub fn seen(&self) -> Seen {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }

    pub fn clear(&self) {
        if let Ok(mut seen) = self.seen.lock() {
            *seen = Seen::default();
        }
    }
}
