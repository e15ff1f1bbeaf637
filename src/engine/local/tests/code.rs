//! Code runs and contexts, and terminals.

use super::*;
use crate::engine::provider::{TerminalInput, TerminalOpen};
use crate::wire::{CodeRunBody, CreateContext};

fn code(text: &str) -> CodeRunBody {
    CodeRunBody {
        code: text.into(),
        ..CodeRunBody::default()
    }
}

fn installed(program: &str) -> bool {
    let path = std::env::var("PATH").unwrap_or_default();
    crate::services::search_path::resolve(program, &path, std::path::Path::new("/")).is_some()
}

#[tokio::test]
async fn a_context_keeps_its_state_between_runs() {
    if !installed("python3") {
        eprintln!("python3 is not installed: skipped");
        return;
    }
    let f = fixture();
    let (record, sandbox) = sandbox(&f).await;
    let once = sandbox
        .code_run(code("import os; print(os.getcwd() == os.environ['HOME'])"))
        .await
        .unwrap();
    assert_eq!(
        (once.stdout.as_slice(), once.exit_code),
        (&b"True\n"[..], Some(0))
    );
    let context = sandbox
        .context_create(CreateContext::default())
        .await
        .unwrap();
    assert_eq!(context.language, "python3");
    assert_eq!(sandbox.context_list().await.unwrap(), vec![context.clone()]);
    let in_context = |text: &str| CodeRunBody {
        context_id: Some(context.context_id.clone()),
        ..code(text)
    };
    sandbox.code_run(in_context("x = 41")).await.unwrap();
    let out = sandbox.code_run(in_context("print(x + 1)")).await.unwrap();
    assert_eq!(out.stdout, b"42\n", "{out:?}");
    // Its interpreter is a process of the sandbox.
    let listed = sandbox.processes().await.unwrap();
    assert!(listed.iter().any(|p| p.tag == "code"), "{listed:?}");
    assert!(!marked(&record.sandbox_id).is_empty());

    let restarted = sandbox.context_restart(&context.context_id).await.unwrap();
    assert_eq!(restarted.context_id, context.context_id);
    let out = sandbox
        .code_run(in_context("print('x' in globals())"))
        .await
        .unwrap();
    assert_eq!(out.stdout, b"False\n");
    let wrong = CodeRunBody {
        language: Some("bash".into()),
        ..in_context("echo hi")
    };
    assert_eq!(
        code_of(sandbox.code_run(wrong).await),
        Code::InvalidArgument
    );
    sandbox.context_delete(&context.context_id).await.unwrap();
    assert_eq!(
        code_of(sandbox.context_delete(&context.context_id).await),
        Code::ContextNotFound
    );
    assert_eq!(
        code_of(sandbox.code_run(in_context("1")).await),
        Code::ContextNotFound
    );
    assert_eq!(
        code_of(sandbox.context_restart("ctx_missing").await),
        Code::ContextNotFound
    );
    let e = sandbox
        .code_run(CodeRunBody {
            language: Some("cobol".into()),
            ..code("1")
        })
        .await
        .unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
    assert!(
        e.message.contains("python3"),
        "the known languages are listed: {}",
        e.message
    );
    end(&sandbox).await;
    assert!(marked(&record.sandbox_id).is_empty());
}

#[tokio::test]
async fn a_terminal_runs_a_shell_in_the_sandbox() {
    let f = fixture();
    let (record, sandbox) = sandbox(&f).await;
    assert_eq!(
        code_of(
            sandbox
                .terminal(&TerminalOpen::new(0, 24, "/bin/sh"))
                .await
                .map(|_| ())
        ),
        Code::InvalidArgument
    );
    let io = sandbox
        .terminal(&TerminalOpen::new(80, 24, "/bin/sh"))
        .await
        .unwrap();
    let mut output = io.output;
    io.input
        .send(TerminalInput::Bytes(bytes::Bytes::from_static(
            b"echo \"in-$SVC_SANDBOX_ID\"\n",
        )))
        .await
        .unwrap();
    io.input
        .send(TerminalInput::Resize {
            cols: 100,
            rows: 30,
        })
        .await
        .unwrap();
    let wanted = format!("in-{}", record.sandbox_id);
    let mut seen = String::new();
    let found = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(bytes) = output.next().await {
            seen.push_str(&String::from_utf8_lossy(&bytes));
            if seen.contains(&wanted) {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "{seen:?}");
    let listed = sandbox.processes().await.unwrap();
    assert!(listed.iter().any(|p| p.tag == "terminal"), "{listed:?}");
    // The client goes: so does the shell.
    drop(io.input);
    drop(output);
    assert!(
        eventually(Duration::from_secs(10), || marked(&record.sandbox_id)
            .is_empty())
        .await,
        "{:?}",
        marked(&record.sandbox_id)
    );
    end(&sandbox).await;
}

#[tokio::test]
async fn a_one_shot_run_is_a_process_of_the_sandbox_with_its_limits() {
    let f = fixture();
    let (record, sandbox) = sandbox(&f).await;
    let sh = |text: &str| CodeRunBody {
        language: Some("sh".into()),
        ..code(text)
    };
    let out = sandbox
        .code_run(CodeRunBody {
            envs: Some([("EXTRA".to_owned(), "x".to_owned())].into()),
            ..sh("echo \"$SVC_SANDBOX_ID $EXTRA\"; exit 4")
        })
        .await
        .unwrap();
    assert_eq!(
        out.stdout,
        format!("{} x\n", record.sandbox_id).into_bytes()
    );
    assert_eq!((out.exit_code, out.timed_out), (Some(4), false));
    let slow = sandbox
        .code_run(CodeRunBody {
            timeout: Some(1),
            ..sh("sleep 30")
        })
        .await
        .unwrap();
    assert!(slow.timed_out && slow.exit_code.is_none(), "{slow:?}");
    assert!(slow.duration_ms >= 1000);
    let bad = sandbox
        .code_run(CodeRunBody {
            envs: Some([("NOT A NAME".to_owned(), "x".to_owned())].into()),
            ..sh("true")
        })
        .await;
    assert_eq!(code_of(bad), Code::InvalidArgument);
    // What a run leaves in the background goes on, like a command's.
    sandbox.code_run(sh("sleep 300 &")).await.unwrap();
    let listed = sandbox.processes().await.unwrap();
    assert!(
        listed
            .iter()
            .any(|p| p.cmd == "sleep 300" && p.tag == "background"),
        "{listed:?}"
    );
    sandbox.pause().await.unwrap();
    assert_eq!(
        code_of(sandbox.code_run(sh("true")).await),
        Code::SandboxNotRunning
    );
    assert_eq!(
        code_of(sandbox.context_create(CreateContext::default()).await),
        Code::SandboxNotRunning
    );
    assert_eq!(
        code_of(
            sandbox
                .terminal(&TerminalOpen::new(80, 24, "/bin/sh"))
                .await
                .map(|_| ())
        ),
        Code::SandboxNotRunning
    );
    end(&sandbox).await;
    assert!(marked(&record.sandbox_id).is_empty());
}

#[tokio::test]
async fn a_streamed_run_in_a_context_sends_its_output_as_printed() {
    use futures::StreamExt;
    if !installed("python3") {
        eprintln!("python3 is not installed: skipped");
        return;
    }
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let context = sandbox
        .context_create(CreateContext::default())
        .await
        .unwrap();
    let in_context = |text: &str| CodeRunBody {
        context_id: Some(context.context_id.clone()),
        ..code(text)
    };
    let mut events = sandbox
        .code_run_stream(in_context(
            "import sys, time\nprint('a', flush=True)\ntime.sleep(1)\nprint('é', file=sys.stderr)",
        ))
        .await
        .unwrap();
    // The interpreter is unbuffered: a `print` may come as its text and its newline, in
    // one chunk or two, as the pipe was read. What is promised is the bytes, in order.
    let mut stdout = String::new();
    while !stdout.ends_with('\n') {
        let event = events.next().await.unwrap().unwrap();
        assert_eq!(event.name, "stdout", "{event:?}");
        stdout.push_str(event.data["data"].as_str().unwrap_or_default());
    }
    assert_eq!(stdout, "a\n");
    // Sent as printed: the rest, the exit among it, comes the program's second of sleep
    // later. Measured from the first line, not from the call, so a loaded machine's slow
    // interpreter start cannot fail it; output held until the end would come all at once.
    let first_at = std::time::Instant::now();
    let mut rest: Vec<_> = events.map(|e| e.unwrap()).collect().await;
    assert!(
        first_at.elapsed() > std::time::Duration::from_millis(500),
        "the first event came with the last"
    );
    let exit = rest.pop().expect("an exit event");
    assert_eq!((exit.name, &exit.data["exit_code"]), ("exit", &0.into()));
    assert!(rest.iter().all(|e| e.name == "stderr"), "{rest:?}");
    let stderr: String = rest
        .iter()
        .filter_map(|e| e.data["data"].as_str())
        .collect();
    assert_eq!(stderr, "é\n", "{rest:?}");
    // A context that is not there is refused before any event.
    sandbox.context_delete(&context.context_id).await.unwrap();
    assert_eq!(
        code_of(sandbox.code_run_stream(in_context("1")).await.map(|_| ())),
        Code::ContextNotFound
    );
}
