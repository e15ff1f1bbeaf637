use super::*;

fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn load_text(text: &str, pairs: &[(&str, &str)]) -> Result<Settings, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("template.yaml");
    std::fs::write(&path, text).unwrap();
    let options = LoadOptions {
        config_path: Some(path),
        ..LoadOptions::default()
    };
    Settings::load_with_env(&options, &env(pairs))
}

fn message(result: Result<Settings, ConfigError>) -> String {
    result.expect_err("configuration must be refused").0
}

#[test]
fn defaults_have_no_identity_and_a_warning() {
    let s = Settings::defaults();
    assert!(s.identities.is_empty());
    assert!(!s.configured);
    assert_eq!(s.limits.len(), ENDPOINTS.len());
    assert!(
        s.limits
            .iter()
            .all(|l| l.body_bytes == DEFAULT_MAX_BODY_BYTES)
    );
    assert!(s.warnings.iter().any(|w| w.contains("anonymous")));
}

#[test]
fn yaml_errors_name_the_file_line_and_key() {
    let m = message(load_text("server:\n  audit: sometimes\n", &[]));
    assert!(m.contains("template.yaml") && m.contains("line 2"), "{m}");
    assert!(m.contains("sometimes") && m.contains("audit"), "{m}");
    let m = message(load_text("server:\n  bogus: 1\n", &[]));
    assert!(m.contains("bogus") && m.contains("line 2"), "{m}");
}

#[test]
fn semantic_errors_name_the_key() {
    for (text, key) in [
        ("server:\n  preset: loose\n", "server.preset"),
        ("server:\n  groups: [agent]\n", "server.groups"),
        (
            "server:\n  endpoints:\n    shel: false\n",
            "server.endpoints.shel",
        ),
        (
            "server:\n  limits:\n    endpoints:\n      health: {rate: fast}\n",
            "server.limits.endpoints.health.rate",
        ),
        (
            "server:\n  limits:\n    groups:\n      core: {concurrency: 0}\n",
            "server.limits.groups.core.concurrency",
        ),
        ("identities:\n  - {id: a, scopes: ['*']}\n", "identities[0]"),
        (
            "identities:\n  - {id: a, token: t, scopes: ['files read']}\n",
            "identities[0].scopes[0]",
        ),
        (
            "identities:\n  - {id: a, token: t, scopes: []}\n  - {id: a, token: u, scopes: []}\n",
            "identities",
        ),
        (
            "identities:\n  - {id: a, token_env: NOPE_TOKEN, scopes: []}\n",
            "identities[0].token_env",
        ),
        ("paths:\n  allow: [relative/dir]\n", "paths.allow[0]"),
        ("paths:\n  deny: ['a[']\n", "paths.deny[0]"),
        (
            "commands:\n  - {name: 'bad name', argv: [echo]}\n",
            "commands[0].name",
        ),
        (
            "commands:\n  - {name: x, argv: [echo, '{y}']}\n",
            "commands[0].argv[1]",
        ),
    ] {
        let m = message(load_text(text, &[]));
        assert!(m.starts_with(key), "expected `{key}` first in: {m}");
    }
}

#[test]
fn environment_values_are_checked_by_name() {
    for (var, value) in [
        ("SVC_SERVER_AUDIT", "sometimes"),
        ("SVC_SERVER_ENABLED_GROUPS", "agents,nope"),
        ("SVC_SERVER_PRESET", "loose"),
        ("SVC_SERVER_MAX_BODY_BYTES", "ten"),
        ("SVC_SERVER_MAX_BODY_BYTES", "0"),
        ("SVC_SERVER_TOKEN", ""),
    ] {
        let m = message(Settings::load_with_env(
            &LoadOptions::default(),
            &env(&[(var, value)]),
        ));
        assert!(m.starts_with(var), "{var}={value}: {m}");
    }
}

#[test]
fn environment_overlays_the_template() {
    let s = load_text(
        "server:\n  audit: deny\n  limits:\n    endpoints:\n      health: {body_bytes: 5}\n",
        &[
            ("SVC_SERVER_ENABLED_GROUPS", "agents, -file_ops,+browser"),
            ("SVC_SERVER_TOKEN", "secret"),
            ("SVC_SERVER_MAX_BODY_BYTES", "1000"),
            ("SVC_SERVER_TYPO", "1"),
        ],
    )
    .unwrap();
    assert!(s.env_groups[&Group::Agents]);
    assert!(!s.env_groups[&Group::FileOps]);
    assert!(s.env_groups[&Group::Browser]);
    assert_eq!(s.audit, AuditMode::Deny);
    assert!(s.configured);
    let health =
        crate::server::endpoints::index_of(crate::server::endpoints::by_id("health").unwrap());
    assert_eq!(
        s.limits[health].body_bytes, 5,
        "an endpoint's own limit wins"
    );
    assert_eq!(s.limits[health + 1].body_bytes, 1000);
    assert!(s.warnings.iter().any(|w| w.contains("SVC_SERVER_TYPO")));
    assert_eq!(s.identities.iter().next().unwrap().id, "server");
}

#[test]
fn revision_changes_with_the_configuration_but_not_with_other_variables() {
    let a = load_text("server:\n  audit: all\n", &[]).unwrap().revision;
    let b = load_text("server:\n  audit: deny\n", &[]).unwrap().revision;
    let c = load_text("server:\n  audit: all\n", &[("HOME", "/elsewhere")])
        .unwrap()
        .revision;
    assert_ne!(a, b);
    assert_eq!(a, c);
}

#[test]
fn the_demo_template_is_valid() {
    let options = LoadOptions {
        demo: true,
        ..LoadOptions::default()
    };
    let s = Settings::load_with_env(&options, &BTreeMap::new()).unwrap();
    assert!(s.group_policy[&Group::Agents]);
    assert!(s.commands.get("greet").is_some());
}

#[test]
fn runtime_launch_additions_are_read_per_implemented_runtime() {
    let s = load_text(
        "agents:\n  runtimes:\n    rt-one-alias:\n      args: [\"-c\", \"model_provider=sim\"]\n      env: {SIM_KEY: k}\n    rt-two:\n      env: {ANTHROPIC_BASE_URL: \"http://127.0.0.1:9\"}\n",
        &[],
    )
    .unwrap();
    let one = &s.agents.launch["rt-one"];
    assert_eq!(one.args, ["-c", "model_provider=sim"]);
    assert_eq!(one.env["SIM_KEY"], "k");
    assert_eq!(
        s.agents.launch["rt-two"].env["ANTHROPIC_BASE_URL"],
        "http://127.0.0.1:9"
    );
    let declared = message(load_text(
        "agents:\n  runtimes:\n    declared-a: {args: []}\n",
        &[],
    ));
    assert!(
        declared.contains("agents.runtimes.declared-a"),
        "{declared}"
    );
    let bad_var = message(load_text(
        "agents:\n  runtimes:\n    rt-one: {env: {\"A-B\": x}}\n",
        &[],
    ));
    assert!(bad_var.contains("agents.runtimes.rt-one.env"), "{bad_var}");
    let unknown = message(load_text(
        "agents:\n  runtimes:\n    rt-one: {argv: []}\n",
        &[],
    ));
    assert!(unknown.contains("argv"), "{unknown}");
}
