use super::*;
use crate::server::config::LoadOptions;
use crate::server::endpoints::{by_id, index_of};
use std::collections::BTreeMap;

fn policy(template: &str, env: &[(&str, &str)], code: &[(Group, bool)]) -> Policy {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("template.yaml");
    std::fs::write(&path, template).unwrap();
    let options = LoadOptions {
        config_path: Some(path),
        code_groups: code.to_vec(),
        ..LoadOptions::default()
    };
    let env: BTreeMap<String, String> = env
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Policy::new(&Settings::load_with_env(&options, &env).unwrap())
}

fn decision(p: &Policy, id: &str) -> (bool, String) {
    let d = p.decision(index_of(by_id(id).unwrap()));
    (d.enabled, d.rule.clone())
}

#[test]
fn defaults_opt_in_groups_are_off() {
    let p = policy("", &[], &[]);
    assert_eq!(
        decision(&p, "browser_start"),
        (false, "default:opt-in:browser".into())
    );
    assert_eq!(
        decision(&p, "code_run"),
        (false, "default:opt-in:dev_tools".into())
    );
    assert_eq!(
        decision(&p, "agents_sessions_create"),
        (false, "default:opt-in:agents".into())
    );
    assert_eq!(
        decision(&p, "files_read"),
        (true, "default:on:file_ops".into())
    );
}

#[test]
fn each_layer_speaks_when_it_is_the_most_specific() {
    let code = [(Group::Browser, true), (Group::System, false)];
    let env = [("SVC_SERVER_ENABLED_GROUPS", "agents,-process")];
    let p = policy(
        "server:\n  preset: read-only\n  groups: {file_ops: false, dev_tools: true}\n  endpoints: {files_read: true, health: false}\n",
        &env,
        &code,
    );
    assert_eq!(
        decision(&p, "files_read"),
        (true, "policy:endpoints.files_read".into())
    );
    assert_eq!(
        decision(&p, "health"),
        (false, "policy:endpoints.health".into())
    );
    assert_eq!(
        decision(&p, "files_write"),
        (false, "preset:read-only".into())
    );
    assert_eq!(
        decision(&p, "files_list"),
        (false, "policy:groups.file_ops".into())
    );
    assert_eq!(
        decision(&p, "code_languages"),
        (true, "policy:groups.dev_tools".into())
    );
    assert_eq!(
        decision(&p, "agents_sessions_list"),
        (true, "env:SVC_SERVER_ENABLED_GROUPS:agents".into())
    );
    assert_eq!(
        decision(&p, "process_list"),
        (false, "env:SVC_SERVER_ENABLED_GROUPS:process".into())
    );
    assert_eq!(
        decision(&p, "browser_status"),
        (true, "code:enable_group:browser".into())
    );
    assert_eq!(
        decision(&p, "system_info"),
        (false, "code:enable_group:system".into())
    );
}

#[test]
fn precedence_endpoint_then_preset_then_group_then_env_then_code() {
    // The same group spoken of by every layer: the most specific wins.
    let env = [("SVC_SERVER_ENABLED_GROUPS", "-agents")];
    let code = [(Group::Agents, true)];
    let p = policy("server:\n  groups: [agents]\n", &env, &code);
    assert_eq!(
        decision(&p, "agents_models_list"),
        (true, "policy:groups.agents".into())
    );
    let p = policy("", &env, &code);
    assert_eq!(
        decision(&p, "agents_models_list"),
        (false, "env:SVC_SERVER_ENABLED_GROUPS:agents".into())
    );
    let p = policy(
        "server:\n  preset: read-only\n  groups: [agents]\n",
        &[],
        &[],
    );
    assert_eq!(
        decision(&p, "agents_sessions_create"),
        (false, "preset:read-only".into())
    );
    assert_eq!(
        decision(&p, "agents_sessions_list"),
        (true, "policy:groups.agents".into())
    );
    let p = policy(
        "server:\n  preset: read-only\n  endpoints: {agents_sessions_create: true}\n  groups: [agents]\n",
        &[],
        &[],
    );
    assert_eq!(
        decision(&p, "agents_sessions_create"),
        (true, "policy:endpoints.agents_sessions_create".into())
    );
}

#[test]
fn verdicts_combine_switches_and_scopes() {
    let p = policy("server:\n  endpoints: {system_info: false}\n", &[], &[]);
    let reader = crate::server::auth::Identity::anonymous();
    let idx = |id| index_of(by_id(id).unwrap());
    assert_eq!(p.verdict(idx("files_read"), &reader), Verdict::Allowed);
    assert!(matches!(
        p.verdict(idx("system_info"), &reader),
        Verdict::Disabled(_)
    ));
    assert!(p.group_enabled(Group::System));
    assert!(!p.group_enabled(Group::Browser));
}
