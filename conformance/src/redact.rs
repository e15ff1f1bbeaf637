//! Snapshot redaction: volatile values are first checked for the right shape
//! (so a snapshot still proves the field is well formed), then replaced by a
//! stable placeholder. Also the insta glue behind `Ctx::snapshot`.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail};
use serde_json::{Value, json};

const TIMESTAMP_KEYS: &[&str] = &[
    "created_at",
    "updated_at",
    "last_active_at",
    "time",
    "timestamp",
    "expires_at",
    "started_at",
];

/// Returns a redacted copy of `value`, or an error naming the first field
/// whose shape is wrong. `dir` is the profile temp dir.
pub fn redact(value: &Value, dir: Option<&Path>) -> anyhow::Result<Value> {
    let dirs = dir_prefixes(dir);
    walk(value, "$", None, &dirs)
}

fn dir_prefixes(dir: Option<&Path>) -> Vec<String> {
    let Some(dir) = dir else { return Vec::new() };
    let mut out = vec![dir.to_string_lossy().into_owned()];
    // The server may report the resolved path (e.g. /tmp -> /private/tmp).
    if let Ok(canonical) = dir.canonicalize() {
        out.push(canonical.to_string_lossy().into_owned());
    }
    out.retain(|d| !d.is_empty());
    // Longest first, so the most specific spelling wins.
    out.sort_by_key(|d| std::cmp::Reverse(d.len()));
    out.dedup();
    out
}

fn walk(value: &Value, at: &str, key: Option<&str>, dirs: &[String]) -> anyhow::Result<Value> {
    if let Some(key) = key
        && let Some(replaced) = by_key(key, value, at)?
    {
        return Ok(replaced);
    }
    Ok(match value {
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                out.insert(k.clone(), walk(v, &format!("{at}.{k}"), Some(k), dirs)?);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| walk(v, &format!("{at}[{i}]"), None, dirs))
                .collect::<anyhow::Result<_>>()?,
        ),
        Value::String(s) => Value::String(replace_dir(s, dirs)),
        other => other.clone(),
    })
}

/// Key-specific rules; `None` leaves the value to the generic walk.
fn by_key(key: &str, value: &Value, at: &str) -> anyhow::Result<Option<Value>> {
    let placeholder = |s: &str| Ok(Some(Value::String(s.to_string())));
    if key == "id" || key.ends_with("_id") {
        // Only generated ids: endpoint ids like "files_read" stay readable.
        return match value.as_str() {
            Some(s) if is_prefixed_id(s) || is_uuid(s) => placeholder("[id]"),
            _ => Ok(None),
        };
    }
    if TIMESTAMP_KEYS.contains(&key) {
        return match value {
            // An absent time (e.g. no expiry) is stable and meaningful.
            Value::Null => Ok(None),
            Value::Number(n) if n.is_u64() => placeholder("[timestamp]"),
            Value::String(s) if is_rfc3339(s) => placeholder("[timestamp]"),
            other => bail!("{at}: expected unix seconds or an RFC 3339 string, got {other}"),
        };
    }
    match key {
        "revision" => match value.as_str() {
            Some(s) if !s.is_empty() => placeholder("[revision]"),
            _ => bail!("{at}: expected a non-empty string, got {value}"),
        },
        "server_version" => match value.as_str() {
            Some(s) if is_semver(s) => placeholder("[version]"),
            _ => bail!("{at}: expected a semantic version like 1.2.3, got {value}"),
        },
        // A bound port differs from run to run (the runner picks free ones).
        "terminal_port" => match value.as_u64() {
            Some(1..=65535) => placeholder("[port]"),
            _ if value.is_null() => Ok(None),
            _ => bail!("{at}: expected a port number or null, got {value}"),
        },
        "duration_ms" => match value.as_f64() {
            Some(ms) if ms >= 0.0 => placeholder("[duration]"),
            _ => bail!("{at}: expected a non-negative number, got {value}"),
        },
        _ => Ok(None),
    }
}

fn replace_dir(s: &str, dirs: &[String]) -> String {
    for dir in dirs {
        if let Some(rest) = s.strip_prefix(dir.as_str()) {
            return format!("[dir]{rest}");
        }
    }
    s.to_string()
}

/// `^[a-z]+_[A-Za-z0-9]{8,}$`
fn is_prefixed_id(s: &str) -> bool {
    let Some((prefix, rest)) = s.split_once('_') else {
        return false;
    };
    !prefix.is_empty()
        && prefix.bytes().all(|b| b.is_ascii_lowercase())
        && rest.len() >= 8
        && rest.bytes().all(|b| b.is_ascii_alphanumeric())
}

/// 8-4-4-4-12 hex digits.
fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// `MAJOR.MINOR.PATCH` with optional `-pre` / `+build`.
fn is_semver(s: &str) -> bool {
    let core = s.split(['-', '+']).next().unwrap_or_default();
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && (core.len() == s.len() || s.len() > core.len() + 1)
}

/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`, with the ranges RFC 3339 allows.
fn is_rfc3339(s: &str) -> bool {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<u32> {
        let part = s.get(from..from + len)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    let ok_date = b.len() >= 20
        && b[4] == b'-'
        && b[7] == b'-'
        && matches!(b[10], b'T' | b't' | b' ')
        && b[13] == b':'
        && b[16] == b':';
    if !ok_date {
        return false;
    }
    let in_range = |v: Option<u32>, lo: u32, hi: u32| v.is_some_and(|v| (lo..=hi).contains(&v));
    if num(0, 4).is_none()
        || !in_range(num(5, 2), 1, 12)
        || !in_range(num(8, 2), 1, 31)
        || !in_range(num(11, 2), 0, 23)
        || !in_range(num(14, 2), 0, 59)
        || !in_range(num(17, 2), 0, 60)
    {
        return false;
    }
    let mut rest = &s[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        rest = &frac[digits..];
    }
    match rest {
        "Z" | "z" => true,
        offset => {
            let ob = offset.as_bytes();
            ob.len() == 6
                && matches!(ob[0], b'+' | b'-')
                && ob[3] == b':'
                && in_range(offset[1..3].parse().ok(), 0, 23)
                && in_range(offset[4..6].parse().ok(), 0, 59)
        }
    }
}

/// `<workspace>/snapshots`, or `SVC_CONFORMANCE_SNAPSHOTS`.
pub fn snapshots_dir() -> PathBuf {
    match std::env::var_os("SVC_CONFORMANCE_SNAPSHOTS") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => crate::launch::workspace_root().join("snapshots"),
    }
}

thread_local! {
    // Filled by `Capture` when insta finds a mismatch on this thread.
    static LAST_MISMATCH: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

/// Insta's own comparison, remembering both sides so the case failure can
/// carry the diff (insta itself only prints it).
struct Capture;

impl insta::Comparator for Capture {
    fn matches(&self, reference: &insta::Snapshot, test: &insta::Snapshot) -> bool {
        let ok = insta::DefaultComparator.matches(reference, test);
        if !ok {
            remember(reference, test);
        }
        ok
    }

    fn matches_fully(&self, reference: &insta::Snapshot, test: &insta::Snapshot) -> bool {
        let ok = insta::DefaultComparator.matches_fully(reference, test);
        if !ok {
            remember(reference, test);
        }
        ok
    }

    fn dyn_clone(&self) -> Box<dyn insta::Comparator> {
        Box::new(Capture)
    }
}

fn remember(reference: &insta::Snapshot, test: &insta::Snapshot) {
    let text = |s: &insta::Snapshot| s.as_text().map(|t| t.to_string()).unwrap_or_default();
    LAST_MISMATCH.with(|m| *m.borrow_mut() = Some((text(reference), text(test))));
}

/// Redacts and asserts with insta, turning insta's panic into an error that
/// carries the diff. Insta's defaults decide whether `.snap.new` is written
/// (never in CI).
pub fn assert_snapshot(name: &str, value: &Value, dir: Option<&Path>) -> anyhow::Result<()> {
    assert_snapshot_in(&snapshots_dir(), name, value, dir)
}

fn assert_snapshot_in(
    snapshots: &Path,
    name: &str,
    value: &Value,
    dir: Option<&Path>,
) -> anyhow::Result<()> {
    let redacted = redact(value, dir).map_err(|e| anyhow!("snapshot {name}: {e}"))?;
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(snapshots);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_comparator(Box::new(Capture));
    LAST_MISMATCH.with(|m| m.borrow_mut().take());
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        settings.bind(|| insta::assert_json_snapshot!(name, &redacted));
    }));
    let Err(payload) = outcome else {
        return Ok(());
    };
    let file = snapshots.join(format!("{name}.snap"));
    let detail = match LAST_MISMATCH.with(|m| m.borrow_mut().take()) {
        Some((old, new)) => format!("diff (- stored, + actual):\n{}", line_diff(&old, &new)),
        None if !file.exists() => format!(
            "no stored snapshot {}; actual value:\n{}",
            file.display(),
            serde_json::to_string_pretty(&redacted).unwrap_or_default()
        ),
        None => crate::panic::panic_message(payload.as_ref()),
    };
    bail!(
        "snapshot {name} does not match {}\n{detail}\n(review with `cargo insta review`; \
         INSTA_UPDATE=always accepts)",
        file.display()
    )
}

/// The snapshot check of a provider case's copy run against another provider
/// (`crate::providers`): it compares with the same stored snapshot as `local`, so the
/// kinds cannot drift apart. Three things may differ and are set aside on both sides:
/// the provider's id where a record names it (`"provider": "<id>"`), the wording of an
/// error's `message` (its type, code, suggestion and link must match), and where the
/// sandbox's home folder is (paths compare from it). A copy
/// never writes a snapshot: `local` owns them.
pub fn assert_variant_snapshot(
    name: &str,
    value: &Value,
    dir: Option<&Path>,
    provider: &str,
) -> anyhow::Result<()> {
    let file = snapshots_dir().join(format!("{name}.snap"));
    let text = std::fs::read_to_string(&file)
        .map_err(|e| anyhow!("snapshot {name}: cannot read {} ({e})", file.display()))?;
    // `---` header `---` then the JSON body.
    let body = text.splitn(3, "---\n").nth(2).unwrap_or_default();
    let stored: Value = serde_json::from_str(body)
        .map_err(|e| anyhow!("snapshot {name}: {} is not JSON ({e})", file.display()))?;
    let actual = redact(value, dir).map_err(|e| anyhow!("snapshot {name}: {e}"))?;
    let (stored, actual) = (set_aside(stored, "local"), set_aside(actual, provider));
    if stored == actual {
        return Ok(());
    }
    let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
    bail!(
        "snapshot {name}: provider {provider} answers differently from local ({}); \
         diff (- local, + {provider}):\n{}",
        file.display(),
        line_diff(&pretty(&stored), &pretty(&actual))
    )
}

/// `value` with the provider's id and error messages replaced by placeholders, and an
/// entry's `owner` and `group` left out: who owns a file is the provider's (a `memory`
/// sandbox's files belong to no account).
fn set_aside(value: Value, provider: &str) -> Value {
    match value {
        Value::Object(map) => map
            .into_iter()
            .filter(|(k, _)| k != "owner" && k != "group")
            .map(|(k, v)| {
                let v = match (k.as_str(), v) {
                    ("provider", Value::String(id)) if id == provider => json!("[provider]"),
                    ("message", Value::String(_)) => json!("[message]"),
                    (_, Value::String(path)) => json!(from_home(&path)),
                    (_, v) => set_aside(v, provider),
                };
                (k, v)
            })
            .collect(),
        Value::Array(list) => list.into_iter().map(|v| set_aside(v, provider)).collect(),
        other => other,
    }
}

/// A path inside a sandbox from its home folder, which each provider puts where it
/// likes (an isolated `local` sandbox: `/home/user`, as E2B's; a folder of the host for
/// the others, such as `<state>/sandboxes/<id>/root`): that home, or everything up to the
/// folder after the sandbox's id, becomes `[home]`.
fn from_home(text: &str) -> String {
    const ID: &str = "[sandbox_id]/";
    const MACHINE_HOME: &str = "/home/user";
    if let Some(rest) = text.strip_prefix(MACHINE_HOME)
        && (rest.is_empty() || rest.starts_with('/'))
    {
        return format!("[home]{rest}");
    }
    match text.find(ID) {
        Some(at) => {
            let after = &text[at + ID.len()..];
            let rest = after.find('/').map_or("", |slash| &after[slash..]);
            format!("[home]{rest}")
        }
        None => text.to_owned(),
    }
}

/// A small LCS line diff; snapshots are short, so quadratic is fine.
pub fn line_diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.lines().collect();
    let b: Vec<&str> = new.lines().collect();
    if a.len() * b.len() > 4_000_000 {
        return format!("--- stored\n{old}\n+++ actual\n{new}");
    }
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!("  {}\n", a[i]));
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push_str(&format!("- {}\n", a[i]));
            i += 1;
        } else {
            out.push_str(&format!("+ {}\n", b[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_redacted_only_when_generated() {
        let v = json!({
            "id": "sess_a1B2c3D4e5",
            "endpoint_id": "files_read",
            "run_id": "0b5e3c2a-1f4d-4e6a-9c7b-2d8e1f0a3b4c",
            "items": [{"id": "health"}, {"tool_id": "tool_ABCDEFGH"}],
            "owner_id": 7
        });
        let r = redact(&v, None).unwrap();
        assert_eq!(
            r,
            json!({
                "id": "[id]",
                "endpoint_id": "files_read",
                "run_id": "[id]",
                "items": [{"id": "health"}, {"tool_id": "[id]"}],
                "owner_id": 7
            })
        );
    }

    #[test]
    fn volatile_values_are_checked_then_replaced() {
        let v = json!({
            "created_at": 1_700_000_000,
            "updated_at": "2024-05-06T07:08:09.123Z",
            "started_at": "2024-05-06T07:08:09+02:00",
            "expires_at": null,
            "revision": "r42",
            "server_version": "0.1.0-dev+abc",
            "duration_ms": 12.5,
        });
        let r = redact(&v, None).unwrap();
        assert_eq!(
            r,
            json!({
                "created_at": "[timestamp]",
                "updated_at": "[timestamp]",
                "started_at": "[timestamp]",
                "expires_at": null,
                "revision": "[revision]",
                "server_version": "[version]",
                "duration_ms": "[duration]",
            })
        );
    }

    #[test]
    fn wrong_shapes_fail_with_the_path() {
        let cases = [
            (
                json!({"a": [{"created_at": "yesterday"}]}),
                "$.a[0].created_at",
            ),
            (json!({"time": -5}), "$.time"),
            (json!({"timestamp": "2024-13-01T00:00:00Z"}), "$.timestamp"),
            (json!({"revision": ""}), "$.revision"),
            (json!({"server_version": "v1"}), "$.server_version"),
            (json!({"duration_ms": -1}), "$.duration_ms"),
            (json!({"duration_ms": "3"}), "$.duration_ms"),
        ];
        for (v, at) in cases {
            let err = redact(&v, None).unwrap_err().to_string();
            assert!(err.starts_with(at), "{v}: {err}");
        }
    }

    #[test]
    fn dir_prefix_is_replaced_anywhere() {
        let dir = Path::new("/tmp/svc-prof-xyz");
        let v = json!({"path": "/tmp/svc-prof-xyz/work/a.txt", "list": ["/tmp/svc-prof-xyz"], "other": "/etc"});
        let r = redact(&v, Some(dir)).unwrap();
        assert_eq!(
            r,
            json!({"path": "[dir]/work/a.txt", "list": ["[dir]"], "other": "/etc"})
        );
    }

    #[test]
    fn shape_helpers() {
        assert!(is_rfc3339("2024-02-29T23:59:60.5-05:30"));
        assert!(!is_rfc3339("2024-02-29T23:59:60"));
        assert!(!is_rfc3339("2024-02-29T24:00:00Z"));
        assert!(!is_rfc3339("2024-02-29T23:00:00.Z"));
        assert!(is_semver("1.2.3") && is_semver("10.0.0-rc.1"));
        assert!(!is_semver("1.2") && !is_semver("1.2.3-") && !is_semver("1.x.3"));
        assert!(is_prefixed_id("sess_12345678") && !is_prefixed_id("Sess_12345678"));
        assert!(!is_prefixed_id("a_b_12345678") && !is_prefixed_id("_12345678"));
        assert!(!is_uuid("0b5e3c2a-1f4d-4e6a-9c7b-2d8e1f0a3b4"));
    }

    #[test]
    fn snapshots_compare_after_redaction() {
        let tmp = tempfile::tempdir().unwrap();
        let stored =
            "---\nsource: conformance/src/redact.rs\n---\n{\n  \"id\": \"[id]\",\n  \"n\": 1\n}\n";
        std::fs::write(tmp.path().join("t__snap.snap"), stored).unwrap();
        let check = |v: Value| assert_snapshot_in(tmp.path(), "t__snap", &v, None);
        check(json!({"id": "sess_abcdefgh12", "n": 1})).unwrap();
        let err = check(json!({"id": "sess_abcdefgh12", "n": 2}))
            .unwrap_err()
            .to_string();
        assert!(err.contains("-   \"n\": 1\n+   \"n\": 2"), "{err}");
        let err = check(json!({"created_at": "soon"}))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("snapshot t__snap: $.created_at"), "{err}");
        let err = assert_snapshot_in(tmp.path(), "t__missing", &json!(1), None).unwrap_err();
        assert!(err.to_string().contains("no stored snapshot"), "{err}");
    }

    #[test]
    fn diff_marks_changed_lines() {
        let d = line_diff("a\nb\nc", "a\nx\nc");
        assert_eq!(d, "  a\n- b\n+ x\n  c\n");
    }
}
