//! Two accounts never see each other's sandboxes; the list filters, pages and orders.

use super::*;
use crate::wire::{ListSandboxes, SandboxStatus};

#[tokio::test]
async fn a_sandbox_is_its_creator_s_alone() {
    let f = fixture();
    let (record, _) = sandbox(&f).await;
    let id = record.sandbox_id.as_str();
    let e = error(f.provider.connect(&conn("b"), id).await);
    assert_eq!(e.code, Code::SandboxNotFound);
    assert_eq!(
        e.message,
        format!("no sandbox `{id}` (it was killed, it expired, or it is another account's)")
    );
    assert!(
        f.provider
            .list(&conn("b"), &ListSandboxes::default())
            .await
            .unwrap()
            .is_empty()
    );
    let mine = f
        .provider
        .list(&conn("a"), &ListSandboxes::default())
        .await
        .unwrap();
    assert_eq!(mine, std::slice::from_ref(&record));
    assert_eq!(
        code(f.provider.connect(&conn("a"), "sb_nobody").await),
        Code::SandboxNotFound
    );
    // The other account's sandboxes of its own stay its own.
    let theirs = f
        .provider
        .create(&conn("b"), CreateSandbox::default())
        .await
        .unwrap();
    assert_eq!(
        code(f.provider.connect(&conn("a"), &theirs.sandbox_id).await),
        Code::SandboxNotFound
    );
    assert_eq!(
        f.provider
            .list(&conn("a"), &ListSandboxes::default())
            .await
            .unwrap(),
        [record]
    );
}

#[tokio::test]
async fn the_list_filters_pages_and_shows_the_newest_first() {
    let f = fixture();
    let mut made = Vec::new();
    for _ in 0..3 {
        made.push(sandbox(&f).await);
    }
    let ids = |list: Vec<SandboxRecord>| -> Vec<String> {
        list.into_iter().map(|r| r.sandbox_id).collect()
    };
    let newest_first: Vec<String> = made
        .iter()
        .rev()
        .map(|(r, _)| r.sandbox_id.clone())
        .collect();
    let provider = &f.provider;
    let list = |query: ListSandboxes| async move { provider.list(&conn("a"), &query).await };
    assert_eq!(
        ids(list(ListSandboxes::default()).await.unwrap()),
        newest_first
    );
    let page = ListSandboxes {
        limit: Some(1),
        offset: Some(1),
        ..Default::default()
    };
    assert_eq!(ids(list(page).await.unwrap()), [newest_first[1].clone()]);
    let past = ListSandboxes {
        offset: Some(10),
        ..Default::default()
    };
    assert!(list(past).await.unwrap().is_empty());
    made[0].1.pause().await.unwrap();
    let paused = ListSandboxes {
        status: Some(SandboxStatus::Paused),
        ..Default::default()
    };
    assert_eq!(
        ids(list(paused).await.unwrap()),
        [made[0].0.sandbox_id.clone()]
    );
    let running = ListSandboxes {
        status: Some(SandboxStatus::Running),
        ..Default::default()
    };
    assert_eq!(list(running).await.unwrap().len(), 2);
    for limit in [0, 1001] {
        let bad = ListSandboxes {
            limit: Some(limit),
            ..Default::default()
        };
        assert_eq!(code(list(bad).await), Code::InvalidArgument);
    }
}
