//! `just bench` (file_ops part): the file routes through the whole server (pipeline, path
//! guard, link-safe opens), in process on loopback, against `cp` of the same file in the
//! same run.
//!
//! - read: GET /files/content of a `--mib N` (default 100) file, the body streamed into a
//!   file on the client side; versus `cp` of the same file. Throughput and ratio.
//! - write: PUT /files/content of the same file, the body streamed from the file; versus
//!   `cp`. Throughput and ratio.
//! - list: GET /files/list of one directory as it grows to 1,000, 10,000 and 100,000
//!   entries (the most one list answers: `MAX_LIST_ENTRIES`), p50 and p99 over `--seconds N`
//!   (default 3) per point; the `scale:` lines ("How cost grows" in the README).
//! - search: POST /files/search over a 50,000-file tree (`pattern` that matches in 50 files,
//!   and a `glob`), median of `--searches N` (default 5).
//!
//! Copies are measured in `--rounds N` (default 5) interleaved rounds, medians reported,
//! with two references for scale: a copy through user space (a read/write loop in 1 MiB
//! blocks; `cp` offloads the copy to the kernel with `copy_file_range`), and the same bytes
//! over one loopback TCP connection without HTTP or files (the transport's ceiling); and
//! the ordinary client's own floor, its GET from a server that is only `sendfile`.
//! Target: read and write at >= 0.9 of `cp`'s throughput. `--copies-only` stops after the
//! copies (for a profiler). `--quick`: one round, 1 s of lists at 1,000 entries only, one
//! search of each kind.

#[path = "support/raw_client.rs"]
#[allow(dead_code)]
mod raw_client;
// Shared with the other benches; this one uses only part of it.
#[path = "support/server.rs"]
#[allow(dead_code)]
mod server;
// Shared with the other benches; this one uses only part of it.
#[allow(dead_code)]
mod support;

use futures::StreamExt;
use server::serve;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{arg, arg_quick, curve, median, percentile};

fn mib_per_s(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / secs
}

/// `cp src dst` (the system's, with whatever copy offload it uses), timed.
fn cp(src: &Path, dst: &Path) -> f64 {
    let _ = std::fs::remove_file(dst);
    let started = Instant::now();
    let status = std::process::Command::new("cp")
        .arg(src)
        .arg(dst)
        .status()
        .unwrap();
    assert!(status.success());
    started.elapsed().as_secs_f64()
}

/// A copy through user space in 1 MiB blocks (`read` and `write`, no copy offload), timed:
/// what any copy that passes bytes through a process costs here.
fn user_copy(src: &Path, dst: &Path) -> f64 {
    let _ = std::fs::remove_file(dst);
    let started = Instant::now();
    let mut from = std::fs::File::open(src).unwrap();
    let mut to = std::fs::File::create(dst).unwrap();
    let mut buf = vec![0u8; 1024 * 1024];
    loop {
        let n = from.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        to.write_all(&buf[..n]).unwrap();
    }
    drop(to);
    started.elapsed().as_secs_f64()
}

/// `bytes` over one loopback TCP connection in 1 MiB writes, no HTTP and no file: the
/// transport's own ceiling on this machine, for scale.
async fn loopback(bytes: u64) -> f64 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let sink = tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut buf = vec![0u8; 1024 * 1024];
        let mut got = 0u64;
        loop {
            let n = socket.read(&mut buf).await.unwrap();
            if n == 0 {
                return got;
            }
            got += n as u64;
        }
    });
    let started = Instant::now();
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    let block = vec![7u8; 1024 * 1024];
    for _ in 0..bytes / block.len() as u64 {
        socket.write_all(&block).await.unwrap();
    }
    socket.shutdown().await.unwrap();
    assert_eq!(sink.await.unwrap(), bytes);
    started.elapsed().as_secs_f64()
}

/// An ordinary client's floor for a read: a server that is nothing but a fixed HTTP/1.1
/// head and `sendfile` of `src`, for every request on any connection (no framework, no
/// svc). The same client's GET from it shows what the client itself costs.
fn bare_file_server(src: PathBuf) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let src = src.clone();
            std::thread::spawn(move || answer_with_file(conn, &src));
        }
    });
    format!("http://{addr}")
}

fn answer_with_file(mut conn: std::net::TcpStream, src: &Path) {
    let _ = conn.set_nodelay(true);
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match conn.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        head.clear();
        let file = std::fs::File::open(src).unwrap();
        let len = file.metadata().unwrap().len();
        let answer = format!(
            "HTTP/1.1 200 OK\r\ncontent-length: {len}\r\ncontent-type: application/octet-stream\r\n\r\n"
        );
        if conn.write_all(answer.as_bytes()).is_err() {
            return;
        }
        if raw_client::sendfile_all(&conn, &file, len).is_err() {
            return;
        }
    }
}

/// GET the file through the server into `dst`, timed to the last byte written.
async fn read_through(client: &reqwest::Client, base: &str, src: &Path, dst: &Path) -> f64 {
    let _ = std::fs::remove_file(dst);
    let started = Instant::now();
    let resp = client
        .get(format!("{base}/files/content?path={}", src.display()))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    // The client writes on a thread of its own, as a separate process would.
    let (tx, rx) = std::sync::mpsc::sync_channel::<bytes::Bytes>(8);
    let dst_owned = dst.to_path_buf();
    // Chunks are hyper's large reads: written as they come (a buffer in between would copy
    // every byte once more).
    let writer = std::thread::spawn(move || {
        let mut file = std::fs::File::create(dst_owned).unwrap();
        for chunk in rx {
            file.write_all(&chunk).unwrap();
        }
    });
    let mut body = resp.bytes_stream();
    while let Some(chunk) = body.next().await {
        tx.send(chunk.unwrap()).unwrap();
    }
    drop(tx);
    writer.join().unwrap();
    started.elapsed().as_secs_f64()
}

/// PUT the file through the server to `dst`, the body read from `src` as it is sent.
async fn write_through(client: &reqwest::Client, base: &str, src: &Path, dst: &Path) -> f64 {
    let _ = std::fs::remove_file(dst);
    let started = Instant::now();
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<bytes::Bytes, std::io::Error>>(8);
    let src_owned = src.to_path_buf();
    std::thread::spawn(move || {
        let mut file = std::fs::File::open(src_owned).unwrap();
        // A ring of read buffers, each reused once hyper has sent (and dropped) what was
        // sent from it, as a client reading into a buffer and sending it does: fresh memory
        // per chunk would cost the client a page fault per 4 KiB.
        let mut ring: Vec<std::sync::Arc<Vec<u8>>> = Vec::new();
        for turn in 0.. {
            if ring.len() < 16 {
                ring.push(std::sync::Arc::new(vec![0; 512 * 1024]));
            }
            let slot = &mut ring[turn % 16];
            if std::sync::Arc::get_mut(slot).is_none() {
                *slot = std::sync::Arc::new(vec![0; 512 * 1024]); // still in flight
            }
            let buf = std::sync::Arc::get_mut(slot).unwrap();
            let mut n = 0;
            while n < buf.len() {
                match file.read(&mut buf[n..]).unwrap() {
                    0 => break,
                    got => n += got,
                }
            }
            if n == 0 {
                break;
            }
            let chunk = bytes::Bytes::from_owner(Filled(std::sync::Arc::clone(slot), n));
            if tx.blocking_send(Ok(chunk)).is_err() {
                break;
            }
        }
    });
    let stream =
        futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) });
    let len = std::fs::metadata(src).unwrap().len();
    let resp = client
        .put(format!("{base}/files/content?path={}", dst.display()))
        .header("content-length", len)
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .unwrap();
    let status = resp.status();
    let text = resp.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
    started.elapsed().as_secs_f64()
}

/// The first `len` bytes of a shared read buffer, as the owner of a `Bytes`.
struct Filled(std::sync::Arc<Vec<u8>>, usize);

impl AsRef<[u8]> for Filled {
    fn as_ref(&self) -> &[u8] {
        &self.0[..self.1]
    }
}

fn same(a: &Path, b: &Path) -> bool {
    let (ma, mb) = (
        std::fs::metadata(a).unwrap().len(),
        std::fs::metadata(b).unwrap().len(),
    );
    ma == mb && std::fs::read(a).unwrap() == std::fs::read(b).unwrap()
}

/// Files `f{from}` up to `f{to - 1}` in `dir` (made if missing), each with `content(i)`.
fn many_files(dir: &Path, from: usize, to: usize, content: impl Fn(usize) -> String) {
    std::fs::create_dir_all(dir).unwrap();
    for i in from..to {
        std::fs::write(dir.join(format!("f{i:05}.txt")), content(i)).unwrap();
    }
}

/// GET /files/list of `dir` (`entries` in it) for `seconds` (at least 5 calls): p50, p99
/// and the number of calls, in ms.
async fn list_for(
    client: &reqwest::Client,
    base: &str,
    dir: &Path,
    entries: usize,
    seconds: u64,
) -> (f64, f64, usize) {
    let url = format!("{base}/files/list?path={}", dir.display());
    let first = client.get(&url).send().await.unwrap();
    assert_eq!(first.status(), 200);
    let body: serde_json::Value = first.json().await.unwrap();
    assert_eq!(body["entries"].as_array().unwrap().len(), entries);
    // `truncated` is written only when true.
    assert_ne!(body["truncated"], true, "{entries} entries fit one list");
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut lats = Vec::new();
    while Instant::now() < deadline || lats.len() < 5 {
        let started = Instant::now();
        let resp = client.get(&url).send().await.unwrap();
        let _ = resp.bytes().await.unwrap();
        lats.push(started.elapsed().as_secs_f64() * 1000.0);
    }
    let n = lats.len();
    (percentile(lats.clone(), 0.5), percentile(lats, 0.99), n)
}

fn main() {
    let mib = arg("--mib", 100);
    let rounds = arg_quick("--rounds", 5, 1).max(1) as usize;
    let seconds = arg_quick("--seconds", 3, 1);
    let searches = arg_quick("--searches", 5, 1).max(1) as usize;
    // `--copies-only`: the read and write measures alone (e.g. under a profiler).
    let copies_only = std::env::args().any(|a| a == "--copies-only");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        // Beside the build (a disk, as a workspace is), not a tmpfs /tmp.
        // (`target/` of the checkout, made if the build went to another CARGO_TARGET_DIR.)
        let target = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target");
        std::fs::create_dir_all(&target).unwrap();
        let dir = tempfile::Builder::new()
            .prefix("bench-files-")
            .tempdir_in(&target)
            .unwrap();
        let dir = dir.path().to_path_buf();
        let bytes = mib * 1024 * 1024;
        let limit = (bytes * 2).to_string();
        let (base, _state) = serve(&dir, &[("SVC_SERVER_MAX_BODY_BYTES", limit.as_str())]).await;
        let client = reqwest::Client::builder().no_proxy().build().unwrap();

        let src = dir.join("big.bin");
        {
            // Incompressible content, written once.
            let mut out = std::fs::File::create(&src).unwrap();
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            let mut block = vec![0u8; 1024 * 1024];
            for _ in 0..mib {
                for word in block.chunks_mut(8) {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    word.copy_from_slice(&state.to_le_bytes());
                }
                out.write_all(&block).unwrap();
            }
        }
        let copied = dir.join("copy.bin");
        let (mut cps, mut reads, mut writes, mut users, mut wires) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
        let (mut raw_reads, mut raw_writes, mut floors) = (Vec::new(), Vec::new(), Vec::new());
        let mut client_floors = Vec::new();
        let bare_base = bare_file_server(src.clone());
        let target_of = |path: &Path| format!("/files/content?path={}", path.display());
        // A warm-up of each, so every round finds the source in the page cache.
        cp(&src, &copied);
        read_through(&client, &base, &src, &copied).await;
        for round in 0..rounds {
            let order = [0, 1, 2, 3, 4, 5, 6, 7, 8].map(|i| (i + round) % 9);
            for which in order {
                match which {
                    0 => cps.push(cp(&src, &copied)),
                    3 => users.push(user_copy(&src, &copied)),
                    4 => wires.push(loopback(bytes).await),
                    8 => {
                        client_floors.push(read_through(&client, &bare_base, &src, &copied).await);
                        assert!(same(&src, &copied), "read from the bare server differs");
                    }
                    1 => {
                        reads.push(read_through(&client, &base, &src, &copied).await);
                        assert!(same(&src, &copied), "read through the server differs");
                    }
                    5 => {
                        let (base, target, dst) = (base.clone(), target_of(&src), copied.clone());
                        let secs = tokio::task::spawn_blocking(move || {
                            raw_client::get_splice(&base, &target, &dst)
                        });
                        raw_reads.push(secs.await.unwrap());
                        assert!(same(&src, &copied), "read through the server differs");
                    }
                    7 => {
                        let (from, to) = (src.clone(), copied.clone());
                        let secs =
                            tokio::task::spawn_blocking(move || raw_client::file_over_tcp(&from, &to));
                        floors.push(secs.await.unwrap());
                        assert!(same(&src, &copied), "the file over TCP differs");
                    }
                    6 => {
                        let _ = std::fs::remove_file(&copied);
                        let (base, target, from) = (base.clone(), target_of(&copied), src.clone());
                        let secs = tokio::task::spawn_blocking(move || {
                            raw_client::put_sendfile(&base, &target, &from)
                        });
                        raw_writes.push(secs.await.unwrap());
                        assert!(same(&src, &copied), "write through the server differs");
                    }
                    _ => {
                        writes.push(write_through(&client, &base, &src, &copied).await);
                        assert!(same(&src, &copied), "write through the server differs");
                    }
                }
            }
        }
        let (cp_s, read_s, write_s, user_s, wire_s) = (
            median(cps.clone()),
            median(reads),
            median(writes),
            median(users),
            median(wires),
        );
        println!("copy of a {mib} MiB file, medians of {rounds} interleaved rounds:");
        println!(
            "  cp                        {:>8.0} MiB/s  ({:.0} ms; rounds {:?})",
            mib_per_s(bytes, cp_s),
            cp_s * 1000.0,
            cps.iter().map(|s| (s * 1000.0).round()).collect::<Vec<_>>()
        );
        println!(
            "  read/write loop, 1 MiB    {:>8.0} MiB/s  ({:.0} ms)  ratio to cp {:.2}",
            mib_per_s(bytes, user_s),
            user_s * 1000.0,
            cp_s / user_s
        );
        println!(
            "  loopback TCP, no HTTP     {:>8.0} MiB/s  ({:.0} ms)  ratio to cp {:.2}",
            mib_per_s(bytes, wire_s),
            wire_s * 1000.0,
            cp_s / wire_s
        );
        println!(
            "  GET /files/content        {:>8.0} MiB/s  ({:.0} ms)  ratio to cp {:.2}",
            mib_per_s(bytes, read_s),
            read_s * 1000.0,
            cp_s / read_s
        );
        let client_floor_s = median(client_floors);
        println!(
            "  GET, same client, from a server that is only sendfile (this client's floor)\n  \
             {:>31.0} MiB/s  ({:.0} ms)  ratio to cp {:.2}; GET /files/content to it {:.2}",
            mib_per_s(bytes, client_floor_s),
            client_floor_s * 1000.0,
            cp_s / client_floor_s,
            client_floor_s / read_s
        );
        println!(
            "  PUT /files/content        {:>8.0} MiB/s  ({:.0} ms)  ratio to cp {:.2}",
            mib_per_s(bytes, write_s),
            write_s * 1000.0,
            cp_s / write_s
        );
        let (raw_read_s, raw_write_s) = (median(raw_reads), median(raw_writes));
        let floor_s = median(floors);
        println!("  the same through a client that copies nothing itself (sendfile out, splice in),");
        println!("  and its floor: the file over one loopback TCP connection, no HTTP, no server:");
        println!(
            "  file -> TCP -> file         {:>8.0} MiB/s  ({:.0} ms)  ratio to cp {:.2}",
            mib_per_s(bytes, floor_s),
            floor_s * 1000.0,
            cp_s / floor_s
        );
        println!(
            "  GET /files/content        {:>8.0} MiB/s  ({:.0} ms)  ratio to cp {:.2}",
            mib_per_s(bytes, raw_read_s),
            raw_read_s * 1000.0,
            cp_s / raw_read_s
        );
        println!("      ratio to the TCP floor {:.2}", floor_s / raw_read_s);
        println!(
            "  PUT /files/content        {:>8.0} MiB/s  ({:.0} ms)  ratio to cp {:.2}",
            mib_per_s(bytes, raw_write_s),
            raw_write_s * 1000.0,
            cp_s / raw_write_s
        );
        println!("      ratio to the TCP floor {:.2}", floor_s / raw_write_s);
        std::fs::remove_file(&src).unwrap();
        std::fs::remove_file(&copied).unwrap();
        if copies_only {
            let _ = std::fs::remove_dir_all(&dir);
            return;
        }

        // One directory grown point by point: each list reads every entry it names.
        let listed = dir.join("listed");
        let mut made = 0;
        for entries in curve(&[1_000, 10_000, 100_000]) {
            many_files(&listed, made, entries, |i| format!("{i}\n"));
            made = entries;
            let (p50, p99, n) = list_for(&client, &base, &listed, entries, seconds).await;
            println!(
                "GET /files/list, {entries} entries: p50 {p50:.1} ms, p99 {p99:.1} ms ({n} calls)"
            );
            println!(
                "scale: GET /files/list {entries:>7} entries: p50 {p50:8.1} ms, p99 {p99:8.1} ms, p50 per entry {:.2} us",
                p50 * 1000.0 / entries as f64
            );
        }
        std::fs::remove_dir_all(&listed).unwrap();

        let tree = dir.join("fifty-thousand");
        for d in 0..50 {
            many_files(&tree.join(format!("d{d:02}")), 0, 1000, |i| {
                if i == 500 {
                    format!("fn f{d}() {{}}\n// needle {d}\nmore text\n")
                } else {
                    format!("fn f{i}() {{}}\n// nothing here {i}\nmore text\n")
                }
            });
        }
        for (what, body) in [
            (
                "pattern over contents",
                serde_json::json!({"path": tree, "pattern": "needle [0-9]+"}),
            ),
            (
                "glob over names",
                serde_json::json!({"path": tree, "glob": "f0050?.txt", "max_results": 10000}),
            ),
        ] {
            let mut times = Vec::new();
            let mut found = 0;
            for _ in 0..searches {
                let started = Instant::now();
                let resp = client
                    .post(format!("{base}/files/search"))
                    .json(&body)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(resp.status(), 200);
                let v: serde_json::Value = resp.json().await.unwrap();
                times.push(started.elapsed().as_secs_f64() * 1000.0);
                found = v["matches"].as_array().unwrap().len();
                assert_eq!(v["truncated"], false);
            }
            println!(
                "POST /files/search, 50,000 files, {what}: median {:.0} ms ({found} matches, {searches} runs)",
                median(times)
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    });
}
