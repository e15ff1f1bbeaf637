//! `just bench` (engine part): the local engine through its client, against the physical
//! floor measured in the same run.
//!
//! - cold start: from nothing (no engine, empty state folder) to the first answered request
//!   (`health`), the client starting the engine itself; floor: spawning `svc --version` and
//!   waiting for it. Target: under 50 ms.
//! - create to first command: `POST /sandboxes`, then `commands/run` of `true`; isolated
//!   (the default) target p50 under 20 ms; floor: spawning bubblewrap with the machine's
//!   namespaces running `true`, and waiting (`isolation: none`: making a folder and spawning
//!   `true` in it).
//! - `commands/run` of `true` versus spawning `true` directly (p50 and p99); isolated target:
//!   under 1.5 ms added; the isolated run also against its own floor, `nsenter` into the
//!   sandbox's machine running `true` (what entering costs any engine). Both run isolated
//!   and with `isolation: none`, same run. Floor over HTTP, each round beside them: a bare
//!   axum server on a 2-worker runtime of its own answering a POST by spawning `true` with
//!   `tokio::process`, read by a reqwest client (what any engine reached over loopback HTTP
//!   adds to the spawn on this machine; what svc adds over it is its own).
//! - time to the first `stdout` event of `commands/stream` of `echo hi`, versus spawning
//!   `echo hi` and reading its first byte.
//! - live sandboxes, a curve at 10 and 100 idle isolated sandboxes (each entered once): a
//!   create to its first command with that many live, and the memory held per sandbox:
//!   what the engine grew by plus every process of the machines (bwrap, its pid 1, the
//!   keeper), each counted by its proportional share (`Pss`, so shared libraries are not
//!   counted 100 times); target under 2 MiB at 100; floor: as many bare bubblewrap
//!   machines running `sleep infinity`, counted the same way (after the sandboxes are
//!   gone). Also the descriptors and processes the engine holds per sandbox, against its
//!   descriptor limit. The `scale:` lines ("How cost grows" in the README).
//! - files PUT and GET of 100 MiB (`--mib N`) versus `cp` of the same file.
//! - the `rest` hop: a second engine (its own state folder and token) reached directly and
//!   through the first engine's `rest` provider: `commands/run` of `true` (p50 and p99,
//!   the added ms per command) and a 64 MiB (`--rest-mib N`) file PUT and GET (MiB/s both
//!   ways, the added ms per MiB).
//!
//! `--quick`: one round of each measure, the live sandboxes at 10 only.

#[path = "support/procfs.rs"]
mod procfs;
#[path = "support/raw_client.rs"]
#[allow(dead_code)]
mod raw_client;
#[path = "support/relay.rs"]
mod relay;
#[path = "support/server.rs"]
#[allow(dead_code)]
mod server;
#[path = "support/spawn_server.rs"]
mod spawn_server;
// Shared with the other benches; this one uses only part of it.
#[allow(dead_code)]
mod support;

use futures::StreamExt;
use procfs::{descendants, descriptor_limit, pss_kib};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{
    arg, arg_quick, curve, first_byte, median, ms, open_descriptors, percentile, spawn_and_wait,
};
use svc::client::{Client, ClientOptions, CommandEvent, Upload, WriteOptions};
use svc::wire::{CommandBody, Connection, CreateSandbox, Isolation};

fn svc_binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_svc"))
}

fn client(state: &Path) -> Client {
    Client::new(ClientOptions {
        state_dir: state.to_path_buf(),
        program: Some(svc_binary()),
        ..ClientOptions::default()
    })
    .expect("a client")
}

async fn stop(client: &Client) {
    let _ = client.stop_engine(Duration::from_secs(10)).await;
}

async fn cold_start(rounds: u64) {
    let mut starts = Vec::new();
    let mut floors = Vec::new();
    for _ in 0..rounds {
        let started = Instant::now();
        let status = std::process::Command::new(svc_binary())
            .arg("--version")
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
        floors.push(ms(started.elapsed()));

        let state = tempfile::tempdir().unwrap();
        let client = client(state.path());
        let started = Instant::now();
        client.health().await.expect("the client starts an engine");
        starts.push(ms(started.elapsed()));
        stop(&client).await;
    }
    let (p50, floor) = (median(starts.clone()), median(floors));
    println!(
        "engine cold start (client, nothing → first answer): p50 {p50:.1} ms, p99 {:.1} ms; \
         floor (spawn `svc --version`, wait) {floor:.1} ms; ratio {:.2}; target < 50 ms: {}",
        percentile(starts, 0.99),
        p50 / floor,
        if p50 < 50.0 { "met" } else { "NOT met" }
    );
}

fn program(cmd: &str, args: &[&str]) -> CommandBody {
    CommandBody {
        cmd: cmd.into(),
        args: Some(args.iter().map(|a| a.to_string()).collect()),
        ..CommandBody::default()
    }
}

fn kind(isolation: Isolation) -> CreateSandbox {
    CreateSandbox {
        isolation: Some(isolation),
        ..CreateSandbox::default()
    }
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}

/// The floor over HTTP ([`spawn_server`]): its base URL and the client that reads it.
struct HttpFloor {
    base: String,
    client: reqwest::Client,
}

async fn commands(
    client: &Client,
    state: &Path,
    (rounds, creates): (u64, u64),
    isolation: Isolation,
    http_floor: &HttpFloor,
) {
    let label = match isolation {
        Isolation::Namespaces => "isolated",
        Isolation::None => "isolation none",
    };
    let isolated = isolation == Isolation::Namespaces;
    let mut created = Vec::new();
    for _ in 0..creates {
        let started = Instant::now();
        let sandbox = client.create(&kind(isolation)).await.unwrap();
        let result = client
            .run(&sandbox.sandbox_id, &program("true", &[]))
            .await
            .unwrap();
        assert_eq!(result.exit_code, 0);
        created.push(ms(started.elapsed()));
        client.kill(&sandbox.sandbox_id).await.unwrap();
    }
    let p50 = median(created.clone());
    // What any engine must do for such a sandbox, done directly: start bubblewrap with the
    // machine's namespaces running `true`; without isolation, make its folder and spawn `true`.
    let mut bare = Vec::new();
    for _ in 0..creates {
        bare.push(if isolated {
            let args: Vec<&str> = BARE_MACHINE.iter().copied().chain(["true"]).collect();
            ms(spawn_and_wait("bwrap", &args).await)
        } else {
            let started = Instant::now();
            let folder = tempfile::tempdir().unwrap();
            spawn_and_wait("true", &[]).await;
            drop(folder);
            ms(started.elapsed())
        });
    }
    let f50 = median(bare);
    println!(
        "[{label}] sandbox create → first command answered: p50 {p50:.1} ms, p99 {:.1} ms; \
         floor ({}) p50 {f50:.1} ms, ratio {:.2}{}",
        percentile(created, 0.99),
        if isolated {
            "spawn bwrap with the machine's namespaces running `true`, wait"
        } else {
            "make a folder, spawn `true` and wait, remove the folder"
        },
        p50 / f50,
        if isolated {
            format!("; target < 20 ms: {}", met(p50 < 20.0))
        } else {
            String::new()
        }
    );

    let sandbox = client.create(&kind(isolation)).await.unwrap();
    let id = sandbox.sandbox_id;
    let enter = isolated.then(|| nsenter_args(state, &id));
    let (mut via, mut floor, mut entered, mut bare) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        floor.push(ms(spawn_and_wait("true", &[]).await));
        bare.push(ms(spawn_server::run_once(
            &http_floor.client,
            &http_floor.base,
            "true",
        )
        .await));
        if let Some(args) = &enter {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            entered.push(ms(spawn_and_wait("nsenter", &args).await));
        }
        let started = Instant::now();
        let result = client.run(&id, &program("true", &[])).await.unwrap();
        assert_eq!(result.exit_code, 0);
        via.push(ms(started.elapsed()));
    }
    let (p50, f50) = (median(via.clone()), median(floor.clone()));
    let b50 = median(bare.clone());
    if !entered.is_empty() {
        let e50 = median(entered.clone());
        println!(
            "[{label}] floor of entering: `nsenter` into the sandbox's machine running `true`: \
             p50 {e50:.2} ms, p99 {:.2} ms ({:+.2} ms over spawning `true`); commands/run \
             added over it p50 {:.2} ms, ratio {:.2}",
            percentile(entered, 0.99),
            e50 - f50,
            p50 - e50,
            p50 / e50
        );
    }
    println!(
        "[{label}] commands/run `true`: p50 {p50:.2} ms, p99 {:.2} ms; direct spawn p50 \
         {f50:.2} ms, p99 {:.2} ms; added p50 {:.2} ms, ratio {:.2}{}",
        percentile(via, 0.99),
        percentile(floor, 0.99),
        p50 - f50,
        p50 / f50,
        if isolated {
            format!("; target < 1.5 ms added: {}", met(p50 - f50 < 1.5))
        } else {
            String::new()
        }
    );
    println!(
        "[{label}] floor over HTTP: bare axum spawning `true` per POST (its own 2-worker \
         runtime, a reqwest client): p50 {b50:.2} ms, p99 {:.2} ms ({:+.2} ms over the direct \
         spawn); commands/run over it p50 {:+.2} ms",
        percentile(bare, 0.99),
        b50 - f50,
        p50 - b50
    );

    let (mut via, mut floor) = (Vec::new(), Vec::new());
    for _ in 0..rounds.min(100) {
        floor.push(ms(first_byte("echo", &["hi"]).await));
        let started = Instant::now();
        let mut events = client.stream(&id, &program("echo", &["hi"])).await.unwrap();
        let mut first = None;
        while let Some(event) = events.next().await {
            if let CommandEvent::Stdout(_) = event.unwrap() {
                first.get_or_insert_with(|| started.elapsed());
            }
        }
        via.push(ms(first.expect("a stdout event")));
    }
    let (p50, f50) = (median(via), median(floor));
    println!(
        "[{label}] commands/stream first stdout event: p50 {p50:.2} ms; direct first byte p50 {f50:.2} ms; \
         added {:.2} ms, ratio {:.2}",
        p50 - f50,
        p50 / f50
    );
    client.kill(&id).await.unwrap();
}

/// bubblewrap's arguments for a bare machine like a sandbox's (its namespaces, the system
/// read-only, its own `/proc` and `/dev`), the program to follow.
const BARE_MACHINE: &[&str] = &[
    "--unshare-user",
    "--unshare-pid",
    "--unshare-ipc",
    "--unshare-uts",
    "--unshare-cgroup-try",
    "--die-with-parent",
    "--ro-bind",
    "/usr",
    "/usr",
    "--symlink",
    "usr/bin",
    "/bin",
    "--symlink",
    "usr/lib",
    "/lib",
    "--symlink",
    "usr/lib64",
    "/lib64",
    "--proc",
    "/proc",
    "--dev",
    "/dev",
];

/// `nsenter`'s arguments to run `true` in sandbox `id`'s machine as the engine enters it
/// (its record in the engine's state folder names the machine's pid 1).
fn nsenter_args(state: &Path, id: &str) -> Vec<String> {
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(state.join("sandboxes").join(id).join("sandbox.json")).unwrap(),
    )
    .unwrap();
    let machine = &record["machine"];
    let mut args = vec![
        format!(
            "--target={}",
            machine["pid"]
                .as_u64()
                .expect("an isolated sandbox's machine")
        ),
        "--user".into(),
        "--mount".into(),
        "--pid".into(),
        "--ipc".into(),
        "--uts".into(),
    ];
    if machine["own_network"].as_bool() == Some(true) {
        args.push("--net".into());
    }
    args.extend(
        [
            "--setuid=1000",
            "--setgid=1000",
            "--wdns=/home/user",
            "--",
            "true",
        ]
        .map(String::from),
    );
    args
}

/// The floor of an idle machine's memory: `count` bare bubblewrap machines running
/// `sleep infinity`, every process counted by its proportional share, per machine in MiB.
fn bare_machines_mib(count: usize) -> f64 {
    let mut machines: Vec<std::process::Child> = (0..count)
        .map(|_| {
            std::process::Command::new("bwrap")
                .args(BARE_MACHINE)
                .args(["sleep", "infinity"])
                .stdin(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let kib: u64 = machines
        .iter()
        .flat_map(|m| std::iter::once(m.id()).chain(descendants(m.id())))
        .map(pss_kib)
        .sum();
    for machine in &mut machines {
        let _ = machine.kill();
        let _ = machine.wait();
    }
    kib as f64 / count as f64 / 1024.0
}

/// How the engine's cost grows with the sandboxes it keeps: at each point, `count` live
/// isolated sandboxes (each entered once, as a used sandbox is), the time from a create to
/// the first command of one more (killed after; `creates` rounds), and what each live one
/// holds: memory (the engine's growth plus the proportional share of every process it
/// started for them), descriptors and processes.
async fn live_sandboxes(client: &Client, points: &[usize], creates: u64) {
    let engine = client.health().await.unwrap().pid;
    let (pss_before, fds_before) = (pss_kib(engine), open_descriptors(engine));
    let mut ids = Vec::new();
    let mut held = Vec::new();
    for &count in points {
        while ids.len() < count {
            let id = client
                .create(&kind(Isolation::Namespaces))
                .await
                .unwrap()
                .sandbox_id;
            client.run(&id, &program("true", &[])).await.unwrap();
            ids.push(id);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let grown = pss_kib(engine).saturating_sub(pss_before);
        let processes = descendants(engine);
        let machines: u64 = processes.iter().copied().map(pss_kib).sum();
        let descriptors = open_descriptors(engine).saturating_sub(fds_before);
        let mut created = Vec::new();
        for _ in 0..creates {
            let started = Instant::now();
            let one = client.create(&kind(Isolation::Namespaces)).await.unwrap();
            let result = client
                .run(&one.sandbox_id, &program("true", &[]))
                .await
                .unwrap();
            assert_eq!(result.exit_code, 0);
            created.push(ms(started.elapsed()));
            client.kill(&one.sandbox_id).await.unwrap();
        }
        held.push((
            count,
            grown,
            machines,
            descriptors,
            processes.len(),
            created,
        ));
    }
    let limit = descriptor_limit(engine);
    for id in &ids {
        client.kill(id).await.unwrap();
    }
    // The floors once the sandboxes are gone: beside them, the bare machines' shared pages
    // would be split with the sandboxes' and look smaller.
    for (count, grown, machines, descriptors, processes, created) in held {
        let per = (grown + machines) as f64 / count as f64 / 1024.0;
        let floor = bare_machines_mib(count);
        println!(
            "memory per idle isolated sandbox at {count}: {per:.2} MiB (engine grew {:.1} MiB, \
             machines {:.1} MiB, proportional set size); floor ({count} bare bwrap machines \
             running `sleep infinity`) {floor:.2} MiB each, ratio {:.2}; target < 2 MiB: {}",
            grown as f64 / 1024.0,
            machines as f64 / 1024.0,
            per / floor,
            met(per < 2.0)
        );
        println!(
            "scale: engine with {count:>3} live sandboxes: create to first command p50 {:5.1} ms, \
             p99 {:5.1} ms; memory per sandbox {per:.2} MiB (floor {floor:.2}); per sandbox \
             {:.1} descriptors in the engine (limit {limit}) and {:.1} processes",
            median(created.clone()),
            percentile(created, 0.99),
            descriptors as f64 / count as f64,
            processes as f64 / count as f64
        );
    }
}

async fn files(client: &Client, mib: u64, copies: u64) {
    let work = tempfile::tempdir().unwrap();
    let source = support::source_file(work.path(), mib);
    let sandbox = client.create(&CreateSandbox::default()).await.unwrap();
    let id = sandbox.sandbox_id;
    let (mut put, mut get, mut cp, mut tcp) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for round in 0..copies {
        let target = work.path().join(format!("cp-{round}.bin"));
        cp.push(support::cp_once(&source, &target));
        // The transport's floor: the file over one loopback TCP connection, sent with
        // `sendfile` and spliced into a file, no HTTP and no engine.
        let over = work.path().join(format!("tcp-{round}.bin"));
        tcp.push(raw_client::file_over_tcp(&source, &over) * 1000.0);
        let _ = std::fs::remove_file(&over);

        let started = Instant::now();
        let entry = client
            .write_file(
                &id,
                "big.bin",
                &Upload::File(source.clone()),
                WriteOptions::default(),
                None,
            )
            .await
            .unwrap();
        put.push(ms(started.elapsed()));
        assert_eq!(entry.size, mib * 1024 * 1024);

        let out = work.path().join(format!("get-{round}.bin"));
        let started = Instant::now();
        let mut file = tokio::fs::File::create(&out).await.unwrap();
        let n = client
            .read_file_to(&id, "big.bin", &mut file, None)
            .await
            .unwrap();
        get.push(ms(started.elapsed()));
        assert_eq!(n, mib * 1024 * 1024);
        std::fs::remove_file(&out).unwrap();
        // Each round writes a new file, as `cp` does: a write over an existing file pays for
        // dropping the old one's pages (and on ext4 a flush of the new one's), which `cp`
        // onto a fresh target does not.
        client.remove(&id, "big.bin", false).await.unwrap();
    }
    let (put, get, cp, tcp) = (median(put), median(get), median(cp), median(tcp));
    let rate = |t: f64| mib as f64 / (t / 1000.0);
    println!(
        "files {mib} MiB floors: cp {cp:.0} ms ({:.0} MiB/s); the file over loopback TCP (sendfile \
         out, splice in) {tcp:.0} ms ({:.0} MiB/s, {:.2} of cp); the engine to that floor: PUT \
         {:.2}, GET {:.2}",
        rate(cp),
        rate(tcp),
        cp / tcp,
        tcp / put,
        tcp / get
    );
    println!(
        "files {mib} MiB: PUT {put:.0} ms ({:.0} MiB/s), GET {get:.0} ms ({:.0} MiB/s); \
         cp {cp:.0} ms ({:.0} MiB/s); throughput ratio to cp: PUT {:.2}, GET {:.2}",
        rate(put),
        rate(get),
        rate(cp),
        cp / put,
        cp / get
    );
    client.kill(&id).await.unwrap();
}

/// A PUT then a GET of `source` (`mib` MiB) through `client`: their times in ms.
async fn put_get(client: &Client, id: &str, source: &Path, mib: u64, out: &Path) -> (f64, f64) {
    let started = Instant::now();
    let upload = Upload::File(source.to_path_buf());
    let entry = client
        .write_file(id, "hop.bin", &upload, WriteOptions::default(), None)
        .await
        .unwrap();
    let put = ms(started.elapsed());
    assert_eq!(entry.size, mib * 1024 * 1024);
    let started = Instant::now();
    let mut file = tokio::fs::File::create(out).await.unwrap();
    let n = client
        .read_file_to(id, "hop.bin", &mut file, None)
        .await
        .unwrap();
    let get = ms(started.elapsed());
    assert_eq!(n, mib * 1024 * 1024);
    std::fs::remove_file(out).unwrap();
    // The next round writes a new file again (see `files`).
    client.remove(id, "hop.bin", false).await.unwrap();
    (put, get)
}

/// The `rest` hop's cost: the same sandbox of a second engine, reached directly and
/// through the first engine (`front_state`'s) with `provider: rest`, turn about.
async fn rest_hop(front_state: &Path, rounds: u64, mib: u64, copies: u64) {
    let remote_state = tempfile::tempdir().unwrap();
    let direct = client(remote_state.path());
    direct.health().await.expect("the second engine starts");
    let remote = direct.descriptor().expect("its descriptor");
    let via = Client::new(ClientOptions {
        state_dir: front_state.to_path_buf(),
        program: Some(svc_binary()),
        connection: Connection {
            provider: Some("rest".into()),
            api_url: Some(format!("http://{}:{}", remote.host, remote.port)),
            api_key: Some(remote.token.clone()),
            ..Connection::default()
        },
        ..ClientOptions::default()
    })
    .expect("a client of the front");
    // Both reach the second engine as its default account, so they share the sandbox.
    let id = direct
        .create(&CreateSandbox::default())
        .await
        .unwrap()
        .sandbox_id;
    let run = program("true", &[]);
    assert_eq!(
        via.run(&id, &run).await.unwrap().exit_code,
        0,
        "the hop works"
    );
    let (mut straight, mut hopped) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let started = Instant::now();
        assert_eq!(direct.run(&id, &run).await.unwrap().exit_code, 0);
        straight.push(ms(started.elapsed()));
        let started = Instant::now();
        assert_eq!(via.run(&id, &run).await.unwrap().exit_code, 0);
        hopped.push(ms(started.elapsed()));
    }
    let (d50, v50) = (median(straight.clone()), median(hopped.clone()));
    let (d99, v99) = (percentile(straight, 0.99), percentile(hopped, 0.99));
    println!(
        "rest hop, commands/run `true`: via rest p50 {v50:.2} ms, p99 {v99:.2} ms; direct p50 \
         {d50:.2} ms, p99 {d99:.2} ms; added p50 {:.2} ms, p99 {:.2} ms per command",
        v50 - d50,
        v99 - d99
    );

    // The floor of a hop: the same client reaching the second engine through a bare
    // splice relay (`support/relay.rs`), by a copy of its descriptor naming the relay.
    let relayed_state = tempfile::tempdir().unwrap();
    let target: std::net::SocketAddr = format!("{}:{}", remote.host, remote.port)
        .parse()
        .expect("the engine's address");
    let relay = relay::start(target);
    let mut descriptor: serde_json::Value = serde_json::from_slice(
        &std::fs::read(remote_state.path().join("engine.json")).expect("its descriptor file"),
    )
    .unwrap();
    descriptor["port"] = relay.port().into();
    std::fs::write(
        relayed_state.path().join("engine.json"),
        serde_json::to_vec(&descriptor).unwrap(),
    )
    .unwrap();
    let relayed = Client::new(ClientOptions {
        state_dir: relayed_state.path().to_path_buf(),
        program: Some(svc_binary()),
        autostart: false,
        ..ClientOptions::default()
    })
    .expect("a client through the relay");

    let work = tempfile::tempdir().unwrap();
    let source = support::source_file(work.path(), mib);
    let out = work.path().join("out.bin");
    let (mut put, mut get) = (
        (Vec::new(), Vec::new(), Vec::new()),
        (Vec::new(), Vec::new(), Vec::new()),
    );
    for _ in 0..copies {
        let (p, g) = put_get(&direct, &id, &source, mib, &out).await;
        put.0.push(p);
        get.0.push(g);
        let (p, g) = put_get(&via, &id, &source, mib, &out).await;
        put.1.push(p);
        get.1.push(g);
        let (p, g) = put_get(&relayed, &id, &source, mib, &out).await;
        put.2.push(p);
        get.2.push(g);
    }
    let rate = |t: f64| mib as f64 / (t / 1000.0);
    let (dp, vp, fp) = (median(put.0), median(put.1), median(put.2));
    let (dg, vg, fg) = (median(get.0), median(get.1), median(get.2));
    println!(
        "rest hop, files {mib} MiB: PUT via rest {vp:.0} ms ({:.0} MiB/s), direct {dp:.0} ms \
         ({:.0} MiB/s), added {:.2} ms per MiB; GET via rest {vg:.0} ms ({:.0} MiB/s), direct \
         {dg:.0} ms ({:.0} MiB/s), added {:.2} ms per MiB",
        rate(vp),
        rate(dp),
        (vp - dp) / mib as f64,
        rate(vg),
        rate(dg),
        (vg - dg) / mib as f64
    );
    println!(
        "rest hop, files {mib} MiB, ratio to direct: PUT {:.2}, GET {:.2}; floor (a bare splice \
         relay in between, same client): PUT {fp:.0} ms ({:.2} of direct), GET {fg:.0} ms ({:.2} \
         of direct); the hop to its floor: PUT {:.2}, GET {:.2}",
        dp / vp,
        dg / vg,
        dp / fp,
        dg / fg,
        fp / vp,
        fg / vg
    );
    direct.kill(&id).await.unwrap();
    stop(&direct).await;
}

fn main() {
    let rounds = arg_quick("--rounds", 300, 1);
    let creates = arg_quick("--creates", 20, 1);
    let mib = arg("--mib", 100);
    let rest_mib = arg("--rest-mib", 64);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        cold_start(arg_quick("--starts", 10, 1)).await;
        let state = tempfile::tempdir().unwrap();
        let client = client(state.path());
        let http_floor = HttpFloor {
            base: spawn_server::start(),
            client: spawn_server::client(),
        };
        for isolation in [Isolation::Namespaces, Isolation::None] {
            commands(
                &client,
                state.path(),
                (rounds, creates),
                isolation,
                &http_floor,
            )
            .await;
        }
        live_sandboxes(&client, &curve(&[10, 100]), creates).await;
        let copies = arg_quick("--copies", 3, 1);
        files(&client, mib, copies).await;
        rest_hop(state.path(), rounds, rest_mib, copies).await;
        stop(&client).await;
    });
}
