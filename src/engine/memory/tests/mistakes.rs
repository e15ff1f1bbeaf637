//! Every file operation's refusals: the code `local` answers, and for the common ones the
//! very message.

use super::*;

#[tokio::test]
async fn every_mistake_answers_what_local_answers() {
    let f = fixture();
    let (record, sandbox) = sandbox(&f).await;
    let home = home(&f, &record.sandbox_id);
    sandbox
        .write_file(write("keep.txt"), body(b"first"))
        .await
        .unwrap();
    sandbox.mkdir(mkdir("adir/inner", true)).await.unwrap();

    let e = error(
        sandbox
            .write_file(query("keep.txt", false, true), body(b"second"))
            .await,
    );
    assert_eq!(e.code, Code::FileExists);
    assert_eq!(
        e.message,
        format!("`{}` already exists", home.join("keep.txt").display())
    );
    assert_eq!(
        read_all(&sandbox, "keep.txt").await,
        b"first",
        "a refused write changes nothing"
    );
    let e = error(
        sandbox
            .write_file(query("no/such/f.txt", true, false), body(b"x"))
            .await,
    );
    assert_eq!(
        (e.code, e.message),
        (
            Code::FileNotFound,
            format!("`{}` does not exist", home.join("no").display())
        )
    );
    assert_eq!(
        code(sandbox.write_file(write("adir"), body(b"x")).await),
        Code::WrongFileType
    );
    assert_eq!(
        code(
            sandbox
                .write_file(write("keep.txt/below"), body(b"x"))
                .await
        ),
        Code::WrongFileType
    );
    assert_eq!(
        code(sandbox.write_file(WriteQuery::default(), body(b"x")).await),
        Code::InvalidArgument
    );
    // The body failing leaves nothing behind.
    let failing: ByteStream = Box::pin(futures::stream::iter([
        Ok(Bytes::from_static(b"part")),
        Err(std::io::Error::other("the client went away")),
    ]));
    assert_eq!(
        code(sandbox.write_file(write("half.txt"), failing).await),
        Code::InvalidArgument
    );
    assert!(!sandbox.file_exists("half.txt").await.unwrap());

    let e = error(sandbox.read_file("missing.txt").await);
    assert_eq!(e.code, Code::FileNotFound);
    assert_eq!(
        e.message,
        format!("`{}` does not exist", home.join("missing.txt").display())
    );
    assert_eq!(code(sandbox.read_file("adir").await), Code::WrongFileType);
    assert_eq!(
        code(sandbox.read_file("nowhere/f").await),
        Code::FileNotFound
    );
    assert_eq!(
        code(sandbox.list_files("keep.txt", 1).await),
        Code::WrongFileType
    );
    assert_eq!(
        code(sandbox.list_files("nowhere", 1).await),
        Code::FileNotFound
    );
    for depth in [0, 11] {
        assert_eq!(
            code(sandbox.list_files(".", depth).await),
            Code::InvalidArgument
        );
    }
    assert_eq!(code(sandbox.file_info("nothing").await), Code::FileNotFound);

    assert_eq!(
        code(sandbox.mkdir(mkdir("adir", false)).await),
        Code::FileExists
    );
    assert_eq!(
        code(sandbox.mkdir(mkdir("keep.txt", true)).await),
        Code::FileExists
    );
    assert_eq!(
        code(sandbox.mkdir(mkdir(".", false)).await),
        Code::FileExists
    );
    assert_eq!(
        code(sandbox.mkdir(mkdir("x/y", false)).await),
        Code::FileNotFound
    );
    assert_eq!(
        code(sandbox.mkdir(mkdir("keep.txt/y", true)).await),
        Code::WrongFileType
    );

    sandbox
        .write_file(write("there.txt"), body(b"in the way"))
        .await
        .unwrap();
    assert_eq!(
        code(sandbox.rename(moving("keep.txt", "there.txt", None)).await),
        Code::FileExists
    );
    assert_eq!(
        read_all(&sandbox, "there.txt").await,
        b"in the way",
        "a refused move changes nothing"
    );
    assert_eq!(
        code(sandbox.rename(moving("never.txt", "x.txt", None)).await),
        Code::FileNotFound
    );
    assert_eq!(
        code(
            sandbox
                .rename(moving("adir", "adir/inner/deeper", None))
                .await
        ),
        Code::InvalidArgument
    );
    assert_eq!(
        code(sandbox.rename(moving("keep.txt", "adir", Some(true))).await),
        Code::WrongFileType
    );
    sandbox.mkdir(mkdir("bdir", false)).await.unwrap();
    assert_eq!(
        code(sandbox.rename(moving("bdir", "keep.txt", Some(true))).await),
        Code::WrongFileType
    );
    assert_eq!(
        code(sandbox.rename(moving("bdir", "adir", Some(true))).await),
        Code::WrongFileType
    );

    let e = error(sandbox.remove("adir", false).await);
    assert_eq!(e.code, Code::WrongFileType);
    assert_eq!(
        e.message,
        format!(
            "`{}` is a directory that is not empty",
            home.join("adir").display()
        )
    );
    assert_eq!(
        e.suggestion.as_deref(),
        Some("pass `recursive=true` to remove it whole")
    );
    assert!(
        sandbox.file_exists("adir/inner").await.unwrap(),
        "a refused remove removes nothing"
    );
    assert_eq!(
        code(sandbox.remove("missing.txt", false).await),
        Code::FileNotFound
    );

    // The home itself is never replaced, moved or removed.
    for refused in [
        code(sandbox.write_file(write("."), body(b"x")).await),
        code(sandbox.rename(moving(".", "elsewhere", None)).await),
        code(sandbox.rename(moving("keep.txt", ".", Some(true))).await),
        code(sandbox.remove(".", true).await),
    ] {
        assert_eq!(refused, Code::PathNotAllowed);
    }
    // A name longer than filesystems allow, a NUL: bad values.
    let long = "n".repeat(256);
    assert_eq!(
        code(sandbox.write_file(write(&long), body(b"x")).await),
        Code::InvalidArgument
    );
    assert_eq!(code(sandbox.file_info("a\0b").await), Code::InvalidArgument);
    assert!(!sandbox.file_exists(&"n".repeat(255)).await.unwrap());
}
