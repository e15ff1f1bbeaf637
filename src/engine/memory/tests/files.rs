//! Every file operation and its answers (the entry info `local` gives), the paths that
//! leave the sandbox, and the memory bound.

use super::*;
use crate::wire::EntryInfo;
use serde_json::{Value, json};

/// The entry as the wire writes it, without its time (checked RFC 3339 UTC first).
fn timeless(entry: &EntryInfo) -> Value {
    let at = &entry.modified_at;
    assert!(
        humantime::parse_rfc3339(at).is_ok() && at.ends_with('Z'),
        "{entry:?}"
    );
    let mut shown = serde_json::to_value(entry).unwrap();
    shown.as_object_mut().unwrap().remove("modified_at");
    shown
}

#[tokio::test]
async fn metadata_is_kept_with_a_file_and_moves_with_it() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    let pairs = std::collections::BTreeMap::from([("owner".to_owned(), "me".to_owned())]);
    let tagged = crate::wire::WriteQuery {
        metadata: Some(crate::services::files::Metadata::new(pairs.clone()).unwrap()),
        ..write("tagged.txt")
    };
    let written = sandbox.write_file(tagged, body(b"x")).await.unwrap();
    assert_eq!(written.metadata, pairs);
    // A memory file belongs to no account: no owner, as the wire leaves it out.
    assert_eq!(
        (written.owner.as_ref(), written.group.as_ref()),
        (None, None)
    );
    sandbox
        .rename(crate::wire::MoveBody {
            from: "tagged.txt".into(),
            to: "moved.txt".into(),
            overwrite: None,
        })
        .await
        .unwrap();
    assert_eq!(
        sandbox.file_info("moved.txt").await.unwrap().metadata,
        pairs
    );
    let listed = sandbox.list_files(".", 1).await.unwrap();
    let moved = listed.iter().find(|e| e.name == "moved.txt").unwrap();
    assert_eq!(moved.metadata, pairs);
    let plain = sandbox
        .write_file(write("moved.txt"), body(b"y"))
        .await
        .unwrap();
    assert!(plain.metadata.is_empty());
}

#[tokio::test]
async fn files_are_written_read_listed_moved_and_removed() {
    let f = fixture();
    let (record, sandbox) = sandbox(&f).await;
    let home = home(&f, &record.sandbox_id);
    let at = |rest: &str| home.join(rest).display().to_string();
    let bytes: Vec<u8> = (0..=255u8).chain(*b"\r\n\0end").collect();
    let leaked: &'static [u8] = Box::leak(bytes.clone().into_boxed_slice());
    let written = sandbox
        .write_file(write("data/blob.bin"), body(leaked))
        .await
        .unwrap();
    // Six keys on the wire: no `symlink_target` for a file.
    let shown = serde_json::to_value(&written).unwrap();
    assert_eq!(shown.as_object().unwrap().len(), 6, "{shown}");
    assert_eq!(
        timeless(&written),
        json!({"name": "blob.bin", "path": at("data/blob.bin"), "type": "file", "size": 262, "mode": "0644"})
    );
    assert_eq!(read_all(&sandbox, "data/blob.bin").await, bytes);
    // Absolute inside the home is the same file; a large body comes back in chunks, whole.
    assert_eq!(read_all(&sandbox, &at("data/blob.bin")).await, bytes);
    let big: Vec<u8> = (0..3 << 20).map(|i: u32| (i % 251) as u8).collect();
    let big: &'static [u8] = Box::leak(big.into_boxed_slice());
    sandbox
        .write_file(write("big.bin"), body(big))
        .await
        .unwrap();
    let read = sandbox.read_file("big.bin").await.unwrap();
    assert_eq!(read.size, 3 << 20);
    assert!(read.body.into_stream().count().await > 1, "read in chunks");
    assert_eq!(read_all(&sandbox, "big.bin").await, big);
    let empty = sandbox.write_file(write("empty"), body(b"")).await.unwrap();
    assert_eq!(empty.size, 0);
    assert!(read_all(&sandbox, "empty").await.is_empty());

    // A new home holds what `local`'s does: its temp folder.
    let listed = sandbox.list_files(".", 1).await.unwrap();
    let names: Vec<&str> = listed.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, [".tmp", "big.bin", "data", "empty"]);
    assert_eq!(
        timeless(&listed[2]),
        json!({"name": "data", "path": at("data"), "type": "dir", "size": 0, "mode": "0755"})
    );
    for file in ["t/a.txt", "t/d/b.txt", "t/d/e/c.txt"] {
        sandbox.write_file(write(file), body(b"x")).await.unwrap();
    }
    let paths =
        |entries: Vec<EntryInfo>| -> Vec<String> { entries.into_iter().map(|e| e.path).collect() };
    assert_eq!(
        paths(sandbox.list_files("t", 1).await.unwrap()),
        [at("t/a.txt"), at("t/d")]
    );
    assert_eq!(
        paths(sandbox.list_files("t", 2).await.unwrap()),
        [at("t/a.txt"), at("t/d"), at("t/d/b.txt"), at("t/d/e")]
    );
    assert_eq!(sandbox.list_files("t", 10).await.unwrap().len(), 5);

    let info = sandbox.file_info("t/a.txt").await.unwrap();
    assert_eq!((info.name.as_str(), info.size), ("a.txt", 1));
    let root = sandbox.file_info(".").await.unwrap();
    let shown = home.display().to_string();
    assert_eq!(
        (root.name.as_str(), root.path.as_str()),
        ("root", shown.as_str())
    );
    for (path, exists) in [
        ("t/a.txt", true),
        ("t", true),
        ("t/nothing", false),
        ("t/a.txt/below", false),
    ] {
        assert_eq!(sandbox.file_exists(path).await.unwrap(), exists, "{path}");
    }

    let made = sandbox.mkdir(mkdir("m/n/o", true)).await.unwrap();
    assert_eq!((made.type_.as_str(), made.mode.as_str()), ("dir", "0755"));
    // `mkdir -p` of what is there is fine.
    assert_eq!(
        sandbox.mkdir(mkdir("m/n/o", true)).await.unwrap().path,
        at("m/n/o")
    );
    assert_eq!(sandbox.mkdir(mkdir(".", true)).await.unwrap().path, shown);

    let moved = sandbox
        .rename(moving("t/a.txt", "moved.txt", None))
        .await
        .unwrap();
    assert_eq!((moved.name.as_str(), moved.size), ("moved.txt", 1));
    assert!(!sandbox.file_exists("t/a.txt").await.unwrap());
    sandbox
        .write_file(write("other.txt"), body(b"in the way"))
        .await
        .unwrap();
    sandbox
        .rename(moving("moved.txt", "other.txt", Some(true)))
        .await
        .unwrap();
    assert_eq!(read_all(&sandbox, "other.txt").await, b"x");
    // A directory moves whole, over an empty one too.
    sandbox.mkdir(mkdir("empty-dir", false)).await.unwrap();
    sandbox
        .rename(moving("t", "empty-dir", Some(true)))
        .await
        .unwrap();
    assert_eq!(read_all(&sandbox, "empty-dir/d/e/c.txt").await, b"x");
    // Onto itself: nothing to do.
    assert_eq!(
        sandbox
            .rename(moving("other.txt", "other.txt", Some(true)))
            .await
            .unwrap()
            .size,
        1
    );

    assert_eq!(
        sandbox.remove("other.txt", false).await.unwrap(),
        at("other.txt")
    );
    assert_eq!(
        sandbox.remove("empty-dir", true).await.unwrap(),
        at("empty-dir")
    );
    assert!(!sandbox.file_exists("empty-dir/d").await.unwrap());
    sandbox.remove("m/n/o", false).await.unwrap();
}

#[tokio::test]
async fn no_path_leaves_the_sandbox() {
    let f = fixture();
    let (_, sandbox) = sandbox(&f).await;
    sandbox
        .write_file(write("inside.txt"), body(b"x"))
        .await
        .unwrap();
    let sandboxes = f.dir.path().canonicalize().unwrap().join("sandboxes");
    let e = error(sandbox.read_file("../../etc/passwd").await);
    assert_eq!(e.code, Code::PathNotAllowed);
    assert_eq!(
        e.message,
        format!(
            "`{}/etc/passwd` is outside the allowed directories",
            sandboxes.display()
        )
    );
    let other = f
        .provider
        .create(&conn("a"), CreateSandbox::default())
        .await
        .unwrap();
    let neighbour = home(&f, &other.sandbox_id)
        .join("f.txt")
        .display()
        .to_string();
    for escape in [
        "../../etc/passwd",
        "/etc/passwd",
        "a/../../../etc/passwd",
        "..",
        neighbour.as_str(),
    ] {
        let refused = [
            code(sandbox.read_file(escape).await),
            code(sandbox.write_file(write(escape), body(b"planted")).await),
            code(sandbox.list_files(escape, 1).await),
            code(sandbox.file_info(escape).await),
            code(sandbox.file_exists(escape).await),
            code(sandbox.mkdir(mkdir(escape, true)).await),
            code(sandbox.rename(moving("inside.txt", escape, None)).await),
            code(sandbox.rename(moving(escape, "stolen.txt", None)).await),
            code(sandbox.remove(escape, true).await),
            code(sandbox.watch(escape, true).await),
        ];
        assert_eq!(refused, [Code::PathNotAllowed; 10], "{escape}");
    }
    assert!(
        sandbox.file_exists("inside.txt").await.unwrap(),
        "nothing inside was moved out"
    );
    let next_door = f
        .provider
        .connect(&conn("a"), &other.sandbox_id)
        .await
        .unwrap();
    assert!(
        !next_door.file_exists("f.txt").await.unwrap(),
        "nothing was planted next door"
    );
}

#[tokio::test]
async fn a_sandbox_s_files_stay_within_its_memory_bound() {
    let f = bounded(1000);
    let (record, sandbox) = sandbox(&f).await;
    static SIX: [u8; 600] = [6; 600];
    static NINE: [u8; 900] = [9; 900];
    sandbox.write_file(write("six"), body(&SIX)).await.unwrap();
    let e = error(sandbox.write_file(write("more"), body(&SIX)).await);
    assert_eq!(e.code, Code::InvalidArgument);
    assert!(
        e.message.contains(&record.sandbox_id) && e.message.contains("1000 bytes"),
        "{}",
        e.message
    );
    assert!(e.suggestion.is_some_and(|s| s.contains("remove files")));
    assert!(
        !sandbox.file_exists("more").await.unwrap(),
        "a refused write leaves nothing"
    );
    // What a write replaces is given back: 900 in place of 600 fits.
    sandbox.write_file(write("six"), body(&NINE)).await.unwrap();
    // A body that never ends is refused once it is past the room, not read forever.
    let endless: ByteStream = Box::pin(futures::stream::repeat_with(|| {
        Ok(Bytes::from_static(&[1; 64]))
    }));
    assert_eq!(
        code(sandbox.write_file(write("endless"), endless).await),
        Code::InvalidArgument
    );
    // Removing gives the room back, moving keeps it.
    sandbox.rename(moving("six", "nine", None)).await.unwrap();
    assert_eq!(
        code(sandbox.write_file(write("more"), body(&SIX)).await),
        Code::InvalidArgument
    );
    sandbox.remove("nine", false).await.unwrap();
    sandbox.write_file(write("more"), body(&SIX)).await.unwrap();
    // Each sandbox has a bound of its own.
    let (_, other) = super::sandbox(&f).await;
    other.write_file(write("six"), body(&SIX)).await.unwrap();
    // The full bound is 256 MiB.
    assert_eq!(super::super::MEMORY_BOUND, 256 * 1024 * 1024);
}
