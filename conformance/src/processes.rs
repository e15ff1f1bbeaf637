//! Which live processes hold a string on their command line: how cases prove a secret
//! never reached a runtime's argv (`/proc/<pid>/cmdline`, readable on Linux for the
//! processes of the same user).

/// `/proc/<pid>/cmdline` of every process whose command line contains `needle`.
pub fn command_lines_containing(needle: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .map(|raw| String::from_utf8_lossy(&raw).replace('\0', " "))
        .filter(|line| line.contains(needle))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::command_lines_containing;

    #[test]
    fn the_command_line_scan_finds_a_live_process() {
        let marker = format!("svc-cmdline-probe-{}", std::process::id());
        let mut child = std::process::Command::new("sh")
            .args(["-c", "sleep 5", &marker])
            .spawn()
            .expect("sh runs");
        // Right after spawn the child may not have exec'd yet: its command line is still ours.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut found = command_lines_containing(&marker);
        while found.is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
            found = command_lines_containing(&marker);
        }
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(command_lines_containing(&marker).is_empty());
    }
}
