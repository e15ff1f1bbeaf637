//! Runs against the interpreters installed here (a missing one is skipped with a note).

use super::contexts::{Contexts, invalid_id};
use super::*;

fn launch(lang: &Language, timeout: Duration) -> Option<Launch> {
    let path = std::env::var("PATH").unwrap_or_default();
    let cwd = std::env::temp_dir();
    let Some(program) = crate::services::search_path::resolve(lang.program, &path, &cwd) else {
        eprintln!("{} is not installed: skipped", lang.name);
        return None;
    };
    let mut env = vec![("PATH".to_owned(), path)];
    if let Ok(home) = std::env::var("HOME") {
        env.push(("HOME".into(), home));
    }
    Some(Launch {
        program,
        cwd,
        env,
        timeout,
        output_bytes: 65536,
        confine: None,
    })
}

/// Per language: a snippet that sets `x` to 41 and one that prints `x + 1`.
fn snippets(name: &str) -> (&'static str, &'static str) {
    match name {
        "python3" => ("x = 41", "print(x + 1)"),
        "node" => ("globalThis.x = 41", "console.log(x + 1)"),
        _ => ("x=41", "echo $((x + 1))"),
    }
}

#[tokio::test]
async fn a_run_without_context_ends_with_the_interpreter() {
    for lang in LANGUAGES {
        let Some(l) = launch(lang, Duration::from_secs(20)) else {
            continue;
        };
        let (set, print) = snippets(lang.name);
        let out = run_once(lang, &l, &format!("{set}\n{print}\n"))
            .await
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "42\n",
            "{}: {out:?}",
            lang.name
        );
        assert_eq!(out.exit_code, Some(0), "{}", lang.name);
        // No state carries over between runs without a context.
        let out = run_once(lang, &l, print).await.unwrap();
        assert_ne!(
            String::from_utf8_lossy(&out.stdout),
            "42\n",
            "{}",
            lang.name
        );
    }
}

#[tokio::test]
async fn a_context_keeps_state_between_runs() {
    let contexts = Contexts::default();
    for lang in LANGUAGES {
        let Some(l) = launch(lang, Duration::from_secs(20)) else {
            continue;
        };
        let (set, print) = snippets(lang.name);
        let first = contexts.run("me", "c1", lang, &l, set).await.unwrap();
        assert_eq!(first.exit_code, Some(0), "{}: {first:?}", lang.name);
        let second = contexts.run("me", "c1", lang, &l, print).await.unwrap();
        assert_eq!(
            String::from_utf8_lossy(&second.stdout),
            "42\n",
            "{}: {second:?}",
            lang.name
        );
        // Another owner's context of the same id is another interpreter.
        let other = contexts.run("you", "c1", lang, &l, print).await.unwrap();
        assert_ne!(
            String::from_utf8_lossy(&other.stdout),
            "42\n",
            "{}",
            lang.name
        );
    }
}

#[tokio::test]
async fn errors_exits_and_timeouts_in_a_context() {
    let contexts = Contexts::default();
    let python = language("python3").unwrap();
    let Some(l) = launch(python, Duration::from_secs(20)) else {
        return;
    };
    let failed = contexts
        .run("me", "e", python, &l, "x = 1\nraise ValueError('boom')")
        .await
        .unwrap();
    assert_eq!(failed.exit_code, Some(1));
    assert!(String::from_utf8_lossy(&failed.stderr).contains("ValueError: boom"));
    let kept = contexts
        .run("me", "e", python, &l, "print(x)")
        .await
        .unwrap();
    assert_eq!(kept.stdout, b"1\n", "an error keeps the state: {kept:?}");
    let exited = contexts
        .run("me", "e", python, &l, "import sys; sys.exit(7)")
        .await
        .unwrap();
    assert_eq!(
        exited.exit_code,
        Some(7),
        "SystemExit is the run's status: {exited:?}"
    );
    let quick = Launch {
        timeout: Duration::from_millis(300),
        ..l.clone()
    };
    let slow = contexts
        .run(
            "me",
            "e",
            python,
            &quick,
            "import time; print('a', flush=True); time.sleep(30)",
        )
        .await
        .unwrap();
    assert!(slow.timed_out && slow.exit_code.is_none(), "{slow:?}");
    assert_eq!(slow.stdout, b"a\n");
    assert!(contexts.is_empty(), "a timed-out context is closed");
    let fresh = contexts
        .run("me", "e", python, &l, "print('x' in globals())")
        .await
        .unwrap();
    assert_eq!(fresh.stdout, b"False\n");
    assert!(matches!(
        contexts
            .run(
                "me",
                "e",
                python,
                &Launch {
                    env: vec![],
                    ..l.clone()
                },
                "1"
            )
            .await,
        Err(contexts::Error::EnvMismatch)
    ));
}

#[tokio::test]
async fn a_printed_fake_marker_does_not_end_the_run() {
    let contexts = Contexts::default();
    let bash = language("bash").unwrap();
    let Some(l) = launch(bash, Duration::from_secs(20)) else {
        return;
    };
    let out = contexts
        .run("me", "m", bash, &l, "echo '__svc_end_0 0'; echo done")
        .await
        .unwrap();
    assert_eq!(out.stdout, b"__svc_end_0 0\ndone\n");
}

#[test]
fn context_ids() {
    assert!(invalid_id("ctx-1.a_b").is_none());
    for bad in ["", "a b", "a/b", &"x".repeat(65)] {
        assert!(invalid_id(bad).is_some(), "{bad:?}");
    }
}

#[tokio::test]
async fn an_explicit_context_is_listed_restarted_and_deleted() {
    let python = language("python3").unwrap();
    let Some(l) = launch(python, Duration::from_secs(20)) else {
        return;
    };
    let contexts = Contexts::default();
    let info = contexts.create("sb", python, &l).unwrap();
    assert!(info.id.starts_with("ctx_"), "{info:?}");
    assert_eq!((info.language, &info.cwd), ("python3", &l.cwd));
    assert_eq!(contexts.list("sb"), vec![info.clone()]);
    assert!(contexts.list("other").is_empty());
    assert_eq!(contexts.pids("sb"), vec![info.pid]);

    let t = Duration::from_secs(20);
    let (lang, first) = contexts
        .run_in("sb", &info.id, "x = 41", t)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((lang.name, first.exit_code), ("python3", Some(0)));
    let (_, second) = contexts
        .run_in("sb", &info.id, "print(x + 1)", t)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(second.stdout, b"42\n", "state is kept: {second:?}");
    assert!(
        contexts
            .run_in("other", &info.id, "1", t)
            .await
            .unwrap()
            .is_none(),
        "another owner's context is not found"
    );
    assert!(
        contexts
            .run_in("sb", "ctx_none", "1", t)
            .await
            .unwrap()
            .is_none()
    );

    // A run that times out restarts it under the same id, state lost.
    let (_, slow) = contexts
        .run_in(
            "sb",
            &info.id,
            "import time; time.sleep(30)",
            Duration::from_millis(300),
        )
        .await
        .unwrap()
        .unwrap();
    assert!(slow.timed_out);
    let (_, after) = contexts
        .run_in("sb", &info.id, "print('x' in globals())", t)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.stdout, b"False\n");
    assert_eq!(contexts.list("sb").len(), 1, "still there");

    contexts.run_in("sb", &info.id, "y = 1", t).await.unwrap();
    let restarted = contexts.restart("sb", &info.id).unwrap().unwrap();
    assert_eq!(restarted.id, info.id);
    assert_ne!(restarted.pid, info.pid);
    let (_, fresh) = contexts
        .run_in("sb", &info.id, "print('y' in globals())", t)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(fresh.stdout, b"False\n", "a restart loses the state");
    assert!(contexts.restart("sb", "ctx_none").unwrap().is_none());

    assert!(contexts.delete("sb", &info.id));
    assert!(!contexts.delete("sb", &info.id));
    assert!(contexts.list("sb").is_empty());
    assert!(
        contexts
            .run_in("sb", &info.id, "1", t)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn explicit_contexts_are_never_evicted_and_close_with_their_owner() {
    let sh = language("sh").unwrap();
    let Some(l) = launch(sh, Duration::from_secs(20)) else {
        return;
    };
    let contexts = Contexts::default();
    let made: Vec<_> = (0..contexts::MAX_PER_OWNER + 1)
        .map(|_| contexts.create("sb", sh, &l).unwrap())
        .collect();
    // Implicit contexts of the same owner make room among themselves only.
    for i in 0..contexts::MAX_PER_OWNER + 1 {
        contexts
            .run("sb", &format!("implicit{i}"), sh, &l, "true")
            .await
            .unwrap();
    }
    assert_eq!(contexts.list("sb").len(), made.len());
    let pids = contexts.pids("sb");
    assert_eq!(pids.len(), made.len() + contexts::MAX_PER_OWNER);
    contexts.close_owner("sb");
    assert!(contexts.is_empty());
    assert!(contexts.pids("sb").is_empty());
}

/// Per language: a snippet that prints `MARK` (or `unset`) and `HOME`.
fn env_snippet(name: &str) -> &'static str {
    match name {
        "python3" => "import os\nprint(os.environ.get('MARK', 'unset'), os.environ['HOME'])",
        "node" => "console.log(process.env.MARK ?? 'unset', process.env.HOME)",
        _ => "echo \"${MARK-unset} $HOME\"",
    }
}

#[tokio::test]
async fn a_runs_variables_reach_that_run_only_in_every_language() {
    let env = std::collections::BTreeMap::from([
        ("MARK".to_owned(), "it's \"a\" $x".to_owned()),
        ("HOME".to_owned(), "/over".to_owned()),
    ]);
    for lang in LANGUAGES {
        let Some(l) = launch(lang, Duration::from_secs(20)) else {
            continue;
        };
        let home = std::env::var("HOME").unwrap_or_default();
        let contexts = Contexts::default();
        let info = contexts.create("sb", lang, &l).unwrap();
        let t = Duration::from_secs(20);
        let (_, with) = contexts
            .run_in_with("sb", &info.id, env_snippet(lang.name), &env, t)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&with.stdout),
            "it's \"a\" $x /over\n",
            "{}: {with:?}",
            lang.name
        );
        let (_, after) = contexts
            .run_in("sb", &info.id, env_snippet(lang.name), t)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&after.stdout),
            format!("unset {home}\n"),
            "{}: undone after the run: {after:?}",
            lang.name
        );
    }
}

#[tokio::test]
async fn a_followed_run_sends_its_output_as_it_comes_and_never_its_marker() {
    use crate::services::supervisor::Stream;
    let sh = language("sh").unwrap();
    let Some(l) = launch(sh, Duration::from_secs(20)) else {
        return;
    };
    let contexts = Arc::new(Contexts::default());
    let info = contexts.create("sb", sh, &l).unwrap();
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let run = {
        let (contexts, id) = (contexts.clone(), info.id.clone());
        tokio::spawn(async move {
            let code = "echo a; echo oops >&2; sleep 1; printf b";
            let env = std::collections::BTreeMap::new();
            let t = Duration::from_secs(20);
            contexts.run_in_followed("sb", &id, code, &env, t, tx).await
        })
    };
    // `a` comes while the run still sleeps.
    let first = rx.recv().await.unwrap();
    assert_eq!(
        (first.stream, &first.bytes[..]),
        (Stream::Stdout, &b"a\n"[..])
    );
    assert!(!run.is_finished(), "the first line came only at the end");
    let (mut stdout, mut stderr) = (first.bytes.to_vec(), Vec::new());
    while let Some(chunk) = rx.recv().await {
        match chunk.stream {
            Stream::Stdout => stdout.extend_from_slice(&chunk.bytes),
            Stream::Stderr => stderr.extend_from_slice(&chunk.bytes),
        }
    }
    let (_, outcome) = run.await.unwrap().unwrap().unwrap();
    assert_eq!((&stdout[..], &stderr[..]), (&b"a\nb"[..], &b"oops\n"[..]));
    assert_eq!((outcome.stdout, outcome.exit_code), (stdout, Some(0)));
}

#[test]
fn what_could_begin_a_marker_is_held_back() {
    use super::contexts::could_begin;
    assert_eq!(could_begin(b"abc __svc_en", b"__svc_end_1 "), 8);
    assert_eq!(could_begin(b"abc _", b"__svc_end_1 "), 1);
    assert_eq!(could_begin(b"abc", b"__svc_end_1 "), 0);
    assert_eq!(could_begin(b"", b"__svc_end_1 "), 0);
    // A whole marker is found, not held back.
    assert_eq!(could_begin(b"__svc_end_1 ", b"__svc_end_1 "), 0);
}
