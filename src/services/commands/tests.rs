use super::*;
use serde_json::json;

fn registry(yaml: &str) -> Result<CommandRegistry, DeclarationError> {
    let entries: Vec<CommandEntry> = serde_saphyr::from_str(yaml).unwrap();
    CommandRegistry::from_entries(entries)
}

const GREET: &str = r#"
- name: greet
  argv: ["printf", "%s|%s|%s", "{who}", "--count={count}", "{loud}"]
  args:
    - {name: who, type: string, required: true, max_length: 16}
    - {name: count, type: integer, default: 1, min: 1, max: 3}
    - {name: loud, type: boolean}
    - {name: tone, type: string, enum: [warm, cold]}
"#;

fn args(v: serde_json::Value) -> Map<String, Value> {
    v.as_object().unwrap().clone()
}

#[test]
fn arguments_fill_the_argv_without_a_shell() {
    let r = registry(GREET).unwrap();
    let greet = r.get("greet").unwrap();
    let argv = greet
        .render(&args(json!({"who": "a b; rm -rf /", "loud": true})))
        .unwrap();
    assert_eq!(
        argv,
        ["printf", "%s|%s|%s", "a b; rm -rf /", "--count=1", "true"]
    );
    // An optional argument left out drops its element.
    let argv = greet.render(&args(json!({"who": "x"}))).unwrap();
    assert_eq!(argv, ["printf", "%s|%s|%s", "x", "--count=1"]);
}

#[test]
fn bad_arguments_name_their_param() {
    let r = registry(GREET).unwrap();
    let greet = r.get("greet").unwrap();
    for (given, param) in [
        (json!({}), "who"),
        (json!({"who": 5}), "who"),
        (json!({"who": "far too long for it"}), "who"),
        (json!({"who": "x", "count": 9}), "count"),
        (json!({"who": "x", "count": 1.5}), "count"),
        (json!({"who": "x", "tone": "hot"}), "tone"),
        (json!({"who": "x", "extra": 1}), "extra"),
    ] {
        let e = greet.render(&args(given.clone())).unwrap_err();
        assert!(
            !matches!(e, CommandError::Unavailable { .. }),
            "{given}: {e}"
        );
        assert_eq!(e.arg(), Some(param), "{given}");
    }
}

#[test]
fn declarations_are_checked() {
    assert!(
        registry("- {name: a, argv: []}")
            .unwrap_err()
            .0
            .contains("argv")
    );
    assert!(
        registry("- {name: a, argv: [x]}\n- {name: a, argv: [y]}")
            .unwrap_err()
            .0
            .contains("twice")
    );
    assert!(
        registry("- {name: a, argv: [x], args: [{name: n, type: integer, default: nope}]}")
            .unwrap_err()
            .0
            .contains("default")
    );
}

#[tokio::test]
async fn runs_and_reports() {
    let r = registry(GREET).unwrap();
    let greet = r.get("greet").unwrap();
    let argv = greet.render(&args(json!({"who": "ann"}))).unwrap();
    let base = crate::services::child_env::ChildEnv::default();
    let ran = greet.run(argv, &base).await.unwrap();
    assert_eq!(ran.outcome.stdout.text(), "ann|--count=1|");
    assert_eq!(ran.outcome.exit_code, Some(0));
    assert_eq!(ran.argv, ["printf", "%s|%s|%s", "ann", "--count=1"]);
    let missing = registry("- {name: m, argv: [/nonexistent/program]}").unwrap();
    let m = missing.get("m").unwrap();
    let e = m
        .run(vec!["/nonexistent/program".into()], &base)
        .await
        .unwrap_err();
    assert!(matches!(e, CommandError::Unavailable { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with("command `m` could not start `/nonexistent/program`: ")
    );
}
