//! What every benchmark needs: its `--name value` options and `--quick`, medians and
//! percentiles, room for many descriptors, and the floor most of them compare against
//! (spawning a program directly).

pub fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// `--quick`: a smoke pass (`just bench --quick`): one round of every measure and each scale
/// curve at its smallest point, to see every bench still runs, not to quote.
pub fn quick() -> bool {
    std::env::args().any(|a| a == "--quick")
}

/// `--name N` when given; otherwise `quick` under `--quick` and `default` without.
pub fn arg_quick(name: &str, default: u64, quick: u64) -> u64 {
    arg(name, if self::quick() { quick } else { default })
}

/// The points of a scale curve: all of them, or the smallest under `--quick`.
pub fn curve<T: Copy>(points: &[T]) -> Vec<T> {
    if quick() {
        points[..1].to_vec()
    } else {
        points.to_vec()
    }
}

/// Raises this process's soft limit on open descriptors to at least `need`, as far as the
/// hard limit allows (a scale point holds thousands of sockets, and a common default soft
/// limit is 1,024). Returns the soft limit now in force, so a point that would not fit can
/// say so instead of failing half-way.
pub fn raise_descriptor_limit(need: u64) -> u64 {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("getrlimit(RLIMIT_NOFILE)");
    if soft >= need {
        return soft;
    }
    let wanted = need.min(hard);
    match setrlimit(Resource::RLIMIT_NOFILE, wanted, hard) {
        Ok(()) => wanted,
        Err(why) => {
            println!("could not raise the descriptor limit from {soft} to {wanted}: {why}");
            soft
        }
    }
}

/// Descriptors a process holds open now (`/proc/PID/fd`), 0 when it is gone.
pub fn open_descriptors(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |dir| dir.count())
}

pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    values[values.len() / 2]
}

/// The value below which a fraction `p` of `v` lies.
pub fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 * p) as usize).min(v.len() - 1)]
}

pub fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// How a floor spawns `program`, as any supervisor has to: its own group, a clean
/// environment with a plain `PATH`, no stdin, piped output.
pub fn floor_command(
    program: &str,
    args: impl IntoIterator<Item = impl AsRef<std::ffi::OsStr>>,
) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .process_group(0)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    command
}

/// The floor of a command run: spawning `program` directly and waiting for it, as any
/// supervisor has to (its own group, a clean environment, piped output). Where this
/// process keeps trees (the process bench, as `svc serve`), the child is counted as its own,
/// or the server's sweep after a child's end would take it for a leftover.
pub async fn spawn_and_wait(program: &str, args: &[&str]) -> std::time::Duration {
    let started = std::time::Instant::now();
    let birth = svc::services::supervisor::trees::Birth::begin();
    let child = floor_command(program, args).spawn().unwrap();
    let _own = birth.map(|birth| birth.born(child.id().unwrap()));
    let out = child.wait_with_output().await.unwrap();
    assert!(out.status.success());
    started.elapsed()
}

/// The floor of a streamed run: spawning `program` directly until its first stdout byte
/// (counted as this process's own, as in [`spawn_and_wait`]).
pub async fn first_byte(program: &str, args: &[&str]) -> std::time::Duration {
    use tokio::io::AsyncReadExt;
    let started = std::time::Instant::now();
    let birth = svc::services::supervisor::trees::Birth::begin();
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .process_group(0)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let _own = birth.map(|birth| birth.born(child.id().unwrap()));
    let mut stdout = child.stdout.take().unwrap();
    let mut byte = [0u8; 1];
    stdout.read_exact(&mut byte).await.unwrap();
    let at = started.elapsed();
    child.wait().await.unwrap();
    at
}

/// The floor of a file copy: `cp` of `source` to a new file `target` (removed after), in ms.
pub fn cp_once(source: &std::path::Path, target: &std::path::Path) -> f64 {
    let started = std::time::Instant::now();
    let status = std::process::Command::new("cp")
        .arg(source)
        .arg(target)
        .status()
        .unwrap();
    assert!(status.success());
    let took = ms(started.elapsed());
    std::fs::remove_file(target).unwrap();
    took
}

/// `mib` MiB of a fixed pattern in a new file of `dir`, synced: the source of the file
/// benches.
pub fn source_file(dir: &std::path::Path, mib: u64) -> std::path::PathBuf {
    use std::io::Write;
    let source = dir.join("source.bin");
    let mut file = std::fs::File::create(&source).unwrap();
    let block: Vec<u8> = (0..1024 * 1024).map(|i| (i * 31 % 251) as u8).collect();
    for _ in 0..mib {
        file.write_all(&block).unwrap();
    }
    file.sync_all().unwrap();
    source
}
