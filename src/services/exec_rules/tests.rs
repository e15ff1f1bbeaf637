use super::*;
use std::collections::BTreeMap;

const PATH: &str = "/usr/local/bin:/usr/bin:/bin";

fn rules(yaml: &str) -> ExecRules {
    let section: ProcessRules = serde_saphyr::from_str(yaml).unwrap();
    ExecRules::from_section(&section).unwrap()
}

fn judge(rules: &ExecRules, command: CommandLine, scopes: &[&str]) -> Result<(), ExecRefusal> {
    let holds = |s: &str| scopes.contains(&s);
    rules.judge(&command, &holds, PATH, Path::new("/"))
}

/// Asserts that `rules` refuse `command` as not allowed.
#[track_caller]
fn not_allowed(rules: &ExecRules, command: CommandLine) {
    let judged = judge(rules, command.clone(), &[]);
    assert!(
        matches!(judged, Err(ExecRefusal::NotAllowed { .. })),
        "{command:?}: {judged:?}"
    );
}

fn shell(line: &str) -> CommandLine {
    CommandLine::Shell(line.into())
}

fn direct(program: &str, args: &[&str]) -> CommandLine {
    CommandLine::Direct {
        program: program.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
    }
}

fn programs(line: &str) -> Vec<String> {
    shell_seen(line)
        .unwrap()
        .programs
        .iter()
        .map(|(w, _)| match w {
            Word::Literal(s) => s.clone(),
            Word::Opaque(s) => format!("?{s}"),
        })
        .collect()
}

#[test]
fn a_shell_line_is_split_into_the_programs_it_runs() {
    assert_eq!(
        programs("ls -l | grep x && wc -l; echo done &"),
        ["ls", "grep", "wc", "echo"]
    );
    assert_eq!(programs("A=1 B='2 3' >out 2>&1 make all"), ["make"]);
    assert_eq!(programs("env -i X=1 rm -rf /"), ["env", "rm"]);
    assert_eq!(programs("sudo -u root rm x"), ["sudo", "rm"]);
    assert_eq!(programs("sh -c 'curl x | bash'"), ["sh", "curl", "bash"]);
    assert_eq!(
        programs("bash -ec \"nohup rm -f y\""),
        ["bash", "nohup", "rm"]
    );
    assert_eq!(programs("timeout -s 9 5 sleep 10"), ["timeout", "sleep"]);
    assert_eq!(programs("echo $(whoami) `id`"), ["whoami", "id", "echo"]);
    assert_eq!(programs("$CMD arg"), ["?$CMD"]);
    assert_eq!(programs("echo $((1 + (2 * 3))) | cat"), ["echo", "cat"]);
    assert_eq!(programs("(cd /tmp && r\\m x) # ls"), ["cd", "rm"]);
    assert_eq!(programs("f() { rm x; }; f"), ["f", "rm", "f"]);
    assert_eq!(programs("echo '$(not run)'"), ["echo"]);
}

#[test]
fn malformed_lines_are_invalid() {
    for line in ["echo 'open", "echo \"open", "echo $(open", "echo `open"] {
        assert!(shell_seen(line).is_err(), "{line}");
    }
    let r = ExecRules::default();
    assert!(matches!(
        judge(&r, shell("  "), &[]),
        Err(ExecRefusal::CommandInvalid(_))
    ));
    assert!(matches!(
        judge(&r, shell("echo \0"), &[]),
        Err(ExecRefusal::CommandInvalid(_))
    ));
    assert!(matches!(
        judge(&r, direct("", &[]), &[]),
        Err(ExecRefusal::ProcessInvalid(_))
    ));
    assert!(matches!(
        judge(&r, direct("echo", &["a\0b"]), &[]),
        Err(ExecRefusal::ProcessInvalid(_))
    ));
    assert!(matches!(
        judge(&r, direct("no-such-program-here", &[]), &[]),
        Err(ExecRefusal::ProcessInvalid(_))
    ));
}

#[test]
fn deny_lists_refuse_through_wrappers_and_links() {
    let r = rules("deny_commands: [rm]");
    assert!(judge(&r, shell("ls"), &[]).is_ok());
    for line in [
        "rm x",
        "env rm x",
        "sh -c 'rm x'",
        "/bin/rm x",
        "true && rm x",
        "echo $(rm x)",
    ] {
        not_allowed(&r, shell(line));
    }
    not_allowed(&r, direct("rm", &["x"]));
    // A link to rm under another name is rm.
    let dir = tempfile::tempdir().unwrap();
    let rm = resolve("rm", PATH, Path::new("/")).unwrap();
    std::os::unix::fs::symlink(&rm, dir.path().join("innocent")).unwrap();
    let link = dir.path().join("innocent");
    not_allowed(&r, direct(link.to_str().unwrap(), &[]));
    // Only a deny list: what the guard cannot see runs.
    assert!(judge(&r, shell("$X"), &[]).is_ok());
}

#[test]
fn allow_lists_admit_only_what_they_name_and_ask_for_scopes() {
    let r = rules(
        "allow_commands: [ls, 'python3*', {command: git, scopes: ['git:write']}]\n\
         deny_programs: []",
    );
    assert!(judge(&r, shell("cd /tmp && ls -l"), &[]).is_ok());
    not_allowed(&r, shell("ls | wc"));
    not_allowed(&r, shell("$X"));
    not_allowed(&r, shell("eval ls"));
    assert!(matches!(
        judge(&r, shell("git push"), &[]),
        Err(ExecRefusal::ScopeRequired { ref scopes, .. }) if scopes == &["git:write"]
    ));
    assert!(judge(&r, shell("git push"), &["git:write"]).is_ok());
    not_allowed(&r, shell("sudo ls"));
}

#[test]
fn the_process_guard_refuses_session_leavers_by_default() {
    let r = ExecRules::default();
    for line in ["setsid sleep 1", "sudo ls", "env su"] {
        assert!(
            matches!(
                judge(&r, shell(line), &[]),
                Err(ExecRefusal::ProcessDenied { .. })
            ),
            "{line}"
        );
    }
    let r = rules("deny_programs: []");
    assert!(judge(&r, shell("setsid true"), &[]).is_ok());
}

#[test]
fn variables_are_judged_by_the_shared_rule_and_the_operator() {
    let env = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let r = rules("deny_env: ['DEBUG*']\nallow_env: [APP_*, DEBUG_LEVEL]");
    assert!(r.judge_env(&env(&[("APP_MODE", "x")])).is_ok());
    assert!(matches!(
        r.judge_env(&env(&[("LD_PRELOAD", "x")])),
        Err(ExecRefusal::EnvDenied { .. })
    ));
    assert!(matches!(
        r.judge_env(&env(&[("debug_level", "1")])),
        Err(ExecRefusal::EnvDenied { .. })
    ));
    assert!(matches!(
        r.judge_env(&env(&[("OTHER", "1")])),
        Err(ExecRefusal::EnvNotAllowed { .. })
    ));
    assert!(matches!(
        r.judge_env(&env(&[("A=B", "1")])),
        Err(ExecRefusal::EnvInvalid { .. })
    ));
    assert!(matches!(
        r.judge_env(&env(&[("", "1")])),
        Err(ExecRefusal::EnvInvalid { .. })
    ));
    assert!(matches!(
        r.judge_env(&env(&[("APP_X", "a\0")])),
        Err(ExecRefusal::EnvInvalid { .. })
    ));
}

#[test]
fn bad_patterns_are_configuration_errors() {
    let section: ProcessRules = serde_saphyr::from_str("deny_commands: ['a[']").unwrap();
    assert!(ExecRules::from_section(&section).is_err());
    assert!(serde_saphyr::from_str::<ProcessRules>("allow_command: [ls]").is_err());
}

#[test]
fn under_an_allow_list_what_a_line_sets_and_code_running_arguments_are_refused() {
    let r = rules("allow_commands: [make, git, ls]\nallow_env: [APP_*]\ndeny_programs: []");
    for line in [
        "MAKEFLAGS='--eval=$(shell id)' make",
        "env MAKEFLAGS=-E make",
        "GIT_CONFIG_COUNT=1 git x",
        "OTHER=1 ls",
        "PATH=/tmp; ls",
        "make --eval='$(shell id)'",
        "git -c alias.x='!id' x",
    ] {
        not_allowed(&r, shell(line));
    }
    not_allowed(&r, direct("git", &["-c", "core.pager=id", "log"]));
    assert!(judge(&r, shell("APP_MODE=1 make all && git -C . status"), &[]).is_ok());
    // Without an allow list a shell line's own variables are the caller's business.
    assert!(
        judge(
            &rules("deny_programs: []"),
            shell("OTHER=1 make --eval=x"),
            &[]
        )
        .is_ok()
    );
}

#[test]
fn under_an_allow_list_a_callers_variables_are_refused_unless_listed() {
    let one = |name: &str| BTreeMap::from([(name.to_string(), "1".to_string())]);
    let r = rules("allow_commands: [ls]");
    assert!(matches!(
        r.judge_env(&one("LANG")),
        Err(ExecRefusal::EnvNotAllowed { .. })
    ));
    assert!(rules("{}").judge_env(&one("LANG")).is_ok());
    for name in ["A B", "1ABC", "A-B", "A.B", "É"] {
        assert!(
            matches!(
                rules("{}").judge_env(&one(name)),
                Err(ExecRefusal::EnvInvalid { .. })
            ),
            "{name}"
        );
    }
}
