//! cgroup v2 subtrees for sandboxes: where the machine allows one, every process of a
//! sandbox runs in a cgroup of its own, which enforces `cpu` (`cpu.max`) and `memory`
//! (`memory.max`), freezes the whole sandbox at once (`cgroup.freeze`), lists its
//! processes (`cgroup.procs`) and kills them all (`cgroup.kill`).
//!
//! Where the machine does not allow one, [`detect`] says why, and the caller falls back to
//! process groups and signals and reports the limits as not enforced. That is the case on
//! machines that mount only cgroup v1 controllers (no `/sys/fs/cgroup/cgroup.controllers`),
//! and where this process may not write to its own cgroup.
//!
//! The layout: `<own cgroup>/svc-sandboxes/<name>`. Controllers can only be handed down
//! from a cgroup that holds no process of its own (the kernel's "no internal processes"
//! rule), and the engine lives in its own cgroup: when handing `cpu` and `memory` down
//! fails for that reason, sandboxes still get cgroups (for freezing, listing and killing),
//! and the two limits are reported as not enforced.

use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Where the unified hierarchy is mounted.
pub const MOUNT: &str = "/sys/fs/cgroup";
/// The folder under this process's cgroup that holds the sandboxes' cgroups.
pub const SUBTREE: &str = "svc-sandboxes";
/// `cpu.max`'s period, in microseconds.
const CPU_PERIOD_US: u64 = 100_000;
/// How long [`Cgroup::freeze`] waits for the kernel to report the group frozen, and
/// [`Cgroup::kill`] for it to be empty.
const SETTLE: Duration = Duration::from_secs(2);

/// What this machine offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    Available(Cgroups),
    /// Why there are no cgroups for sandboxes here.
    Unavailable(String),
}

impl Support {
    /// The cgroups, when the machine offers them.
    pub fn cgroups(&self) -> Option<&Cgroups> {
        match self {
            Support::Available(cgroups) => Some(cgroups),
            Support::Unavailable(_) => None,
        }
    }
}

/// Where sandboxes' cgroups are made, and which limits they can enforce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroups {
    parent: PathBuf,
    cpu: bool,
    memory: bool,
}

/// The limits of one cgroup.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Whole CPUs.
    pub cpus: Option<u32>,
    /// Megabytes.
    pub memory_mb: Option<u64>,
}

/// One sandbox's cgroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cgroup {
    path: PathBuf,
}

/// This machine's support, from the real mount and this process's cgroup.
pub fn detect() -> Support {
    let own = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    detect_in(Path::new(MOUNT), &own)
}

/// The support under `mount` for a process whose `/proc/self/cgroup` reads `self_cgroup`.
pub fn detect_in(mount: &Path, self_cgroup: &str) -> Support {
    if !mount.join("cgroup.controllers").is_file() {
        return Support::Unavailable(format!(
            "no cgroup v2 hierarchy at {} (this machine mounts cgroup v1 controllers)",
            mount.display()
        ));
    }
    // The unified hierarchy's line is `0::<path>`.
    let Some(relative) = self_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(|p| p.trim().trim_start_matches('/'))
    else {
        return Support::Unavailable("this process is in no cgroup v2 group".into());
    };
    let own = mount.join(relative);
    let parent = own.join(SUBTREE);
    if let Err(e) = std::fs::create_dir(&parent)
        && e.kind() != io::ErrorKind::AlreadyExists
    {
        return Support::Unavailable(format!("cannot make a cgroup under {}: {e}", own.display()));
    }
    // A process moves from the engine's cgroup into a sandbox's only if it may write the
    // common ancestor's `cgroup.procs` (the kernel's delegation rule): opened for writing
    // here (nothing written), so a machine that would refuse every move gives no cgroups
    // rather than commands that fail to start.
    if let Err(e) = std::fs::OpenOptions::new()
        .write(true)
        .open(own.join("cgroup.procs"))
    {
        return Support::Unavailable(format!(
            "cannot move processes out of {}: {e}",
            own.display()
        ));
    }
    // Hand `cpu` and `memory` down to the sandboxes; each may fail on its own (not offered
    // by the parent, or the engine's cgroup holds processes), which only means that limit
    // is not enforced.
    let enabled = |controller: &str| {
        available(&own, controller)
            && write(
                &own.join("cgroup.subtree_control"),
                &format!("+{controller}"),
            )
            .is_ok()
            && write(
                &parent.join("cgroup.subtree_control"),
                &format!("+{controller}"),
            )
            .is_ok()
            && available(&parent, controller)
    };
    let cpu = enabled("cpu");
    let memory = enabled("memory");
    Support::Available(Cgroups {
        parent,
        cpu,
        memory,
    })
}

/// Whether `controller` is listed in `dir/cgroup.controllers`.
fn available(dir: &Path, controller: &str) -> bool {
    std::fs::read_to_string(dir.join("cgroup.controllers"))
        .is_ok_and(|text| text.split_whitespace().any(|c| c == controller))
}

fn write(path: &Path, value: &str) -> io::Result<()> {
    std::fs::write(path, value)
}

impl Cgroups {
    /// `cpu.max` is enforced in the cgroups made here.
    pub fn cpu(&self) -> bool {
        self.cpu
    }

    /// `memory.max` is enforced in the cgroups made here.
    pub fn memory(&self) -> bool {
        self.memory
    }

    pub fn parent(&self) -> &Path {
        &self.parent
    }

    /// Makes the cgroup `name` with `limits` (only those enforced here are written).
    pub fn create(&self, name: &str, limits: &Limits) -> io::Result<Cgroup> {
        if name.is_empty() || name.contains(['/', '\0']) || name.starts_with('.') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{name}` is not a cgroup name"),
            ));
        }
        let path = self.parent.join(name);
        std::fs::create_dir(&path)?;
        let cgroup = Cgroup { path };
        let applied = (|| {
            if let (true, Some(cpus)) = (self.cpu, limits.cpus) {
                let quota = u64::from(cpus) * CPU_PERIOD_US;
                write(
                    &cgroup.path.join("cpu.max"),
                    &format!("{quota} {CPU_PERIOD_US}"),
                )?;
            }
            if let (true, Some(mb)) = (self.memory, limits.memory_mb) {
                let bytes = mb.saturating_mul(1024 * 1024);
                write(&cgroup.path.join("memory.max"), &bytes.to_string())?;
                // Without it the limit could be dodged into swap; not every kernel has it.
                let _ = write(&cgroup.path.join("memory.swap.max"), "0");
            }
            Ok(())
        })();
        if let Err(e) = applied {
            let _ = cgroup.remove();
            return Err(e);
        }
        Ok(cgroup)
    }

    /// The cgroup at `path` made earlier (by a previous engine), if it is still there and
    /// is one of ours.
    pub fn open(&self, path: &Path) -> Option<Cgroup> {
        (path.parent() == Some(self.parent.as_path()) && path.is_dir()).then(|| Cgroup {
            path: path.to_path_buf(),
        })
    }
}

impl Cgroup {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The processes in it now.
    pub fn procs(&self) -> Vec<u32> {
        std::fs::read_to_string(self.path.join("cgroup.procs"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// Moves `pid` into it (a process started without [`wrap`](Self::wrap)).
    pub fn add(&self, pid: u32) -> io::Result<()> {
        write(&self.path.join("cgroup.procs"), &pid.to_string())
    }

    /// `program args` as a command that joins this cgroup before it runs, so nothing it
    /// starts is ever outside: a shell writes its own pid to `cgroup.procs`, then becomes
    /// the program. It fails (and runs nothing) when it cannot join.
    pub fn wrap(&self, program: String, args: Vec<String>) -> (String, Vec<String>) {
        let mut wrapped = vec![
            "-c".to_owned(),
            r#"echo $$ > "$0" && exec "$@""#.to_owned(),
            self.path.join("cgroup.procs").display().to_string(),
            program,
        ];
        wrapped.extend(args);
        ("/bin/sh".to_owned(), wrapped)
    }

    /// Freezes (`true`) or thaws every process in it; waits for the kernel to say so.
    pub fn freeze(&self, frozen: bool) -> io::Result<()> {
        write(
            &self.path.join("cgroup.freeze"),
            if frozen { "1" } else { "0" },
        )?;
        let want = if frozen { "frozen 1" } else { "frozen 0" };
        let deadline = Instant::now() + SETTLE;
        loop {
            let events = std::fs::read_to_string(self.path.join("cgroup.events"))?;
            if events.lines().any(|l| l.trim() == want) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "{} did not report `{want}`",
                    self.path.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Kills every process in it (`cgroup.kill`, else KILL to each) until it is empty.
    pub fn kill(&self) -> io::Result<()> {
        let deadline = Instant::now() + SETTLE;
        loop {
            let procs = self.procs();
            if procs.is_empty() {
                return Ok(());
            }
            if write(&self.path.join("cgroup.kill"), "1").is_err() {
                for pid in procs {
                    crate::services::proc_scan::signal(pid, nix::sys::signal::Signal::SIGKILL);
                }
            }
            if Instant::now() > deadline {
                return Err(io::Error::other(format!(
                    "{} still holds processes",
                    self.path.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Removes it (it must be empty).
    pub fn remove(&self) -> io::Result<()> {
        match std::fs::remove_dir(&self.path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A directory laid out like a cgroup v2 mount (plain files: writes just land).
    fn fake_mount(controllers: &str) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("cgroup.controllers"), controllers).unwrap();
        let own = dir.path().join("user.slice/engine.scope");
        std::fs::create_dir_all(own.join(SUBTREE)).unwrap();
        std::fs::write(own.join("cgroup.controllers"), controllers).unwrap();
        std::fs::write(own.join("cgroup.subtree_control"), "").unwrap();
        std::fs::write(own.join("cgroup.procs"), "").unwrap();
        std::fs::write(own.join(SUBTREE).join("cgroup.controllers"), controllers).unwrap();
        std::fs::write(own.join(SUBTREE).join("cgroup.subtree_control"), "").unwrap();
        dir
    }

    #[test]
    fn this_machine_is_detected_as_it_is() {
        let v2 = Path::new(MOUNT).join("cgroup.controllers").is_file();
        match detect() {
            Support::Unavailable(why) => {
                // Only v1 (or no right to write): the reason is given, never a pretence.
                assert!(!why.is_empty());
                if !v2 {
                    assert!(why.contains("v1"), "{why}");
                }
            }
            Support::Available(cgroups) => {
                assert!(v2, "cgroups without a v2 hierarchy");
                assert!(cgroups.parent().ends_with(SUBTREE));
            }
        }
    }

    #[test]
    fn without_a_v2_hierarchy_there_is_no_cgroup_and_it_says_why() {
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
        let mount = fake_mount("cpu memory io");
        let Support::Available(all) = detect_in(mount.path(), "0::/user.slice/engine.scope\n")
        else {
            panic!()
        };
        assert!(all.cpu() && all.memory());
        let mount = fake_mount("io pids");
        let Support::Available(none) = detect_in(mount.path(), "0::/user.slice/engine.scope\n")
        else {
            panic!()
        };
        assert!(!none.cpu() && !none.memory(), "{none:?}");
    }

    #[test]
    fn a_cgroup_gets_its_limits_and_is_removed() {
        let mount = fake_mount("cpu memory");
        let Support::Available(cgroups) = detect_in(mount.path(), "0::/user.slice/engine.scope")
        else {
            panic!()
        };
        let limits = Limits {
            cpus: Some(2),
            memory_mb: Some(256),
        };
        let cgroup = cgroups.create("sb_1", &limits).unwrap();
        let read = |name: &str| std::fs::read_to_string(cgroup.path().join(name)).unwrap();
        assert_eq!(read("cpu.max"), "200000 100000");
        assert_eq!(read("memory.max"), (256u64 << 20).to_string());
        assert_eq!(cgroups.open(cgroup.path()), Some(cgroup.clone()));
        assert_eq!(cgroups.open(mount.path()), None, "not one of ours");
        assert!(cgroups.create("../escape", &limits).is_err());
        assert!(cgroups.create("sb_1", &limits).is_err(), "already there");
        // Plain files stand in for the kernel's: empty them so the folder can go.
        for entry in std::fs::read_dir(cgroup.path()).unwrap() {
            std::fs::remove_file(entry.unwrap().path()).unwrap();
        }
        assert!(cgroup.procs().is_empty());
        cgroup.kill().unwrap();
        cgroup.remove().unwrap();
        assert!(!cgroup.path().exists());
        cgroup.remove().unwrap();
    }

    #[test]
    fn a_wrapped_command_joins_before_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let cgroup = Cgroup {
            path: dir.path().to_path_buf(),
        };
        let (program, args) = cgroup.wrap("echo".into(), vec!["hello".into(), "$HOME".into()]);
        let out = std::process::Command::new(program)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.stdout, b"hello $HOME\n", "arguments pass untouched");
        let joined: u32 = std::fs::read_to_string(dir.path().join("cgroup.procs"))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(joined > 1);
        assert_eq!(cgroup.procs(), vec![joined]);
        // It cannot join: nothing runs.
        let missing = Cgroup {
            path: dir.path().join("gone"),
        };
        let (program, args) = missing.wrap("echo".into(), vec!["ran".into()]);
        let out = std::process::Command::new(program)
            .args(args)
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(out.stdout.is_empty());
    }
}
