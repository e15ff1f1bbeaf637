//! What the machine is and how busy it is, read from `/proc` and `statvfs`: the answers of
//! the system group (`GET /system/info`, `metrics`, `disk`, `ports`). The parsers take the
//! files' text so they are tested on fixed samples; the readers around them only open the
//! files. Nothing here shells out.

pub mod ports;

use std::path::Path;
use std::time::Duration;

/// Why a reading failed.
#[derive(Debug)]
pub enum Error {
    /// The path does not exist.
    NotFound(String),
    /// `/proc` or `statvfs` could not be read or parsed.
    Unreadable(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::NotFound(m) | Error::Unreadable(m) => f.write_str(m),
        }
    }
}

fn read(path: &str) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|e| Error::Unreadable(format!("{path}: {e}")))
}

/// `GET /system/info`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    /// The operating system family (`linux`) and, when `/etc/os-release` names it, the
    /// distribution: `linux (Debian GNU/Linux 13 (trixie))`.
    pub os: String,
    pub kernel: String,
    pub arch: String,
    pub cpus: usize,
    pub memory_bytes: u64,
    pub hostname: String,
    pub uptime_s: u64,
}

pub fn info() -> Result<Info, Error> {
    let os = match std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|text| pretty_name(&text))
    {
        Some(name) => format!("{} ({name})", std::env::consts::OS),
        None => std::env::consts::OS.to_owned(),
    };
    Ok(Info {
        os,
        kernel: read("/proc/sys/kernel/osrelease")?.trim().to_owned(),
        arch: std::env::consts::ARCH.to_owned(),
        // The CPUs this server may run on (its affinity mask), which is what a caller
        // sizing parallel work needs.
        cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
        memory_bytes: meminfo(&read("/proc/meminfo")?)?.total_bytes,
        hostname: read("/proc/sys/kernel/hostname")?.trim().to_owned(),
        uptime_s: uptime(&read("/proc/uptime")?)?,
    })
}

/// `PRETTY_NAME` of an os-release file, unquoted.
pub fn pretty_name(os_release: &str) -> Option<String> {
    os_release.lines().find_map(|line| {
        let value = line.strip_prefix("PRETTY_NAME=")?;
        let value = value.trim().trim_matches('"').trim_matches('\'');
        (!value.is_empty()).then(|| value.to_owned())
    })
}

/// Whole seconds since boot, from `/proc/uptime`.
pub fn uptime(text: &str) -> Result<u64, Error> {
    text.split_whitespace()
        .next()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
        .map(|s| s as u64)
        .ok_or_else(|| Error::Unreadable(format!("/proc/uptime: unexpected `{}`", text.trim())))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    pub total_bytes: u64,
    /// What is not available to new programs without swapping: total minus
    /// `MemAvailable` (caches the kernel gives back count as free).
    pub used_bytes: u64,
}

/// Total and used memory from `/proc/meminfo` (values in KiB).
pub fn meminfo(text: &str) -> Result<Memory, Error> {
    let field = |name: &str| -> Option<u64> {
        text.lines().find_map(|line| {
            let rest = line.strip_prefix(name)?.strip_prefix(':')?;
            rest.split_whitespace().next()?.parse::<u64>().ok()
        })
    };
    let total =
        field("MemTotal").ok_or_else(|| Error::Unreadable("/proc/meminfo: no MemTotal".into()))?;
    // Kernels before 3.14 lack MemAvailable: free plus page cache is the old estimate.
    let available = field("MemAvailable")
        .or_else(|| Some(field("MemFree")? + field("Cached").unwrap_or(0)))
        .unwrap_or(0)
        .min(total);
    Ok(Memory {
        total_bytes: total * 1024,
        used_bytes: (total - available) * 1024,
    })
}

/// The load averages over 1, 5 and 15 minutes, from `/proc/loadavg`.
pub fn loadavg(text: &str) -> Result<[f64; 3], Error> {
    let mut it = text.split_whitespace().map(|s| s.parse::<f64>().ok());
    match (it.next(), it.next(), it.next()) {
        (Some(Some(a)), Some(Some(b)), Some(Some(c))) => Ok([a, b, c]),
        _ => Err(Error::Unreadable(format!(
            "/proc/loadavg: unexpected `{}`",
            text.trim()
        ))),
    }
}

/// The machine's CPU time counters (the `cpu` line of `/proc/stat`), in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CpuTimes {
    pub busy: u64,
    pub total: u64,
}

pub fn cpu_times(stat: &str) -> Result<CpuTimes, Error> {
    let line = stat
        .lines()
        .find(|l| l.starts_with("cpu "))
        .ok_or_else(|| Error::Unreadable("/proc/stat: no `cpu` line".into()))?;
    let fields: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is already in user).
    let at = |i: usize| fields.get(i).copied().unwrap_or(0);
    let idle = at(3) + at(4);
    let total: u64 = (0..8).map(at).sum();
    Ok(CpuTimes {
        busy: total.saturating_sub(idle),
        total,
    })
}

/// The share of CPU time spent busy between two readings, 0 to 100, one decimal.
pub fn cpu_percent(before: CpuTimes, after: CpuTimes) -> f64 {
    let total = after.total.saturating_sub(before.total);
    if total == 0 {
        return 0.0;
    }
    let busy = after.busy.saturating_sub(before.busy).min(total);
    (busy as f64 * 1000.0 / total as f64).round() / 10.0
}

/// `GET /system/metrics`.
#[derive(Debug, Clone, PartialEq)]
pub struct Metrics {
    pub cpu_percent: f64,
    pub memory: Memory,
    pub load: [f64; 3],
    pub processes: usize,
}

/// How long the CPU is watched for `cpu_percent`: long enough for a few hundred ticks on
/// two cores, short enough for a request.
pub const CPU_SAMPLE: Duration = Duration::from_millis(100);

pub async fn metrics() -> Result<Metrics, Error> {
    let before = cpu_times(&read("/proc/stat")?)?;
    tokio::time::sleep(CPU_SAMPLE).await;
    let after = cpu_times(&read("/proc/stat")?)?;
    Ok(Metrics {
        cpu_percent: cpu_percent(before, after),
        memory: meminfo(&read("/proc/meminfo")?)?,
        load: loadavg(&read("/proc/loadavg")?)?,
        processes: process_ids().len(),
    })
}

/// The pids this server can see in `/proc`.
pub fn process_ids() -> Vec<u32> {
    std::fs::read_dir("/proc")
        .map(|dir| {
            dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `GET /system/disk`: the filesystem holding `path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Disk {
    pub total_bytes: u64,
    pub used_bytes: u64,
    /// What an unprivileged program may still write (`f_bavail`, without the root
    /// reserve).
    pub free_bytes: u64,
}

pub fn disk(path: &Path) -> Result<Disk, Error> {
    let stat = nix::sys::statvfs::statvfs(path).map_err(|e| match e {
        nix::errno::Errno::ENOENT | nix::errno::Errno::ENOTDIR => {
            Error::NotFound(format!("`{}` does not exist", path.display()))
        }
        other => Error::Unreadable(format!("statvfs {}: {other}", path.display())),
    })?;
    let unit = stat.fragment_size() as u64;
    let total = stat.blocks() as u64 * unit;
    let free_all = stat.blocks_free() as u64 * unit;
    Ok(Disk {
        total_bytes: total,
        used_bytes: total.saturating_sub(free_all),
        free_bytes: stat.blocks_available() as u64 * unit,
    })
}

/// What a set of processes uses: CPU time so far (user and system, read by
/// [`proc_scan::stat`](crate::services::proc_scan::stat); its clock ticks are `USER_HZ`,
/// 100 on Linux's every ABI) and resident memory (`/proc/PID/status`'s `VmRSS`); a pid
/// gone meanwhile counts nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub cpu_ticks: u64,
    pub rss_bytes: u64,
}

/// Clock ticks per second of `/proc/PID/stat` (`USER_HZ`, fixed by the kernel's ABI).
pub const USER_HZ: u64 = 100;

pub fn usage(pids: &[u32]) -> Usage {
    let mut total = Usage::default();
    for pid in pids {
        if let Some(stat) = crate::services::proc_scan::stat(*pid) {
            total.cpu_ticks += stat.cpu_ticks;
        }
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            total.rss_bytes += status_rss(&status).unwrap_or(0);
        }
    }
    total
}

/// `VmRSS` of a `/proc/PID/status`, in bytes.
pub fn status_rss(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_rss_reads_vmrss_in_bytes() {
        assert_eq!(status_rss("Name: x\nVmRSS:\t  12 kB\n"), Some(12 * 1024));
    }

    #[test]
    fn meminfo_total_and_used() {
        let text = "MemTotal:        8000000 kB\nMemFree:          100000 kB\nMemAvailable:    6000000 kB\nCached: 1 kB\n";
        let m = meminfo(text).unwrap();
        assert_eq!(m.total_bytes, 8_000_000 * 1024);
        assert_eq!(m.used_bytes, 2_000_000 * 1024);
        let old = "MemTotal: 1000 kB\nMemFree: 100 kB\nCached: 300 kB\n";
        assert_eq!(meminfo(old).unwrap().used_bytes, 600 * 1024);
        assert!(meminfo("nothing").is_err());
    }

    #[test]
    fn load_uptime_and_os_release() {
        assert_eq!(
            loadavg("4.24 2.66 2.26 22/171 21419\n").unwrap(),
            [4.24, 2.66, 2.26]
        );
        assert!(loadavg("4.24 x").is_err());
        assert_eq!(uptime("12345.67 2345.00\n").unwrap(), 12345);
        assert!(uptime("").is_err());
        let os = "NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\n";
        assert_eq!(pretty_name(os).unwrap(), "Debian GNU/Linux 13 (trixie)");
        assert_eq!(pretty_name("NAME=x"), None);
    }

    #[test]
    fn cpu_percent_between_two_readings() {
        let a = cpu_times("cpu  100 0 100 700 100 0 0 0 0 0\ncpu0 1 1 1 1\n").unwrap();
        assert_eq!(
            a,
            CpuTimes {
                busy: 200,
                total: 1000
            }
        );
        let b = cpu_times("cpu  150 0 150 800 100 0 0 0 0 0\n").unwrap();
        assert_eq!(cpu_percent(a, b), 50.0);
        assert_eq!(cpu_percent(a, a), 0.0);
        assert!(cpu_times("intr 1 2").is_err());
    }

    #[test]
    fn the_live_machine_reads() {
        let info = info().unwrap();
        assert!(info.cpus >= 1 && info.memory_bytes > 0 && !info.kernel.is_empty());
        let d = disk(Path::new("/")).unwrap();
        assert!(d.total_bytes >= d.used_bytes && d.total_bytes >= d.free_bytes);
        assert!(matches!(
            disk(Path::new("/no/such/dir/anywhere")),
            Err(Error::NotFound(_))
        ));
        assert!(process_ids().contains(&std::process::id()));
    }
}
