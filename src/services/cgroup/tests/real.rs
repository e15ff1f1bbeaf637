//! On this machine's own cgroups, where it lets this process make them (root on a v1 or
//! v2 machine); elsewhere the test says why it did not run.

use super::*;
use std::process::{Command, Stdio};

/// Kills and removes the cgroup however the test ends, so none is left behind.
struct Cleanup(Cgroup);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.remove();
    }
}

/// The machine's cgroups when they can hold this test (a pids limit and a freezer).
fn real_cgroups() -> Option<Cgroups> {
    match detect() {
        Support::Available(c) if c.pids() && c.freezer() => {
            println!("cgroup v{}: {:?}", c.version(), c.parents);
            Some(c)
        }
        Support::Available(c) => {
            println!("NOT RUN: this machine's cgroups have no pids limit or no freezer: {c:?}");
            None
        }
        Support::Unavailable(why) => {
            println!("NOT RUN: this machine gives this process no cgroups: {why}");
            None
        }
    }
}

/// A cgroup name no other test run takes: the process and the clock's nanoseconds.
fn unique(prefix: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("{prefix}-{}-{nanos}", std::process::id())
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

#[test]
fn a_fork_bomb_stays_inside_its_pids_limit_and_the_group_freezes_and_dies() {
    let Some(cgroups) = real_cgroups() else {
        return;
    };
    let name = unique("test");
    let limits = Limits {
        cpus: Some(1),
        memory_mb: Some(64),
        pids: Some(20),
    };
    let cgroup = cgroups.create(&name, &limits).unwrap();
    let _cleanup = Cleanup(cgroup.clone());
    let at = |index: Option<usize>| &cgroup.dirs[index.unwrap()];
    let pids = at(cgroup.layout.pids);
    assert_eq!(read(&pids.join("pids.max")).trim(), "20");
    if cgroup.layout.v1 {
        if cgroups.memory() {
            let file = at(cgroup.layout.memory).join("memory.limit_in_bytes");
            assert_eq!(read(&file).trim(), (64u64 << 20).to_string());
            // Where swap is accounted, the limit covers it too.
            let memsw = file.with_file_name("memory.memsw.limit_in_bytes");
            if memsw.exists() {
                assert_eq!(read(&memsw).trim(), (64u64 << 20).to_string());
            }
        }
        if cgroups.cpu() {
            let dir = at(cgroup.layout.cpu);
            assert_eq!(read(&dir.join("cpu.cfs_quota_us")).trim(), "100000");
            assert_eq!(read(&dir.join("cpu.cfs_period_us")).trim(), "100000");
        }
    }

    // 50 background sleeps asked for, 20 processes allowed: the fork past it fails.
    let scratch = tempfile::tempdir().unwrap();
    let stderr = scratch.path().join("stderr");
    let bomb = "for i in $(seq 50); do sleep 5 & done; wait";
    let mut command = Command::new("/bin/sh");
    command.args(["-c", bomb]);
    join_before_exec(&mut command, &cgroup.join_files());
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let current = || {
        read(&pids.join("pids.current"))
            .trim()
            .parse::<u32>()
            .unwrap()
    };
    let refused = || {
        let text = read(&stderr).to_lowercase();
        text.contains("fork") || text.contains("resource temporarily unavailable")
    };
    let deadline = Instant::now() + Duration::from_secs(4);
    let mut most = 0;
    while !refused() && Instant::now() < deadline {
        most = most.max(current());
        std::thread::sleep(Duration::from_millis(5));
    }
    most = most.max(current());
    println!("most processes seen: {most}; stderr: {:?}", read(&stderr));
    assert!(refused(), "no fork failed: {:?}", read(&stderr));
    assert!(most <= 20, "{most} processes in a group limited to 20");
    let inside = cgroup.procs();
    assert!(
        (2..=20).contains(&inside.len()),
        "the sleeps are inside, within the limit: {inside:?}"
    );

    // Frozen and thawed as one, by the kernel's word.
    cgroup.freeze(true).unwrap();
    let freezer = at(cgroup.layout.freezer);
    if cgroup.layout.v1 {
        assert_eq!(read(&freezer.join("freezer.state")).trim(), "FROZEN");
    } else {
        assert!(read(&freezer.join("cgroup.events")).contains("frozen 1"));
    }
    let frozen = cgroup.procs();
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(
        cgroup.procs(),
        frozen,
        "nothing starts or ends while frozen"
    );
    cgroup.freeze(false).unwrap();

    // Killed to the last, even with processes that were frozen a moment ago.
    cgroup.freeze(true).unwrap();
    cgroup.kill().unwrap();
    assert!(cgroup.procs().is_empty());
    child.wait().unwrap();
    cgroup.remove().unwrap();
    for dir in &cgroup.dirs {
        assert!(!dir.exists(), "{} left behind", dir.display());
    }
}

/// The engine takes `cpu` up to 65,536 cores and `max_processes` up to Linux's
/// `PID_MAX_LIMIT`, plus the machine's own processes: the kernel must take every limit
/// up to there (a `pids.max` past its ceiling once failed the create with `EINVAL`).
#[test]
fn the_highest_limits_the_engine_takes_are_taken_by_the_kernel() {
    let Some(cgroups) = real_cgroups() else {
        return;
    };
    let name = unique("test-top");
    let limits = Limits {
        cpus: Some(65_536),
        memory_mb: Some(u64::MAX),
        pids: Some(PID_MAX_LIMIT + 8),
    };
    let cgroup = cgroups.create(&name, &limits).unwrap();
    let _cleanup = Cleanup(cgroup.clone());
    let pids = &cgroup.dirs[cgroup.layout.pids.unwrap()];
    assert_eq!(read(&pids.join("pids.max")).trim(), "max");
}
