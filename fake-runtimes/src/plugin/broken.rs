//! `svc-plugin-broken`: a plugin that fails on purpose, so the engine's host can be shown
//! to survive each fault. The fault is the last dash-separated part of the name it was
//! started as (tests copy or link the binary: `svc-plugin-broken-hang`):
//!
//! - `crash`: handshakes, then exits in the middle of its first answer (status 3);
//! - `garbage`: handshakes, then answers every call with a line that is not JSON;
//! - `hang`: handshakes, then never answers (it reads on, so cancels arrive);
//! - `silent`: never answers the hello;
//! - `liar`: handshakes with protocol 2;
//! - `stray`: handshakes, then answers a call the engine never made;
//! - `mangled`: handshakes, then answers each call with a result of the wrong shape;
//! - `exit`: exits before the hello.
//!
//! Every call it receives is written to stderr (the engine's log), cancels too.

use super::{FromEngine, Out, hello, read_hello};
use serde_json::json;
use std::io::{BufRead, Write};
use std::process::ExitCode;

/// The fault of a program named `name`.
pub fn fault_of(name: &str) -> &str {
    name.rsplit('-').next().unwrap_or(name)
}

pub fn main() -> ExitCode {
    let name = std::env::args()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_default();
    let fault = fault_of(&name).to_owned();
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let out = Out::default();
    if fault == "exit" {
        eprintln!("exiting before the hello, as asked");
        return ExitCode::from(4);
    }
    let Some(_) = lines
        .next()
        .and_then(Result::ok)
        .as_deref()
        .and_then(read_hello)
    else {
        return ExitCode::from(2);
    };
    match fault.as_str() {
        "silent" => {}
        "liar" => {
            let mut h = hello("broken-liar", "Broken (liar)", "0.0.0", &["sandboxes"]);
            h["protocol"] = json!(2);
            out.send(&h);
        }
        "crash" | "garbage" | "hang" | "stray" | "mangled" => {
            let id = format!("broken-{fault}");
            out.send(&hello(
                &id,
                &format!("Broken ({fault})"),
                "0.0.0",
                &["sandboxes", "files", "commands"],
            ));
        }
        other => {
            eprintln!(
                "no fault named `{other}` (crash, garbage, hang, silent, liar, stray, mangled, exit)"
            );
            return ExitCode::from(2);
        }
    }
    for line in lines {
        let Ok(line) = line else { break };
        let message = serde_json::from_str::<FromEngine>(&line);
        eprintln!("received: {line}");
        let Ok(FromEngine::Request(request)) = message else {
            continue;
        };
        match fault.as_str() {
            "crash" => {
                let mut stdout = std::io::stdout();
                let _ = write!(
                    stdout,
                    "{{\"type\":\"response\",\"id\":{},\"res",
                    request.id
                );
                let _ = stdout.flush();
                return ExitCode::from(3);
            }
            "garbage" => {
                let mut stdout = std::io::stdout();
                let _ = writeln!(stdout, "this is not JSON, call {}", request.id);
                let _ = stdout.flush();
            }
            "stray" => {
                out.send(&json!({"type": "response", "id": request.id + 1000, "result": null}))
            }
            "mangled" => out
                .send(&json!({"type": "response", "id": request.id, "result": {"nonsense": true}})),
            // `hang` and `silent` never answer.
            _ => {}
        }
    }
    ExitCode::SUCCESS
}
