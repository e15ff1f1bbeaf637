//! The capabilities document and the check answer, built from the endpoint table, the
//! policy and the caller. Nothing here runs an endpoint.

use crate::error::{ApiError, Code, ErrorCode};
use crate::server::AppState;
use crate::server::auth::Identity;
use crate::server::endpoints::{Access, ENDPOINTS, Endpoint, Group, Status};
use crate::server::policy::Verdict;
use crate::services::paths::{Op, PathRefusal, RefusalKind};
use serde_json::{Map, Value, json};

/// The path guard's refusals are rows of the server table (spec 7.1), for every route that
/// takes a path and for the check answer.
impl ErrorCode for PathRefusal {
    fn error_code(&self) -> Code {
        match self.kind {
            RefusalKind::NotAllowed => Code::PathNotAllowed,
            RefusalKind::Denied => Code::PathDenied,
            RefusalKind::ReadOnly => Code::ReadOnly,
            RefusalKind::Symlink => Code::SymlinkDenied,
            RefusalKind::Invalid => Code::InvalidPath,
        }
    }
}

pub const API_VERSION: &str = "1";

/// The serialized document per identity. The configuration is fixed for the life of the
/// server, so a caller's document never changes and is built once.
#[derive(Default)]
pub struct DocumentCache(std::sync::RwLock<std::collections::HashMap<String, bytes::Bytes>>);

impl DocumentCache {
    pub fn get_or_build(&self, app: &AppState, identity: &Identity) -> bytes::Bytes {
        if let Some(doc) = self
            .0
            .read()
            .ok()
            .and_then(|m| m.get(&identity.id).cloned())
        {
            return doc;
        }
        let doc = bytes::Bytes::from(document(app, identity).to_string());
        if let Ok(mut map) = self.0.write() {
            map.insert(identity.id.clone(), doc.clone());
        }
        doc
    }
}

pub fn document(app: &AppState, identity: &Identity) -> Value {
    let mut endpoints = Map::new();
    for (index, endpoint) in ENDPOINTS.iter().enumerate() {
        endpoints.insert(endpoint.id.into(), describe(app, index, endpoint, identity));
    }
    let mut groups = Map::new();
    let mut summary = Map::new();
    for group in Group::ALL {
        let total = ENDPOINTS.iter().filter(|e| e.group == group).count();
        let enabled = ENDPOINTS
            .iter()
            .enumerate()
            .filter(|(i, e)| e.group == group && app.policy.decision(*i).enabled)
            .count();
        groups.insert(group.name().into(), json!(enabled > 0));
        summary.insert(
            group.name().into(),
            json!({"enabled": enabled, "total": total}),
        );
    }
    json!({
        "api_version": API_VERSION,
        "server_version": env!("CARGO_PKG_VERSION"),
        "revision": app.settings.revision,
        "configured": app.settings.configured,
        "identity_id": identity.id,
        "scopes": identity.scopes,
        "preset": app.settings.preset.map(|p| p.name()),
        "warnings": app.settings.warnings,
        "groups": groups,
        "group_summary": summary,
        "terminal_port": app.terminal_port.get(),
        "endpoints": endpoints,
    })
}

fn describe(app: &AppState, index: usize, endpoint: &Endpoint, identity: &Identity) -> Value {
    let verdict = app.policy.verdict(index, identity);
    let decision = app.policy.decision(index);
    let (reason, rule) = match &verdict {
        Verdict::Allowed => (None, None),
        Verdict::Disabled(rule) => (Some("endpoint_disabled"), Some(rule.clone())),
        Verdict::MissingScope(_) => (Some("missing_scope"), None),
    };
    json!({
        "method": endpoint.method.as_str(),
        "path": endpoint.path,
        "group": endpoint.group,
        "enabled": decision.enabled,
        "allowed": verdict == Verdict::Allowed,
        "reason": reason,
        "rule": rule,
        "scopes": endpoint.scopes,
        "limits": app.settings.limits[index].describe(),
        "paths": endpoint.uses_paths.then(|| app.settings.paths.describe()),
        "params": params(app, endpoint),
        "transport": endpoint.transport,
        "port": endpoint.port,
        "status": status_name(endpoint.status),
    })
}

/// What an endpoint's own settings are, for callers to plan with: the languages
/// `code_run` offers (`dev_tools.languages`, else every installed one) and the host lists
/// of `http_fetch`.
fn params(app: &AppState, endpoint: &Endpoint) -> Value {
    use crate::server::endpoints::EndpointId;
    match endpoint.key {
        EndpointId::CodeRun | EndpointId::CodeLanguages => {
            json!({"languages": crate::server::groups::dev_tools::offered(app)})
        }
        EndpointId::HttpFetch => json!({
            "url_allow": app.settings.dev_tools.urls.allow().collect::<Vec<_>>(),
            "url_deny": app.settings.dev_tools.urls.deny().collect::<Vec<_>>(),
        }),
        _ => json!({}),
    }
}

fn status_name(status: Status) -> &'static str {
    match status {
        Status::Implemented => "implemented",
        Status::Refusal(_) => "refusal",
        Status::Pending(_) => "pending",
    }
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckRequest {
    pub endpoint: String,
    pub path: Option<String>,
    pub op: Option<String>,
}

/// Would this call be allowed? Answers the endpoint decision and, when a path is given,
/// the file service's decision on it (the code every file route runs), without running
/// anything.
pub fn check(app: &AppState, identity: &Identity, req: &CheckRequest) -> Result<Value, ApiError> {
    let Some(index) = ENDPOINTS.iter().position(|e| e.id == req.endpoint) else {
        return Ok(answer(
            &req.endpoint,
            false,
            Some("unknown_endpoint"),
            None,
            None,
            json!({}),
        ));
    };
    let endpoint = &ENDPOINTS[index];
    let op = match &req.op {
        Some(name) => Op::parse(name).ok_or_else(|| {
            ApiError::invalid(
                "op",
                format!("`{name}` is not an op (read, list, write, delete, exec)"),
            )
        })?,
        None => default_op(endpoint.access),
    };
    if req.path.is_some() && !endpoint.uses_paths {
        return Err(ApiError::invalid(
            "path",
            format!("`{}` takes no path; leave `path` out", endpoint.id),
        ));
    }
    let implemented = json!({"implemented": endpoint.status == Status::Implemented});
    match app.policy.verdict(index, identity) {
        Verdict::Disabled(rule) => {
            return Ok(answer(
                endpoint.id,
                false,
                Some("endpoint_disabled"),
                Some(rule),
                Some(Code::EndpointDisabled),
                implemented,
            ));
        }
        Verdict::MissingScope(scope) => {
            let mut extra = implemented;
            extra["scope"] = json!(scope);
            return Ok(answer(
                endpoint.id,
                false,
                Some("missing_scope"),
                None,
                Some(Code::MissingScope),
                extra,
            ));
        }
        Verdict::Allowed => {}
    }
    let Some(raw) = &req.path else {
        return Ok(answer(endpoint.id, true, None, None, None, implemented));
    };
    let mut extra = implemented;
    extra["op"] = json!(op);
    // The file routes' own decision: the rules on the normalized path, then the links on
    // the way as the kernel would meet them; nothing is created or changed.
    match app.files.decide(raw, op) {
        Ok(resolved) => {
            extra["path"] = json!(resolved.path);
            extra["exists"] = json!(resolved.exists);
            Ok(answer(endpoint.id, true, None, None, None, extra))
        }
        Err(refusal) => {
            let code = refusal.error_code();
            extra["message"] = json!(refusal.to_string());
            Ok(answer(
                endpoint.id,
                false,
                Some(code.as_str()),
                None,
                Some(code),
                extra,
            ))
        }
    }
}

fn default_op(access: Access) -> Op {
    match access {
        Access::Read => Op::Read,
        Access::Write => Op::Write,
        Access::Exec => Op::Exec,
    }
}

fn answer(
    endpoint: &str,
    allowed: bool,
    reason: Option<&str>,
    rule: Option<String>,
    code: Option<Code>,
    extra: Value,
) -> Value {
    let mut out = json!({
        "endpoint": endpoint,
        "allowed": allowed,
        "reason": reason,
        "rule": rule,
        "status": code.map(|c| c.status().as_u16()),
    });
    if let (Some(obj), Value::Object(more)) = (out.as_object_mut(), extra) {
        obj.extend(more);
    }
    out
}
