//! Files of a sandbox, and paths that would leave it.

use super::*;
use crate::engine::provider::ByteStream;
use crate::wire::{MkdirBody, MoveBody, WriteQuery};
use bytes::Bytes;

fn body(bytes: &'static [u8]) -> ByteStream {
    Box::pin(futures::stream::iter(vec![
        Ok(Bytes::from_static(&bytes[..bytes.len() / 2])),
        Ok(Bytes::from_static(&bytes[bytes.len() / 2..])),
    ]))
}

fn write(path: &str) -> WriteQuery {
    WriteQuery {
        path: Some(path.into()),
        ..WriteQuery::default()
    }
}

async fn read_all(sandbox: &Arc<dyn Sandbox>, path: &str) -> Vec<u8> {
    let read = sandbox.read_file(path).await.unwrap();
    let chunks: Vec<_> = read.body.into_stream().collect().await;
    let bytes: Vec<u8> = chunks
        .into_iter()
        .flat_map(|c| c.unwrap().to_vec())
        .collect();
    assert_eq!(read.size, bytes.len() as u64);
    bytes
}

#[tokio::test]
async fn metadata_is_kept_with_the_file_and_owners_are_named() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let pairs = std::collections::BTreeMap::from([("owner".to_owned(), "me".to_owned())]);
    let tagged = WriteQuery {
        metadata: Some(crate::services::files::Metadata::new(pairs.clone()).unwrap()),
        ..write("tagged.txt")
    };
    let written = sandbox.write_file(tagged, body(b"x!")).await.unwrap();
    assert_eq!(written.metadata, pairs);
    let info = sandbox.file_info("tagged.txt").await.unwrap();
    assert_eq!(info.metadata, pairs);
    let listed = sandbox.list_files(".", 1).await.unwrap();
    let found = listed.iter().find(|e| e.name == "tagged.txt").unwrap();
    assert_eq!(found.metadata, pairs);
    // Without isolation, the host's names of the engine's own ids.
    let me = nix::unistd::User::from_uid(nix::unistd::getuid()).unwrap();
    let me = me.map_or_else(|| nix::unistd::getuid().to_string(), |u| u.name);
    assert_eq!(info.owner.as_deref(), Some(me.as_str()));
    assert!(info.group.as_deref().is_some_and(|g| !g.is_empty()));
    // A write replaces the metadata with its own: none here.
    let again = sandbox
        .write_file(write("tagged.txt"), body(b"y!"))
        .await
        .unwrap();
    assert!(again.metadata.is_empty());
    assert!(
        sandbox
            .file_info("tagged.txt")
            .await
            .unwrap()
            .metadata
            .is_empty()
    );
}

#[tokio::test]
async fn files_are_written_read_listed_moved_and_removed() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let entry = sandbox
        .write_file(write("notes/a.txt"), body(b"hello, files"))
        .await
        .unwrap();
    assert_eq!((entry.name.as_str(), entry.size), ("a.txt", 12));
    assert_eq!(read_all(&sandbox, "notes/a.txt").await, b"hello, files");
    // What a command wrote is a file too, at the same place.
    sandbox
        .run(crate::wire::CommandBody {
            cmd: "printf x > notes/b.txt".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let home = entry.path.trim_end_matches("/notes/a.txt").to_owned();
    assert_eq!(
        read_all(&sandbox, &format!("{home}/notes/b.txt")).await,
        b"x"
    );
    let kept = sandbox
        .write_file(
            WriteQuery {
                overwrite: Some(false),
                ..write("notes/a.txt")
            },
            body(b"no"),
        )
        .await;
    assert_eq!(code_of(kept), Code::FileExists);

    let made = sandbox
        .mkdir(MkdirBody {
            path: "deep/er".into(),
            parents: None,
        })
        .await
        .unwrap();
    assert_eq!(made.type_, "dir");
    // Like `mkdir -p` by default; without parents an existing path is refused.
    sandbox
        .mkdir(MkdirBody {
            path: "deep/er".into(),
            parents: None,
        })
        .await
        .unwrap();
    assert_eq!(
        code_of(
            sandbox
                .mkdir(MkdirBody {
                    path: "deep/er".into(),
                    parents: Some(false),
                })
                .await
        ),
        Code::FileExists
    );
    let moved = sandbox
        .rename(MoveBody {
            from: "notes/a.txt".into(),
            to: "deep/er/a.txt".into(),
            overwrite: None,
        })
        .await
        .unwrap();
    assert_eq!(moved.name, "a.txt");
    assert!(!sandbox.file_exists("notes/a.txt").await.unwrap());
    assert!(sandbox.file_exists("deep/er/a.txt").await.unwrap());
    let info = sandbox.file_info("deep").await.unwrap();
    assert_eq!(info.type_, "dir");
    let shallow = sandbox.list_files(".", 1).await.unwrap();
    let names: Vec<_> = shallow.iter().map(|e| e.name.as_str()).collect();
    assert!(
        names.contains(&"deep") && names.contains(&"notes"),
        "{names:?}"
    );
    assert!(!names.contains(&"a.txt"));
    let deep = sandbox.list_files(".", 3).await.unwrap();
    assert!(deep.iter().any(|e| e.name == "a.txt"));
    assert_eq!(
        code_of(sandbox.remove("deep", false).await),
        Code::WrongFileType
    );
    let removed = sandbox.remove("deep", true).await.unwrap();
    assert_eq!(removed, format!("{home}/deep"));
    assert_eq!(code_of(sandbox.file_info("deep").await), Code::FileNotFound);
    assert_eq!(
        code_of(sandbox.read_file("missing").await.map(|r| r.size)),
        Code::FileNotFound
    );
    end(&sandbox).await;
}

#[tokio::test]
async fn no_path_leaves_the_sandbox() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let outside = f.dir.path().join("outside.txt");
    std::fs::write(&outside, "secret").unwrap();
    // A link made inside the sandbox that points out of it.
    sandbox
        .run(crate::wire::CommandBody {
            cmd: format!("ln -s {} link; ln -s .. up", outside.display()),
            ..Default::default()
        })
        .await
        .unwrap();
    let escaping = [
        "../x".to_owned(),
        "../sandbox.json".to_owned(),
        "/etc/passwd".to_owned(),
        outside.display().to_string(),
        "link".to_owned(),
        "up/sandbox.json".to_owned(),
    ];
    for path in &escaping {
        let read = sandbox.read_file(path).await.map(|r| r.size);
        assert_eq!(code_of(read), Code::PathNotAllowed, "read {path}");
        let written = sandbox.write_file(write(path), body(b"pwned")).await;
        assert_eq!(code_of(written), Code::PathNotAllowed, "write {path}");
        assert_eq!(
            code_of(sandbox.file_info(path).await),
            Code::PathNotAllowed,
            "info {path}"
        );
    }
    assert_eq!(
        code_of(sandbox.remove("..", true).await),
        Code::PathNotAllowed
    );
    let out = sandbox
        .rename(MoveBody {
            from: "link".into(),
            to: "../stolen".into(),
            overwrite: None,
        })
        .await;
    assert_eq!(code_of(out), Code::PathNotAllowed);
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "secret");
    assert!(!f.dir.path().join("sandboxes").join("x").exists());
    end(&sandbox).await;
    assert!(
        outside.exists(),
        "the end removes the sandbox, not what its links point at"
    );
}

#[tokio::test]
async fn a_watch_reports_changes_and_ends_with_the_sandbox() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let mut watch = sandbox.watch(".", true).await.unwrap();
    sandbox
        .write_file(write("seen.txt"), body(b"abc"))
        .await
        .unwrap();
    // The atomic write may show its temp file first; the name comes as a create or as the
    // rename onto it.
    let seen = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(event) = watch.next().await {
            let event = event.unwrap();
            if event.data["path"]
                .as_str()
                .is_some_and(|p| p.ends_with("/seen.txt"))
            {
                return event;
            }
        }
        panic!("the watch ended")
    })
    .await
    .unwrap();
    assert!(matches!(seen.name, "create" | "rename"), "{seen:?}");
    assert_eq!(seen.data["entry"]["size"], 3, "{seen:?}");
    sandbox.kill().await.unwrap();
    let rest = tokio::time::timeout(Duration::from_secs(10), async {
        let mut rest = Vec::new();
        while let Some(event) = watch.next().await {
            rest.push(event);
        }
        rest
    })
    .await
    .expect("the watch ends with the sandbox");
    assert!(rest.last().is_some_and(|e| e.is_err()), "{rest:?}");
}

#[tokio::test]
async fn a_write_of_declared_length_reserves_the_temp_file_s_blocks_before_the_body_comes() {
    use std::os::unix::fs::MetadataExt;
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let first = sandbox
        .write_file(write("first.txt"), body(b"home"))
        .await
        .unwrap();
    let home = std::path::PathBuf::from(first.path.trim_end_matches("/first.txt"));
    let len = 4 * 1024 * 1024;
    let (rest, wait) = futures::channel::oneshot::channel::<()>();
    let chunks =
        futures::stream::iter([Ok::<_, std::io::Error>(Bytes::from(vec![7u8; 64 * 1024]))]).chain(
            futures::stream::once(async move {
                let _ = wait.await;
                Ok(Bytes::from(vec![7u8; len - 64 * 1024]))
            }),
        );
    let upload =
        crate::zero_copy::Upload::plain(axum::body::Body::from_stream(chunks), Some(len as u64));
    let writing = {
        let sandbox = sandbox.clone();
        tokio::spawn(async move { sandbox.write_upload(write("big.bin"), upload).await })
    };
    // While the rest has not come, the temp file holds the blocks of the whole length.
    let mut held = 0;
    for _ in 0..500 {
        let temp = std::fs::read_dir(&home)
            .unwrap()
            .filter_map(Result::ok)
            .find(|e| e.file_name().to_string_lossy().starts_with(".svc-write-"));
        if let Some(meta) = temp.and_then(|e| e.metadata().ok()) {
            held = meta.blocks() * 512;
            if held >= len as u64 {
                break;
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(held >= len as u64, "{held} bytes of blocks held for {len}");
    rest.send(()).unwrap();
    let entry = writing.await.unwrap().unwrap();
    assert_eq!(entry.size, len as u64);
}
