//! Helpers of the `files/*` cases (no cases here): a fresh directory per case under the
//! profile's allowed root, one request helper per route, multipart bodies written by hand,
//! and the checks of entry info.

use crate::{Ctx, Resp};
use anyhow::{Context, bail, ensure};
use reqwest::Method;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The profile's temp dir (`{dir}`).
pub fn base(ctx: &Ctx) -> anyhow::Result<PathBuf> {
    Ok(ctx
        .dir()
        .context("needs the profile directory (launch the server with --server-cmd)")?
        .to_path_buf())
}

/// A fresh directory `{dir}/<root>/<name>` for one case, so cases sharing a server never
/// see each other's files.
pub fn area_in(ctx: &Ctx, root: &str, name: &str) -> anyhow::Result<PathBuf> {
    let dir = base(ctx)?.join(root).join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// A fresh directory under the `files` profile's allowed root `{dir}/root`.
pub fn area(ctx: &Ctx, name: &str) -> anyhow::Result<PathBuf> {
    area_in(ctx, "root", name)
}

/// Writes `bytes` at `dir/rel`, creating the parents.
pub fn put(dir: &Path, rel: &str, bytes: impl AsRef<[u8]>) -> anyhow::Result<PathBuf> {
    let path = dir.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// A path as the string a client sends.
pub fn s(path: &Path) -> String {
    path.display().to_string()
}

/// Percent-encodes everything but the unreserved characters (RFC 3986), so any path,
/// NUL bytes and non-ASCII included, reaches the server as it is.
pub fn enc(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `route?path=<path><extra>`.
pub fn q(route: &str, path: &str, extra: &str) -> String {
    format!("{route}?path={}{extra}", enc(path))
}

pub async fn read(ctx: &Ctx, path: &str) -> anyhow::Result<Resp> {
    ctx.send(ctx.get(&q("/files/content", path, ""))).await
}

pub async fn read_range(ctx: &Ctx, path: &str, range: &str) -> anyhow::Result<Resp> {
    ctx.send(
        ctx.get(&q("/files/content", path, ""))
            .header(reqwest::header::RANGE, range),
    )
    .await
}

pub async fn write(
    ctx: &Ctx,
    path: &str,
    body: impl Into<reqwest::Body>,
    extra: &str,
) -> anyhow::Result<Resp> {
    ctx.send(
        ctx.request(Method::PUT, &q("/files/content", path, extra))
            .body(body),
    )
    .await
}

pub async fn list(ctx: &Ctx, path: &str, extra: &str) -> anyhow::Result<Resp> {
    ctx.send(ctx.get(&q("/files/list", path, extra))).await
}

pub async fn info(ctx: &Ctx, path: &str) -> anyhow::Result<Resp> {
    ctx.send(ctx.get(&q("/files/info", path, ""))).await
}

pub async fn exists(ctx: &Ctx, path: &str) -> anyhow::Result<Resp> {
    ctx.send(ctx.get(&q("/files/exists", path, ""))).await
}

pub async fn mkdir(ctx: &Ctx, body: &Value) -> anyhow::Result<Resp> {
    ctx.send(ctx.post_json("/files/mkdir", body)).await
}

pub async fn mv(ctx: &Ctx, body: &Value) -> anyhow::Result<Resp> {
    ctx.send(ctx.post_json("/files/move", body)).await
}

pub async fn delete(ctx: &Ctx, path: &str, extra: &str) -> anyhow::Result<Resp> {
    ctx.send(ctx.delete(&q("/files", path, extra))).await
}

pub async fn download(ctx: &Ctx, path: &str) -> anyhow::Result<Resp> {
    ctx.send(ctx.get(&q("/files/download", path, ""))).await
}

pub async fn search(ctx: &Ctx, body: &Value) -> anyhow::Result<Resp> {
    ctx.send(ctx.post_json("/files/search", body)).await
}

/// One part of a `multipart/form-data` body.
pub enum Part<'a> {
    Text(&'a str, &'a str),
    File {
        field: &'a str,
        filename: &'a str,
        bytes: &'a [u8],
    },
}

const BOUNDARY: &str = "svc-conformance-7d1f0c9a";

/// A `multipart/form-data` body written by hand (RFC 7578): its content type and bytes.
pub fn multipart(parts: &[Part<'_>]) -> (String, Vec<u8>) {
    let mut body = Vec::new();
    for part in parts {
        body.extend_from_slice(format!("--{BOUNDARY}\r\n").as_bytes());
        match part {
            Part::Text(name, value) => {
                body.extend_from_slice(
                    format!("Content-Disposition: form-data; name=\"{name}\"\r\n\r\n").as_bytes(),
                );
                body.extend_from_slice(value.as_bytes());
            }
            Part::File {
                field,
                filename,
                bytes,
            } => {
                body.extend_from_slice(
                    format!(
                        "Content-Disposition: form-data; name=\"{field}\"; filename=\"{filename}\"\r\n\
                         Content-Type: application/octet-stream\r\n\r\n"
                    )
                    .as_bytes(),
                );
                body.extend_from_slice(bytes);
            }
        }
        body.extend_from_slice(b"\r\n");
    }
    body.extend_from_slice(format!("--{BOUNDARY}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={BOUNDARY}"), body)
}

pub async fn upload(ctx: &Ctx, parts: &[Part<'_>]) -> anyhow::Result<Resp> {
    let (content_type, body) = multipart(parts);
    ctx.send(
        ctx.request(Method::POST, "/files/upload")
            .header(reqwest::header::CONTENT_TYPE, content_type)
            .body(body),
    )
    .await
}

/// `YYYY-MM-DDTHH:MM:SS[.frac]Z`: RFC 3339 in UTC.
pub fn is_utc_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    if b.len() < 20
        || !(digits(0..4)
            && digits(5..7)
            && digits(8..10)
            && digits(11..13)
            && digits(14..16)
            && digits(17..19))
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
        || b[b.len() - 1] != b'Z'
    {
        return false;
    }
    let rest = &s[19..s.len() - 1];
    rest.is_empty()
        || rest
            .strip_prefix('.')
            .is_some_and(|f| !f.is_empty() && f.bytes().all(|c| c.is_ascii_digit()))
}

/// Entry info: `{name, path, type, size, mode, modified_at, symlink_target (links only)}`,
/// `name` the last component of `path`, `mode` four octal digits, `modified_at` RFC 3339
/// UTC, and no other member.
pub fn check_entry(e: &Value) -> anyhow::Result<()> {
    let obj = e
        .as_object()
        .with_context(|| format!("an entry is an object: {e}"))?;
    let path = obj
        .get("path")
        .and_then(Value::as_str)
        .with_context(|| format!("`path` is a string: {e}"))?;
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .with_context(|| format!("`name` is a string: {e}"))?;
    ensure!(path.starts_with('/'), "`path` is absolute: {e}");
    ensure!(
        Path::new(path).file_name().map(|n| n.to_string_lossy()) == Some(name.into()),
        "`name` is the last component of `path`: {e}"
    );
    let kind = obj.get("type").and_then(Value::as_str).unwrap_or_default();
    ensure!(
        ["file", "dir", "symlink", "other"].contains(&kind),
        "`type` is file, dir, symlink or other: {e}"
    );
    ensure!(
        obj.get("size").is_some_and(Value::is_u64),
        "`size` is a non-negative integer: {e}"
    );
    let mode = obj.get("mode").and_then(Value::as_str).unwrap_or_default();
    ensure!(
        mode.len() == 4 && mode.bytes().all(|c| (b'0'..=b'7').contains(&c)),
        "`mode` is an octal string like \"0644\": {e}"
    );
    let at = obj
        .get("modified_at")
        .and_then(Value::as_str)
        .unwrap_or_default();
    ensure!(is_utc_rfc3339(at), "`modified_at` is RFC 3339 UTC: {e}");
    match (kind, obj.get("symlink_target")) {
        ("symlink", Some(Value::String(_))) => {}
        ("symlink", _) => bail!("a link's entry has `symlink_target`: {e}"),
        (_, None) => {}
        (_, Some(_)) => bail!("`symlink_target` only on links: {e}"),
    }
    for key in obj.keys() {
        ensure!(
            [
                "name",
                "path",
                "type",
                "size",
                "mode",
                "modified_at",
                "symlink_target"
            ]
            .contains(&key.as_str()),
            "unexpected member `{key}` in an entry: {e}"
        );
    }
    Ok(())
}

/// The entry answered by a route: 200, checked.
pub fn entry_of(resp: &Resp) -> anyhow::Result<Value> {
    resp.expect_status(200)?;
    let e = resp.json()?;
    check_entry(&e)?;
    Ok(e)
}

/// What a snapshot shows: every `modified_at` (checked first) as `[timestamp]`, the size
/// of a directory or a link (the filesystem's, the temp dir's length) as `[size]`, and the
/// profile directory as `[dir]` wherever it appears in a string (error messages name paths
/// mid-sentence).
pub fn shown(ctx: &Ctx, v: &Value) -> anyhow::Result<Value> {
    let dir = s(&base(ctx)?);
    fn walk(v: &Value, dir: &str) -> anyhow::Result<Value> {
        Ok(match v {
            Value::Object(map) => {
                let mut out = serde_json::Map::new();
                let varies = matches!(
                    map.get("type").and_then(Value::as_str),
                    Some("dir" | "symlink")
                );
                for (k, v) in map {
                    let v = if k == "modified_at" {
                        let at = v.as_str().unwrap_or_default();
                        ensure!(is_utc_rfc3339(at), "`modified_at` is RFC 3339 UTC: {v}");
                        Value::String("[timestamp]".into())
                    } else if k == "size" && varies {
                        ensure!(v.is_u64(), "`size` is a non-negative integer: {v}");
                        Value::String("[size]".into())
                    } else {
                        walk(v, dir)?
                    };
                    out.insert(k.clone(), v);
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .map(|i| walk(i, dir))
                    .collect::<anyhow::Result<_>>()?,
            ),
            Value::String(text) => Value::String(text.replace(dir, "[dir]")),
            other => other.clone(),
        })
    }
    walk(v, &dir)
}

/// Snapshots `v` as [`shown`] renders it.
pub fn snapshot(ctx: &Ctx, name: &str, v: &Value) -> anyhow::Result<()> {
    ctx.snapshot(name, &shown(ctx, v)?)
}

/// Every byte value, twice, and invalid UTF-8 sequences: content that must round-trip intact.
pub fn binary() -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..=255u8).chain((0..=255u8).rev()).collect();
    bytes.extend_from_slice(&[0xff, 0xfe, 0x00, 0xc3, 0x28, 0xe2, 0x82, 0x00, 0x0d, 0x0a]);
    bytes
}

/// The error body of a refusal, checked: status, flat shape, code.
pub fn refused(resp: &Resp, status: u16, code: &str, what: &str) -> anyhow::Result<Value> {
    resp.expect_error(status, code)
        .with_context(|| what.to_owned())
}

/// `len` bytes of a xorshift sequence, none of them zero.
pub fn patterned(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 32) as u8 | 1
        })
        .collect()
}

/// The first index where `got` and `want` differ (or where one ends).
pub fn first_difference(got: &[u8], want: &[u8]) -> Option<usize> {
    got.iter()
        .zip(want)
        .position(|(a, b)| a != b)
        .or((got.len() != want.len()).then(|| got.len().min(want.len())))
}

/// The names in `dir`, sorted.
pub fn names_in(dir: &Path) -> anyhow::Result<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect::<Result<_, _>>()?;
    names.sort();
    Ok(names)
}
