//! Create, list, ownership, lifetime, pause and resume, the end, adoption.

use super::*;
use crate::services::cgroup::{self, Support};
use crate::wire::{CommandBody, ListSandboxes, SandboxStatus};
use std::collections::BTreeMap;

fn shell(line: &str) -> CommandBody {
    CommandBody {
        cmd: line.into(),
        ..CommandBody::default()
    }
}

#[tokio::test]
async fn a_sandbox_is_its_creator_s_alone() {
    let f = fixture();
    let body = CreateSandbox {
        envs: Some(BTreeMap::from([("TOKEN".into(), "s3cret".into())])),
        metadata: Some(BTreeMap::from([("team".into(), "blue".into())])),
        cpu: Some(2),
        memory: Some(512),
        disk: Some(1024),
        ..CreateSandbox::default()
    };
    let (record, sandbox) = sandbox_with(&f, body).await;
    assert!(record.sandbox_id.starts_with("sb_"));
    assert_eq!(
        (record.provider.as_str(), record.template.as_str()),
        ("local", "base")
    );
    assert_eq!(record.status, SandboxStatus::Running);
    assert!(record.secure, "secure defaults to true");
    assert_eq!(record.envs_keys, vec!["TOKEN"]);
    assert_eq!(record.metadata["team"], "blue");
    // Never pretended: cpu and memory only where a cgroup enforces them, disk never.
    let (cpu, memory, pids) = match cgroup::detect() {
        Support::Available(c) => (c.cpu(), c.memory(), c.pids()),
        Support::Unavailable(_) => (false, false, false),
    };
    // Without isolation the machine's files, processes and network are shared: said.
    let expected = BTreeMap::from([
        ("timeout".to_owned(), true),
        ("cpu".to_owned(), cpu),
        ("memory".to_owned(), memory),
        ("disk".to_owned(), false),
        ("filesystem".to_owned(), false),
        ("processes".to_owned(), false),
        ("network".to_owned(), false),
        ("pids".to_owned(), pids),
    ]);
    assert_eq!(record.isolation, Some(crate::wire::Isolation::None));
    assert_eq!(record.limits_enforced, expected);
    let json = serde_json::to_string(&record).unwrap();
    assert!(
        !json.contains("s3cret"),
        "a variable's value is never echoed"
    );
    assert!(
        !json.contains(&conn("a").fingerprint()),
        "the owner is never shown"
    );
    assert_eq!(sandbox.info().await.unwrap(), record);

    let mine = f
        .provider
        .list(&conn("a"), &ListSandboxes::default())
        .await
        .unwrap();
    assert_eq!(mine, vec![record.clone()]);
    let theirs = f
        .provider
        .list(&conn("b"), &ListSandboxes::default())
        .await
        .unwrap();
    assert!(theirs.is_empty());
    assert_eq!(
        code_of(
            f.provider
                .connect(&conn("b"), &record.sandbox_id)
                .await
                .map(|_| ())
        ),
        Code::SandboxNotFound
    );
    assert_eq!(
        code_of(
            f.provider
                .connect(&conn("a"), "sb_missing")
                .await
                .map(|_| ())
        ),
        Code::SandboxNotFound
    );
    assert_eq!(f.provider.sandbox_count(), 1);
    end(&sandbox).await;
}

#[tokio::test]
async fn create_refuses_what_local_cannot_give() {
    let f = fixture();
    let create = |body: CreateSandbox| {
        let provider = f.provider.clone();
        async move { provider.create(&conn("a"), body).await }
    };
    let gpu = create(CreateSandbox {
        gpu: Some("a100".into()),
        ..CreateSandbox::default()
    })
    .await;
    assert_eq!(code_of(gpu), Code::FeatureNotSupported);
    let template = create(CreateSandbox {
        template: Some("python".into()),
        ..CreateSandbox::default()
    })
    .await;
    assert_eq!(code_of(template), Code::TemplateNotFound);
    for timeout in [0, 86_401] {
        let e = create(CreateSandbox {
            timeout: Some(timeout),
            ..CreateSandbox::default()
        })
        .await
        .unwrap_err();
        assert_eq!(e.code, Code::InvalidArgument);
        assert!(e.message.contains("timeout"), "{}", e.message);
    }
    assert_eq!(f.provider.sandbox_count(), 0, "nothing was made");
    let made: Vec<_> = std::fs::read_dir(f.dir.path().join("sandboxes"))
        .unwrap()
        .collect();
    assert!(made.is_empty(), "no folder left: {made:?}");
    // The bounds themselves are fine, and the default is the spec's.
    let (record, sandbox) = sandbox_with(
        &f,
        CreateSandbox {
            timeout: Some(86_400),
            ..CreateSandbox::default()
        },
    )
    .await;
    let pids = cgroup::detect().cgroups().is_some_and(|c| c.pids());
    assert_eq!(
        record.limits_enforced,
        BTreeMap::from([
            ("timeout".to_owned(), true),
            ("filesystem".to_owned(), false),
            ("processes".to_owned(), false),
            ("network".to_owned(), false),
            ("pids".to_owned(), pids),
        ])
    );
    for seconds in [0, 86_401] {
        assert_eq!(
            code_of(sandbox.set_timeout(seconds).await),
            Code::InvalidArgument
        );
    }
    let later = sandbox.set_timeout(1000).await.unwrap();
    assert!(later.expires_at < record.expires_at, "counted from now");
    end(&sandbox).await;
    let default = f
        .provider
        .create(&conn("a"), CreateSandbox::default())
        .await
        .unwrap();
    let created = humantime::parse_rfc3339(&default.created_at).unwrap();
    let expires = humantime::parse_rfc3339(&default.expires_at).unwrap();
    assert_eq!(expires.duration_since(created).unwrap().as_secs(), 300);
    let default = f
        .provider
        .connect(&conn("a"), &default.sandbox_id)
        .await
        .unwrap();
    end(&default).await;
}

#[tokio::test]
async fn the_list_filters_pages_and_shows_the_newest_first() {
    let f = fixture();
    let mut made = Vec::new();
    for _ in 0..3 {
        made.push(sandbox(&f).await);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let ids = |list: Vec<SandboxRecord>| -> Vec<String> {
        list.into_iter().map(|r| r.sandbox_id).collect()
    };
    let newest_first: Vec<String> = made
        .iter()
        .rev()
        .map(|(r, _)| r.sandbox_id.clone())
        .collect();
    let list = |q: ListSandboxes| {
        let provider = f.provider.clone();
        async move { provider.list(&conn("a"), &q).await }
    };
    assert_eq!(
        ids(list(ListSandboxes::default()).await.unwrap()),
        newest_first
    );
    let page = ListSandboxes {
        limit: Some(1),
        offset: Some(1),
        ..ListSandboxes::default()
    };
    assert_eq!(ids(list(page).await.unwrap()), newest_first[1..2]);
    made[0].1.pause().await.unwrap();
    let paused = ListSandboxes {
        status: Some(SandboxStatus::Paused),
        ..ListSandboxes::default()
    };
    assert_eq!(
        ids(list(paused).await.unwrap()),
        vec![made[0].0.sandbox_id.clone()]
    );
    for limit in [0, 1001] {
        let bad = ListSandboxes {
            limit: Some(limit),
            ..ListSandboxes::default()
        };
        assert_eq!(code_of(list(bad).await), Code::InvalidArgument);
    }
    for (_, sandbox) in &made {
        end(sandbox).await;
    }
}

/// The pid of the busy loop a sandbox's command left in the background.
async fn busy_loop(sandbox: &Arc<dyn Sandbox>) -> u32 {
    let out = sandbox
        .run(shell(
            "sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!",
        ))
        .await
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Whether `pid`'s CPU time advances within `within`.
async fn advances(pid: u32, within: Duration) -> bool {
    let before = cpu(pid);
    eventually(within, || cpu(pid) > before).await
}

#[tokio::test]
async fn pause_really_stops_every_process_and_resume_continues_them() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let busy = busy_loop(&sandbox).await;
    assert!(advances(busy, Duration::from_secs(5)).await, "it runs");

    let paused = sandbox.pause().await.unwrap();
    assert_eq!(paused.status, SandboxStatus::Paused);
    // Frozen by a freezer it shows `D` or `S`, not `T`: the CPU time below proves it.
    if cgroup::detect().cgroups().is_none_or(|c| !c.freezer()) {
        assert_eq!(proc_scan::stat(busy).map(|s| s.state), Some('T'));
    }
    let frozen_at = cpu(busy);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(cpu(busy), frozen_at, "no CPU time while paused");
    // Nothing starts in a paused sandbox; its files still work.
    assert_eq!(
        code_of(sandbox.run(shell("true")).await),
        Code::SandboxNotRunning
    );
    assert_eq!(
        code_of(sandbox.signal(busy, 15).await),
        Code::SandboxNotRunning
    );
    assert!(sandbox.file_exists(".").await.unwrap());
    assert_eq!(sandbox.pause().await.unwrap().status, SandboxStatus::Paused);

    let resumed = sandbox.resume().await.unwrap();
    assert_eq!(resumed.status, SandboxStatus::Running);
    assert!(
        advances(busy, Duration::from_secs(5)).await,
        "it runs again"
    );
    end(&sandbox).await;
    assert!(proc_scan::stat(busy).is_none_or(|s| s.is_dead()));
}

#[tokio::test]
async fn kill_leaves_nothing_behind() {
    let f = fixture();
    let (record, sandbox) = sandbox(&f).await;
    let id = record.sandbox_id.clone();
    let dir = f.dir.path().join("sandboxes").join(&id);
    sandbox.run(shell("sleep 300 & sleep 300 &")).await.unwrap();
    let _busy = busy_loop(&sandbox).await;
    // A paused sandbox dies all the same.
    sandbox.pause().await.unwrap();
    assert_eq!(marked(&id).len(), 3, "{:?}", marked(&id));
    let last = sandbox.kill().await.unwrap();
    assert_eq!(last.status, SandboxStatus::Stopped);
    assert!(marked(&id).is_empty(), "{:?}", marked(&id));
    assert!(!dir.exists());
    assert_eq!(code_of(sandbox.info().await), Code::SandboxNotFound);
    assert_eq!(code_of(sandbox.kill().await), Code::SandboxNotFound);
    assert_eq!(
        code_of(f.provider.connect(&conn("a"), &id).await.map(|_| ())),
        Code::SandboxNotFound
    );
    assert_eq!(f.provider.sandbox_count(), 0);
}

#[tokio::test]
async fn at_its_expiry_everything_of_a_sandbox_is_gone() {
    let f = fixture();
    let (record, sandbox) = sandbox_with(
        &f,
        CreateSandbox {
            timeout: Some(1),
            ..CreateSandbox::default()
        },
    )
    .await;
    let id = record.sandbox_id.clone();
    sandbox.run(shell("sleep 300 &")).await.unwrap();
    assert_eq!(marked(&id).len(), 1);
    let gone = eventually(Duration::from_secs(10), || f.provider.sandbox_count() == 0).await;
    assert!(gone, "it expired");
    assert_eq!(code_of(sandbox.info().await), Code::SandboxNotFound);
    assert!(marked(&id).is_empty(), "{:?}", marked(&id));
    assert!(!f.dir.path().join("sandboxes").join(&id).exists());
}

#[tokio::test]
async fn a_reopened_provider_adopts_a_running_sandbox() {
    let f = fixture();
    let (record, sandbox) = sandbox(&f).await;
    let id = record.sandbox_id.clone();
    sandbox.run(shell("sleep 300 &")).await.unwrap();
    f.provider.shutdown().await;
    drop(sandbox);
    let Fixture { dir, provider } = f;
    drop(provider);
    assert_eq!(marked(&id).len(), 1, "the sandbox outlives the engine");

    let again = provider_in(dir.path());
    let list = again
        .list(&conn("a"), &ListSandboxes::default())
        .await
        .unwrap();
    assert_eq!(list, vec![record.clone()]);
    let sandbox = again.connect(&conn("a"), &id).await.unwrap();
    let listed = sandbox.processes().await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(listed[0].cmd.starts_with("sleep 300"), "{listed:?}");
    let out = sandbox.run(shell("echo $SVC_SANDBOX_ID")).await.unwrap();
    assert_eq!(out.stdout, format!("{id}\n").into_bytes());
    sandbox.kill().await.unwrap();
    assert!(marked(&id).is_empty());
}

#[tokio::test]
async fn a_sandbox_that_expired_while_no_engine_ran_is_ended_at_open() {
    let f = fixture();
    let (record, sandbox) = sandbox_with(
        &f,
        CreateSandbox {
            timeout: Some(1),
            ..CreateSandbox::default()
        },
    )
    .await;
    let id = record.sandbox_id.clone();
    sandbox.run(shell("sleep 300 &")).await.unwrap();
    f.provider.shutdown().await;
    let Fixture { dir, provider } = f;
    drop(provider);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(marked(&id).len(), 1, "no engine ended it");
    let again = provider_in(dir.path());
    assert_eq!(again.sandbox_count(), 0);
    assert!(marked(&id).is_empty(), "{:?}", marked(&id));
    assert!(!dir.path().join("sandboxes").join(&id).exists());
}

#[tokio::test]
async fn port_urls_are_on_loopback() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let url = sandbox.port_url(8080).await.unwrap();
    assert_eq!(url.url, "http://127.0.0.1:8080");
    assert!(url.headers.is_empty());
    assert_eq!(code_of(sandbox.port_url(0).await), Code::InvalidArgument);
    end(&sandbox).await;
}
