//! This process's own environment block: the bytes its start left on the stack, which
//! `/proc/<pid>/environ` shows for the life of the process whatever `setenv` or
//! `unsetenv` do later (they only move pointers). A secret read from the environment at
//! start stays readable there by whoever may read the process (root, or any process with
//! `CAP_SYS_PTRACE`) unless its bytes are overwritten; [`scrub`] does that, through
//! `/proc/self/mem` (always open to the process itself), so no `unsafe` pointer write is
//! needed.

use std::io;
use std::os::unix::fs::FileExt;

/// Overwrites with NUL bytes the value of every `NAME=VALUE` of the block for which
/// `secret(name, value)` holds; answers the names scrubbed. A later `getenv` of one of them
/// reads an empty string: call it once everything that reads them has.
pub fn scrub(secret: impl Fn(&str, &[u8]) -> bool) -> io::Result<Vec<String>> {
    let (start, end) = block_bounds()?;
    let mem = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/proc/self/mem")?;
    let mut block = vec![0u8; usize::try_from(end.saturating_sub(start)).unwrap_or(0)];
    mem.read_exact_at(&mut block, start)?;
    let mut scrubbed = Vec::new();
    let mut offset = 0usize;
    for entry in block.split(|&b| b == 0) {
        if let Some(eq) = entry.iter().position(|&b| b == b'=') {
            let name = String::from_utf8_lossy(&entry[..eq]);
            let value = &entry[eq + 1..];
            if !value.is_empty() && secret(&name, value) {
                let at = start + (offset + eq + 1) as u64;
                mem.write_all_at(&vec![0u8; value.len()], at)?;
                scrubbed.push(name.into_owned());
            }
        }
        offset += entry.len() + 1;
    }
    Ok(scrubbed)
}

/// `env_start` and `env_end` of `/proc/self/stat` (fields 50 and 51, counted from 1).
fn block_bounds() -> io::Result<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // The command name may hold spaces and parentheses: fields are counted after its end.
    let after = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest)
        .ok_or_else(|| io::Error::other("/proc/self/stat has no command name"))?;
    let fields: Vec<&str> = after.split_whitespace().collect();
    // `after` starts at field 3 (the state).
    let field = |n: usize| -> io::Result<u64> {
        fields
            .get(n - 3)
            .and_then(|f| f.parse().ok())
            .ok_or_else(|| io::Error::other(format!("/proc/self/stat has no field {n}")))
    };
    Ok((field(50)?, field(51)?))
}

#[cfg(test)]
mod tests {
    /// A child (this test binary, run again) scrubs a variable it was given and reads its
    /// own `/proc/self/environ`: the value is gone, the other variables are whole.
    #[test]
    fn a_scrubbed_value_is_gone_from_proc_environ() {
        const CHILD: &str = "SVC_ENVIRON_BLOCK_CHILD";
        if std::env::var_os(CHILD).is_some() {
            let names = super::scrub(|name, _| name == "SCRUB_ME").unwrap();
            assert_eq!(names, ["SCRUB_ME"]);
            let environ = std::fs::read("/proc/self/environ").unwrap();
            let text = String::from_utf8_lossy(&environ);
            assert!(!text.contains("hunter2-value"), "{text}");
            assert!(text.contains("KEEP_ME=still-here"), "{text}");
            return;
        }
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "services::environ_block::tests::a_scrubbed_value_is_gone_from_proc_environ",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .env("SCRUB_ME", "hunter2-value")
            .env("KEEP_ME", "still-here")
            .status()
            .unwrap();
        assert!(status.success());
    }
}
