//! POST and GET /v1/agents/environments/{id}/files: one file placed with every guard, and the
//! workspace's regular files listed in path order with an opaque page token.

use crate::error::ApiError;
use crate::server::agents::Agents;
use crate::server::agents::environments::wire::{EnvironmentFile, FilePage, FileParam};
use crate::server::agents::environments::{config, fs, paths, record};
use crate::server::agents::input::invalid;
use crate::services::paging::PageQuery;
use base64::Engine;
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Deserialize)]
pub struct FileListQuery {
    pub limit: Option<String>,
    pub order: Option<String>,
    pub page: Option<String>,
    pub path: Option<String>,
}

/// What a page token carries: where the last page ended, and the listing it belongs to.
#[derive(serde::Serialize, Deserialize, PartialEq)]
struct Token {
    after: PathBuf,
    descending: bool,
    limit: usize,
    path: Option<PathBuf>,
}

impl Agents {
    pub fn environment_file_create(
        &self,
        owner: &str,
        environment_id: &str,
        body: &FileParam,
    ) -> Result<EnvironmentFile, ApiError> {
        let env = self.environments.get(owner, environment_id)?;
        let spec = config::file(
            body,
            "",
            owner,
            &self.files,
            &env.workspace,
            self.settings.max_file_bytes,
        )?;
        self.may_write(&env.workspace.join(&spec.path), "path")?;
        fs::write_beneath(&env.workspace, &spec.path, &spec.bytes)?;
        self.environments.add_file(&env.id, record(&spec));
        Ok(file_json(
            &env.id,
            &env.workspace,
            &spec.path,
            spec.bytes.len() as u64,
        ))
    }

    pub fn environment_file_list(
        &self,
        owner: &str,
        environment_id: &str,
        query: &FileListQuery,
    ) -> Result<FilePage, ApiError> {
        let env = self.environments.get(owner, environment_id)?;
        let page = PageQuery {
            limit: query.limit.clone(),
            order: query.order.clone(),
            after: None,
        }
        .page()?;
        let under = match query.path.as_deref().filter(|p| !p.is_empty()) {
            None => None,
            Some(raw) => Some(directory(raw, &env.workspace)?),
        };
        let root = env.workspace.join(under.clone().unwrap_or_default());
        let mut files = fs::regular_files(&root);
        // Path order compares component by component, as the SDK documents.
        files.sort_by(|a, b| a.0.cmp(&b.0));
        if page.descending() {
            files.reverse();
        }
        let start = match query.page.as_deref().filter(|p| !p.is_empty()) {
            None => 0,
            Some(raw) => {
                let token = decode(raw)?;
                let same = token.descending == page.descending()
                    && token.limit == page.limit()
                    && token.path == under;
                if !same {
                    return Err(invalid(
                        "page",
                        "a page token continues the listing it came from: keep the same path, order and limit",
                    ));
                }
                files
                    .iter()
                    .position(|(p, _)| {
                        if page.descending() {
                            p < &token.after
                        } else {
                            p > &token.after
                        }
                    })
                    .unwrap_or(files.len())
            }
        };
        let rest = &files[start..];
        let shown = &rest[..rest.len().min(page.limit())];
        let has_more = rest.len() > shown.len();
        let next = match (has_more, shown.last()) {
            (true, Some((last, _))) => Some(encode(&Token {
                after: last.clone(),
                descending: page.descending(),
                limit: page.limit(),
                path: under.clone(),
            })),
            _ => None,
        };
        let base = under.unwrap_or_default();
        let data: Vec<EnvironmentFile> = shown
            .iter()
            .map(|(p, size)| file_json(&env.id, &env.workspace, &base.join(p), *size))
            .collect();
        Ok(FilePage {
            object: "list",
            data,
            has_more,
            next,
        })
    }
}

fn file_json(environment_id: &str, workspace: &Path, rel: &Path, size: u64) -> EnvironmentFile {
    EnvironmentFile {
        environment_id: environment_id.to_owned(),
        object: "agent.environment.file",
        path: paths::shown(workspace, rel),
        size_bytes: size,
    }
}

/// The `path` filter: a directory in the workspace (absolute, or relative to it).
fn directory(raw: &str, workspace: &Path) -> Result<PathBuf, ApiError> {
    let p = Path::new(raw);
    let inside = if p.is_absolute() {
        p.strip_prefix(workspace)
            .or_else(|_| p.strip_prefix(paths::VIRTUAL_ROOT))
            .map_err(|_| {
                invalid(
                    "path",
                    format!("`{raw}` is not a directory of the workspace"),
                )
            })?
    } else {
        p
    };
    let mut rel = PathBuf::new();
    for c in inside.components() {
        match c {
            std::path::Component::Normal(part) => rel.push(part),
            std::path::Component::CurDir => {}
            _ => {
                return Err(invalid(
                    "path",
                    format!("`{raw}` is not a directory of the workspace"),
                ));
            }
        }
        // Listing never follows a link out of the workspace.
        if std::fs::symlink_metadata(workspace.join(&rel)).is_ok_and(|m| m.file_type().is_symlink())
        {
            return Err(paths::refused(
                crate::error::Code::PathRefused,
                format!(
                    "`{raw}` goes through a symbolic link; links are never followed in a workspace"
                ),
            ));
        }
    }
    Ok(rel)
}

fn encode(token: &Token) -> String {
    let raw = serde_json::to_vec(token).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn decode(raw: &str) -> Result<Token, ApiError> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(raw)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .ok_or_else(|| invalid("page", "`page` is not a token this listing gave out"))
}
