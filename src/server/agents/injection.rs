//! Vault credentials reaching MCP servers (agents spec 4.8): a session's `vault_ids` attach
//! credentials, and each MCP tool gets the one whose server URL has the same scheme, host and
//! port. The binding is fixed at session creation; the token is read again for every turn,
//! so an update applies from the next turn and a deleted or expired credential fails it.

use crate::error::{ApiError, Code};
use crate::server::agents::agent_spec::McpTool;
use crate::server::agents::input::invalid;
use crate::server::agents::vaults::{Credential, Vaults};
use std::time::SystemTime;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binding {
    pub server_label: String,
    pub vault_id: String,
    pub credential_id: String,
}

/// `(scheme, host, port)`, with the scheme's default port filled in.
pub fn origin(url: &str) -> Option<(String, String, u16)> {
    let parsed = url::Url::parse(url).ok()?;
    let host = parsed.host_str()?.to_ascii_lowercase();
    Some((
        parsed.scheme().to_owned(),
        host,
        parsed.port_or_known_default()?,
    ))
}

/// The binding of every MCP tool that an attached credential serves. A tool that already
/// sends its own `Authorization` header keeps it.
pub fn bind(
    vaults: &Vaults,
    owner: &str,
    vault_ids: &[String],
    tools: &[McpTool],
    tools_param: &str,
) -> Result<Vec<Binding>, ApiError> {
    let attached = vaults.attached(owner, vault_ids).map_err(|i| {
        invalid(
            format!("vault_ids[{i}]"),
            format!("no vault with id `{}`", vault_ids[i]),
        )
    })?;
    let mut bindings = Vec::new();
    for (i, tool) in tools.iter().enumerate() {
        let p = format!("{tools_param}[{i}]");
        let own_auth = tool
            .headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("authorization"));
        let tool_origin = origin(&tool.server_url);
        let matching: Vec<&(String, Credential)> = attached
            .iter()
            .filter(|(_, c)| tool_origin.is_some() && origin(&c.mcp_server_url) == tool_origin)
            .collect();
        let chosen = match &tool.credential_id {
            Some(id) => {
                let found = attached.iter().find(|(_, c)| &c.id == id).ok_or_else(|| {
                    invalid(
                        format!("{p}.credential_id"),
                        format!("the credential `{id}` is not in the vaults given in `vault_ids`"),
                    )
                })?;
                if !matching.iter().any(|(_, c)| &c.id == id) {
                    return Err(invalid(
                        format!("{p}.credential_id"),
                        format!(
                            "the credential `{id}` is for `{}`, not this tool's server `{}` (scheme, host and port must match)",
                            found.1.mcp_server_url, tool.server_url
                        ),
                    ));
                }
                Some(found)
            }
            None if own_auth => None,
            None => match matching.as_slice() {
                [] => None,
                [one] => Some(*one),
                [a, b, ..] => {
                    return Err(invalid(
                        format!("{p}.credential_id"),
                        format!(
                            "the credentials `{}` and `{}` both match `{}`; name one with `credential_id` on the tool",
                            a.1.id, b.1.id, tool.server_url
                        ),
                    ));
                }
            },
        };
        if let Some((vault_id, credential)) = chosen {
            bindings.push(Binding {
                server_label: tool.server_label.clone(),
                vault_id: vault_id.clone(),
                credential_id: credential.id.clone(),
            });
        }
    }
    Ok(bindings)
}

/// The current token of a binding, or why there is none.
pub fn token(vaults: &Vaults, owner: &str, binding: &Binding) -> Result<String, ApiError> {
    let credential = vaults
        .credential(owner, &binding.vault_id, &binding.credential_id)
        .ok_or_else(|| {
            ApiError::new(
                Code::CredentialUnavailable,
                format!(
                    "the credential `{}` (vault `{}`) for the MCP server `{}` was deleted",
                    binding.credential_id, binding.vault_id, binding.server_label
                ),
            )
            .with_param("vault_ids")
        })?;
    let expired = credential
        .expires_at
        .as_deref()
        .and_then(|at| humantime::parse_rfc3339_weak(at).ok())
        .is_some_and(|at| at <= SystemTime::now());
    if expired {
        return Err(ApiError::new(
            Code::CredentialExpired,
            format!(
                "the credential `{}` for the MCP server `{}` expired at {}",
                credential.id,
                binding.server_label,
                credential.expires_at.unwrap_or_default()
            ),
        )
        .with_param("vault_ids"));
    }
    Ok(credential.token)
}

/// `(server_label, token)` for every binding; the first failure stops.
pub fn tokens(
    vaults: &Vaults,
    owner: &str,
    bindings: &[Binding],
) -> Result<Vec<(String, String)>, ApiError> {
    bindings
        .iter()
        .map(|b| token(vaults, owner, b).map(|t| (b.server_label.clone(), t)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_compare_scheme_host_and_port() {
        assert_eq!(
            origin("https://MCP.example.com/mcp"),
            origin("https://mcp.example.com:443/other")
        );
        assert_ne!(
            origin("https://mcp.example.com/"),
            origin("http://mcp.example.com/")
        );
        assert_ne!(
            origin("https://mcp.example.com/"),
            origin("https://mcp.example.com:8443/")
        );
        assert_ne!(
            origin("https://mcp.example.com/"),
            origin("https://api.example.com/")
        );
        assert_eq!(origin("not a url"), None);
    }
}
