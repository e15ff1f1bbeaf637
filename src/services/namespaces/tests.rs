use super::*;
use std::time::Duration;

#[test]
fn paths_inside_map_to_the_machine_s_own_folders_only() {
    let view = View::new("/state/sb_1/root".into(), "/state/sb_1/tmp".into());
    let host = |raw: &str| view.to_host(raw).map_err(|e| e.path);
    assert_eq!(host("a.txt"), Ok("/state/sb_1/root/a.txt".into()));
    assert_eq!(host("/home/user"), Ok("/state/sb_1/root".into()));
    assert_eq!(host("/tmp/x/../y"), Ok("/state/sb_1/tmp/y".into()));
    assert_eq!(host("../../etc/passwd"), Err("/etc/passwd".into()));
    assert_eq!(host("/home/user/../../../state"), Err("/state".into()));
    assert_eq!(host("/home/username"), Err("/home/username".into()));
    assert_eq!(host("/usr/bin/ls"), Err("/usr/bin/ls".into()));
    assert_eq!(
        view.to_inside(Path::new("/state/sb_1/root/d/a")),
        Some("/home/user/d/a".into())
    );
    assert_eq!(view.to_inside(Path::new("/state/sb_1/rootx")), None);
    assert_eq!(
        view.redact("cannot open `/state/sb_1/tmp/q`"),
        "cannot open `/tmp/q`"
    );
}

#[test]
fn a_root_engine_maps_nobody_to_host_root() {
    let ids = Ids::for_engine(0);
    assert_eq!(ids.host(Identity::Root), Some(ROOT_HOST_ID));
    assert_eq!(ids.host(Identity::User), Some(USER_HOST_ID));
    let ids = Ids::for_engine(1234);
    assert_eq!(ids.host(Identity::Root), None);
    assert_eq!(ids.host(Identity::User), Some(1234));
    assert_eq!(Identity::parse("user"), Some(Identity::User));
    assert_eq!(Identity::parse("admin"), None);
}

#[test]
fn a_file_s_owner_is_named_as_the_machine_names_it() {
    let root_engine = Ids::for_engine(0);
    assert_eq!(root_engine.user_name(USER_HOST_ID), "user");
    assert_eq!(root_engine.user_name(ROOT_HOST_ID), "root");
    // Host root is no one inside: the kernel shows it as the overflow id.
    assert_eq!(root_engine.user_name(0), "nobody");
    assert_eq!(root_engine.group_name(USER_HOST_ID, 0), "user");
    assert_eq!(root_engine.group_name(ROOT_HOST_ID, 0), "root");
    assert_eq!(root_engine.group_name(0, 0), "nogroup");
    // An ordinary engine maps only itself: its uid and its gid are `user`.
    let engine = Ids::for_engine(1234);
    assert_eq!(engine.user_name(1234), "user");
    assert_eq!(engine.user_name(0), "nobody");
    assert_eq!(engine.group_name(555, 555), "user");
    assert_eq!(engine.group_name(1234, 555), "nogroup");
}

#[test]
fn the_generated_etc_has_the_user_and_no_secret() {
    let files = etc::generated("sb_9");
    let passwd = &files[0].1;
    assert!(passwd.contains("user:x:1000:1000:user:/home/user:"));
    assert_eq!(files[2].1, "sb_9\n");
    for banned in ["shadow", "gshadow", "sudoers", "ssh", "npmrc", "pip.conf"] {
        assert!(
            etc::FROM_HOST.iter().all(|p| !p.contains(banned)),
            "{banned} is shown"
        );
    }
}

/// A folder bwrap may reach (a root engine's is in the machines' root), removed at the
/// end with whatever machine a failed test left.
struct Scratch(std::path::PathBuf, Option<Machine>);

impl Scratch {
    fn new(tools: &Tools) -> Scratch {
        let name = format!("test-{}", uuid::Uuid::new_v4().simple());
        let path = match tools.ids.root {
            Some(_) => {
                let path = machines_root().unwrap().join(name);
                machine_folder(&path).unwrap();
                path
            }
            None => {
                let path = std::env::temp_dir().join(name);
                std::fs::create_dir(&path).unwrap();
                path
            }
        };
        Scratch(path, None)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if let Some(machine) = &self.1 {
            machine.end();
        }
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A machine in a scratch folder, or why this machine makes none (said, not hidden).
async fn machine() -> Option<(Arc<Tools>, Machine, Scratch)> {
    let tools = match support().await {
        Support::Available(tools) => tools.clone(),
        Support::Unavailable(why) => {
            eprintln!("no namespaces on this machine, not tried: {why}");
            return None;
        }
    };
    let dir = Scratch::new(&tools);
    for sub in ["home", "tmp"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    let plan = Plan {
        hostname: "sb_test",
        home: &dir.path().join("home"),
        tmp: &dir.path().join("tmp"),
        etc: &dir.path().join("etc"),
        network: Network::Loopback,
        join_cgroup: &[],
    };
    let machine = start(&tools, &plan).await.unwrap();
    let mut dir = dir;
    dir.1 = Some(machine.clone());
    Some((tools, machine, dir))
}

async fn run(tools: &Tools, machine: &Machine, who: Identity, script: &str) -> (i32, String) {
    let (program, args) = machine.enter(
        tools,
        who,
        HOME,
        "/bin/sh".into(),
        vec!["-c".into(), script.into()],
    );
    let out = tokio::process::Command::new(program)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .await
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

#[tokio::test]
async fn a_machine_sees_only_itself_and_ends_whole() {
    let Some((tools, machine, dir)) = machine().await else {
        return;
    };
    assert!(machine.alive());
    let (code, out) = run(
        &tools,
        &machine,
        Identity::User,
        "id -u; hostname; pwd; ls /; cat /etc/passwd; ls /home; sleep 300 </dev/null >/dev/null 2>&1 & echo started",
    )
    .await;
    assert_eq!(code, 0, "{out}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(&lines[..3], ["1000", "sb_test", "/home/user"], "{out}");
    assert!(!out.contains("svc"), "a host path shows: {out}");
    assert!(
        !out.contains("root:x:0:0:root:/root:/bin/bash\ndaemon"),
        "{out}"
    );
    // The background process is seen by the next command, and nothing of the host.
    let (_, ps) = run(
        &tools,
        &machine,
        Identity::User,
        "ls /proc | grep -c '^[0-9]'",
    )
    .await;
    let count: u32 = ps.trim().parse().unwrap_or(999);
    assert!(count <= 8, "the machine sees {count} processes");
    let (_, sleeping) = run(
        &tools,
        &machine,
        Identity::User,
        "cat /proc/*/cmdline | tr '\\0' ' '",
    )
    .await;
    assert!(sleeping.contains("sleep 300"), "{sleeping}");
    // The home is the user's; the system is not.
    let (code, out) = run(
        &tools,
        &machine,
        Identity::User,
        "echo hi > /home/user/f && touch /usr/x",
    )
    .await;
    assert!(code != 0 && out.contains("Read-only"), "{out}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("home/f")).unwrap(),
        "hi\n"
    );
    // Root inside is no root of the host: it cannot change the host's devices.
    if tools.ids.root.is_some() {
        let (code, out) = run(
            &tools,
            &machine,
            Identity::Root,
            "id -u; chmod 600 /dev/null",
        )
        .await;
        assert_ne!(code, 0, "{out}");
        assert!(out.starts_with("0\n"), "{out}");
    }
    // Its own network: only a loopback.
    let (_, links) = run(&tools, &machine, Identity::User, "cat /proc/net/dev").await;
    assert!(!links.contains("eth0"), "{links}");
    assert!(machine.members().len() >= 3, "{:?}", machine.members());
    machine.end();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !machine.members().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        machine.members().is_empty(),
        "left: {:?}",
        machine.members()
    );
    assert!(!machine.alive());
}

/// A dead machine whose namespace number the kernel gave to a new machine (it does, often at
/// once) is not alive and has no members: else its end would kill the new machine.
#[tokio::test]
async fn a_dead_machine_owns_nothing_of_the_machine_with_its_number() {
    let Some((_, first, _first_dir)) = machine().await else {
        return;
    };
    let Some((_, second, _second_dir)) = machine().await else {
        return;
    };
    first.end();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while crate::services::proc_scan::stat(first.pid).is_some_and(|s| !s.is_dead())
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // What the first machine's record reads like once its number is the second's.
    let dead = Machine {
        pidns: second.pidns,
        ..first.clone()
    };
    assert!(!dead.alive());
    assert_eq!(dead.members(), Vec::<u32>::new());
    assert_eq!(dead.while_alive(|pidns| pidns), None);
    assert!(second.alive());
    assert!(second.members().len() >= 2, "{:?}", second.members());
    assert_eq!(second.while_alive(|pidns| pidns), Some(second.pidns));
    second.end();
}

/// A root engine enters a machine itself: the child is born in the machine's pid namespace
/// (its own pid and group there, as `process_group(0)` makes it), as `user` in its home,
/// with the machine's name; an engine that is not root finds by the trial that it cannot.
#[tokio::test]
async fn a_child_enters_the_machine_directly_where_the_engine_may() {
    let Some((_tools, machine, _dir)) = machine().await else {
        return;
    };
    let direct = tokio::task::spawn_blocking({
        let machine = machine.clone();
        move || entry::trial(&machine)
    })
    .await
    .unwrap();
    assert_eq!(
        direct,
        nix::unistd::geteuid().is_root(),
        "the trial says who may"
    );
    if !direct {
        eprintln!("not root: entering directly is not tried");
        return;
    }
    let (program, args, entry) = machine.way_in(
        &Tools {
            direct_entry: true,
            ..find_tools().unwrap()
        },
        Identity::User,
        HOME,
        "/bin/sh".into(),
        vec![
            "-c".into(),
            "cut -d' ' -f1,5 /proc/$$/stat; id -u; pwd; hostname".into(),
        ],
    );
    assert_eq!(program, "/bin/sh", "no nsenter in between");
    let way = super::entry::Way::open(Some(&entry.expect("a direct entry"))).unwrap();
    let mut command = std::process::Command::new(program);
    command
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .process_group(0);
    crate::services::before_exec::apply_std(
        &mut command,
        crate::services::before_exec::Steps {
            enter: way.in_child(),
            ..Default::default()
        },
    );
    use std::os::unix::process::CommandExt as _;
    let out = way.spawn(|| command.output()).unwrap().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        4,
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ids: Vec<&str> = lines[0].split(' ').collect();
    assert!(
        ids[0] != "0" && ids[0] == ids[1] && ids[0].parse::<u32>().unwrap() < 100,
        "its own pid and group, numbered inside: {ids:?}"
    );
    assert_eq!(&lines[1..], ["1000", "/home/user", "sb_test"], "{text}");
}
