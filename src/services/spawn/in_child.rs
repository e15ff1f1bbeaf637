//! The clone and what the child does before its program runs. Everything the child reads
//! is made here before the clone; the child makes system calls only (see the module doc
//! of [`spawn`](super)).

use super::Command;
use nix::libc;
use nix::sched::{CpuSet, sched_getaffinity, sched_getcpu, sched_setaffinity};
use nix::unistd::Pid;
use std::ffi::{CString, c_char};
use std::io;
use std::os::fd::RawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI32, Ordering};

/// What the child reads: the command's strings as the arrays `execve` takes.
pub(super) struct Plan<'a> {
    command: &'a Command,
    argv: Vec<*const c_char>,
    envp: Vec<*const c_char>,
    candidates: &'a [CString],
    /// `/bin/sh`, the candidate, the arguments: a file that is no program (`ENOEXEC`) is
    /// run as a shell script, as `execvp` does; the child fills the candidate's slot.
    script: Vec<*const c_char>,
    stdio: [RawFd; 3],
    /// Where the child runs until it has exec'd (see [`Placement`]).
    placement: Option<Placement>,
}

fn pointers(strings: &[CString]) -> Vec<*const c_char> {
    strings
        .iter()
        .map(|s| s.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect()
}

impl<'a> Plan<'a> {
    pub(super) fn new(command: &'a Command, candidates: &'a [CString], stdio: [RawFd; 3]) -> Self {
        let argv = pointers(&command.args);
        let script = [c"/bin/sh".as_ptr(), std::ptr::null()]
            .into_iter()
            .chain(argv[1..].iter().copied())
            .collect();
        Plan {
            command,
            envp: pointers(&command.env),
            argv,
            candidates,
            script,
            stdio,
            placement: Placement::for_child(command),
        }
    }
}

/// Until the child execs, the parent's thread is kept to the CPU it runs on and the child
/// to the others; the child takes the parent's CPUs back just before its exec (so nothing
/// it starts inherits fewer), the parent's thread just after.
///
/// Why: the parent's thread sleeps until the child has exec'd (`CLONE_VFORK`), and the
/// exec's wake pulls it onto the CPU the child runs on. The child, busy starting its
/// program, keeps that CPU, and the parent (a server thread with a request to finish)
/// waited there, up to two milliseconds, while another CPU stood idle: `perf` showed the
/// wake with `target_cpu` the child's, and the parent run again only when the child
/// blocked, a median of 0.56 ms after the clone for a turn's runtime. Moving the child
/// alone is not enough (the wake then pulls the parent after it); kept apart, the parent
/// is back within a third of a millisecond every time. Only where asked: a spawner that
/// only waits for the end (`POST /shell` of `true`) cannot gain (it measured 0.04 and
/// 0.11 ms slower, about the machine's noise), and a child that walks into a machine
/// measured 0.2 ms slower.
#[derive(Clone, Copy)]
struct Placement {
    /// The parent's CPUs but the one its thread runs on.
    away: CpuSet,
    /// The parent's CPUs, which the child would have had.
    whole: CpuSet,
    /// The CPU the parent's thread runs on, alone.
    here: CpuSet,
}

impl Placement {
    /// `None` but for a child asked [`apart`](super::Command::apart), on more than one CPU,
    /// that enters no machine.
    fn for_child(command: &Command) -> Option<Placement> {
        if !command.apart || command.steps.enter.is_some() {
            return None;
        }
        let whole = sched_getaffinity(Pid::from_raw(0)).ok()?;
        let cpu = sched_getcpu().ok()?;
        let mut away = whole;
        away.unset(cpu).ok()?;
        let mut here = CpuSet::new();
        here.set(cpu).ok()?;
        (away != CpuSet::new()).then_some(Placement { away, whole, here })
    }

    /// In the child, first: onto the other CPUs (a refusal leaves it where it is).
    fn leave(&self) {
        set_cpus(&self.away);
    }

    /// In the child, just before its exec: the parent's CPUs again, where it stands (a
    /// thread may always set its own, whatever its identity by then).
    fn rejoin(&self) {
        set_cpus(&self.whole);
    }

    /// In the parent, before the clone: its thread stays where it is, so the exec's wake
    /// cannot pull it onto the child's CPU.
    fn stay(&self) {
        set_cpus(&self.here);
    }

    /// In the parent, once the child has exec'd (or ended): its thread's CPUs again.
    fn give_back(&self) {
        set_cpus(&self.whole);
    }
}

/// `sched_setaffinity` of the calling thread: a system call only (nix's wrapper allocates
/// nothing, so the child may make it), on a set made before the clone. A refusal leaves
/// the thread where it may run already: only speed is at stake.
fn set_cpus(cpus: &CpuSet) {
    let _ = sched_setaffinity(Pid::from_raw(0), cpus);
}

/// The child's stack, with a page that faults below it, so an overflow ends the child
/// instead of writing over the parent. Kept for the next spawn ([`Spare`]) once the child
/// has exec'd or ended.
struct Stack(NonNull<std::ffi::c_void>);

// SAFETY: a `Stack` owns its private mapping alone (nothing else points into it once the
// child that used it has exec'd or ended), so it may move to another thread.
#[allow(unsafe_code)]
unsafe impl Send for Stack {}

/// Stacks of earlier spawns, kept for the next. Mapping a stack, guarding it and unmapping
/// it again cost about a third of the clone's own time in `perf` here (the unmap is a TLB
/// shootdown across the server's threads); a kept stack has its pages already in place.
struct Spare {
    stacks: std::sync::Mutex<Vec<Stack>>,
    /// Kept at most; past that a stack given back is unmapped (256 KiB each).
    max: usize,
}

/// As many as spawn at once in a busy server.
static SPARE: Spare = Spare::new(8);

impl Spare {
    const fn new(max: usize) -> Spare {
        Spare {
            stacks: std::sync::Mutex::new(Vec::new()),
            max,
        }
    }

    fn stacks(&self) -> std::sync::MutexGuard<'_, Vec<Stack>> {
        self.stacks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A kept stack, or a new one.
    fn take(&self) -> io::Result<Stack> {
        match self.stacks().pop() {
            Some(stack) => Ok(stack),
            None => Stack::new(),
        }
    }

    /// Keeps `stack` for the next spawn: only once its child has exec'd or ended.
    fn give_back(&self, stack: Stack) {
        let mut stacks = self.stacks();
        if stacks.len() < self.max {
            stacks.push(stack);
        }
    }
}

const STACK: usize = 256 * 1024;
const GUARD: usize = 4096;

impl Stack {
    fn new() -> io::Result<Stack> {
        use nix::sys::mman::{MapFlags, ProtFlags, mmap_anonymous, mprotect};
        let len = std::num::NonZeroUsize::new(STACK).expect("not zero");
        // SAFETY: a fresh anonymous mapping, owned by this value alone.
        #[allow(unsafe_code)]
        unsafe {
            let base = mmap_anonymous(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_PRIVATE | MapFlags::MAP_STACK,
            )?;
            let stack = Stack(base);
            mprotect(base, GUARD, ProtFlags::PROT_NONE)?;
            Ok(stack)
        }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: the mapping is STACK bytes long; the child alone writes it, while the
        // parent's thread waits.
        #[allow(unsafe_code)]
        unsafe {
            std::slice::from_raw_parts_mut(self.0.as_ptr().cast::<u8>(), STACK)
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `new`, no longer used: the child has exec'd or ended.
        #[allow(unsafe_code)]
        unsafe {
            let _ = nix::sys::mman::munmap(self.0, STACK);
        }
    }
}

/// Clones the child; answers once it has exec'd (`failed` still 0) or ended (`failed`
/// holds the errno of what failed). Its pid either way.
pub(super) fn clone(plan: &Plan, failed: &AtomicI32) -> io::Result<u32> {
    use nix::sched::CloneFlags;
    use nix::sys::signal::{SigSet, SigmaskHow, pthread_sigmask};
    let mut stack = SPARE.take()?;
    let mut script = plan.script.clone();
    let script = script.as_mut_ptr();
    // No handler of the parent's may run in the child before it resets them.
    let mut old = SigSet::empty();
    pthread_sigmask(
        SigmaskHow::SIG_SETMASK,
        Some(&SigSet::all()),
        Some(&mut old),
    )?;
    if let Some(placement) = &plan.placement {
        placement.stay();
    }
    // SAFETY: the child shares this memory and runs while this thread waits
    // (CLONE_VFORK), on a stack of its own; `child` makes system calls only, on data made
    // before the clone, and ends in `execve` or `_exit`.
    #[allow(unsafe_code)]
    let pid = unsafe {
        nix::sched::clone(
            Box::new(|| child(plan, script, failed)),
            stack.as_mut_slice(),
            CloneFlags::CLONE_VM | CloneFlags::CLONE_VFORK,
            Some(libc::SIGCHLD),
        )
    };
    let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    if let Some(placement) = &plan.placement {
        placement.give_back();
    }
    // The child has exec'd or ended (CLONE_VFORK), or never ran: the stack is free.
    SPARE.give_back(stack);
    Ok(pid?.as_raw() as u32)
}

/// The child: its steps, then its program; on a failure the errno goes to the parent
/// through `failed`, and the child ends.
fn child(plan: &Plan, script: *mut *const c_char, failed: &AtomicI32) -> isize {
    if let Some(placement) = &plan.placement {
        placement.leave();
    }
    let error = match prepare(plan) {
        Ok(()) => {
            if let Some(placement) = &plan.placement {
                placement.rejoin();
            }
            exec(plan, script)
        }
        Err(e) => e,
    };
    failed.store(
        error.raw_os_error().unwrap_or(libc::EINVAL),
        Ordering::SeqCst,
    );
    // SAFETY: ends the child at once, running nothing of the parent's.
    #[allow(unsafe_code)]
    unsafe {
        libc::_exit(127)
    }
}

/// The same steps a forked child of `std::process::Command` takes, in its order: streams,
/// identity, directory, group, signals; then the [`Steps`](crate::services::before_exec::Steps).
fn prepare(plan: &Plan) -> io::Result<()> {
    default_handlers();
    for (target, fd) in plan.stdio.iter().enumerate() {
        let target = target as RawFd;
        // SAFETY: plain system calls on descriptors this child has.
        #[allow(unsafe_code)]
        let done = unsafe {
            if *fd == target {
                // Already in place: only its close-on-exec goes.
                libc::fcntl(target, libc::F_SETFD, 0)
            } else {
                libc::dup2(*fd, target)
            }
        };
        if done < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    let command = plan.command;
    if let Some((uid, gid)) = command.ids {
        use rustix::process::{Gid, Uid};
        let gid = Gid::from_raw(gid);
        rustix::thread::set_thread_res_gid(gid, gid, gid)?;
        if rustix::process::getuid().is_root() {
            rustix::thread::set_thread_groups(&[])?;
        }
        let uid = Uid::from_raw(uid);
        rustix::thread::set_thread_res_uid(uid, uid, uid)?;
    }
    if let Some(cwd) = &command.cwd {
        nix::unistd::chdir(cwd.as_c_str())?;
    }
    if command.process_group {
        nix::unistd::setpgid(nix::unistd::Pid::from_raw(0), nix::unistd::Pid::from_raw(0))?;
    }
    command.steps.run()
}

/// Every signal the parent handles goes back to its default (a signal now would run the
/// parent's handler here), and SIGPIPE too, which Rust programs ignore and their children
/// must not; other ignored signals stay ignored, as across any exec.
fn default_handlers() {
    for signal in 1..=64 {
        if signal == libc::SIGKILL || signal == libc::SIGSTOP {
            continue;
        }
        // SAFETY: `sigaction` on zeroed structures of this stack.
        #[allow(unsafe_code)]
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            let handled = old.sa_sigaction != libc::SIG_IGN && old.sa_sigaction != libc::SIG_DFL;
            if handled || signal == libc::SIGPIPE {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
            }
        }
    }
}

/// Unblocks every signal and runs the first candidate that is a program (a file that is
/// none runs as a shell script); answers why none ran, as `execvp` would.
fn exec(plan: &Plan, script: *mut *const c_char) -> io::Error {
    // SAFETY: `execve` on the NUL-terminated arrays of the plan; `script` has room for the
    // candidate in its second slot.
    #[allow(unsafe_code)]
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::sigprocmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
        let mut denied = false;
        let mut last = io::Error::from_raw_os_error(libc::ENOENT);
        for candidate in plan.candidates {
            libc::execve(candidate.as_ptr(), plan.argv.as_ptr(), plan.envp.as_ptr());
            let error = io::Error::last_os_error();
            match error.raw_os_error().unwrap_or(0) {
                libc::ENOEXEC => {
                    *script.add(1) = candidate.as_ptr();
                    libc::execve(c"/bin/sh".as_ptr(), script, plan.envp.as_ptr());
                    return io::Error::last_os_error();
                }
                libc::EACCES => denied = true,
                libc::ENOENT | libc::ENOTDIR | libc::ESTALE | libc::ENODEV | libc::ETIMEDOUT => {}
                _ => return error,
            }
            last = error;
        }
        if denied {
            io::Error::from_raw_os_error(libc::EACCES)
        } else {
            last
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Spare, Stack};

    #[test]
    fn a_stack_given_back_is_the_next_one_taken_and_past_the_bound_none_is_kept() {
        // A pool of its own: the process's is shared with every test that spawns.
        let spare = Spare::new(2);
        let first = spare.take().unwrap();
        let at = first.0;
        spare.give_back(first);
        // Counted, not only compared: an unmapped stack's address may well come back from
        // a new mapping.
        assert_eq!(spare.stacks().len(), 1, "the stack was not kept");
        let again = spare.take().unwrap();
        assert_eq!(again.0, at, "the kept stack was not the one taken");
        assert!(spare.stacks().is_empty());
        let (second, third) = (spare.take().unwrap(), Stack::new().unwrap());
        assert_ne!(second.0, at, "a stack in use was handed out again");
        spare.give_back(again);
        spare.give_back(second);
        spare.give_back(third);
        assert_eq!(spare.stacks().len(), 2, "kept past its bound");
    }
}
