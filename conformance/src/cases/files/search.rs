//! POST /files/search: names by `glob`, contents by `pattern` (issue 11, wire contract
//! `files_search`).

use super::support::{area, base, put, refused, s, search, snapshot};
use crate::{Case, case, profiles};
use anyhow::{Context, ensure};
use serde_json::{Value, json};
use std::path::Path;

/// A tree with text, binary, denied and linked-out files, all holding `needle`.
fn tree(ctx: &crate::Ctx, name: &str) -> anyhow::Result<std::path::PathBuf> {
    let dir = area(ctx, name)?;
    put(&dir, "a.md", "# title\nneedle here\n")?;
    put(&dir, "b.txt", "nothing\nanother needle\nand needle again\n")?;
    put(&dir, "sub/c.md", "needle\n")?;
    put(&dir, "sub/deeper/d.rs", "fn needle() {}\n")?;
    put(&dir, "bin.dat", b"\x00\x01needle\x00\xff".as_slice())?;
    put(&dir, ".env", "NEEDLE=needle\n")?;
    put(&dir, "private/p.md", "needle\n")?;
    std::os::unix::fs::symlink(base(ctx)?.join("outside"), dir.join("out-link"))?;
    Ok(dir)
}

/// The matches of a 200 answer, paths relative to `dir`, sorted; and `truncated`.
fn matches(resp: &crate::Resp, dir: &Path) -> anyhow::Result<(Vec<Value>, bool)> {
    resp.expect_status(200)?;
    let body = resp.json()?;
    let truncated = body["truncated"]
        .as_bool()
        .context("`truncated` is a bool")?;
    ensure!(
        body.as_object().is_some_and(|o| o.len() == 2),
        "the body is `{{matches, truncated}}`: {body}"
    );
    let mut out = Vec::new();
    for m in body["matches"]
        .as_array()
        .context("`matches` is an array")?
    {
        let path = m["path"].as_str().context("a match has a `path`")?;
        let rel = path
            .strip_prefix(&format!("{}/", dir.display()))
            .with_context(|| format!("{path} lies in the searched tree"))?;
        let mut shown = m.clone();
        shown["path"] = json!(rel);
        out.push(shown);
    }
    out.sort_by_key(|m| {
        (
            m["path"].as_str().unwrap_or_default().to_owned(),
            m["line"].as_u64(),
        )
    });
    Ok((out, truncated))
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "files/search/001",
            spec: "files_search: POST /files/search `{path, glob}` answers 200 `{matches: [{path}], truncated: false}`: every entry below `path` whose name matches the glob (a link as itself, never followed); nothing denied is reported.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_search"],
            codes: [],
            run: |ctx| async move {
                let dir = tree(&ctx, "search-001")?;
                let resp = search(&ctx, &json!({"path": s(&dir), "glob": "*.md"})).await?;
                let (found, truncated) = matches(&resp, &dir)?;
                ensure!(!truncated, "not truncated");
                ensure!(found == vec![json!({"path": "a.md"}), json!({"path": "sub/c.md"})], "{found:?}");
                snapshot(&ctx, "files__search__glob", &resp.json()?)?;
                let (found, _) = matches(&search(&ctx, &json!({"path": s(&dir), "glob": "*"})).await?, &dir)?;
                let paths: Vec<_> = found.iter().filter_map(|m| m["path"].as_str()).collect();
                ensure!(paths.contains(&"sub/deeper/d.rs") && paths.contains(&"out-link"), "every name, links as themselves: {paths:?}");
                ensure!(!paths.iter().any(|p| p.contains(".env") || p.contains("private/") || p.contains("out-link/")), "nothing denied, nothing through a link: {paths:?}");
                Ok(())
            },
        },
        case! {
            id: "files/search/002",
            spec: "`pattern` is a regular expression over text contents: each matching line is `{path, line, text}` (line 1-based, text the line without its newline); binary files are skipped; with `glob` too, only files whose name matches are searched.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_search"],
            codes: [],
            run: |ctx| async move {
                let dir = tree(&ctx, "search-002")?;
                let resp = search(&ctx, &json!({"path": s(&dir), "pattern": "need+le"})).await?;
                let (found, truncated) = matches(&resp, &dir)?;
                ensure!(!truncated, "not truncated");
                let want = vec![
                    json!({"path": "a.md", "line": 2, "text": "needle here"}),
                    json!({"path": "b.txt", "line": 2, "text": "another needle"}),
                    json!({"path": "b.txt", "line": 3, "text": "and needle again"}),
                    json!({"path": "sub/c.md", "line": 1, "text": "needle"}),
                    json!({"path": "sub/deeper/d.rs", "line": 1, "text": "fn needle() {}"}),
                ];
                ensure!(found == want, "{found:#?}");
                snapshot(&ctx, "files__search__pattern", &json!({"matches": found, "truncated": truncated}))?;
                let (found, _) = matches(&search(&ctx, &json!({"path": s(&dir), "pattern": "^needle$", "glob": "*.md"})).await?, &dir)?;
                ensure!(found == vec![json!({"path": "sub/c.md", "line": 1, "text": "needle"})], "{found:?}");
                Ok(())
            },
        },
        case! {
            id: "files/search/003",
            spec: "`max_results` (1..=10000, default 1000) caps the matches and sets `truncated: true` when more were found; out of range, a bad regular expression or a bad glob is 400 `invalid_request` naming the member; a file as `path` searches that file alone; a missing `path` is 404 `not_found`.",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_search"],
            codes: ["invalid_request", "not_found"],
            run: |ctx| async move {
                let dir = tree(&ctx, "search-003")?;
                let (found, truncated) = matches(&search(&ctx, &json!({"path": s(&dir), "pattern": "needle", "max_results": 2})).await?, &dir)?;
                ensure!(found.len() == 2 && truncated, "{found:?} {truncated}");
                let (found, truncated) = matches(&search(&ctx, &json!({"path": s(&dir), "pattern": "needle", "max_results": 5})).await?, &dir)?;
                ensure!(found.len() == 5 && !truncated, "exactly as many as found: {found:?} {truncated}");
                for (body, member) in [
                    (json!({"path": s(&dir), "glob": "*", "max_results": 0}), "max_results"),
                    (json!({"path": s(&dir), "glob": "*", "max_results": 10001}), "max_results"),
                    (json!({"path": s(&dir), "pattern": "(unclosed"}), "pattern"),
                    (json!({"path": s(&dir), "glob": "a[b"}), "glob"),
                    (json!({"path": s(&dir), "glob": "*", "regex": true}), "regex"),
                ] {
                    let err = refused(&search(&ctx, &body).await?, 400, "invalid_request", member)?;
                    ensure!(err.to_string().contains(member), "names `{member}`: {err}");
                }
                let (found, _) = matches(&search(&ctx, &json!({"path": s(&dir.join("b.txt")), "pattern": "needle"})).await?, &dir)?;
                ensure!(found.len() == 2 && found.iter().all(|m| m["path"] == "b.txt"), "one file searched: {found:?}");
                refused(&search(&ctx, &json!({"path": s(&dir.join("absent")), "glob": "*"})).await?, 404, "not_found", "missing")?;
                Ok(())
            },
        },
        case! {
            id: "files/search/004",
            spec: "A pathological glob or pattern is 400 `invalid_request` naming the member, never a 500: a glob of 125 nested `{a,...}` alternations, a 90,000-character `*...*` glob, a 90,000-character pattern and one nested 300 groups deep; no error body echoes a panic or exceeds 4 KiB (issue 30, item 6).",
            profile: &profiles::FILES,
            tags: [],
            endpoints: ["files_search"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let dir = tree(&ctx, "search-004")?;
                let nested = (0..125).fold("b".to_owned(), |inner, _| format!("{{a,{inner}}}"));
                for (body, member) in [
                    (json!({"path": s(&dir), "glob": nested}), "glob"),
                    (json!({"path": s(&dir), "glob": "*".repeat(90_000)}), "glob"),
                    (json!({"path": s(&dir), "pattern": "a".repeat(90_000)}), "pattern"),
                    (json!({"path": s(&dir), "pattern": format!("{}a{}", "(".repeat(300), ")".repeat(300))}), "pattern"),
                ] {
                    let resp = search(&ctx, &body).await?;
                    let text = resp.text();
                    ensure!(text.len() <= 4096, "an error body of {} bytes for a pathological `{member}`", text.len());
                    ensure!(!text.contains("panic"), "the body echoes a panic: {text}");
                    let err = refused(&resp, 400, "invalid_request", member)?;
                    ensure!(err.to_string().contains(member), "names `{member}`: {err}");
                }
                Ok(())
            },
        },
    ]
}
