//! The client library against a real engine (the built `svc` binary, started by the client
//! itself): finding and starting an engine, surviving its restart, a 401 after a restart on
//! the same port, typed errors, and the routes as typed calls.

use crate::engine_cli::{Fixture, sigkill, svc_bin, wait_gone};
use futures::StreamExt;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;
use svc::client::{Client, ClientOptions, CommandEvent, Upload, WriteOptions};
use svc::wire::{CodeRunBody, CommandBody, CreateContext, CreateSandbox};

fn client(fx: &Fixture) -> Client {
    Client::new(ClientOptions {
        state_dir: fx.state_dir().to_path_buf(),
        program: Some(svc_bin()),
        ..ClientOptions::default()
    })
    .unwrap()
}

#[tokio::test]
async fn engine_client_starts_one_engine_and_others_find_it() {
    let fx = Fixture::new();
    let a = client(&fx);
    let health = a.health().await.unwrap();
    assert_eq!(health.protocol, "svc-engine/1");
    assert_eq!(a.descriptor().unwrap().pid, health.pid);
    let b = client(&fx);
    assert_eq!(b.health().await.unwrap().pid, health.pid);

    let no_start = Client::new(ClientOptions {
        state_dir: fx.state_dir().to_path_buf(),
        autostart: false,
        ..ClientOptions::default()
    })
    .unwrap();
    let (d, h) = no_start.running_engine().await.unwrap();
    assert_eq!((d.pid, h.pid), (health.pid, health.pid));
    assert_eq!(
        no_start
            .stop_engine(Duration::from_secs(10))
            .await
            .unwrap()
            .map(|d| d.pid),
        Some(health.pid)
    );
    assert!(
        no_start
            .stop_engine(Duration::from_secs(10))
            .await
            .unwrap()
            .is_none()
    );
    let e = no_start.health().await.unwrap_err();
    assert!(matches!(e, svc::client::ClientError::NoEngine(_)), "{e}");
}

#[tokio::test]
async fn engine_client_survives_a_restart_and_a_kill() {
    let fx = Fixture::new();
    let c = client(&fx);
    let first = c.health().await.unwrap().pid;
    fx.ok(["provider", "engine", "stop"]);
    // The client still holds the old descriptor: refused, it starts a new engine.
    let second = c.health().await.unwrap().pid;
    assert_ne!(second, first);
    sigkill(second);
    assert!(wait_gone(second, Duration::from_secs(10)));
    let third = c.health().await.unwrap().pid;
    assert_ne!(third, second);
    assert_eq!(fx.engine().pid, third);
}

/// A new engine on the old port refuses the old token: the client re-reads the descriptor
/// and sends again, once.
#[tokio::test]
async fn engine_client_rereads_the_descriptor_after_a_401() {
    let fx = Fixture::new();
    let serve = |port: &str| {
        let mut child = fx
            .svc(["provider", "engine", "serve", "--port", port])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("engine listening"), "{line:?}");
        child
    };
    let mut first = serve("0");
    let c = client(&fx);
    let old = c.health().await.unwrap();
    let port = c.descriptor().unwrap().port;
    let old_token = c.descriptor().unwrap().token;
    fx.ok(["provider", "engine", "stop"]);
    first.wait().unwrap();
    let mut second = serve(&port.to_string());
    let new = c.health().await.unwrap();
    assert_ne!(new.pid, old.pid);
    let now = c.descriptor().unwrap();
    assert_eq!(now.port, port);
    assert_ne!(now.token, old_token);
    fx.ok(["provider", "engine", "stop"]);
    second.wait().unwrap();
}

#[tokio::test]
async fn engine_client_errors_are_typed() {
    let fx = Fixture::new();
    let c = client(&fx);
    let e = c.info("sb_does_not_exist").await.unwrap_err();
    let api = e.api().unwrap_or_else(|| panic!("an engine error: {e}"));
    assert_eq!((api.status, api.code.as_str()), (404, "E2009"));
    assert_eq!(api.type_, "SandboxNotFoundError");
    assert!(api.docs_url.ends_with("#e2009"));
    let e = c.signal("sb_does_not_exist", 1, 2).await.unwrap_err();
    assert_eq!(e.api().unwrap().code, "E4001");
}

#[tokio::test]
async fn engine_client_commands_files_and_terminal() {
    let fx = Fixture::new();
    let c = client(&fx);
    let sandbox = c.create(&CreateSandbox::default()).await.unwrap();
    let id = sandbox.sandbox_id.as_str();

    // Run: exact bytes, the exit code.
    let body = CommandBody {
        cmd: "printf 'a\\377b'; exit 5".into(),
        ..CommandBody::default()
    };
    let r = c.run(id, &body).await.unwrap();
    assert_eq!((r.stdout.as_slice(), r.exit_code), (&b"a\xffb"[..], 5));

    // Stream: start, output, exit, in order.
    let body = CommandBody {
        cmd: "echo one; echo two >&2".into(),
        ..CommandBody::default()
    };
    let events: Vec<_> = c.stream(id, &body).await.unwrap().collect().await;
    let events: Vec<CommandEvent> = events.into_iter().map(Result::unwrap).collect();
    assert!(
        matches!(events[0], CommandEvent::Start { .. }),
        "{events:?}"
    );
    assert!(
        events.contains(&CommandEvent::Stdout(b"one\n".to_vec())),
        "{events:?}"
    );
    assert!(
        events.contains(&CommandEvent::Stderr(b"two\n".to_vec())),
        "{events:?}"
    );
    assert_eq!(
        events.last(),
        Some(&CommandEvent::Exit {
            exit_code: 0,
            timed_out: false
        })
    );

    // Files.
    let bytes: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    let info = c
        .write_file(
            id,
            "dir/f.bin",
            &Upload::Bytes(bytes.clone().into()),
            WriteOptions {
                parents: Some(true),
                ..WriteOptions::default()
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!(info.size, bytes.len() as u64);
    assert_eq!(c.read_file_bytes(id, "dir/f.bin").await.unwrap(), bytes);
    assert!(c.exists(id, "dir/f.bin").await.unwrap());
    let listed = c.list_files(id, "dir", None).await.unwrap();
    assert_eq!(
        listed.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
        ["f.bin"]
    );
    c.mkdir(id, "other", false).await.unwrap();
    let moved = c
        .move_file(id, "dir/f.bin", "other/g.bin", false)
        .await
        .unwrap();
    assert_eq!(moved.name, "g.bin");
    assert!(!c.exists(id, "dir/f.bin").await.unwrap());
    assert_eq!(
        c.file_info(id, "other/g.bin").await.unwrap().size,
        bytes.len() as u64
    );
    c.remove(id, "other", true).await.unwrap();
    let e = c.file_info(id, "other").await.unwrap_err();
    assert_eq!(e.api().unwrap().code, "E2004");

    // Processes: a background one is listed and ends with a signal.
    let body = CommandBody {
        cmd: "sleep 300 >/dev/null 2>&1 &".into(),
        ..CommandBody::default()
    };
    c.run(id, &body).await.unwrap();
    // Polled: the run ends when its shell does, and the child the shell forked may still be
    // in its `execve`, where `/proc/<pid>/cmdline` reads empty for an instant.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let sleeper = loop {
        let listed = c.processes(id).await.unwrap();
        if let Some(p) = listed.iter().find(|p| p.cmd.contains("sleep 300")) {
            break p.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the background sleep is listed: {listed:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    c.signal(id, sleeper.pid, 15).await.unwrap();

    // Terminal: bytes both ways, a resize, the end when the shell exits.
    let mut t = c
        .terminal(id, Some(100), Some(30), Some("/bin/sh"), None)
        .await
        .unwrap();
    t.resize(120, 40).await.unwrap();
    t.send(&b"stty size; echo mark-$((40+2)); exit\n"[..])
        .await
        .unwrap();
    let mut seen = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(chunk) = t.recv().await {
            seen.extend_from_slice(&chunk.unwrap());
        }
    })
    .await;
    let text = String::from_utf8_lossy(&seen);
    // The exit code tells a shell that ended early (a signal: 128 + it) from output lost.
    let exit = t.exit_code();
    assert!(read.is_ok(), "the terminal did not end: {text}");
    assert!(text.contains("mark-42"), "exit {exit:?}: {text:?}");
    assert!(text.contains("40 120"), "exit {exit:?}: {text:?}");
    assert_eq!(exit, Some(0), "{text:?}");

    c.kill(id).await.unwrap();
}

#[tokio::test]
async fn engine_client_local_files_cross_with_sendfile_and_splice_byte_for_byte() {
    use tokio::io::AsyncWriteExt;
    let fx = Fixture::new();
    let c = client(&fx);
    let id = c
        .create(&CreateSandbox::default())
        .await
        .unwrap()
        .sandbox_id;
    let dir = tempfile::tempdir().unwrap();
    // Empty, and past the 8 MiB from which the engine's upload follows its own thread.
    for len in [0usize, 9 * 1024 * 1024 + 13] {
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let source = dir.path().join(format!("src-{len}"));
        std::fs::write(&source, &bytes).unwrap();
        let name = format!("f-{len}.bin");
        let upload = Upload::File(source);
        let info = c
            .write_file(&id, &name, &upload, WriteOptions::default(), None)
            .await
            .unwrap();
        assert_eq!(info.size, len as u64);
        let out = dir.path().join(format!("out-{len}"));
        let mut file = tokio::fs::File::create(&out).await.unwrap();
        let n = c.read_file_to(&id, &name, &mut file, None).await.unwrap();
        file.flush().await.unwrap();
        drop(file);
        assert_eq!(n, len as u64);
        assert!(std::fs::read(&out).unwrap() == bytes, "{len} bytes");
    }
    // A file the sandbox does not have is the engine's typed error on the client's own
    // connection too.
    let mut file = tokio::fs::File::create(dir.path().join("none"))
        .await
        .unwrap();
    let e = c
        .read_file_to(&id, "missing.bin", &mut file, None)
        .await
        .unwrap_err();
    assert_eq!(e.api().unwrap().code, "E2004");
    c.kill(&id).await.unwrap();
}

#[tokio::test]
async fn engine_client_the_other_routes() {
    let fx = Fixture::new();
    let c = client(&fx);
    let providers = c.providers().await.unwrap();
    assert!(providers.iter().any(|p| p.id == "local"), "{providers:?}");
    let sandbox = c.create(&CreateSandbox::default()).await.unwrap();
    let id = sandbox.sandbox_id.as_str();
    assert_eq!(c.connect(id).await.unwrap().sandbox_id, id);
    assert!(c.is_running(id).await.unwrap());
    let longer = c.set_timeout(id, 3600).await.unwrap();
    assert!(longer.expires_at > sandbox.expires_at, "{longer:?}");
    let port = c.port_url(id, 8080).await.unwrap();
    assert!(port.url.contains("8080"), "{port:?}");

    // Stdin to a streamed command: it stays open until closed.
    let body = CommandBody {
        cmd: "cat".into(),
        args: Some(vec![]),
        ..CommandBody::default()
    };
    let mut events = c.stream(id, &body).await.unwrap();
    let Some(Ok(CommandEvent::Start { pid })) = events.next().await else {
        panic!("no start event")
    };
    c.write_stdin(id, pid, b"ping\n", true).await.unwrap();
    let mut out = Vec::new();
    let mut exit = None;
    while let Some(event) = events.next().await {
        match event.unwrap() {
            CommandEvent::Stdout(b) => out.extend(b),
            CommandEvent::Exit { exit_code, .. } => exit = Some(exit_code),
            _ => {}
        }
    }
    assert_eq!((out.as_slice(), exit), (&b"ping\n"[..], Some(0)));

    // A process killed by its pid leaves the list.
    let body = CommandBody {
        cmd: "sleep 301 >/dev/null 2>&1 &".into(),
        ..CommandBody::default()
    };
    c.run(id, &body).await.unwrap();
    let find = || async {
        c.processes(id)
            .await
            .unwrap()
            .into_iter()
            .find(|p| p.cmd.contains("sleep 301"))
    };
    let sleeper = find().await.expect("the background sleep is listed");
    c.kill_process(id, sleeper.pid).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while find().await.is_some() {
        assert!(
            std::time::Instant::now() < deadline,
            "the killed sleep stays listed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Watch: a file written shows up as an event.
    c.mkdir(id, "watched", false).await.unwrap();
    let mut changes = c.watch(id, "watched", false).await.unwrap();
    c.write_file(
        id,
        "watched/new.txt",
        &Upload::Bytes("x".into()),
        WriteOptions::default(),
        None,
    )
    .await
    .unwrap();
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(change) = changes.next().await {
            let change = change.unwrap();
            if change
                .path
                .as_deref()
                .is_some_and(|p| p.ends_with("new.txt"))
            {
                return change;
            }
        }
        panic!("the watch ended")
    })
    .await
    .expect("a change of new.txt");
    assert!(
        ["create", "modify", "rename"].contains(&seen.kind.as_str()),
        "{seen:?}"
    );
    drop(changes);

    // Code: a one-shot run, and a context that keeps its state.
    let run = c
        .code_run(
            id,
            &CodeRunBody {
                code: "print(6 * 7)".into(),
                ..CodeRunBody::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        (run.stdout.as_slice(), run.exit_code),
        (&b"42\n"[..], Some(0))
    );
    let context = c
        .create_context(id, &CreateContext::default())
        .await
        .unwrap();
    let in_context = |code: &str| CodeRunBody {
        code: code.into(),
        context_id: Some(context.context_id.clone()),
        ..CodeRunBody::default()
    };
    c.code_run(id, &in_context("x = 41")).await.unwrap();
    let r = c.code_run(id, &in_context("print(x + 1)")).await.unwrap();
    assert_eq!(r.stdout, b"42\n");
    let listed = c.list_contexts(id).await.unwrap();
    assert!(listed.iter().any(|x| x.context_id == context.context_id));
    c.restart_context(id, &context.context_id).await.unwrap();
    c.delete_context(id, &context.context_id).await.unwrap();
    let e = c.delete_context(id, &context.context_id).await.unwrap_err();
    assert_eq!(e.api().unwrap().status, 404, "{e}");

    c.kill(id).await.unwrap();
}
