//! Property tests of the guard on the filesystem: generated paths (`..`, `//`, `./`,
//! percent-encoded names taken literally, NUL, long names, links inside and outside the
//! allowed directory) under every operation, and links swapped in by a racing thread.
//! Every success lies under the allowed directory and outside every denied path, and no
//! denied, read-only or outside path is ever read, listed or changed (the filesystem is
//! compared after every case).

use super::*;
use crate::services::paths::{PathRules, SymlinkPolicy};
use proptest::prelude::*;
use proptest::test_runner::Config;
use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::sync::atomic::{AtomicBool, Ordering};

const OUTSIDE: &str = "OUTSIDE";
const DENIED: &str = "DENIED";

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    work: PathBuf,
    service: FileService,
}

/// `root/work` allowed, `work/ro` read-only, `.env` and `private` denied, `root/outside`
/// beside it; links to each.
fn fixture(policy: SymlinkPolicy, walk_only: bool) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    let work = root.join("work");
    let put = |rel: &str, text: &str| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    put("work/a.txt", "inside a");
    put("work/dir/b.txt", "inside b");
    put("work/ro/r.txt", "read-only r");
    put("work/.env", &format!("{DENIED} env"));
    put("work/private/k", &format!("{DENIED} key"));
    put("work/dir/.env", &format!("{DENIED} nested env"));
    put("outside/o.txt", &format!("{OUTSIDE} o"));
    put("outside/sub/p.txt", &format!("{OUTSIDE} p"));
    symlink("dir", work.join("in-link")).unwrap();
    symlink("../outside", work.join("out-link")).unwrap();
    symlink(root.join("outside/o.txt"), work.join("out-file")).unwrap();
    symlink(".env", work.join("env-link")).unwrap();
    symlink("ro", work.join("ro-link")).unwrap();
    symlink("private", work.join("dir/private-link")).unwrap();
    let rules = PathRules {
        allow: Some(vec![work.clone()]),
        read_only: vec![work.join("ro")],
        deny: vec!["**/.env".into(), "**/private".into()],
        symlinks: Some(policy),
        ..PathRules::default()
    };
    let mut service = FileService::new(PathGuard::from_section(&rules).unwrap(), &work);
    if walk_only {
        service = service.walk_only();
    }
    Fixture {
        _tmp: tmp,
        root,
        work,
        service,
    }
}

/// Everything under `dir` (never through links): kind and content or link target.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            let value = if meta.is_symlink() {
                format!("link {}", std::fs::read_link(&p).unwrap().display())
            } else if meta.is_dir() {
                pending.push(p.clone());
                "dir".into()
            } else {
                format!(
                    "file {}",
                    String::from_utf8_lossy(&std::fs::read(&p).unwrap())
                )
            };
            out.insert(p, value);
        }
    }
    out
}

/// What must never change: outside, read-only and denied paths.
fn protected(f: &Fixture) -> Vec<BTreeMap<PathBuf, String>> {
    vec![
        snapshot(&f.root.join("outside")),
        snapshot(&f.work.join("ro")),
        snapshot(&f.work.join("private")),
        ["work/.env", "work/dir/.env"]
            .iter()
            .map(|rel| {
                let p = f.root.join(rel);
                let text = std::fs::read_to_string(&p).unwrap_or_else(|_| "gone".into());
                (p, text)
            })
            .collect(),
        // Nothing appears beside the allowed directory.
        std::fs::read_dir(&f.root)
            .unwrap()
            .map(|e| (e.unwrap().path(), String::new()))
            .collect(),
    ]
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "a.txt", "dir", "b.txt", "ro", "r.txt", ".env", "private", "k", "in-link",
            "out-link", "out-file", "env-link", "ro-link", "private-link", "outside", "o.txt",
            "sub", "work", "new", "..", ".", "", "%2e%2e", "..%2f..", "%2F", "%00", "...",
        ])
        .prop_map(String::from),
        1 => "[a-z.%]{1,8}",
        1 => Just("a\0b".to_string()),
        1 => Just("n".repeat(300)),
    ]
}

/// A raw path: absolute from the fixture's root (to reach `outside`), or relative to
/// `work` (the base), from 1 to 6 segments joined by `/`.
#[derive(Debug, Clone)]
struct RawPath {
    absolute: bool,
    segments: Vec<String>,
}

impl RawPath {
    fn render(&self, f: &Fixture) -> String {
        let joined = self.segments.join("/");
        if self.absolute {
            format!("{}/{joined}", f.root.display())
        } else {
            joined
        }
    }
}

fn raw_path() -> impl Strategy<Value = RawPath> {
    (any::<bool>(), prop::collection::vec(segment(), 1..6))
        .prop_map(|(absolute, segments)| RawPath { absolute, segments })
}

#[derive(Debug, Clone)]
enum Call {
    Read(RawPath, Option<(u64, Option<u64>)>),
    List(RawPath, u32),
    Info(RawPath),
    Exists(RawPath),
    Decide(RawPath, bool),
    Write(RawPath, bool, bool),
    Mkdir(RawPath, bool),
    Delete(RawPath, bool),
    Move(RawPath, RawPath, bool),
    Search(RawPath, bool),
    Upload(RawPath, String),
}

fn call() -> impl Strategy<Value = Call> {
    let range = prop::option::of((0u64..20, prop::option::of(0u64..20)));
    prop_oneof![
        (raw_path(), range).prop_map(|(p, r)| Call::Read(p, r)),
        (raw_path(), 1u32..4).prop_map(|(p, d)| Call::List(p, d)),
        raw_path().prop_map(Call::Info),
        raw_path().prop_map(Call::Exists),
        (raw_path(), any::<bool>()).prop_map(|(p, w)| Call::Decide(p, w)),
        (raw_path(), any::<bool>(), any::<bool>()).prop_map(|(p, o, c)| Call::Write(p, o, c)),
        (raw_path(), any::<bool>()).prop_map(|(p, c)| Call::Mkdir(p, c)),
        (raw_path(), any::<bool>()).prop_map(|(p, r)| Call::Delete(p, r)),
        (raw_path(), raw_path(), any::<bool>()).prop_map(|(a, b, o)| Call::Move(a, b, o)),
        (raw_path(), any::<bool>()).prop_map(|(p, c)| Call::Search(p, c)),
        (raw_path(), segment()).prop_map(|(p, n)| Call::Upload(p, n)),
    ]
}

/// A success's path: under the allowed directory and not denied (`strict`: not read-only).
fn assert_safe(f: &Fixture, path: &Path, strict: bool, what: &Call) {
    let guard = f.service.guard();
    assert!(
        path.starts_with(&f.work),
        "{what:?} succeeded on {}",
        path.display()
    );
    assert!(
        !guard.is_denied(path),
        "{what:?} touched the denied {}",
        path.display()
    );
    if strict {
        assert!(
            !guard.is_read_only(path, Op::Write),
            "{what:?} changed the read-only {}",
            path.display()
        );
    }
}

fn assert_clean_text(bytes: &[u8], what: &Call) {
    let text = String::from_utf8_lossy(bytes);
    assert!(
        !text.contains(OUTSIDE) && !text.contains(DENIED),
        "{what:?} read {text:?}"
    );
}

fn run(f: &Fixture, call: &Call) {
    let s = &f.service;
    match call {
        Call::Read(p, range) => {
            if let Ok(r) = s.read(&p.render(f), range.map(ByteRange::from)) {
                assert_safe(f, &r.path, false, call);
                let mut bytes = Vec::new();
                let len = r.len;
                r.file.take(len).read_to_end(&mut bytes).unwrap();
                assert_clean_text(&bytes, call);
            }
        }
        Call::List(p, depth) => {
            if let Ok(listing) = s.list(&p.render(f), *depth) {
                assert_safe(f, &listing.path, false, call);
                for e in &listing.entries {
                    assert_safe(f, &e.path, false, call);
                }
            }
        }
        Call::Info(p) => {
            if let Ok(e) = s.info(&p.render(f)) {
                assert_safe(f, &e.path, false, call);
            }
        }
        Call::Exists(p) => {
            let raw = p.render(f);
            if let Ok(true) = s.exists(&raw) {
                let decided = s.decide(&raw, Op::Read);
                if let Ok(d) = decided {
                    assert_safe(f, &d.path, false, call);
                }
            }
        }
        Call::Decide(p, write) => {
            let op = if *write { Op::Write } else { Op::Read };
            if let Ok(d) = s.decide(&p.render(f), op) {
                assert_safe(f, &d.path, *write, call);
            }
        }
        Call::Write(p, overwrite, parents) => {
            let options = WriteOptions {
                overwrite: *overwrite,
                parents: *parents,
                sync: false,
                expected_len: None,
                metadata: None,
            };
            if let Ok(e) = s.write(&p.render(f), b"written", options) {
                assert_safe(f, &e.path, true, call);
            }
        }
        Call::Mkdir(p, parents) => {
            if let Ok(e) = s.mkdir(&p.render(f), *parents) {
                assert_safe(f, &e.path, true, call);
            }
        }
        Call::Delete(p, recursive) => {
            if let Ok(path) = s.delete(&p.render(f), *recursive) {
                assert_safe(f, &path, true, call);
            }
        }
        Call::Move(a, b, overwrite) => {
            let from = s.lexical(&a.render(f));
            if let Ok(e) = s.rename(&a.render(f), &b.render(f), *overwrite) {
                assert_safe(f, &e.path, true, call);
                assert_safe(f, &from.unwrap(), true, call);
            }
        }
        Call::Search(p, content) => {
            let query = if *content {
                SearchQuery::new(None, Some(".".into()), None)
            } else {
                SearchQuery::new(Some("*".into()), None, None)
            };
            if let Ok(r) = s.search(&p.render(f), &query) {
                for m in &r.matches {
                    assert_safe(f, &m.path, false, call);
                    assert_clean_text(m.text.as_deref().unwrap_or("").as_bytes(), call);
                }
            }
        }
        Call::Upload(p, name) => {
            if let Ok(e) = s.upload(&p.render(f), name, b"uploaded", WriteOptions::default()) {
                assert_safe(f, &e.path, true, call);
            }
        }
    }
}

fn policy() -> impl Strategy<Value = SymlinkPolicy> {
    prop::sample::select(vec![SymlinkPolicy::Within, SymlinkPolicy::Deny])
}

fn config(cases: u32) -> Config {
    Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn every_success_stays_inside_and_nothing_protected_changes(
        policy in policy(),
        walk_only in any::<bool>(),
        calls in prop::collection::vec(call(), 1..8),
    ) {
        let f = fixture(policy, walk_only);
        let before = protected(&f);
        for call in &calls {
            run(&f, call);
        }
        prop_assert_eq!(protected(&f), before);
    }

    #[test]
    fn lexical_paths_are_normalized_and_never_decoded(p in raw_path()) {
        let f = fixture(SymlinkPolicy::Within, false);
        let raw = p.render(&f);
        match f.service.lexical(&raw) {
            Ok(path) => {
                prop_assert!(path.is_absolute());
                prop_assert!(path.components().all(|c| matches!(
                    c,
                    std::path::Component::RootDir | std::path::Component::Normal(_)
                )));
                // Percent-encoded segments stay as written.
                for s in p.segments.iter().filter(|s| s.contains('%')) {
                    if !s.contains('/') && !p.segments.iter().any(|x| x == "..") {
                        prop_assert!(path.iter().any(|c| c == s.as_str()));
                    }
                }
            }
            Err(e) => {
                prop_assert_eq!(e.refusal(), Some(RefusalKind::Invalid));
                prop_assert!(raw.is_empty() || raw.contains('\0') || raw.len() > crate::services::paths::MAX_PATH_BYTES);
            }
        }
    }
}

/// A thread swaps `work/swap` between a directory inside and a link to `outside` (and
/// `work/swapfile` between a file and a link to an outside file) by atomic exchanges,
/// while generated calls run on paths through them.
fn race(policy: SymlinkPolicy, walk_only: bool, calls: &[Call]) {
    use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
    let f = fixture(policy, walk_only);
    std::fs::create_dir(f.work.join("swap")).unwrap();
    std::fs::write(f.work.join("swap/f.txt"), "inside swap").unwrap();
    std::fs::write(f.work.join("swapfile"), "inside swapfile").unwrap();
    symlink(f.root.join("outside"), f.work.join("swap-other")).unwrap();
    symlink(f.root.join("outside/o.txt"), f.work.join("swapfile-other")).unwrap();
    let before = protected(&f);
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let racer = {
        let (stop, swaps, work) = (stop.clone(), swaps.clone(), f.work.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for (a, b) in [("swap", "swap-other"), ("swapfile", "swapfile-other")] {
                    let _ = renameat2(
                        AT_FDCWD,
                        &work.join(a),
                        AT_FDCWD,
                        &work.join(b),
                        RenameFlags::RENAME_EXCHANGE,
                    );
                }
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    // The calls run again and again while the links move under them.
    let mut rounds = 0;
    while rounds < 20 || (swaps.load(Ordering::Relaxed) < 200 && rounds < 5000) {
        for call in calls {
            run(&f, call);
        }
        rounds += 1;
    }
    stop.store(true, Ordering::Relaxed);
    racer.join().unwrap();
    assert!(swaps.load(Ordering::Relaxed) > 0);
    assert_eq!(protected(&f), before);
}

fn swap_path() -> impl Strategy<Value = RawPath> {
    let first = prop::sample::select(vec!["swap", "swapfile", "swap-other", "swapfile-other"]);
    let rest = prop::sample::select(vec!["f.txt", "o.txt", "sub", "p.txt", "new", ".", ".."]);
    (first, prop::collection::vec(rest, 0..3), any::<bool>()).prop_map(|(first, rest, abs)| {
        let mut segments = if abs {
            vec!["work".to_string()]
        } else {
            vec![]
        };
        segments.push(first.into());
        segments.extend(rest.into_iter().map(String::from));
        RawPath {
            absolute: abs,
            segments,
        }
    })
}

fn swap_call() -> impl Strategy<Value = Call> {
    prop_oneof![
        swap_path().prop_map(|p| Call::Read(p, None)),
        swap_path().prop_map(|p| Call::List(p, 2)),
        swap_path().prop_map(|p| Call::Write(p, true, false)),
        swap_path().prop_map(|p| Call::Write(p, true, true)),
        swap_path().prop_map(|p| Call::Mkdir(p, true)),
        swap_path().prop_map(|p| Call::Delete(p, true)),
        swap_path().prop_map(|p| Call::Search(p, true)),
        swap_path().prop_map(Call::Info),
        (swap_path(), swap_path()).prop_map(|(a, b)| Call::Move(a, b, true)),
    ]
}

proptest! {
    #![proptest_config(config(24))]

    #[test]
    fn a_link_swapped_in_by_a_racing_thread_never_escapes(
        policy in policy(),
        walk_only in any::<bool>(),
        calls in prop::collection::vec(swap_call(), 1..6),
    ) {
        race(policy, walk_only, &calls);
    }
}
