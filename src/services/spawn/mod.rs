//! Spawning a child without copying the parent: `clone(CLONE_VM | CLONE_VFORK)`, the way
//! `posix_spawn` does, with the steps of [`before_exec`](crate::services::before_exec)
//! taken in the child.
//!
//! Why: a step between fork and exec (becoming a subreaper, entering a machine) rules out
//! `posix_spawn`, and `fork` of a large multithreaded server copies its page tables and
//! then faults on every page either side writes until the child has exec'd: measured at
//! about 0.8 ms per spawn here, most of what a command cost over a direct spawn. A child
//! that shares the parent's memory copies nothing; the parent's thread waits (the
//! `CLONE_VFORK`) until the child has exec'd or ended, so the child may read what the
//! parent made before the clone.
//!
//! What that asks of the child ([`in_child`]): system calls only, on memory made before
//! the clone, never a lock or an allocation (the parent's other threads keep running and
//! may hold them), and never a C library call that acts on the whole process: glibc's
//! `setuid` and friends take the process's list of threads under a lock and signal each
//! one to change with it, and from here that lock may be held by a thread of the parent's
//! (the child would wait forever, and the parent's thread with it), so identities change
//! through raw per-thread
//! system calls (`rustix::thread`). Signals are blocked across the clone, and the child
//! puts the parent's handlers back to their defaults before it unblocks them.

mod in_child;

use crate::services::before_exec::Steps;
use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::sync::atomic::{AtomicI32, Ordering};
use tokio::io::unix::AsyncFd;
use tokio::net::unix::pipe;

/// What one of the child's standard streams is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Io {
    /// `/dev/null`.
    Null,
    /// A pipe whose other end the [`Child`] holds.
    Piped,
}

/// A program to spawn: its arguments and complete environment (nothing of the parent's
/// own is inherited), working directory, streams, identity and steps.
#[derive(Debug)]
pub struct Command {
    program: CString,
    args: Vec<CString>,
    env: Vec<CString>,
    path: Option<Vec<u8>>,
    cwd: Option<CString>,
    streams: [Io; 3],
    process_group: bool,
    apart: bool,
    ids: Option<(u32, u32)>,
    steps: Steps,
    invalid: bool,
}

/// `text` as a C string; a NUL inside marks the command invalid (refused at the spawn).
fn c_string(text: &[u8], invalid: &mut bool) -> CString {
    CString::new(text).unwrap_or_else(|_| {
        *invalid = true;
        CString::default()
    })
}

impl Command {
    pub fn new(program: impl AsRef<OsStr>) -> Command {
        let mut invalid = false;
        let program = c_string(program.as_ref().as_bytes(), &mut invalid);
        Command {
            args: vec![program.clone()],
            program,
            env: Vec::new(),
            path: None,
            cwd: None,
            streams: [Io::Null; 3],
            process_group: false,
            apart: false,
            ids: None,
            steps: Steps::default(),
            invalid,
        }
    }

    pub fn args(&mut self, args: impl IntoIterator<Item = impl AsRef<OsStr>>) -> &mut Command {
        for arg in args {
            let arg = c_string(arg.as_ref().as_bytes(), &mut self.invalid);
            self.args.push(arg);
        }
        self
    }

    /// Adds to the child's environment, which starts empty. Its `PATH` is where a program
    /// named without a `/` is looked for, as `execvp` in a forked child would.
    pub fn envs(
        &mut self,
        vars: impl IntoIterator<Item = (impl AsRef<OsStr>, impl AsRef<OsStr>)>,
    ) -> &mut Command {
        for (key, value) in vars {
            let (key, value) = (key.as_ref().as_bytes(), value.as_ref().as_bytes());
            if key == b"PATH" {
                self.path = Some(value.to_vec());
            }
            let pair = [key, b"=", value].concat();
            let pair = c_string(&pair, &mut self.invalid);
            self.env.push(pair);
        }
        self
    }

    pub fn current_dir(&mut self, dir: impl AsRef<std::path::Path>) -> &mut Command {
        self.cwd = Some(c_string(
            dir.as_ref().as_os_str().as_bytes(),
            &mut self.invalid,
        ));
        self
    }

    pub fn stdin(&mut self, io: Io) -> &mut Command {
        self.streams[0] = io;
        self
    }

    pub fn stdout(&mut self, io: Io) -> &mut Command {
        self.streams[1] = io;
        self
    }

    pub fn stderr(&mut self, io: Io) -> &mut Command {
        self.streams[2] = io;
        self
    }

    /// The child starts on another CPU than the spawning thread's, which is not held up by
    /// it (see `in_child::Placement`): for a spawner with work to do while the child starts
    /// (a turn's first events, its answer's head), not for one that only waits for the end.
    pub fn apart(&mut self) -> &mut Command {
        self.apart = true;
        self
    }

    /// The child leads a process group of its own.
    pub fn process_group(&mut self) -> &mut Command {
        self.process_group = true;
        self
    }

    /// The child becomes `uid` and `gid`, with no supplementary group, before its steps.
    pub fn ids(&mut self, uid: u32, gid: u32) -> &mut Command {
        self.ids = Some((uid, gid));
        self
    }

    pub fn steps(&mut self, steps: Steps) -> &mut Command {
        self.steps = steps;
        self
    }

    /// Where a program named without a `/` may be: each directory of the child's `PATH`
    /// (else `/bin:/usr/bin`, the C library's default), joined to the name, tried in
    /// order in the child (inside a machine they name the machine's files). Not
    /// `search_path::resolve`: that looks at the host's files, in the parent.
    fn candidates(&self) -> Vec<CString> {
        let name = self.program.as_bytes();
        if name.contains(&b'/') {
            return vec![self.program.clone()];
        }
        let path = self.path.as_deref().unwrap_or(b"/bin:/usr/bin");
        path.split(|b| *b == b':')
            .map(|dir| match dir {
                b"" => self.program.clone(),
                dir => {
                    let dir = dir.strip_suffix(b"/").unwrap_or(dir);
                    CString::new([dir, b"/", name].concat()).unwrap_or_default()
                }
            })
            .collect()
    }

    /// Starts the child; answers once it has exec'd its program, or the error of the step
    /// or exec that failed (the child then ended, and was reaped).
    pub fn spawn(&self) -> io::Result<Child> {
        if self.invalid || self.program.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a NUL in the program, an argument, a variable or the directory, or no program",
            ));
        }
        let mut ours: [Option<OwnedFd>; 3] = [None, None, None];
        let mut theirs: Vec<OwnedFd> = Vec::with_capacity(3);
        let null = if self.streams.contains(&Io::Null) {
            Some(OwnedFd::from(
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open("/dev/null")?,
            ))
        } else {
            None
        };
        let mut stdio: [RawFd; 3] = [-1; 3];
        for (n, io) in self.streams.iter().enumerate() {
            stdio[n] = match io {
                Io::Null => null.as_ref().map_or(-1, AsRawFd::as_raw_fd),
                Io::Piped => {
                    let (read, write) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?;
                    let (child_end, parent_end) =
                        if n == 0 { (read, write) } else { (write, read) };
                    let raw = child_end.as_raw_fd();
                    theirs.push(child_end);
                    ours[n] = Some(parent_end);
                    raw
                }
            };
        }
        let candidates = self.candidates();
        let plan = in_child::Plan::new(self, &candidates, stdio);
        let failed = AtomicI32::new(0);
        let pid = in_child::clone(&plan, &failed)?;
        drop(theirs);
        drop(null);
        let errno = failed.load(Ordering::SeqCst);
        if errno != 0 {
            // The child ended at the step that failed: it is reaped at once.
            let _ = reap(pid, true);
            return Err(io::Error::from_raw_os_error(errno));
        }
        let [stdin, stdout, stderr] = ours;
        // From here a failure drops the child, which kills and reaps it.
        let mut child = Child {
            pid,
            exit: None,
            status: None,
            stdin: None,
            stdout: None,
            stderr: None,
        };
        let pidfd = rustix::process::pidfd_open(
            rustix::process::Pid::from_raw(pid as i32).expect("a child's pid is positive"),
            rustix::process::PidfdFlags::empty(),
        )?;
        // `new` is deprecated because some `T` could answer another descriptor later; an
        // `OwnedFd` keeps its one for its life, and `register` would need `unsafe`.
        #[allow(deprecated)]
        let exit = AsyncFd::new(pidfd)?;
        child.exit = Some(exit);
        child.stdin = stdin.map(pipe::Sender::from_owned_fd).transpose()?;
        child.stdout = stdout.map(pipe::Receiver::from_owned_fd).transpose()?;
        child.stderr = stderr.map(pipe::Receiver::from_owned_fd).transpose()?;
        Ok(child)
    }
}

/// A spawned child, reaped by [`wait`](Child::wait). Dropped unreaped, it is killed and
/// reaped behind the owner's back: nothing it forgets keeps running or lingers as a zombie.
#[derive(Debug)]
pub struct Child {
    pid: u32,
    /// The child's pidfd, readable once it has ended.
    exit: Option<AsyncFd<OwnedFd>>,
    status: Option<ExitStatus>,
    pub stdin: Option<pipe::Sender>,
    pub stdout: Option<pipe::Receiver>,
    pub stderr: Option<pipe::Receiver>,
}

impl Child {
    pub fn id(&self) -> u32 {
        self.pid
    }

    /// Waits for the end and reaps the child (once; later calls answer the same status).
    pub async fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(status) = self.status {
            return Ok(status);
        }
        loop {
            let exit = self.exit.as_ref().expect("an unreaped child has its pidfd");
            let mut ready = exit.readable().await?;
            if let Some(status) = reap(self.pid, false)? {
                drop(ready);
                self.status = Some(status);
                self.exit = None;
                return Ok(status);
            }
            ready.clear_ready();
        }
    }

    /// Sends SIGKILL unless the child was reaped (its pid may be another's by then).
    pub fn start_kill(&mut self) -> io::Result<()> {
        if self.status.is_some() {
            return Ok(());
        }
        nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(self.pid as i32),
            nix::sys::signal::Signal::SIGKILL,
        )?;
        Ok(())
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.status.is_some() {
            return;
        }
        let _ = self.start_kill();
        let pid = self.pid;
        // Reaped where it cannot hold anyone up: the kill lands within moments.
        std::thread::spawn(move || reap(pid, true));
    }
}

/// Reaps `pid` (a child of this process, not reaped yet, so not another's): its status,
/// or `None` while it runs and `block` is false.
fn reap(pid: u32, block: bool) -> io::Result<Option<ExitStatus>> {
    let pid = rustix::process::Pid::from_raw(pid as i32).expect("a child's pid is positive");
    let options = if block {
        rustix::process::WaitOptions::empty()
    } else {
        rustix::process::WaitOptions::NOHANG
    };
    Ok(rustix::process::waitpid(Some(pid), options)?
        .map(|(_, status)| ExitStatus::from_raw(status.as_raw())))
}

#[cfg(test)]
mod tests;
