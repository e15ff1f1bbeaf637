//! One example call of an endpoint and its answer, declared beside its handler (crates.io
//! style) and rendered into `docs/endpoints.md` by `docs.rs`. A leaf: the groups import it,
//! and `docs.rs` imports the groups, so neither imports the other through it.

use std::fmt::Write;

/// One example call of an endpoint and its answer, declared beside the handler. The curl
/// line is rendered from the request, and the group's unit tests run the request against
/// the real router, so the documented answer cannot drift from the served one.
#[derive(Debug)]
pub struct Example {
    pub method: &'static str,
    /// Path and query; paths in it (and in the bodies) live under [`EXAMPLE_ROOT`].
    pub target: &'static str,
    pub body: ExampleBody,
    /// Files present before the call: (path relative to [`EXAMPLE_ROOT`], content).
    pub files: &'static [(&'static str, &'static str)],
    pub status: u16,
    /// Answer headers worth showing (content type, ranges, disposition).
    pub headers: &'static [(&'static str, &'static str)],
    /// The answer body: JSON (compared as JSON, `modified_at` aside) or text.
    pub answer: &'static str,
}

#[derive(Debug)]
pub enum ExampleBody {
    None,
    /// `-H 'content-type: application/json' -d '...'`.
    Json(&'static str),
    /// `--data-binary '...'`.
    Raw(&'static str),
    /// `-F name=value` text parts and `-F name=@file` file parts (name, file name, content).
    Form(&'static [FormPart]),
    /// Request headers only (`-H 'Range: bytes=0-4'`), no body.
    Headers(&'static [(&'static str, &'static str)]),
}

#[derive(Debug)]
pub enum FormPart {
    Text(&'static str, &'static str),
    File(&'static str, &'static str, &'static str),
}

/// The directory the examples' paths live under.
pub const EXAMPLE_ROOT: &str = "/workspace";

/// The reason phrase of the statuses examples answer.
fn reason(status: u16) -> &'static str {
    http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

impl Example {
    /// The command line, against the demo server on `localhost:9000`.
    pub fn curl(&self) -> String {
        let mut out = String::from("curl -s");
        if !matches!(
            (self.method, &self.body),
            ("GET", _) | ("POST", ExampleBody::Json(_) | ExampleBody::Form(_))
        ) {
            let _ = write!(out, " -X {}", self.method);
        }
        match &self.body {
            ExampleBody::None => {}
            ExampleBody::Json(json) => {
                let _ = write!(out, " -H 'content-type: application/json' -d '{json}'");
            }
            ExampleBody::Raw(raw) => {
                let _ = write!(out, " --data-binary '{raw}'");
            }
            ExampleBody::Form(parts) => {
                for part in *parts {
                    match part {
                        FormPart::Text(name, value) => {
                            let _ = write!(out, " -F '{name}={value}'");
                        }
                        FormPart::File(name, file, _) => {
                            let _ = write!(out, " -F '{name}=@{file}'");
                        }
                    }
                }
            }
            ExampleBody::Headers(headers) => {
                for (name, value) in *headers {
                    let _ = write!(out, " -H '{name}: {value}'");
                }
            }
        }
        let _ = write!(out, " 'localhost:9000{}'", self.target);
        out
    }

    /// The answer as `curl -i` would show it (the headers worth showing).
    pub fn answer_text(&self) -> String {
        let mut out = format!("HTTP/1.1 {} {}\n", self.status, reason(self.status));
        for (name, value) in self.headers {
            let _ = writeln!(out, "{name}: {value}");
        }
        out.push('\n');
        out.push_str(self.answer);
        if !self.answer.ends_with('\n') {
            out.push('\n');
        }
        out
    }
}
