//! POST and GET /v1/agents/environments/{id}/files (agents spec 4.6): every write guard, the
//! size cap, and the listing of regular files with its opaque page token.

use super::environments::{ENVS, b64, create, workspace};
use super::support::sessions::{Api, expect_error_param, id_of};
use crate::{Case, Ctx, case, profiles};
use anyhow::{Context, ensure};
use serde_json::{Value, json};

async fn environment(ctx: &Ctx, name: &str) -> anyhow::Result<(Api, String, String)> {
    let api = Api::new(ctx);
    let dir = workspace(ctx, name);
    let env = create(&api, &json!({"workspace_directory": dir})).await?;
    Ok((api, id_of(&env)?, dir))
}

fn inline(path: &str, text: &str) -> Value {
    json!({"type": "inline", "path": path, "data": b64(text)})
}

pub fn cases() -> Vec<Case> {
    vec![
        case! {
            id: "agents/environment_files/001",
            spec: "A file is written from base64 `data` or an uploaded `file_id`, at a path relative to the workspace or absolute under it; the answer is an `agent.environment.file` with its size; the same content again is idempotent.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environment_files_create", "agents_files_create"],
            codes: [],
            run: |ctx| async move {
                let (api, id, dir) = environment(&ctx, "f001").await?;
                let path = format!("{ENVS}/{id}/files");
                let f = api.send(api.post(&path, &inline("notes/a.txt", "alpha"))).await?;
                f.expect_status(200)?;
                let f = f.json()?;
                ensure!(f == json!({"environment_id": id, "object": "agent.environment.file", "path": format!("{dir}/notes/a.txt"), "size_bytes": 5}), "{f}");
                let again = api.send(api.post(&path, &inline(&format!("{dir}/notes/a.txt"), "alpha"))).await?;
                again.expect_status(200)?;
                ensure!(again.json()? == f, "same content is idempotent");
                let virtual_root = api.send(api.post(&path, &inline("/workspace/notes/b.txt", "beta"))).await?.json()?;
                ensure!(virtual_root["path"] == format!("{dir}/notes/b.txt"), "`/workspace/...` names the workspace: {virtual_root}");
                let upload = api.send(api.post("/v1/files", &json!({"purpose": "user_data", "filename": "u.bin", "data": b64("uploaded")}))).await?.json()?;
                let by_id = api.send(api.post(&path, &json!({"type": "file_id", "path": "u.bin", "file_id": upload["id"]}))).await?.json()?;
                ensure!(by_id["size_bytes"] == 8, "{by_id}");
                let resp = api.send(api.post(&path, &json!({"type": "file_id", "path": "v.bin", "file_id": "file-000000000000000000000000"}))).await?;
                expect_error_param(&resp, 400, "invalid_request", "file_id")?;
                let resp = api.send(api.post(&path, &json!({"type": "inline", "path": "w.bin", "data": "%%%"}))).await?;
                expect_error_param(&resp, 400, "invalid_request", "data")?;
                let resp = api.send(api.post(&path, &json!({"type": "inline", "path": "w.bin", "data": b64("x"), "mode": "0755"}))).await?;
                expect_error_param(&resp, 400, "invalid_request", "mode")?;
                ctx.snapshot("agents__environment_files__object", &f)
            },
        },
        case! {
            id: "agents/environment_files/002",
            spec: "An existing file with different content is 400 `agents.file_exists` and is left unchanged.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environment_files_create"],
            codes: ["agents.file_exists"],
            run: |ctx| async move {
                let (api, id, dir) = environment(&ctx, "f002").await?;
                let path = format!("{ENVS}/{id}/files");
                api.send(api.post(&path, &inline("a.txt", "first"))).await?.expect_status(200)?;
                let resp = api.send(api.post(&path, &inline("a.txt", "second"))).await?;
                expect_error_param(&resp, 400, "agents.file_exists", "path")?;
                if ctx.dir().is_some() {
                    let kept = std::fs::read_to_string(format!("{dir}/a.txt"))?;
                    ensure!(kept == "first", "the file is unchanged: {kept:?}");
                }
                Ok(())
            },
        },
        case! {
            id: "agents/environment_files/003",
            spec: "Writing under .git/, .ssh/, an agent tool's configuration directory, or to .mcp.json, AGENTS.md, another runtime's instruction file or a shell rc file is 400 `agents.path_refused`; so is a path outside the workspace.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environment_files_create"],
            codes: ["agents.path_refused"],
            run: |ctx| async move {
                let (api, id, _) = environment(&ctx, "f003").await?;
                let path = format!("{ENVS}/{id}/files");
                for refused in [
                    ".git/config", "lib/.git/hooks/post-checkout", ".ssh/authorized_keys", ".codex/config.toml",
                    ".claude/settings.json", ".cursor/rules", ".gemini/settings.json", ".mcp.json", "AGENTS.md",
                    "pkg/agents.md", "CLAUDE.md", "GEMINI.md", ".bashrc", ".zshrc", ".profile", ".bash_profile",
                    "../escape.txt", "a/../../escape.txt", "/etc/passwd", "/tmp/elsewhere.txt",
                ] {
                    let resp = api.send(api.post(&path, &inline(refused, "x"))).await?;
                    expect_error_param(&resp, 400, "agents.path_refused", "path").with_context(|| refused.to_owned())?;
                }
                Ok(())
            },
        },
        case! {
            id: "agents/environment_files/004",
            spec: "A symbolic link anywhere on the path is 400 and nothing is written through it.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environment_files_create", "agents_environment_files_list"],
            codes: ["agents.path_refused"],
            run: |ctx| async move {
                // The links are made in the served workspace: the runner starts the server here.
                let base = ctx.dir().context("needs the profile directory")?;
                let (api, id, dir) = environment(&ctx, "f004").await?;
                let outside = base.join("outside-f004");
                std::fs::create_dir_all(&outside)?;
                std::os::unix::fs::symlink(&outside, format!("{dir}/linked-dir"))?;
                std::os::unix::fs::symlink(outside.join("target.txt"), format!("{dir}/linked-file"))?;
                let path = format!("{ENVS}/{id}/files");
                for through in ["linked-dir/x.txt", "linked-dir/deep/y.txt", "linked-file"] {
                    let resp = api.send(api.post(&path, &inline(through, "x"))).await?;
                    expect_error_param(&resp, 400, "agents.path_refused", "path").with_context(|| through.to_owned())?;
                }
                ensure!(std::fs::read_dir(&outside)?.next().is_none(), "nothing was written outside");
                let listed = api.send(api.get(&format!("{path}?path=linked-dir"))).await?;
                expect_error_param(&listed, 400, "agents.path_refused", "path").context("a listing does not follow a link either")?;
                Ok(())
            },
        },
        case! {
            id: "agents/environment_files/005",
            spec: "A file over `SVC_AGENTS_MAX_FILE_BYTES` is refused with 413 `payload_too_large`.",
            profile: &profiles::AGENTS_SMALL_FILES,
            tags: [],
            endpoints: ["agents_environment_files_create"],
            codes: ["payload_too_large"],
            run: |ctx| async move {
                let (api, id, _) = environment(&ctx, "f005").await?;
                let path = format!("{ENVS}/{id}/files");
                api.send(api.post(&path, &inline("small.txt", &"s".repeat(1024)))).await?.expect_status(200)?;
                let resp = api.send(api.post(&path, &inline("big.txt", &"b".repeat(1025)))).await?;
                expect_error_param(&resp, 413, "payload_too_large", "data")?;
                Ok(())
            },
        },
        case! {
            id: "agents/environment_files/006",
            spec: "The file list holds regular files only, ordered by path (asc/desc), `limit` long, with an opaque `page` token in `next`; a token is bound to its path, order and limit; `path` narrows the listing to a directory.",
            profile: &profiles::AGENTS_SESSIONS,
            tags: [],
            endpoints: ["agents_environment_files_list"],
            codes: ["invalid_request"],
            run: |ctx| async move {
                let (api, id, dir) = environment(&ctx, "f006").await?;
                let path = format!("{ENVS}/{id}/files");
                let names = ["b.txt", "a/z.txt", "a/b/c.txt", "c/d.txt", "a.txt"];
                for name in names {
                    api.send(api.post(&path, &inline(name, name))).await?.expect_status(200)?;
                }
                if ctx.dir().is_some() {
                    std::fs::create_dir_all(format!("{dir}/empty-dir"))?;
                    std::os::unix::fs::symlink(format!("{dir}/b.txt"), format!("{dir}/link.txt"))?;
                }
                let mut seen = Vec::new();
                let mut query = format!("{path}?order=asc&limit=2");
                loop {
                    let page = api.json(&query).await?;
                    ensure!(page["object"] == "list", "{page}");
                    let data = page["data"].as_array().context("data")?;
                    ensure!(data.len() <= 2, "limit: {page}");
                    seen.extend(data.iter().filter_map(|f| f["path"].as_str().map(str::to_owned)));
                    match page["next"].as_str() {
                        Some(next) => {
                            ensure!(page["has_more"] == true, "{page}");
                            query = format!("{path}?order=asc&limit=2&page={next}");
                        }
                        None => break,
                    }
                }
                let want: Vec<String> = ["a/b/c.txt", "a/z.txt", "a.txt", "b.txt", "c/d.txt"].iter().map(|n| format!("{dir}/{n}")).collect();
                ensure!(seen == want, "regular files in path order:\n{seen:?}\n{want:?}");
                let desc = api.json(&format!("{path}?limit=100")).await?;
                let desc: Vec<&str> = desc["data"].as_array().context("data")?.iter().filter_map(|f| f["path"].as_str()).collect();
                let mut reversed = want.clone();
                reversed.reverse();
                ensure!(desc == reversed, "desc is the default: {desc:?}");
                let first = api.json(&format!("{path}?order=asc&limit=2")).await?;
                let token = first["next"].as_str().context("next")?;
                for other in [format!("order=desc&limit=2&page={token}"), format!("order=asc&limit=3&page={token}"), "page=not-a-token".to_owned()] {
                    let resp = api.send(api.get(&format!("{path}?{other}"))).await?;
                    expect_error_param(&resp, 400, "invalid_request", "page")?;
                }
                let under = api.json(&format!("{path}?order=asc&path={dir}/a")).await?;
                let under: Vec<&str> = under["data"].as_array().context("data")?.iter().filter_map(|f| f["path"].as_str()).collect();
                ensure!(under == [format!("{dir}/a/b/c.txt"), format!("{dir}/a/z.txt")], "{under:?}");
                let resp = api.send(api.get(&format!("{path}?limit=0"))).await?;
                expect_error_param(&resp, 400, "invalid_request", "limit")?;
                Ok(())
            },
        },
    ]
}
