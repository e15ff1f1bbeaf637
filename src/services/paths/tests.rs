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

#[test]
fn a_denied_directory_hides_what_it_holds() {
    let g = PathGuard::from_section(&PathRules {
        allow: Some(vec!["/w".into(), "/w/inner".into()]),
        read_only: vec!["/w/a/ro".into()],
        deny: vec!["**/private".into()],
        ..PathRules::default()
    })
    .unwrap();
    let refused = |p: &str, op| g.judge(Path::new(p), op).err().map(|r| r.kind);
    assert_eq!(refused("/w/private", Op::Read), Some(RefusalKind::Denied));
    assert_eq!(
        refused("/w/private/deep/x", Op::Read),
        Some(RefusalKind::Denied)
    );
    assert_eq!(refused("/w/privately", Op::Read), None);
    assert!(g.matches_deny(Path::new("/w/private")));
    assert!(!g.matches_deny(Path::new("/w/private/x")), "itself only");
    assert!(g.is_denied(Path::new("/w/private/x")));
    assert_eq!(
        g.root_of(Path::new("/w/inner/x")),
        Some(Path::new("/w/inner"))
    );
    assert_eq!(g.root_of(Path::new("/w/x")), Some(Path::new("/w")));
    assert_eq!(g.root_of(Path::new("/elsewhere")), None);
    assert_eq!(
        g.read_only_below(Path::new("/w/a")),
        Some(Path::new("/w/a/ro"))
    );
    assert_eq!(g.read_only_below(Path::new("/w/a/ro")), None);
    assert_eq!(g.read_only_below(Path::new("/w/b")), None);
    assert!(g.is_read_only(Path::new("/w/a/ro/x"), Op::Delete));
    assert!(!g.is_read_only(Path::new("/w/a/ro/x"), Op::Read));
    for bad in ["", "a\0b"] {
        assert_eq!(
            PathGuard::validate(bad).unwrap_err().kind,
            RefusalKind::Invalid
        );
    }
    assert!(PathGuard::validate(&"a".repeat(MAX_PATH_BYTES)).is_ok());
    assert!(PathGuard::validate(&"a".repeat(MAX_PATH_BYTES + 1)).is_err());
}

#[test]
fn file_settings_have_defaults() {
    let g = PathGuard::from_section(&PathRules::default()).unwrap();
    assert_eq!(g.max_file_bytes(), DEFAULT_MAX_FILE_BYTES);
    assert_eq!(g.upload_extensions(), &ExtensionRules::default());
    assert_eq!(g.max_upload_files(), DEFAULT_MAX_UPLOAD_FILES);
    let none = PathRules {
        max_upload_files: Some(0),
        ..PathRules::default()
    };
    assert!(
        PathGuard::from_section(&none)
            .unwrap_err()
            .0
            .starts_with("paths.max_upload_files:")
    );
    // `/capabilities` shows the spec's four fields only.
    let shown = g.describe();
    let keys: Vec<&str> = shown
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["allow", "read_only", "deny_count", "symlinks"]);
}
