//! Which live processes hold a string on their command line: how cases prove a secret
//! never reached a runtime's argv (`/proc/<pid>/cmdline`, readable on Linux for the
//! processes of the same user). Also which process listens on a port and how much memory
//! it holds, for cases that measure the server from outside.

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

/// The pid of the process holding a listening TCP socket on `port` (IPv4 or IPv6), found
/// through `/proc/net/tcp{,6}` (the socket's inode) and `/proc/<pid>/fd` (who holds it).
/// `None` when nothing on this machine listens there, or the holder is not ours to inspect.
pub fn pid_listening_on(port: u16) -> Option<u32> {
    let inodes: Vec<String> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|table| listening_inodes(&table, port))
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .find(|pid| {
            std::fs::read_dir(format!("/proc/{pid}/fd"))
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .any(|target| wanted.iter().any(|w| target.as_os_str() == w.as_str()))
        })
}

/// The inodes of the LISTEN (state `0A`) sockets on `port` in one `/proc/net/tcp` table.
fn listening_inodes(table: &str, port: u16) -> Vec<String> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let local = fields.get(1)?;
            let local_port = u16::from_str_radix(local.rsplit_once(':')?.1, 16).ok()?;
            let inode = fields.get(9)?;
            (local_port == port && fields.get(3) == Some(&"0A") && *inode != "0")
                .then(|| (*inode).to_owned())
        })
        .collect()
}

/// The resident set size of `pid` in bytes (`VmRSS` in `/proc/<pid>/status`).
pub fn resident_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::{command_lines_containing, listening_inodes, pid_listening_on, resident_bytes};

    #[test]
    fn the_listener_of_a_port_is_found() {
        let v4 = std::net::TcpListener::bind("127.0.0.1:0").expect("bind v4");
        let port = v4.local_addr().expect("addr").port();
        assert_eq!(pid_listening_on(port), Some(std::process::id()));
        // The client end of a connection (its own ephemeral port) is not a listener.
        let client = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        let client_port = client.local_addr().expect("addr").port();
        assert_eq!(pid_listening_on(client_port), None);
        drop(client);
        if let Ok(v6) = std::net::TcpListener::bind("[::1]:0") {
            let port = v6.local_addr().expect("addr").port();
            assert_eq!(pid_listening_on(port), Some(std::process::id()));
        }
        assert!(resident_bytes(std::process::id()).is_some_and(|b| b > 0));
    }

    #[test]
    fn proc_net_tcp_rows_are_read_by_state_and_port() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0 100 0 0 10 0
   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1000        0 4343 1 0 20 4 30 10 -1
   2: 00000000000000000000000001000000:1F91 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4444 1 0 100 0 0 10 0
";
        assert_eq!(listening_inodes(table, 8080), vec!["4242".to_string()]);
        assert_eq!(listening_inodes(table, 8081), vec!["4444".to_string()]);
        assert!(listening_inodes(table, 50000).is_empty());
    }

    #[test]
    fn the_command_line_scan_finds_a_live_process() {
        let marker = format!("svc-cmdline-probe-{}", std::process::id());
        let mut child = std::process::Command::new("sh")
            // The shell waits in its builtin `read` on a pipe nobody writes: it neither execs
            // (which would take the marker, its `$0`, off the command line) nor forks (a forked
            // child carries the same command line until it execs, and the scan would see two).
            .args(["-c", "read line", &marker])
            .stdin(std::process::Stdio::piped())
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
