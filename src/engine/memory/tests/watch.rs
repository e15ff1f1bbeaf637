//! Watches: the events of every change in scope (and none out of it), a directory moved in,
//! the overflow, and the two ends (the directory gone, the sandbox gone).

use super::*;
use crate::wire::{MkdirBody, MoveBody};
use serde_json::json;

async fn mkdir(sandbox: &Arc<dyn Sandbox>, path: &str) {
    let body = MkdirBody {
        path: path.into(),
        parents: Some(true),
    };
    sandbox.mkdir(body).await.unwrap();
}

async fn rename(sandbox: &Arc<dyn Sandbox>, from: &str, to: &str) {
    let body = MoveBody {
        from: from.into(),
        to: to.into(),
        overwrite: None,
    };
    sandbox.rename(body).await.unwrap();
}

/// No event is waiting (the watch is quiet for 100 ms).
async fn quiet(watch: &mut EventStream) {
    let waited = tokio::time::timeout(Duration::from_millis(100), watch.next()).await;
    assert!(waited.is_err(), "expected nothing, got {waited:?}");
}

#[tokio::test]
async fn every_change_in_scope_is_an_event_as_local_shows_it() {
    let f = fixture();
    let (record, sandbox) = sandbox(&f).await;
    let at = |rest: &str| {
        home(&f, &record.sandbox_id)
            .join(rest)
            .display()
            .to_string()
    };
    mkdir(&sandbox, "w/sub").await;
    let mut watch = sandbox.watch("w", false).await.unwrap();
    sandbox
        .write_file(write("w/new.txt"), body(b"hello"))
        .await
        .unwrap();
    let made = event(&mut watch).await;
    assert_eq!(made.name, "create");
    let entry = made.data["entry"].clone();
    assert_eq!(
        made.data,
        json!({"path": at("w/new.txt"), "type": "file", "entry": entry})
    );
    assert_eq!(
        (
            entry["name"].clone(),
            entry["size"].clone(),
            entry["mode"].clone()
        ),
        (json!("new.txt"), json!(5), json!("0644"))
    );
    // A write over it replaces it whole: a `create` again, as `local`'s atomic write shows.
    sandbox
        .write_file(write("w/new.txt"), body(b"hello again"))
        .await
        .unwrap();
    let again = event(&mut watch).await;
    assert_eq!(
        (again.name, again.data["entry"]["size"].clone()),
        ("create", json!(11))
    );
    rename(&sandbox, "w/new.txt", "w/renamed.txt").await;
    let renamed = event(&mut watch).await;
    assert_eq!(renamed.name, "rename");
    assert_eq!(renamed.data["path"], at("w/renamed.txt"));
    assert_eq!(renamed.data["from"], at("w/new.txt"));
    assert_eq!(renamed.data["type"], "file");
    assert_eq!(renamed.data["entry"]["name"], "renamed.txt");
    sandbox.remove("w/renamed.txt", false).await.unwrap();
    let removed = event(&mut watch).await;
    assert_eq!(removed.name, "delete");
    assert_eq!(
        removed.data,
        json!({"path": at("w/renamed.txt"), "type": "file"})
    );
    // Not recursive: below `w/sub` and outside `w` nothing is seen; `w/sub` itself is.
    sandbox
        .write_file(write("w/sub/deep.txt"), body(b"x"))
        .await
        .unwrap();
    sandbox
        .write_file(write("elsewhere.txt"), body(b"x"))
        .await
        .unwrap();
    quiet(&mut watch).await;
    sandbox
        .mkdir(MkdirBody {
            path: "w/made".into(),
            parents: Some(false),
        })
        .await
        .unwrap();
    let dir = event(&mut watch).await;
    assert_eq!(
        (
            dir.name,
            dir.data["type"].clone(),
            dir.data["entry"]["mode"].clone()
        ),
        ("create", json!("dir"), json!("0755"))
    );
    // Moved out of the watch: a delete; in from outside: a create.
    rename(&sandbox, "w/made", "outside").await;
    assert_eq!(event(&mut watch).await.name, "delete");
    rename(&sandbox, "elsewhere.txt", "w/arrived.txt").await;
    let arrived = event(&mut watch).await;
    assert_eq!(
        (arrived.name, arrived.data["path"].clone()),
        ("create", json!(at("w/arrived.txt")))
    );
    quiet(&mut watch).await;
}

#[tokio::test]
async fn a_recursive_watch_sees_below_and_what_moves_in() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    mkdir(&sandbox, "w/a/b").await;
    mkdir(&sandbox, "outside/x/y").await;
    sandbox
        .write_file(write("outside/x/y/f.txt"), body(b"x"))
        .await
        .unwrap();
    let mut watch = sandbox.watch("w", true).await.unwrap();
    sandbox
        .write_file(write("w/a/b/deep.txt"), body(b"x"))
        .await
        .unwrap();
    let deep = event(&mut watch).await;
    assert!(
        deep.data["path"]
            .as_str()
            .unwrap()
            .ends_with("/w/a/b/deep.txt"),
        "{deep:?}"
    );
    // Directories a write makes come first, each a `create`.
    sandbox
        .write_file(write("w/n/m/f.txt"), body(b"x"))
        .await
        .unwrap();
    let mut made = Vec::new();
    for _ in 0..3 {
        let e = event(&mut watch).await;
        made.push((
            e.name,
            e.data["path"]
                .as_str()
                .unwrap()
                .rsplit("/w/")
                .next()
                .unwrap()
                .to_owned(),
        ));
    }
    assert_eq!(
        made,
        [
            ("create", "n".into()),
            ("create", "n/m".into()),
            ("create", "n/m/f.txt".into())
        ]
    );
    // A directory moved in brings what it holds.
    rename(&sandbox, "outside/x", "w/x").await;
    let mut brought = Vec::new();
    for _ in 0..3 {
        let e = event(&mut watch).await;
        assert_eq!(e.name, "create");
        assert!(e.data["entry"].is_object(), "{e:?}");
        brought.push(
            e.data["path"]
                .as_str()
                .unwrap()
                .rsplit("/w/")
                .next()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(brought, ["x", "x/y", "x/y/f.txt"]);
    quiet(&mut watch).await;
}

#[tokio::test]
async fn a_watch_on_a_file_sees_that_file_alone() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    sandbox
        .write_file(write("d/one.txt"), body(b"1"))
        .await
        .unwrap();
    let mut watch = sandbox.watch("d/one.txt", false).await.unwrap();
    sandbox
        .write_file(write("d/two.txt"), body(b"2"))
        .await
        .unwrap();
    sandbox
        .write_file(write("d/one.txt"), body(b"11"))
        .await
        .unwrap();
    let seen = event(&mut watch).await;
    assert!(
        seen.data["path"].as_str().unwrap().ends_with("/d/one.txt"),
        "{seen:?}"
    );
    sandbox.remove("d/one.txt", false).await.unwrap();
    assert_eq!(event(&mut watch).await.name, "delete");
    quiet(&mut watch).await;
}

#[tokio::test]
async fn the_watched_directory_gone_ends_the_watch_after_its_deletes() {
    let f = fixture();
    let (record, sandbox) = sandbox(&f).await;
    mkdir(&sandbox, "gone/inner").await;
    let mut watch = sandbox.watch("gone", false).await.unwrap();
    sandbox.remove("gone", true).await.unwrap();
    let removed = event(&mut watch).await;
    assert_eq!(
        (removed.name, removed.data["type"].clone()),
        ("delete", json!("dir"))
    );
    let Some(Err(e)) = next(&mut watch).await else {
        panic!("the watch ends with an error")
    };
    assert_eq!(e.code, Code::FileNotFound);
    let gone = home(&f, &record.sandbox_id).join("gone");
    assert_eq!(
        e.message,
        format!(
            "`{}` was deleted or moved away; the watch has ended",
            gone.display()
        )
    );
    assert!(
        next(&mut watch).await.is_none(),
        "nothing follows the error"
    );
    // Moved away is gone too.
    mkdir(&sandbox, "a/watched").await;
    let mut watch = sandbox.watch("a/watched", true).await.unwrap();
    rename(&sandbox, "a", "b").await;
    assert_eq!(code(next(&mut watch).await.unwrap()), Code::FileNotFound);
    assert!(next(&mut watch).await.is_none());
}

#[tokio::test]
async fn the_sandbox_s_end_ends_its_watches() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    mkdir(&sandbox, "w").await;
    let mut watch = sandbox.watch("w", false).await.unwrap();
    sandbox
        .write_file(write("w/before.txt"), body(b"x"))
        .await
        .unwrap();
    sandbox.kill().await.unwrap();
    // What changed before the end is told before it.
    assert_eq!(event(&mut watch).await.name, "create");
    let e = error(next(&mut watch).await.unwrap());
    assert_eq!(e.code, Code::SandboxNotFound);
    assert!(next(&mut watch).await.is_none());
}

#[tokio::test]
async fn a_watch_that_cannot_start_is_an_error() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    assert_eq!(
        code(sandbox.watch("nowhere", false).await),
        Code::FileNotFound
    );
    assert_eq!(
        code(sandbox.watch("../../etc", false).await),
        Code::PathNotAllowed
    );
    assert_eq!(code(sandbox.watch("", false).await), Code::InvalidArgument);
}

#[tokio::test]
async fn a_reader_that_falls_behind_gets_one_overflow_and_goes_on() {
    let f = fixture();
    let (record, sandbox) = sandbox(&f).await;
    let mut watch = sandbox.watch(".", false).await.unwrap();
    let capacity = crate::services::files::watch::DEFAULT_CAPACITY;
    for i in 0..capacity + 10 {
        sandbox
            .write_file(write(&format!("f{i}")), body(b"x"))
            .await
            .unwrap();
    }
    let overflow = event(&mut watch).await;
    assert_eq!(overflow.name, "overflow");
    assert_eq!(
        overflow.data["path"],
        home(&f, &record.sandbox_id).display().to_string()
    );
    assert!(
        overflow.data["message"]
            .as_str()
            .unwrap()
            .contains("list the path again")
    );
    // Then the newest changes, one `overflow` for the lot.
    let mut creates = 0;
    while let Ok(Some(Ok(e))) = tokio::time::timeout(Duration::from_millis(100), watch.next()).await
    {
        assert_eq!(e.name, "create");
        creates += 1;
    }
    assert_eq!(creates, capacity);
    sandbox
        .write_file(write("after"), body(b"x"))
        .await
        .unwrap();
    let after = event(&mut watch).await;
    assert!(
        after.data["path"].as_str().unwrap().ends_with("/after"),
        "{after:?}"
    );
}
