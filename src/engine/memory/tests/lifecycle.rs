//! The record, create's refusals, pause and resume, the end, the lifetime, and what is
//! not declared.

use super::*;
use crate::wire::{CommandBody, Feature, ListSandboxes, ProviderKind, SandboxStatus, WriteQuery};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::SystemTime;

fn seconds(rfc3339: &str) -> u64 {
    humantime::parse_rfc3339(rfc3339)
        .unwrap()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[tokio::test]
async fn the_provider_and_its_records_say_what_it_is() {
    let f = fixture();
    let record = f.provider.record();
    assert_eq!(
        (record.id.as_str(), record.name.as_str(), record.kind),
        ("memory", "in-memory", ProviderKind::Node)
    );
    assert_eq!(record.version, env!("CARGO_PKG_VERSION"));
    assert_eq!((record.trust.as_str(), record.error), ("builtin", None));
    assert_eq!(
        record.features,
        [
            Feature::Sandboxes,
            Feature::Timeout,
            Feature::Pause,
            Feature::Files,
            Feature::Watch
        ]
    );
    let body = CreateSandbox {
        timeout: Some(120),
        metadata: Some(BTreeMap::from([("k".into(), "v".into())])),
        envs: Some(BTreeMap::from([("TOKEN".into(), "s3cret".into())])),
        cpu: Some(2),
        memory: Some(512),
        disk: Some(1024),
        ..CreateSandbox::default()
    };
    let (created, sandbox) = sandbox_with(&f, body).await;
    assert!(created.sandbox_id.starts_with("sb_"), "{created:?}");
    assert_eq!(
        (created.provider.as_str(), created.template.as_str()),
        ("memory", "base")
    );
    assert_eq!(created.status, SandboxStatus::Running);
    assert!(created.secure);
    assert_eq!(created.metadata["k"], "v");
    assert_eq!(created.envs_keys, ["TOKEN"]);
    assert!(!serde_json::to_string(&created).unwrap().contains("s3cret"));
    assert_eq!(
        (created.cpu, created.memory, created.disk),
        (Some(2), Some(512), Some(1024))
    );
    // Only the lifetime is enforced: nothing runs to be bounded.
    let enforced: Vec<(&str, bool)> = created
        .limits_enforced
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        enforced,
        [
            ("cpu", false),
            ("disk", false),
            ("memory", false),
            ("timeout", true)
        ]
    );
    assert_eq!(
        seconds(&created.expires_at) - seconds(&created.created_at),
        120
    );
    assert_eq!(sandbox.info().await.unwrap(), created);
    // No limit asked for: only the lifetime's answer.
    let (plain, _) = super::sandbox(&f).await;
    assert_eq!(
        plain.limits_enforced,
        BTreeMap::from([("timeout".into(), true)])
    );
    assert_eq!((plain.cpu, plain.memory, plain.disk), (None, None, None));
}

#[tokio::test]
async fn create_refuses_what_memory_cannot_give_and_makes_nothing() {
    let f = fixture();
    let refused = [
        (json!({"template": "python"}), Code::TemplateNotFound),
        (json!({"gpu": "a100"}), Code::FeatureNotSupported),
        (json!({"timeout": 0}), Code::InvalidArgument),
        (json!({"timeout": 86_401}), Code::InvalidArgument),
        (json!({"cpu": 0}), Code::InvalidArgument),
        (json!({"memory": 0}), Code::InvalidArgument),
        (json!({"disk": 0}), Code::InvalidArgument),
        (json!({"envs": {"1BAD": "x"}}), Code::InvalidArgument),
        (json!({"envs": {"OK": "a\0b"}}), Code::InvalidArgument),
    ];
    let provider = &f.provider;
    let create = |body: serde_json::Value| async move {
        let body: CreateSandbox = serde_json::from_value(body).unwrap();
        provider.create(&conn("a"), body).await
    };
    for (body, expected) in refused {
        let shown = body.to_string();
        assert_eq!(code(create(body).await), expected, "{shown}");
    }
    let e = error(create(json!({"template": "python"})).await);
    let expected = "the memory provider has no template `python`: its one template is `base`";
    assert_eq!(e.message, expected);
    let e = error(create(json!({"timeout": 0})).await);
    assert_eq!(e.message, "`timeout` must be 1 to 86400 seconds, not 0");
    assert_eq!(f.provider.sandbox_count(), 0);
    // The bounds themselves are fine; no timeout is the default 300 s.
    for timeout in [Some(1), Some(86_400), None] {
        let record = f
            .provider
            .create(
                &conn("a"),
                CreateSandbox {
                    timeout,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let life = seconds(&record.expires_at) - seconds(&record.created_at);
        assert_eq!(life, timeout.unwrap_or(300), "{record:?}");
    }
}

#[tokio::test]
async fn a_paused_sandbox_keeps_its_files_and_resumes() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let paused = sandbox.pause().await.unwrap();
    assert_eq!(paused.status, SandboxStatus::Paused);
    assert_eq!(sandbox.info().await.unwrap().status, SandboxStatus::Paused);
    // Twice is once.
    assert_eq!(sandbox.pause().await.unwrap(), paused);
    // Files work while paused, as `local`'s do.
    sandbox
        .write_file(write("while-paused.txt"), body(b"still"))
        .await
        .unwrap();
    assert_eq!(read_all(&sandbox, "while-paused.txt").await, b"still");
    let resumed = sandbox.resume().await.unwrap();
    assert_eq!(resumed.status, SandboxStatus::Running);
    assert_eq!(sandbox.resume().await.unwrap(), resumed);
    let again = f
        .provider
        .connect(&conn("a"), &resumed.sandbox_id)
        .await
        .unwrap();
    assert_eq!(again.info().await.unwrap().status, SandboxStatus::Running);
}

#[tokio::test]
async fn a_kill_ends_everything_and_every_handle_says_so() {
    let f = fixture();
    let (record, sandbox) = sandbox(&f).await;
    sandbox
        .write_file(write("f.txt"), body(b"x"))
        .await
        .unwrap();
    let other = f
        .provider
        .connect(&conn("a"), &record.sandbox_id)
        .await
        .unwrap();
    let last = sandbox.kill().await.unwrap();
    assert_eq!(last.status, SandboxStatus::Stopped);
    assert_eq!(last.sandbox_id, record.sandbox_id);
    assert_eq!(f.provider.sandbox_count(), 0);
    for handle in [&sandbox, &other] {
        assert_eq!(code(handle.info().await), Code::SandboxNotFound);
        assert_eq!(code(handle.kill().await), Code::SandboxNotFound);
        assert_eq!(code(handle.pause().await), Code::SandboxNotFound);
        assert_eq!(code(handle.set_timeout(60).await), Code::SandboxNotFound);
        assert_eq!(code(handle.read_file("f.txt").await), Code::SandboxNotFound);
        assert_eq!(
            code(handle.write_file(write("g.txt"), body(b"y")).await),
            Code::SandboxNotFound
        );
        assert_eq!(
            code(handle.file_exists("f.txt").await),
            Code::SandboxNotFound
        );
        assert_eq!(code(handle.watch(".", false).await), Code::SandboxNotFound);
    }
    assert_eq!(
        code(f.provider.connect(&conn("a"), &record.sandbox_id).await),
        Code::SandboxNotFound
    );
    assert!(
        f.provider
            .list(&conn("a"), &ListSandboxes::default())
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn the_lifetime_is_enforced_and_moved_by_the_timeout() {
    let f = fixture();
    let (_, sandbox) = sandbox_with(
        &f,
        CreateSandbox {
            timeout: Some(1),
            ..Default::default()
        },
    )
    .await;
    let (_, kept) = super::sandbox(&f).await;
    let moved = kept.set_timeout(900).await.unwrap();
    let left = seconds(&moved.expires_at) as i64 - crate::services::ids::now();
    assert!((898..=901).contains(&left), "{moved:?}");
    assert_eq!(kept.info().await.unwrap().expires_at, moved.expires_at);
    for bad in [0, 86_401] {
        assert_eq!(code(kept.set_timeout(bad).await), Code::InvalidArgument);
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(code(sandbox.info().await), Code::SandboxNotFound);
    assert_eq!(f.provider.sandbox_count(), 1);
    // Shortened, it ends at the new time; paused, it ends all the same.
    kept.pause().await.unwrap();
    kept.set_timeout(1).await.unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(code(kept.info().await), Code::SandboxNotFound);
    assert_eq!(f.provider.sandbox_count(), 0);
}

#[tokio::test]
async fn what_memory_does_not_declare_is_not_supported() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let command = CommandBody {
        cmd: "true".into(),
        ..Default::default()
    };
    assert_eq!(
        code(sandbox.run(command.clone()).await),
        Code::FeatureNotSupported
    );
    assert_eq!(
        code(sandbox.stream(command).await),
        Code::FeatureNotSupported
    );
    assert_eq!(code(sandbox.processes().await), Code::FeatureNotSupported);
    assert_eq!(
        code(sandbox.port_url(8080).await),
        Code::FeatureNotSupported
    );
    assert_eq!(
        code(
            sandbox
                .terminal(&crate::engine::provider::TerminalOpen::new(
                    80, 24, "/bin/sh"
                ))
                .await
        ),
        Code::FeatureNotSupported
    );
    assert_eq!(
        code(sandbox.context_list().await),
        Code::FeatureNotSupported
    );
    // Nothing of it touched the files.
    let write = WriteQuery {
        path: Some("still.txt".into()),
        ..Default::default()
    };
    sandbox.write_file(write, body(b"ok")).await.unwrap();
}
