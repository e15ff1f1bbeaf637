use super::*;

fn guard(root: &Path, symlinks: SymlinkPolicy) -> PathGuard {
    PathGuard::from_section(&PathRules {
        allow: Some(vec![root.join("work")]),
        read_only: vec![root.join("work/vendor")],
        deny: vec!["**/.env".into(), "**/.git/**".into()],
        symlinks: Some(symlinks),
        ..PathRules::default()
    })
    .unwrap()
}

fn code(result: Result<PathBuf, PathRefusal>) -> Option<RefusalKind> {
    result.err().map(|r| r.kind)
}

#[test]
fn each_rule_has_its_code() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("work/vendor")).unwrap();
    let g = guard(&root, SymlinkPolicy::Deny);
    let work = root.join("work");
    assert_eq!(code(g.check("a.txt", Op::Write, &work)), None);
    assert_eq!(
        code(g.check("", Op::Read, &work)),
        Some(RefusalKind::Invalid)
    );
    assert_eq!(
        code(g.check("a\0b", Op::Read, &work)),
        Some(RefusalKind::Invalid)
    );
    assert_eq!(
        code(g.check(&"a".repeat(5000), Op::Read, &work)),
        Some(RefusalKind::Invalid)
    );
    assert_eq!(
        code(g.check("/etc/passwd", Op::Read, &work)),
        Some(RefusalKind::NotAllowed)
    );
    assert_eq!(
        code(g.check("../outside", Op::Read, &work)),
        Some(RefusalKind::NotAllowed)
    );
    assert_eq!(
        code(g.check("app/.env", Op::Read, &work)),
        Some(RefusalKind::Denied)
    );
    assert_eq!(
        code(g.check(".git/config", Op::Read, &work)),
        Some(RefusalKind::Denied)
    );
    assert_eq!(code(g.check("vendor/lib.rs", Op::Read, &work)), None);
    assert_eq!(
        code(g.check("vendor/lib.rs", Op::Delete, &work)),
        Some(RefusalKind::ReadOnly)
    );
}

#[test]
fn normalization_is_lexical_and_never_climbs_above_root() {
    assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
    assert_eq!(normalize(Path::new("/../../x")), PathBuf::from("/x"));
}

#[test]
fn symlink_policies() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let work = root.join("work");
    std::fs::create_dir_all(work.join("real")).unwrap();
    std::fs::create_dir_all(root.join("secret")).unwrap();
    std::os::unix::fs::symlink(work.join("real"), work.join("inside")).unwrap();
    std::os::unix::fs::symlink(root.join("secret"), work.join("escape")).unwrap();

    let deny = guard(&root, SymlinkPolicy::Deny);
    assert_eq!(
        code(deny.check("inside/f", Op::Read, &work)),
        Some(RefusalKind::Symlink)
    );

    let within = guard(&root, SymlinkPolicy::Within);
    assert_eq!(code(within.check("inside/f", Op::Read, &work)), None);
    assert_eq!(
        code(within.check("escape/f", Op::Read, &work)),
        Some(RefusalKind::Symlink)
    );

    let allow = guard(&root, SymlinkPolicy::Allow);
    assert_eq!(code(allow.check("escape/f", Op::Read, &work)), None);
}

#[test]
fn rules_are_checked() {
    let relative = PathRules {
        allow: Some(vec![PathBuf::from("work")]),
        ..PathRules::default()
    };
    assert_eq!(
        PathGuard::from_section(&relative).unwrap_err().0,
        "paths.allow[0]: `work` must be an absolute path"
    );
    let bad_glob = PathRules {
        deny: vec!["a[".into()],
        ..PathRules::default()
    };
    assert!(
        PathGuard::from_section(&bad_glob)
            .unwrap_err()
            .0
            .starts_with("paths.deny[0]: `a[` is not a glob")
    );
}
