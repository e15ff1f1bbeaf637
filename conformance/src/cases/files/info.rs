//! GET /files/info: entry info of one path (issue 11, wire contract `files_info`).

use super::support::{area, entry_of, info, put, refused, s, snapshot};
use crate::{Case, case, profiles};
use anyhow::ensure;
use std::os::unix::fs::PermissionsExt;

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/info/001",
            spec: "files_info: GET /files/info?path= answers 200 with the entry `{name, path, type, size, mode, modified_at}`: `mode` the permission bits as an octal string (\"0640\"), `modified_at` RFC 3339 in UTC, no `symlink_target` on a file.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_info"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "info-001")?;
                let file = put(&dir, "report.txt", "twelve bytes")?;
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640))?;
                let entry = entry_of(&info(&ctx, &s(&file)).await?)?;
                ensure!(entry["type"] == "file" && entry["size"] == 12 && entry["mode"] == "0640", "{entry}");
                ensure!(entry["name"] == "report.txt" && entry["path"] == s(&file), "{entry}");
                let modified: std::time::SystemTime = std::fs::metadata(&file)?.modified()?;
                let secs = modified.duration_since(std::time::UNIX_EPOCH)?.as_secs();
                let at = entry["modified_at"].as_str().unwrap_or_default();
                // The date part agrees with the file's own mtime (days since the epoch).
                let days = secs / 86_400;
                let (y, m, d) = civil(days as i64);
                ensure!(at.starts_with(&format!("{y:04}-{m:02}-{d:02}T")), "{at} is not the file's day {y}-{m}-{d}");
                snapshot(&ctx, "files__info__file", &entry)?;
                let sub = dir.join("sub");
                std::fs::create_dir(&sub)?;
                std::fs::set_permissions(&sub, std::fs::Permissions::from_mode(0o755))?;
                let entry = entry_of(&info(&ctx, &s(&sub)).await?)?;
                ensure!(entry["type"] == "dir" && entry["mode"] == "0755", "{entry}");
                snapshot(&ctx, "files__info__dir", &serde_json::json!({"name": entry["name"], "type": entry["type"], "mode": entry["mode"]}))?;
                Ok(())
            },
        },
        case! {
            id: "files/info/002",
            spec: "The info of a link describes the link itself (type `symlink`, `symlink_target` as written), whether its target is in an allowed root or missing; it is never followed.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_info"],
            codes: [],
            run: |ctx| async move {
                let dir = area(&ctx, "info-002")?;
                put(&dir, "target.txt", "target")?;
                std::os::unix::fs::symlink("target.txt", dir.join("rel-link"))?;
                std::os::unix::fs::symlink(dir.join("nowhere"), dir.join("dangling"))?;
                let entry = entry_of(&info(&ctx, &s(&dir.join("rel-link"))).await?)?;
                ensure!(entry["type"] == "symlink" && entry["symlink_target"] == "target.txt", "{entry}");
                snapshot(&ctx, "files__info__symlink", &entry)?;
                let entry = entry_of(&info(&ctx, &s(&dir.join("dangling"))).await?)?;
                ensure!(entry["type"] == "symlink" && entry["symlink_target"] == s(&dir.join("nowhere")), "{entry}");
                Ok(())
            },
        },
        case! {
            id: "files/info/003",
            spec: "The info of a missing path is 404 `not_found`; `..` and `.` in a path are resolved before anything is looked up.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_info"],
            codes: ["not_found"],
            run: |ctx| async move {
                let dir = area(&ctx, "info-003")?;
                put(&dir, "here.txt", "x")?;
                refused(&info(&ctx, &s(&dir.join("absent"))).await?, 404, "not_found", "missing")?;
                let odd = format!("{}/./sub/../here.txt", s(&dir));
                std::fs::create_dir(dir.join("sub"))?;
                let entry = entry_of(&info(&ctx, &odd).await?)?;
                ensure!(entry["path"] == s(&dir.join("here.txt")), "the normalized path: {entry}");
                Ok(())
            },
        },
    ]
}

/// Days since 1970-01-01 to (year, month, day) (Howard Hinnant's civil_from_days).
fn civil(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}
