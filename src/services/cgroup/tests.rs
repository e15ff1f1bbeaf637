//! Both backends on fake hierarchies (plain files in a tempdir: writes just land), and the
//! real machine's where it lets this process make cgroups.

use super::*;

/// The child joins `files` before its program runs, as every spawner's steps do.
pub(super) fn join_before_exec(command: &mut std::process::Command, files: &[PathBuf]) {
    crate::services::before_exec::apply_std(
        command,
        crate::services::before_exec::Steps {
            join_cgroup: Join::new(files),
            ..Default::default()
        },
    );
}
mod real;

/// A directory laid out like a cgroup v2 mount.
fn fake_mount(controllers: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("cgroup.controllers"), controllers).unwrap();
    let own = dir.path().join("user.slice/engine.scope");
    std::fs::create_dir_all(own.join(SUBTREE)).unwrap();
    std::fs::write(own.join("cgroup.controllers"), controllers).unwrap();
    std::fs::write(own.join("cgroup.subtree_control"), "").unwrap();
    std::fs::write(own.join("cgroup.procs"), "").unwrap();
    let parent = own.join(SUBTREE);
    std::fs::write(parent.join("cgroup.controllers"), controllers).unwrap();
    std::fs::write(parent.join("cgroup.subtree_control"), "").unwrap();
    std::fs::write(parent.join("cgroup.freeze"), "0").unwrap();
    dir
}

/// The engine's `/proc/self/cgroup` on a v1 machine (`cpu` co-mounted with `cpuacct`).
const V1_SELF: &str = "9:name=systemd:/\n8:pids:/\n4:memory:/process_api/f0388c\n\
                       2:cpu,cpuacct:/\n6:freezer:/\n0::/\n";

/// A directory laid out like this machine's v1 hierarchies, and its mountinfo text;
/// `broken` names hierarchies whose `svc-sandboxes` cannot take processes.
fn fake_v1(broken: &[&str]) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut mountinfo = format!(
        "31 23 0:28 / {} rw - tmpfs tmpfs rw\n",
        dir.path().display()
    );
    let hierarchies = [
        ("pids", "", "pids.max"),
        ("memory", "process_api/f0388c", "memory.limit_in_bytes"),
        ("cpu,cpuacct", "", "cpu.cfs_quota_us"),
        ("freezer", "", "freezer.state"),
        ("name=systemd", "", "tasks"),
    ];
    for (n, (controllers, own, file)) in hierarchies.into_iter().enumerate() {
        let point = dir.path().join(controllers);
        let parent = point.join(own).join(SUBTREE);
        std::fs::create_dir_all(&parent).unwrap();
        std::fs::write(parent.join(file), "").unwrap();
        if !broken.contains(&controllers) {
            std::fs::write(parent.join("cgroup.procs"), "").unwrap();
        }
        mountinfo.push_str(&format!(
            "{} 31 0:{} / {} rw,relatime shared:{n} - cgroup cgroup rw,{controllers}\n",
            32 + n,
            29 + n,
            point.display()
        ));
    }
    mountinfo.push_str("41 31 0:38 / /nowhere/unified rw - cgroup2 cgroup2 rw\n");
    (dir, mountinfo)
}

/// Empties a fake cgroup's folders (plain files stand in for the kernel's) so they can go.
fn empty(cgroup: &Cgroup) {
    for dir in &cgroup.dirs {
        for entry in std::fs::read_dir(dir).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
    }
}

#[test]
fn this_machine_is_detected_as_it_is() {
    let v2 = Path::new(MOUNT).join("cgroup.controllers").is_file();
    match detect() {
        Support::Unavailable(why) => {
            // The reason is given, never a pretence; both backends' when there is no v2.
            assert!(!why.is_empty());
            if !v2 {
                assert!(why.contains("v2") && why.contains("v1"), "{why}");
            }
        }
        Support::Available(cgroups) => {
            assert_eq!(cgroups.version(), if v2 { 2 } else { 1 }, "{cgroups:?}");
            assert!(cgroups.parent().ends_with(SUBTREE));
        }
    }
}

#[test]
fn without_a_v2_hierarchy_there_is_no_v2_cgroup_and_it_says_why() {
    let dir = tempfile::tempdir().unwrap();
    match detect_in(dir.path(), "0::/\n") {
        Support::Unavailable(why) => assert!(why.contains("cgroup v1"), "{why}"),
        other => panic!("{other:?}"),
    }
    let mount = fake_mount("cpu memory");
    match detect_in(mount.path(), "4:memory:/x\n") {
        Support::Unavailable(why) => assert!(why.contains("no cgroup v2 group"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_parent_that_cannot_be_made_is_a_reason() {
    let mount = fake_mount("cpu memory");
    // The engine's own cgroup is a file here: nothing can be made below it.
    match detect_in(mount.path(), "0::/cgroup.controllers/x\n") {
        Support::Unavailable(why) => assert!(why.contains("cannot make a cgroup"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn no_right_to_move_processes_means_no_cgroups() {
    let mount = fake_mount("cpu memory");
    let own = mount.path().join("user.slice/engine.scope");
    std::fs::remove_file(own.join("cgroup.procs")).unwrap();
    match detect_in(mount.path(), "0::/user.slice/engine.scope\n") {
        Support::Unavailable(why) => assert!(why.contains("cannot move processes"), "{why}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn limits_are_enforced_only_for_the_controllers_handed_down() {
    let mount = fake_mount("cpu memory pids io");
    let Support::Available(all) = detect_in(mount.path(), "0::/user.slice/engine.scope\n") else {
        panic!()
    };
    assert!(all.cpu() && all.memory() && all.pids() && all.freezer());
    assert_eq!(all.version(), 2);
    let mount = fake_mount("io");
    let Support::Available(none) = detect_in(mount.path(), "0::/user.slice/engine.scope\n") else {
        panic!()
    };
    assert!(!none.cpu() && !none.memory() && !none.pids(), "{none:?}");
}

#[test]
fn a_v2_cgroup_gets_its_limits_and_is_removed() {
    let mount = fake_mount("cpu memory pids");
    let Support::Available(cgroups) = detect_in(mount.path(), "0::/user.slice/engine.scope") else {
        panic!()
    };
    let limits = Limits {
        cpus: Some(2),
        memory_mb: Some(256),
        pids: Some(4096),
    };
    let cgroup = cgroups.create("sb_1", &limits).unwrap();
    assert_eq!(cgroup.path(), cgroups.parent().join("sb_1"));
    let read = |name: &str| std::fs::read_to_string(cgroup.path().join(name)).unwrap();
    assert_eq!(read("cpu.max"), "200000 100000");
    assert_eq!(read("memory.max"), (256u64 << 20).to_string());
    assert_eq!(read("pids.max"), "4096");
    assert_eq!(cgroups.open(cgroup.path()), Some(cgroup.clone()));
    assert_eq!(cgroups.open(mount.path()), None, "not one of ours");
    assert!(cgroups.create("../escape", &limits).is_err());
    assert!(cgroups.create("sb_1", &limits).is_err(), "already there");
    assert!(
        cgroup.path().is_dir(),
        "a failed create leaves the one there alone"
    );
    empty(&cgroup);
    assert!(cgroup.procs().is_empty());
    cgroup.kill().unwrap();
    cgroup.remove().unwrap();
    assert!(!cgroup.path().exists());
    cgroup.remove().unwrap();
}

#[test]
fn v1_hierarchies_are_found_from_mountinfo_and_own_paths() {
    let (dir, mountinfo) = fake_v1(&[]);
    let Support::Available(cgroups) = detect_v1_in(&mountinfo, V1_SELF) else {
        panic!()
    };
    assert_eq!(cgroups.version(), 1);
    assert!(cgroups.cpu() && cgroups.memory() && cgroups.pids() && cgroups.freezer());
    let root = dir.path();
    assert_eq!(
        cgroups.parents,
        vec![
            root.join("pids").join(SUBTREE),
            root.join("memory/process_api/f0388c").join(SUBTREE),
            root.join("cpu,cpuacct").join(SUBTREE),
            root.join("freezer").join(SUBTREE),
        ]
    );
    assert_eq!(
        cgroups.parent(),
        root.join("pids").join(SUBTREE),
        "pids is primary"
    );
}

#[test]
fn a_v1_controller_that_cannot_take_processes_is_left_out() {
    let (_dir, mountinfo) = fake_v1(&["pids", "freezer"]);
    let Support::Available(cgroups) = detect_v1_in(&mountinfo, V1_SELF) else {
        panic!()
    };
    assert!(cgroups.cpu() && cgroups.memory(), "{cgroups:?}");
    assert!(!cgroups.pids() && !cgroups.freezer(), "{cgroups:?}");
    assert!(cgroups.parent().to_string_lossy().contains("memory"));
    // None usable: every controller's reason; no cgroup mount: said so.
    let (_dir, mountinfo) = fake_v1(&["pids", "memory", "cpu,cpuacct", "freezer"]);
    match detect_v1_in(&mountinfo, V1_SELF) {
        Support::Unavailable(why) => {
            assert!(why.contains("no usable cgroup v1"), "{why}");
            for controller in ["pids:", "memory:", "cpu:", "freezer:"] {
                assert!(why.contains(controller), "{why}");
            }
            assert!(why.contains("cannot move processes"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    match detect_v1_in(
        "31 23 0:28 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
        "0::/\n",
    ) {
        Support::Unavailable(why) => assert!(why.contains("no cgroup v1 hierarchy"), "{why}"),
        other => panic!("{other:?}"),
    }
    // A controller the process is in no group of is unusable, not a wrong folder.
    let (_dir, mountinfo) = fake_v1(&[]);
    let Support::Available(cgroups) = detect_v1_in(&mountinfo, "8:pids:/\n") else {
        panic!()
    };
    assert!(cgroups.pids() && !cgroups.memory() && !cgroups.cpu() && !cgroups.freezer());
}

#[test]
fn v1_mounts_co_mounted_escaped_or_bound_below_the_root_are_understood() {
    let dir = tempfile::tempdir().unwrap();
    // `cpu,memory` in one hierarchy at a point with a space in it, mounted from the
    // hierarchy's `/docker/c1` (a container's view): one folder for both.
    let point = dir.path().join("cpu mem");
    let parent = point.join("engine").join(SUBTREE);
    std::fs::create_dir_all(&parent).unwrap();
    for file in ["cgroup.procs", "cpu.cfs_quota_us", "memory.limit_in_bytes"] {
        std::fs::write(parent.join(file), "").unwrap();
    }
    let escaped = point.display().to_string().replace(' ', "\\040");
    let mountinfo = format!("40 31 0:38 /docker/c1 {escaped} rw - cgroup cgroup rw,cpu,memory\n");
    let Support::Available(cgroups) = detect_v1_in(&mountinfo, "3:cpu,memory:/docker/c1/engine\n")
    else {
        panic!()
    };
    assert_eq!(cgroups.parents, vec![parent]);
    assert!(cgroups.cpu() && cgroups.memory() && !cgroups.pids());
    let cgroup = cgroups.create("sb_1", &Limits::default()).unwrap();
    assert_eq!(cgroup.dirs.len(), 1, "one folder for both");
    cgroup.remove().unwrap();
}

#[test]
fn a_v1_cgroup_gets_its_limits_in_each_hierarchy_and_is_rebuilt_from_its_path() {
    let (dir, mountinfo) = fake_v1(&[]);
    let Support::Available(cgroups) = detect_v1_in(&mountinfo, V1_SELF) else {
        panic!()
    };
    let limits = Limits {
        cpus: Some(2),
        memory_mb: Some(256),
        pids: Some(20),
    };
    let cgroup = cgroups.create("sb_1", &limits).unwrap();
    let root = dir.path();
    assert_eq!(cgroup.path(), root.join("pids").join(SUBTREE).join("sb_1"));
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    let sb = |h: &str, file: &str| format!("{h}/{SUBTREE}/sb_1/{file}");
    assert_eq!(read(&sb("pids", "pids.max")), "20");
    assert_eq!(
        read(&sb("memory/process_api/f0388c", "memory.limit_in_bytes")),
        (256u64 << 20).to_string()
    );
    assert_eq!(read(&sb("cpu,cpuacct", "cpu.cfs_period_us")), "100000");
    assert_eq!(read(&sb("cpu,cpuacct", "cpu.cfs_quota_us")), "200000");
    assert!(root.join(sb("freezer", "")).is_dir());
    // The freezer's file, and its answer read back.
    cgroup.freeze(true).unwrap();
    assert_eq!(read(&sb("freezer", "freezer.state")), "FROZEN");
    cgroup.freeze(false).unwrap();
    assert_eq!(read(&sb("freezer", "freezer.state")), "THAWED");

    // Adoption: the one stored path gives the whole set back.
    assert_eq!(cgroups.open(cgroup.path()), Some(cgroup.clone()));
    let memory_dir = root
        .join("memory/process_api/f0388c")
        .join(SUBTREE)
        .join("sb_1");
    assert_eq!(cgroups.open(&memory_dir), None, "not a primary folder");
    assert_eq!(cgroups.open(&cgroups.parent().join("sb_2")), None, "gone");
    // A folder that went is left out, and what it enforced with it.
    empty(&cgroup);
    std::fs::remove_dir(&memory_dir).unwrap();
    let rebuilt = cgroups.open(cgroup.path()).unwrap();
    assert_eq!(rebuilt.dirs.len(), 3);
    assert!(!rebuilt.dirs.contains(&memory_dir));
    assert_eq!(rebuilt.layout.memory, None);
    assert_eq!(
        rebuilt.dirs[rebuilt.layout.freezer.unwrap()],
        root.join(sb("freezer", ""))
    );
    assert_eq!(
        rebuilt.dirs[rebuilt.layout.cpu.unwrap()],
        root.join(sb("cpu,cpuacct", ""))
    );

    assert!(cgroups.create("sb_1", &limits).is_err(), "already there");
    cgroup.kill().unwrap();
    cgroup.remove().unwrap();
    for dir in &cgroup.dirs {
        assert!(!dir.exists(), "{}", dir.display());
    }
}

#[test]
fn a_failed_v1_create_leaves_nothing() {
    let (dir, mountinfo) = fake_v1(&[]);
    let Support::Available(cgroups) = detect_v1_in(&mountinfo, V1_SELF) else {
        panic!()
    };
    // The cpu hierarchy already has one of that name (someone else's): the folders made
    // before it go, it stays.
    let theirs = dir.path().join("cpu,cpuacct").join(SUBTREE).join("sb_1");
    std::fs::create_dir(&theirs).unwrap();
    assert!(cgroups.create("sb_1", &Limits::default()).is_err());
    assert!(!cgroups.parent().join("sb_1").exists());
    assert!(theirs.is_dir());
}

#[test]
fn without_a_freezer_freezing_fails_for_the_caller_to_use_signals() {
    let (_dir, mountinfo) = fake_v1(&["freezer"]);
    let Support::Available(cgroups) = detect_v1_in(&mountinfo, V1_SELF) else {
        panic!()
    };
    let cgroup = cgroups.create("sb_1", &Limits::default()).unwrap();
    let e = cgroup.freeze(true).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::Unsupported);
    cgroup.remove().unwrap();
}

#[test]
fn a_child_joins_every_hierarchy_before_it_runs() {
    let dir = tempfile::tempdir().unwrap();
    let layout = Layout {
        v1: true,
        cpu: None,
        memory: None,
        pids: Some(0),
        freezer: None,
    };
    let (a, b) = (dir.path().join("a b"), dir.path().join("it's"));
    for folder in [&a, &b] {
        std::fs::create_dir(folder).unwrap();
        // What a v1 cgroup folder holds from its making; written `0` by the child ("me").
        std::fs::write(folder.join("tasks"), "").unwrap();
    }
    let cgroup = Cgroup {
        dirs: vec![a.clone(), b.clone()],
        layout,
    };
    let mut command = std::process::Command::new("echo");
    command.args(["hello", "$HOME"]);
    // On v1 the child moves its one thread (`tasks`), never its group (`cgroup.procs`).
    join_before_exec(&mut command, &cgroup.join_files());
    let out = command.output().unwrap();
    assert_eq!(out.stdout, b"hello $HOME\n", "arguments pass untouched");
    for folder in [&a, &b] {
        assert_eq!(std::fs::read_to_string(folder.join("tasks")).unwrap(), "0");
    }
    // It cannot join one: nothing runs, the spawn fails.
    let missing = Cgroup {
        dirs: vec![a, dir.path().join("gone")],
        layout,
    };
    let mut command = std::process::Command::new("echo");
    command.arg("ran");
    join_before_exec(&mut command, &missing.join_files());
    let e = command.output().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound);
}
