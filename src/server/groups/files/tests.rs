//! The documented examples are true: each route's example runs against the real router (its
//! files laid out in a temp dir standing for `/workspace`), and the answer is the one
//! `docs/endpoints.md` shows (status, the headers shown, the body; `modified_at` and the
//! size of directories vary by machine and are left out of the comparison).

use super::ROUTES;
use crate::server::AppState;
use crate::server::config::{LoadOptions, Settings};
use crate::server::example::{EXAMPLE_ROOT, Example, ExampleBody, FormPart};
use axum::body::Body;
use http_body_util::BodyExt;
use serde_json::Value;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use tower::ServiceExt;

const BOUNDARY: &str = "svc-example-boundary";

fn request(x: &Example, root: &str) -> http::Request<Body> {
    let target = x.target.replace(EXAMPLE_ROOT, root);
    let builder = http::Request::builder().method(x.method).uri(target);
    match &x.body {
        ExampleBody::None => builder.body(Body::empty()),
        ExampleBody::Json(json) => builder
            .header("content-type", "application/json")
            .body(Body::from(json.replace(EXAMPLE_ROOT, root))),
        ExampleBody::Raw(raw) => builder.body(Body::from(*raw)),
        ExampleBody::Headers(headers) => headers
            .iter()
            .fold(builder, |b, (name, value)| b.header(*name, *value))
            .body(Body::empty()),
        ExampleBody::Form(parts) => {
            let mut body = String::new();
            for part in *parts {
                body.push_str(&format!("--{BOUNDARY}\r\n"));
                match part {
                    FormPart::Text(name, value) => body.push_str(&format!(
                        "Content-Disposition: form-data; name=\"{name}\"\r\n\r\n{}\r\n",
                        value.replace(EXAMPLE_ROOT, root)
                    )),
                    FormPart::File(name, file, content) => body.push_str(&format!(
                        "Content-Disposition: form-data; name=\"{name}\"; filename=\"{file}\"\r\n\r\n{content}\r\n"
                    )),
                }
            }
            body.push_str(&format!("--{BOUNDARY}--\r\n"));
            builder
                .header(
                    "content-type",
                    format!("multipart/form-data; boundary={BOUNDARY}"),
                )
                .body(Body::from(body))
        }
    }
    .unwrap()
}

/// `modified_at` dropped, a directory's `size` dropped (filesystems differ), the temp dir
/// spelled `/workspace`.
fn comparable(v: &Value, root: &str) -> Value {
    match v {
        Value::Object(map) => {
            let is_dir = map.get("type") == Some(&Value::from("dir"));
            Value::Object(
                map.iter()
                    .filter(|(k, _)| *k != "modified_at" && !(is_dir && *k == "size"))
                    .map(|(k, v)| (k.clone(), comparable(v, root)))
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(|i| comparable(i, root)).collect()),
        Value::String(s) => Value::String(s.replace(root, EXAMPLE_ROOT)),
        other => other.clone(),
    }
}

fn lay_out(root: &Path, files: &[(&str, &str)]) {
    for (rel, content) in files {
        let path = root.join(rel);
        let mut dir = path.parent().unwrap().to_path_buf();
        std::fs::create_dir_all(&dir).unwrap();
        while dir.starts_with(root) {
            std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
            dir.pop();
        }
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
}

#[tokio::test]
async fn every_example_answers_what_the_docs_show() {
    let settings = Settings::load_with_env(&LoadOptions::default(), &BTreeMap::new()).unwrap();
    let app = crate::server::router::app(AppState::with_settings(settings));
    let temp = tempfile::tempdir().unwrap();
    for route in ROUTES {
        let x = route.example;
        let ws = temp.path().join(format!("{:?}", route.id()));
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::set_permissions(&ws, std::fs::Permissions::from_mode(0o755)).unwrap();
        lay_out(&ws, x.files);
        let root = ws.display().to_string();
        // Files the call creates get the permissions the docs show.
        let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o022));
        let response = app.clone().oneshot(request(x, &root)).await.unwrap();
        nix::sys::stat::umask(old);
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        let what = format!("{:?}: {}", route.id(), x.curl());
        assert_eq!(
            status,
            x.status,
            "{what}: {}",
            String::from_utf8_lossy(&body)
        );
        for (name, value) in x.headers {
            assert_eq!(
                headers.get(*name).and_then(|v| v.to_str().ok()),
                Some(*value),
                "{what}: header {name}"
            );
        }
        match serde_json::from_str::<Value>(x.answer) {
            Ok(documented) => {
                let served: Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(
                    comparable(&served, &root),
                    comparable(&documented, &root),
                    "{what}"
                );
            }
            Err(_) => assert_eq!(&body[..], x.answer.as_bytes(), "{what}"),
        }
    }
}
