use super::*;
use crate::services::paths::{ExtensionRules, PathRules, SymlinkPolicy};
use std::os::unix::fs::symlink;

/// A temporary tree: `root/work` allowed (`root/work/ro` read-only, `.env` and
/// `private/**` denied), `root/outside` beside it.
struct Tree {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    work: PathBuf,
}

impl Tree {
    fn new() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let work = root.join("work");
        std::fs::create_dir_all(work.join("ro")).unwrap();
        std::fs::create_dir_all(root.join("outside")).unwrap();
        Tree {
            _tmp: tmp,
            root,
            work,
        }
    }

    fn rules(&self, symlinks: SymlinkPolicy) -> PathRules {
        PathRules {
            allow: Some(vec![self.work.clone()]),
            read_only: vec![self.work.join("ro")],
            deny: vec!["**/.env".into(), "**/private".into()],
            symlinks: Some(symlinks),
            ..PathRules::default()
        }
    }

    fn service(&self, symlinks: SymlinkPolicy) -> FileService {
        self.service_with(self.rules(symlinks))
    }

    fn service_with(&self, rules: PathRules) -> FileService {
        FileService::new(PathGuard::from_section(&rules).unwrap(), &self.work)
    }

    fn put(&self, rel: &str, bytes: &[u8]) {
        let path = self.root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// Both resolutions: the kernel's `openat2` where it has it, and the `O_NOFOLLOW` walk.
fn both(service: FileService) -> [FileService; 2] {
    [service.clone(), service.walk_only()]
}

fn kind(e: FileError) -> Option<RefusalKind> {
    e.refusal()
}

fn read_all(read: ReadFile) -> Vec<u8> {
    let mut out = Vec::new();
    read.file.take(read.len).read_to_end(&mut out).unwrap();
    out
}

#[test]
fn read_whole_and_ranges() {
    let t = Tree::new();
    t.put("work/a.txt", b"0123456789");
    for s in both(t.service(SymlinkPolicy::Within)) {
        let r = s.read("a.txt", None).unwrap();
        assert_eq!((r.start, r.len, r.size, r.partial), (0, 10, 10, false));
        assert_eq!(r.name, "a.txt");
        assert_eq!(r.path, t.work.join("a.txt"));
        assert_eq!(read_all(r), b"0123456789");

        let r = s.read("a.txt", Some((2, Some(4)).into())).unwrap();
        assert_eq!((r.start, r.len, r.end(), r.partial), (2, 3, 4, true));
        assert_eq!(read_all(r), b"234");
        let r = s.read("a.txt", Some((7, None).into())).unwrap();
        assert_eq!(read_all(r), b"789");
        let r = s.read("a.txt", Some((7, Some(100)).into())).unwrap();
        assert_eq!(read_all(r), b"789");
        let r = s.read("a.txt", Some(ByteRange::Suffix(3))).unwrap();
        assert_eq!(read_all(r), b"789");
        let r = s.read("a.txt", Some(ByteRange::Suffix(30))).unwrap();
        assert_eq!(read_all(r), b"0123456789");
        for bad in [
            ByteRange::From {
                start: 10,
                end: None,
            },
            ByteRange::From {
                start: 5,
                end: Some(4),
            },
            ByteRange::Suffix(0),
        ] {
            assert!(
                matches!(
                    s.read("a.txt", Some(bad)),
                    Err(FileError::RangeNotSatisfiable { size: 10 })
                ),
                "{bad:?}"
            );
        }

        assert!(matches!(
            s.read("missing", None),
            Err(FileError::NotFound(_))
        ));
        assert!(matches!(
            s.read("missing/deeper", None),
            Err(FileError::NotFound(p)) if p == t.work.join("missing")
        ));
        assert!(matches!(s.read(".", None), Err(FileError::IsDirectory(_))));
        assert!(matches!(s.read("ro", None), Err(FileError::IsDirectory(_))));
        assert!(matches!(
            s.read("a.txt/x", None),
            Err(FileError::NotDirectory(_))
        ));
    }
}

#[test]
fn guard_refusals_have_their_kinds() {
    let t = Tree::new();
    t.put("work/.env", b"SECRET=1");
    t.put("work/private/key", b"k");
    t.put("work/ro/lib.rs", b"fn main() {}");
    t.put("outside/x", b"x");
    let s = t.service(SymlinkPolicy::Within);
    let refusal = |r: Result<ReadFile, FileError>| r.err().and_then(kind);
    assert_eq!(refusal(s.read("", None)), Some(RefusalKind::Invalid));
    assert_eq!(refusal(s.read("a\0b", None)), Some(RefusalKind::Invalid));
    assert_eq!(
        refusal(s.read(&"a/".repeat(2049), None)),
        Some(RefusalKind::Invalid)
    );
    assert_eq!(
        refusal(s.read("../outside/x", None)),
        Some(RefusalKind::NotAllowed)
    );
    assert_eq!(
        refusal(s.read(&format!("{}/outside/x", t.root.display()), None)),
        Some(RefusalKind::NotAllowed)
    );
    assert_eq!(refusal(s.read(".env", None)), Some(RefusalKind::Denied));
    assert_eq!(
        refusal(s.read("private/key", None)),
        Some(RefusalKind::Denied)
    );
    assert!(matches!(
        s.list("private", 1).map_err(kind),
        Err(Some(RefusalKind::Denied))
    ));
    assert!(s.read("ro/lib.rs", None).is_ok());
    let w = s.write("ro/lib.rs", b"x", WriteOptions::default());
    assert_eq!(w.err().and_then(kind), Some(RefusalKind::ReadOnly));
    assert_eq!(
        s.delete("ro/lib.rs", false).err().and_then(kind),
        Some(RefusalKind::ReadOnly)
    );
    assert_eq!(
        s.mkdir("ro/new", false).err().and_then(kind),
        Some(RefusalKind::ReadOnly)
    );
    assert_eq!(
        std::fs::read(t.work.join("ro/lib.rs")).unwrap(),
        b"fn main() {}"
    );
    // Percent-encoding is never decoded: `%2e%2e` is a name.
    assert!(matches!(
        s.read("%2e%2e/outside/x", None),
        Err(FileError::NotFound(p)) if p == t.work.join("%2e%2e")
    ));
}

#[test]
fn decide_is_the_one_decision() {
    let t = Tree::new();
    t.put("work/a.txt", b"a");
    t.put("outside/x", b"x");
    symlink(t.root.join("outside"), t.work.join("out")).unwrap();
    symlink(t.work.join("a.txt"), t.work.join("in")).unwrap();
    let s = t.service(SymlinkPolicy::Within);
    assert_eq!(
        s.decide("a.txt", Op::Read).unwrap(),
        Resolved {
            path: t.work.join("a.txt"),
            exists: true
        }
    );
    assert_eq!(
        s.decide("new/deeper/b.txt", Op::Write).unwrap(),
        Resolved {
            path: t.work.join("new/deeper/b.txt"),
            exists: false
        }
    );
    assert_eq!(
        s.decide("./x/../in", Op::Read).unwrap(),
        Resolved {
            path: t.work.join("a.txt"),
            exists: true
        }
    );
    assert_eq!(
        s.decide("out/x", Op::Read).unwrap_err().refusal(),
        Some(RefusalKind::Symlink)
    );
    assert_eq!(
        s.decide("ro/x", Op::Write).unwrap_err().refusal(),
        Some(RefusalKind::ReadOnly)
    );
    assert_eq!(
        s.decide("ro/x", Op::Read).unwrap().path,
        t.work.join("ro/x")
    );
}

#[test]
fn symlink_policies() {
    let t = Tree::new();
    t.put("work/real/f.txt", b"inside");
    t.put("work/.env", b"SECRET");
    t.put("outside/secret", b"outside");
    symlink(t.work.join("real"), t.work.join("inside")).unwrap();
    symlink("real/f.txt", t.work.join("rel-link")).unwrap();
    symlink(t.root.join("outside"), t.work.join("escape")).unwrap();
    symlink("../outside/secret", t.work.join("escape-file")).unwrap();
    symlink(".env", t.work.join("to-env")).unwrap();
    symlink("loop-b", t.work.join("loop-a")).unwrap();
    symlink("loop-a", t.work.join("loop-b")).unwrap();

    for s in both(t.service(SymlinkPolicy::Deny)) {
        for p in ["inside/f.txt", "rel-link", "escape/secret", "loop-a"] {
            assert_eq!(
                s.read(p, None).unwrap_err().refusal(),
                Some(RefusalKind::Symlink),
                "{p}"
            );
        }
        assert_eq!(
            s.info("rel-link").unwrap_err().refusal(),
            Some(RefusalKind::Symlink)
        );
        assert!(s.read("real/f.txt", None).is_ok());
        // Listing shows links as links.
        let listing = s.list(".", 1).unwrap();
        let link = listing.entries.iter().find(|e| e.name == "escape").unwrap();
        assert_eq!(link.kind, EntryKind::Symlink);
        assert_eq!(link.symlink_target, Some(t.root.join("outside")));
    }

    for s in both(t.service(SymlinkPolicy::Within)) {
        assert_eq!(read_all(s.read("inside/f.txt", None).unwrap()), b"inside");
        assert_eq!(read_all(s.read("rel-link", None).unwrap()), b"inside");
        assert_eq!(
            s.read("rel-link", None).unwrap().path,
            t.work.join("real/f.txt")
        );
        for p in ["escape/secret", "escape-file", "to-env", "loop-a"] {
            assert_eq!(
                s.read(p, None).unwrap_err().refusal(),
                Some(RefusalKind::Symlink),
                "{p}"
            );
        }
        // Info describes the link itself, but not one the policy refuses to follow.
        let info = s.info("rel-link").unwrap();
        assert_eq!(info.kind, EntryKind::Symlink);
        assert_eq!(info.symlink_target, Some(PathBuf::from("real/f.txt")));
        assert_eq!(
            s.info("escape").unwrap_err().refusal(),
            Some(RefusalKind::Symlink)
        );
        assert_eq!(
            s.exists("escape").unwrap_err().refusal(),
            Some(RefusalKind::Symlink)
        );
        // Writing through a link that leaves is refused, and nothing is written outside.
        let w = s.write("escape/new", b"x", WriteOptions::default());
        assert_eq!(w.unwrap_err().refusal(), Some(RefusalKind::Symlink));
        let w = s.write("escape-file", b"x", WriteOptions::default());
        assert_eq!(w.unwrap_err().refusal(), Some(RefusalKind::Symlink));
        assert_eq!(
            std::fs::read(t.root.join("outside/secret")).unwrap(),
            b"outside"
        );
        assert!(!t.root.join("outside/new").exists());
        // Writing through a link inside replaces the target, and the link stays.
        s.write("rel-link", b"changed", WriteOptions::default())
            .unwrap();
        assert_eq!(
            std::fs::read(t.work.join("real/f.txt")).unwrap(),
            b"changed"
        );
        assert!(
            t.work
                .join("rel-link")
                .symlink_metadata()
                .unwrap()
                .is_symlink()
        );
        std::fs::write(t.work.join("real/f.txt"), b"inside").unwrap();
    }

    let s = t.service(SymlinkPolicy::Allow);
    assert_eq!(read_all(s.read("escape/secret", None).unwrap()), b"outside");
    assert_eq!(
        s.read("to-env", None).unwrap_err().refusal(),
        Some(RefusalKind::Symlink),
        "a link never reaches a denied path"
    );
}

#[test]
fn writes_are_atomic_and_bounded() {
    let t = Tree::new();
    for s in both(t.service(SymlinkPolicy::Within)) {
        let _ = std::fs::remove_dir_all(t.work.join("d"));
        let e = s
            .write("d/e/f.txt", b"hello", WriteOptions::default())
            .unwrap();
        assert_eq!(e.kind, EntryKind::File);
        assert_eq!((e.size, e.name.as_str()), (5, "f.txt"));
        assert_eq!(e.path, t.work.join("d/e/f.txt"));
        assert_eq!(e.mode & 0o7600, 0o600, "{:o}", e.mode);
        let no_parents = WriteOptions {
            overwrite: true,
            parents: false,
            sync: false,
            expected_len: None,
            metadata: None,
        };
        assert!(matches!(
            s.write("d/x/y.txt", b"", no_parents),
            Err(FileError::NotFound(p)) if p == t.work.join("d/x")
        ));
        let keep = WriteOptions {
            overwrite: false,
            parents: true,
            sync: false,
            expected_len: None,
            metadata: None,
        };
        assert!(matches!(
            s.write("d/e/f.txt", b"other", keep),
            Err(FileError::Exists(_))
        ));
        assert_eq!(std::fs::read(t.work.join("d/e/f.txt")).unwrap(), b"hello");
        // An existing file keeps its mode.
        std::fs::set_permissions(
            t.work.join("d/e/f.txt"),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .unwrap();
        let e = s
            .write("d/e/f.txt", b"again", WriteOptions::default())
            .unwrap();
        assert_eq!(e.mode, 0o600);
        assert!(matches!(
            s.write("d/e", b"x", WriteOptions::default()),
            Err(FileError::IsDirectory(_))
        ));
        assert!(matches!(
            s.write("d/e/f.txt/g", b"x", WriteOptions::default()),
            Err(FileError::NotDirectory(_))
        ));
        assert_eq!(
            s.write(".", b"x", WriteOptions::default())
                .unwrap_err()
                .refusal(),
            Some(RefusalKind::NotAllowed)
        );

        let small = s.clone().with_max_file_bytes(4);
        assert!(matches!(
            small.write("d/big", b"12345", WriteOptions::default()),
            Err(FileError::TooLarge { limit: 4, .. })
        ));
        small
            .write("d/ok", b"1234", WriteOptions::default())
            .unwrap();
        // Dropped unfinished: nothing left.
        let mut pending = s.begin_write("d/dropped", WriteOptions::default()).unwrap();
        pending.write(b"half").unwrap();
        drop(pending);
        assert!(!t.work.join("d/dropped").exists());
        assert_eq!(
            names(&t.work.join("d")),
            ["e", "ok"],
            "no temporary file left"
        );
        assert_eq!(names(&t.work.join("d/e")), ["f.txt"]);
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_reader_never_sees_half_a_file() {
    let t = Tree::new();
    let s = t.service(SymlinkPolicy::Within);
    let a = vec![b'a'; 256 * 1024];
    let b = vec![b'b'; 256 * 1024];
    s.write("f", &a, WriteOptions::default()).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = {
        let (s, stop) = (s.clone(), stop.clone());
        let (a, b) = (a.clone(), b.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let bytes = read_all(s.read("f", None).unwrap());
                assert!(
                    bytes == a || bytes == b,
                    "a torn read of {} bytes",
                    bytes.len()
                );
                reads += 1;
            }
            reads
        })
    };
    for i in 0..40 {
        let body = if i % 2 == 0 { &b } else { &a };
        let mut pending = s.begin_write("f", WriteOptions::default()).unwrap();
        for chunk in body.chunks(4096) {
            pending.write(chunk).unwrap();
        }
        pending.commit().unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
}

#[tokio::test]
async fn write_stream_feeds_the_blocking_pool() {
    let t = Tree::new();
    let s = t.service(SymlinkPolicy::Within);
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = vec![Ok(b"ab".to_vec()), Ok(b"cd".to_vec())];
    let e = s
        .write_stream(
            "s.txt",
            futures::stream::iter(chunks),
            WriteOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(e.size, 4);
    assert_eq!(std::fs::read(t.work.join("s.txt")).unwrap(), b"abcd");

    let failing: Vec<Result<Vec<u8>, std::io::Error>> =
        vec![Ok(b"ab".to_vec()), Err(std::io::Error::other("cut"))];
    let err = s
        .write_stream(
            "s.txt",
            futures::stream::iter(failing),
            WriteOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, FileError::Body(_)), "{err}");
    assert_eq!(std::fs::read(t.work.join("s.txt")).unwrap(), b"abcd");

    let small = s.clone().with_max_file_bytes(3);
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = vec![Ok(b"ab".to_vec()), Ok(b"cd".to_vec())];
    let err = small
        .write_stream(
            "big",
            futures::stream::iter(chunks),
            WriteOptions::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, FileError::TooLarge { limit: 3, .. }), "{err}");
    assert_eq!(names(&t.work), ["ro", "s.txt"]);
}

#[test]
fn list_depth_order_and_hiding() {
    let t = Tree::new();
    t.put("work/b/c/d/e.txt", b"e");
    t.put("work/a.txt", b"a");
    t.put("work/.env", b"x");
    t.put("work/private/k", b"k");
    symlink(t.root.join("outside"), t.work.join("link")).unwrap();
    for s in both(t.service(SymlinkPolicy::Within)) {
        let paths = |depth| -> Vec<String> {
            s.list(".", depth)
                .unwrap()
                .entries
                .iter()
                .map(|e| {
                    e.path
                        .strip_prefix(&t.work)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
                .collect()
        };
        assert_eq!(paths(1), ["a.txt", "b", "link", "ro"]);
        assert_eq!(paths(2), ["a.txt", "b", "b/c", "link", "ro"]);
        assert_eq!(
            paths(10),
            ["a.txt", "b", "b/c", "b/c/d", "b/c/d/e.txt", "link", "ro"]
        );
        for depth in [0, 11] {
            assert!(matches!(
                s.list(".", depth),
                Err(FileError::InvalidArgument { param: "depth", .. })
            ));
        }
        assert!(matches!(
            s.list("a.txt", 1),
            Err(FileError::NotDirectory(_))
        ));
        assert!(matches!(s.list("nope", 1), Err(FileError::NotFound(_))));
        let listing = s.list("b", 1).unwrap();
        assert_eq!(listing.path, t.work.join("b"));
        assert!(!listing.truncated);
        assert_eq!(listing.entries[0].kind, EntryKind::Dir);
    }
}

#[test]
fn info_exists_and_entry_rendering() {
    let t = Tree::new();
    t.put("work/a.txt", b"abc");
    symlink("a.txt", t.work.join("l")).unwrap();
    let s = t.service(SymlinkPolicy::Within);
    let e = s.info("a.txt").unwrap();
    assert_eq!((e.kind, e.size), (EntryKind::File, 3));
    // The wire's form of these (key order, names) is `wire::EntryInfo`'s test.
    assert_eq!(e.kind.as_str(), "file");
    assert_eq!(e.mode_octal(), format!("0{:o}", e.mode));
    let at = e.modified_rfc3339();
    assert!(
        at.len() == 20 && at.ends_with('Z') && at.as_bytes()[10] == b'T',
        "{at}"
    );
    assert_eq!(e.symlink_target, None);
    let link = s.info("l").unwrap();
    assert_eq!(link.kind, EntryKind::Symlink);
    assert_eq!(link.symlink_target, Some("a.txt".into()));
    assert_eq!(s.info(".").unwrap().kind, EntryKind::Dir);
    assert_eq!(rfc3339(std::time::UNIX_EPOCH), "1970-01-01T00:00:00Z");

    assert!(s.exists("a.txt").unwrap());
    assert!(s.exists("l").unwrap());
    assert!(!s.exists("nope").unwrap());
    assert!(!s.exists("nope/deeper").unwrap());
    assert!(!s.exists("a.txt/deeper").unwrap());
    assert_eq!(
        s.exists("../outside").unwrap_err().refusal(),
        Some(RefusalKind::NotAllowed)
    );
    assert!(matches!(s.info("nope"), Err(FileError::NotFound(_))));
}

#[test]
fn mkdir() {
    let t = Tree::new();
    for s in both(t.service(SymlinkPolicy::Within)) {
        let _ = std::fs::remove_dir_all(t.work.join("m"));
        let e = s.mkdir("m", false).unwrap();
        assert_eq!((e.kind, e.path.clone()), (EntryKind::Dir, t.work.join("m")));
        assert!(matches!(s.mkdir("m", false), Err(FileError::Exists(_))));
        assert_eq!(s.mkdir("m", true).unwrap().kind, EntryKind::Dir);
        assert!(matches!(
            s.mkdir("m/x/y", false),
            Err(FileError::NotFound(_))
        ));
        assert_eq!(s.mkdir("m/x/y", true).unwrap().path, t.work.join("m/x/y"));
        std::fs::write(t.work.join("m/file"), b"").unwrap();
        assert!(matches!(s.mkdir("m/file", true), Err(FileError::Exists(_))));
        assert!(matches!(
            s.mkdir("m/file/z", true),
            Err(FileError::NotDirectory(_))
        ));
        assert!(matches!(s.mkdir(".", false), Err(FileError::Exists(_))));
        assert_eq!(s.mkdir(".", true).unwrap().kind, EntryKind::Dir);
    }
}

#[test]
fn rename() {
    let t = Tree::new();
    t.put("work/a.txt", b"a");
    t.put("work/b.txt", b"b");
    t.put("work/dir/inner.txt", b"i");
    t.put("work/withenv/.env", b"S");
    let s = t.service(SymlinkPolicy::Within);
    assert!(matches!(
        s.rename("a.txt", "b.txt", false),
        Err(FileError::Exists(_))
    ));
    let e = s.rename("a.txt", "c.txt", false).unwrap();
    assert_eq!(e.path, t.work.join("c.txt"));
    assert_eq!(std::fs::read(t.work.join("c.txt")).unwrap(), b"a");
    s.rename("c.txt", "b.txt", true).unwrap();
    assert_eq!(std::fs::read(t.work.join("b.txt")).unwrap(), b"a");
    assert!(!t.work.join("c.txt").exists());
    assert!(matches!(
        s.rename("nope", "x", false),
        Err(FileError::NotFound(_))
    ));
    assert!(matches!(
        s.rename("b.txt", "nodir/x", false),
        Err(FileError::NotFound(_))
    ));
    assert_eq!(
        s.rename("b.txt", "ro/b.txt", false).unwrap_err().refusal(),
        Some(RefusalKind::ReadOnly)
    );
    assert_eq!(
        s.rename("b.txt", "../outside/b.txt", false)
            .unwrap_err()
            .refusal(),
        Some(RefusalKind::NotAllowed)
    );
    assert_eq!(
        s.rename("b.txt", ".env", false).unwrap_err().refusal(),
        Some(RefusalKind::Denied)
    );
    assert_eq!(
        s.rename("withenv", "moved", false).unwrap_err().refusal(),
        Some(RefusalKind::Denied),
        "a denied file never moves with its directory"
    );
    assert_eq!(
        s.rename("dir", "private", false).unwrap_err().refusal(),
        Some(RefusalKind::Denied)
    );
    assert!(matches!(
        s.rename("dir", "dir/sub", false),
        Err(FileError::InvalidArgument { .. })
    ));
    assert_eq!(
        s.rename(".", "x", false).unwrap_err().refusal(),
        Some(RefusalKind::NotAllowed)
    );
    let e = s.rename("dir", "dir2", false).unwrap();
    assert_eq!(e.kind, EntryKind::Dir);
    assert_eq!(std::fs::read(t.work.join("dir2/inner.txt")).unwrap(), b"i");
    // A link moves as the link.
    symlink(t.root.join("outside"), t.work.join("out")).unwrap();
    let e = s.rename("out", "out2", false).unwrap();
    assert_eq!(e.kind, EntryKind::Symlink);
    assert!(t.root.join("outside").is_dir());
    std::fs::create_dir(t.work.join("full")).unwrap();
    std::fs::write(t.work.join("full/x"), b"").unwrap();
    std::fs::create_dir(t.work.join("empty")).unwrap();
    assert!(matches!(
        s.rename("empty", "full", true),
        Err(FileError::NotEmpty(_))
    ));
}

#[test]
fn delete() {
    let t = Tree::new();
    t.put("work/a.txt", b"a");
    t.put("work/d/e/f.txt", b"f");
    t.put("work/keep/.env", b"S");
    t.put("work/outer/ro-inside", b"");
    t.put("outside/precious", b"p");
    symlink(t.root.join("outside"), t.work.join("d/e/link")).unwrap();
    let s = t.service(SymlinkPolicy::Within);
    assert_eq!(s.delete("a.txt", false).unwrap(), t.work.join("a.txt"));
    assert!(!t.work.join("a.txt").exists());
    assert!(matches!(
        s.delete("a.txt", false),
        Err(FileError::NotFound(_))
    ));
    assert!(matches!(s.delete("d", false), Err(FileError::NotEmpty(_))));
    assert_eq!(s.delete("d", true).unwrap(), t.work.join("d"));
    assert!(!t.work.join("d").exists());
    assert_eq!(
        std::fs::read(t.root.join("outside/precious")).unwrap(),
        b"p",
        "a link inside is removed, never followed"
    );
    assert_eq!(
        s.delete("keep", true).unwrap_err().refusal(),
        Some(RefusalKind::Denied)
    );
    assert!(t.work.join("keep/.env").exists());
    assert_eq!(
        s.delete(".", true).unwrap_err().refusal(),
        Some(RefusalKind::NotAllowed)
    );
    assert_eq!(
        s.delete("ro", true).unwrap_err().refusal(),
        Some(RefusalKind::ReadOnly)
    );
    // A read-only directory below the one deleted.
    let nested = PathRules {
        read_only: vec![t.work.join("outer/ro-inside")],
        ..t.rules(SymlinkPolicy::Within)
    };
    let s2 = t.service_with(nested);
    assert_eq!(
        s2.delete("outer", true).unwrap_err().refusal(),
        Some(RefusalKind::ReadOnly)
    );
    assert!(t.work.join("outer/ro-inside").exists());
    std::fs::create_dir(t.work.join("empty")).unwrap();
    s.delete("empty", false).unwrap();
    // A link is deleted as the link.
    symlink(t.root.join("outside/precious"), t.work.join("l")).unwrap();
    s.delete("l", false).unwrap();
    assert!(t.root.join("outside/precious").exists());
}

#[test]
fn search_names_and_contents() {
    let t = Tree::new();
    t.put(
        "work/src/main.rs",
        b"fn main() {\n    println!(\"hello\");\n}\n",
    );
    t.put("work/src/lib.rs", b"pub fn hello() {}\r\n");
    t.put("work/notes.md", b"say hello\n");
    t.put("work/bin.dat", b"hello\0world");
    t.put("work/.env", b"hello=secret\n");
    t.put("work/private/hello.txt", b"hello\n");
    t.put("outside/hello.rs", b"hello\n");
    symlink(t.root.join("outside"), t.work.join("src/link")).unwrap();
    let s = t.service(SymlinkPolicy::Within);
    let q = |glob: Option<&str>, pattern: Option<&str>, max| {
        SearchQuery::new(glob.map(Into::into), pattern.map(Into::into), max)
    };
    let rel = |r: &SearchResult| -> Vec<(String, Option<u64>)> {
        r.matches
            .iter()
            .map(|m| {
                (
                    m.path
                        .strip_prefix(&t.work)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                    m.line,
                )
            })
            .collect()
    };
    let r = s.search(".", &q(Some("*.rs"), None, None)).unwrap();
    assert_eq!(
        rel(&r),
        [("src/lib.rs".into(), None), ("src/main.rs".into(), None)]
    );
    assert!(!r.truncated);
    let r = s.search(".", &q(None, Some("hel+o"), None)).unwrap();
    assert_eq!(
        rel(&r),
        [
            ("notes.md".into(), Some(1)),
            ("src/lib.rs".into(), Some(1)),
            ("src/main.rs".into(), Some(2)),
        ]
    );
    assert_eq!(r.matches[1].text.as_deref(), Some("pub fn hello() {}"));
    assert_eq!(
        r.matches[2].text.as_deref(),
        Some("    println!(\"hello\");")
    );
    let r = s
        .search(".", &q(Some("*.rs"), Some("hello"), Some(1)))
        .unwrap();
    assert_eq!(r.matches.len(), 1);
    assert!(r.truncated);
    let r = s.search(".", &q(Some("src/*.rs"), None, None)).unwrap();
    assert_eq!(r.matches.len(), 2);
    let r = s
        .search("src/main.rs", &q(None, Some("main"), None))
        .unwrap();
    assert_eq!(rel(&r), [("src/main.rs".into(), Some(1))]);
    let r = s.search(".", &q(Some("link"), None, None)).unwrap();
    assert_eq!(
        rel(&r),
        [("src/link".into(), None)],
        "a link's name matches"
    );
    for (query, param) in [
        (q(None, None, None), "glob"),
        (q(Some("a["), None, None), "glob"),
        (q(None, Some("("), None), "pattern"),
        (q(Some("*"), None, Some(0)), "max_results"),
        (q(Some("*"), None, Some(10_001)), "max_results"),
    ] {
        assert!(
            matches!(s.search(".", &query), Err(FileError::InvalidArgument { param: p, .. }) if p == param),
            "{query:?}"
        );
    }
    assert_eq!(
        s.search("private", &q(Some("*"), None, None))
            .unwrap_err()
            .refusal(),
        Some(RefusalKind::Denied)
    );
    let serialized =
        serde_json::to_value(s.search(".", &q(Some("notes.md"), None, None)).unwrap()).unwrap();
    assert_eq!(
        serialized,
        serde_json::json!({"matches": [{"path": t.work.join("notes.md")}], "truncated": false})
    );
}

#[test]
fn search_work_is_bounded() {
    let t = Tree::new();
    for i in 0..50 {
        t.put(&format!("work/t/{i}.txt"), b"x\n");
    }
    let s = t.service(SymlinkPolicy::Within);
    let mut q = SearchQuery::new(None, Some("x".into()), None);
    q.budget.max_entries = 10;
    let r = s.search("t", &q).unwrap();
    assert!(r.truncated);
    assert!(r.matches.len() <= 10);
    let mut q = SearchQuery::new(Some("*".into()), None, None);
    q.budget.time = std::time::Duration::ZERO;
    assert!(s.search("t", &q).unwrap().truncated);
}

#[test]
fn uploads() {
    let t = Tree::new();
    let rules = PathRules {
        upload_extensions: ExtensionRules {
            allow: Some(vec!["txt".into(), "PNG".into()]),
            deny: vec![],
        },
        ..t.rules(SymlinkPolicy::Within)
    };
    let s = t.service_with(rules);
    let e = s
        .upload("up", "a.TXT", b"x", WriteOptions::default())
        .unwrap();
    assert_eq!(e.path, t.work.join("up/a.TXT"));
    s.upload("up", "b.png", b"x", WriteOptions::default())
        .unwrap();
    for name in ["run.sh", "Makefile", ".bashrc", "a.txt.exe"] {
        assert!(
            matches!(
                s.upload("up", name, b"x", WriteOptions::default()),
                Err(FileError::ExtensionNotAllowed { .. })
            ),
            "{name}"
        );
    }
    for name in ["", ".", "..", "a/b.txt", "../x.txt"] {
        assert_eq!(
            s.upload("up", name, b"x", WriteOptions::default())
                .unwrap_err()
                .refusal(),
            Some(RefusalKind::Invalid),
            "{name:?}"
        );
    }
    assert_eq!(
        s.upload("ro", "a.txt", b"x", WriteOptions::default())
            .unwrap_err()
            .refusal(),
        Some(RefusalKind::ReadOnly)
    );
    let keep = WriteOptions {
        overwrite: false,
        parents: true,
        sync: false,
        expected_len: None,
        metadata: None,
    };
    assert!(matches!(
        s.upload("up", "a.TXT", b"y", keep),
        Err(FileError::Exists(_))
    ));

    let deny = ExtensionRules {
        allow: None,
        deny: vec!["exe".into(), ".SH".into()],
    };
    assert!(deny.admits("a.txt") && deny.admits("Makefile"));
    assert!(!deny.admits("x.EXE") && !deny.admits("run.sh"));
    assert!(ExtensionRules::default().admits("anything.at.all"));
}

#[test]
fn configuration_keys() {
    let yaml =
        "allow: [/w]\nmax_file_bytes: 1024\nupload_extensions: {allow: [txt], deny: [exe]}\n";
    let rules: PathRules = serde_saphyr::from_str(yaml).unwrap();
    let guard = PathGuard::from_section(&rules).unwrap();
    assert_eq!(guard.max_file_bytes(), 1024);
    assert_eq!(FileService::new(guard.clone(), "/w").max_file_bytes(), 1024);
    assert!(guard.upload_extensions().admits("a.txt"));
    assert!(!guard.upload_extensions().admits("a.exe"));
    let defaults = PathGuard::from_section(&PathRules::default()).unwrap();
    assert_eq!(
        defaults.max_file_bytes(),
        crate::services::paths::DEFAULT_MAX_FILE_BYTES
    );
    assert!(serde_saphyr::from_str::<PathRules>("upload_extensions: {only: [x]}\n").is_err());
    let zero: PathRules = serde_saphyr::from_str("max_file_bytes: 0\n").unwrap();
    assert!(PathGuard::from_section(&zero).is_err());
    let dotted: PathRules =
        serde_saphyr::from_str("upload_extensions: {allow: [tar.gz]}\n").unwrap();
    assert_eq!(
        PathGuard::from_section(&dotted).unwrap_err().0,
        "paths.upload_extensions.allow[0]: `tar.gz` must be one extension without a dot"
    );
}

#[test]
fn an_expected_length_reserves_the_blocks_and_a_shorter_write_gives_the_rest_back() {
    use std::os::unix::fs::MetadataExt;
    let t = Tree::new();
    let s = t.service_with(PathRules {
        max_file_bytes: Some(16 << 20),
        ..t.rules(SymlinkPolicy::Within)
    });
    let expecting = |len| WriteOptions {
        expected_len: Some(len),
        ..WriteOptions::default()
    };
    let allocated = |pending: &super::PendingWrite| {
        let meta = pending.temp_file().unwrap().metadata().unwrap();
        (meta.len(), meta.blocks() * 512)
    };

    let mut pending = s.begin_write("reserved.bin", expecting(8 << 20)).unwrap();
    let (size, reserved) = allocated(&pending);
    assert_eq!(size, 0, "the size is only ever what was written");
    assert!(reserved >= 8 << 20, "{reserved} bytes of blocks reserved");
    pending.write(b"ten bytes!").unwrap();
    let entry = pending.commit().unwrap();
    assert_eq!(entry.size, 10);
    let meta = std::fs::metadata(t.work.join("reserved.bin")).unwrap();
    assert_eq!(
        std::fs::read(t.work.join("reserved.bin")).unwrap(),
        b"ten bytes!"
    );
    assert!(
        meta.blocks() * 512 < 1 << 20,
        "the blocks past the end went back: {} bytes held",
        meta.blocks() * 512
    );

    let pending = s.begin_write("too-big.bin", expecting(17 << 20)).unwrap();
    assert_eq!(
        allocated(&pending),
        (0, 0),
        "nothing reserved past the per-file limit"
    );
}

/// A hard link is another name for a denied file's bytes: while deny rules exist a file of
/// several names is refused for reading and writing; without deny rules it is served.
#[test]
fn several_names_refused_under_deny_rules() {
    let t = Tree::new();
    t.put("work/.env", b"TOKEN=secret\n");
    std::fs::hard_link(t.work.join(".env"), t.work.join("hl_env")).unwrap();
    for s in both(t.service(SymlinkPolicy::Within)) {
        let e = s.read("hl_env", None).unwrap_err();
        assert_eq!(kind(e), Some(RefusalKind::Denied));
        let e = s
            .write("hl_env", b"x", WriteOptions::default())
            .unwrap_err();
        assert!(e.to_string().contains("several names"), "{e}");
    }
    assert_eq!(
        std::fs::read(t.work.join(".env")).unwrap(),
        b"TOKEN=secret\n"
    );
    let open = t.service_with(PathRules {
        deny: vec![],
        ..t.rules(SymlinkPolicy::Within)
    });
    assert_eq!(
        read_all(open.read("hl_env", None).unwrap()),
        b"TOKEN=secret\n"
    );
}

#[test]
fn metadata_is_kept_as_user_e2b_xattrs_and_read_back_with_the_entry() {
    let t = Tree::new();
    let pairs = std::collections::BTreeMap::from([
        ("owner".to_owned(), "me".to_owned()),
        ("empty".to_owned(), String::new()),
    ]);
    let plain_service = t.service(SymlinkPolicy::Within);
    for s in both(plain_service.clone().keeping_metadata()) {
        let options = WriteOptions {
            metadata: Some(Metadata::new(pairs.clone()).unwrap()),
            ..WriteOptions::default()
        };
        let written = s.write("m/a.txt", b"x", options).unwrap();
        assert_eq!(written.metadata, pairs);
        // Where envd keeps them, so a program inside reads them as envd's users do.
        let host = t.work.join("m/a.txt");
        let attr = rustix::fs::getxattr_query(&host, "user.e2b.owner").unwrap();
        assert_eq!(attr, 2);
        assert_eq!(s.info("m/a.txt").unwrap().metadata, pairs);
        let listed = s.list("m", 1).unwrap();
        assert_eq!(listed.entries[0].metadata, pairs);
        // A service that keeps no metadata (the server's) reads none: no extra system
        // calls on its listings.
        assert!(plain_service.info("m/a.txt").unwrap().metadata.is_empty());
        assert!(
            plain_service.list("m", 1).unwrap().entries[0]
                .metadata
                .is_empty()
        );
        // Another tool's `user.*` attribute is none of ours.
        rustix::fs::setxattr(&host, "user.other", b"v", rustix::fs::XattrFlags::empty()).unwrap();
        assert_eq!(s.info("m/a.txt").unwrap().metadata, pairs);
        // A write replaces the file whole: without metadata it has none.
        let plain = s.write("m/a.txt", b"y", WriteOptions::default()).unwrap();
        assert!(plain.metadata.is_empty());
        assert!(s.info("m/a.txt").unwrap().metadata.is_empty());
        // A directory's metadata (set by hand) shows too; the allowed directory's as well.
        rustix::fs::setxattr(
            t.work.join("m"),
            "user.e2b.d",
            b"1",
            rustix::fs::XattrFlags::empty(),
        )
        .unwrap();
        assert_eq!(s.info("m").unwrap().metadata["d"], "1");
        rustix::fs::setxattr(
            &t.work,
            "user.e2b.top",
            b"t",
            rustix::fs::XattrFlags::empty(),
        )
        .unwrap();
        assert_eq!(s.info(".").unwrap().metadata["top"], "t");
        std::fs::remove_dir_all(t.work.join("m")).unwrap();
    }
}

#[test]
fn metadata_follows_envd_s_rules() {
    let one = |k: &str, v: &str| {
        Metadata::new(std::collections::BTreeMap::from([(
            k.to_owned(),
            v.to_owned(),
        )]))
    };
    assert!(one("k", "a value, with spaces ~").is_ok());
    assert!(one("", "v").unwrap_err().contains("empty"));
    assert!(one(&"k".repeat(metadata::MAX_KEY_BYTES), "v").is_ok());
    assert!(one(&"k".repeat(metadata::MAX_KEY_BYTES + 1), "v").is_err());
    assert!(one("k", "tab\there").unwrap_err().contains("printable"));
    assert!(one("ké", "v").is_err());
    // The total counts each key with its `user.e2b.` prefix, and each value.
    assert!(one("k", &"v".repeat(4096 - 10)).is_ok());
    assert!(
        one("k", &"v".repeat(4096 - 9))
            .unwrap_err()
            .contains("4096")
    );
}
