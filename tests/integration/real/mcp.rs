//! A wiremock MCP server (streamable HTTP, JSON answers) with one tool, `echo`. It records
//! the Authorization header of every request and, while answering (the CLI that called is
//! alive), whether any process's command line holds `secret`.

use super::processes_with;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use wiremock::matchers::method;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

#[derive(Default)]
pub struct Seen {
    pub authorization: Vec<String>,
    pub methods: Vec<String>,
    pub leaks: Vec<String>,
}

struct Answer {
    secret: Option<String>,
    seen: Arc<Mutex<Seen>>,
}

impl Respond for Answer {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        let method = body["method"].as_str().unwrap_or_default().to_owned();
        {
            let mut seen = self.seen.lock().unwrap();
            let auth = request
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            seen.authorization.push(auth.to_owned());
            seen.methods.push(method.clone());
            if let Some(secret) = &self.secret {
                seen.leaks.extend(processes_with(secret));
            }
        }
        let result = match method.as_str() {
            "initialize" => json!({
                "protocolVersion": body["params"]["protocolVersion"].as_str().unwrap_or("2025-06-18"),
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "wiremock-mcp", "version": "1.0.0"},
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
            None => ResponseTemplate::new(202),
        }
    }
}

pub async fn start(secret: Option<&str>) -> (MockServer, Arc<Mutex<Seen>>) {
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
    (server, seen)
}
