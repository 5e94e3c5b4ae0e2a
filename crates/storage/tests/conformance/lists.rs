use super::*;

pub(super) async fn list_returns_keys_in_order_at_current_revision(store: Arc<dyn Store>) {
    let prefix = "/registry/pods/";
    // Created out of order; listed in byte order of the keys.
    let names = ["ns2/b", "ns1/c", "ns1/a", "ns10/a", "ns1/b", "ns1-x/a"];
    let mut expected = Vec::new();
    for name in names {
        expected.push(create_kv(&store, &format!("{prefix}{name}"), name).await);
    }
    expected.sort_by(|a, b| a.key.cmp(&b.key));

    let list = list_all(&store, prefix).await;
    assert_eq!(
        list.kvs, expected,
        "list returns every key, in key order, with its values"
    );
    assert_eq!(
        list.revision,
        current_revision(&store).await,
        "list is at the current revision"
    );
    assert_eq!(
        list.continue_token, None,
        "an unlimited list has no continue token"
    );
    assert_eq!(list.remaining, 0, "an unlimited list has nothing remaining");

    let limited = list_ok(&store, prefix, &paged(0)).await;
    assert_eq!(limited.kvs, expected, "limit 0 means no limit");
}

/// A list of a big collection in one page (6 MiB here; gRPC clients decode 4 MiB by default).
pub(super) async fn list_of_more_than_four_mib_in_one_page(store: Arc<dyn Store>) {
    let value = Bytes::from(vec![b'v'; 1024 * 1024]);
    for i in 0..6 {
        store
            .create(&format!("/registry/big/{i}"), value.clone())
            .await
            .expect("create 1 MiB value");
    }
    let list = store
        .list("/registry/big/", &ListOptions::default())
        .await
        .expect("list 6 MiB");
    assert_eq!(list.kvs.len(), 6);
    assert!(list.kvs.iter().all(|kv| kv.value == value));
}

pub(super) async fn list_isolates_prefixes(store: Arc<dyn Store>) {
    for key in [
        "/registry/a",
        "/registry/a/1",
        "/registry/a/2",
        "/registry/ab/1",
        "/registry/ab/2",
        "/registry/b/1",
        "/registry/a0",
    ] {
        create_ok(&store, key, key).await;
    }

    let a = list_all(&store, "/registry/a/").await;
    assert_eq!(
        keys(&a.kvs),
        ["/registry/a/1", "/registry/a/2"],
        "list /registry/a/"
    );
    let ab = list_all(&store, "/registry/ab/").await;
    assert_eq!(
        keys(&ab.kvs),
        ["/registry/ab/1", "/registry/ab/2"],
        "list /registry/ab/"
    );
    let none = list_all(&store, "/registry/c/").await;
    assert!(
        none.kvs.is_empty(),
        "list of an empty prefix: {:?}",
        none.kvs
    );

    // Paging must not run past the prefix either.
    let pages = list_pages(&store, "/registry/a/", 1).await;
    let paged: Vec<_> = pages.iter().flat_map(|page| keys(&page.kvs)).collect();
    assert_eq!(
        paged,
        ["/registry/a/1", "/registry/a/2"],
        "paged list of /registry/a/"
    );
    assert_eq!(pages.len(), 2, "two pages of one item");
}

pub(super) async fn list_pages_with_limit_and_continue(store: Arc<dyn Store>) {
    let prefix = "/registry/secrets/default/";
    let mut all = Vec::new();
    for i in 0..7 {
        all.push(create_kv(&store, &format!("{prefix}s{i}"), &format!("secret {i}")).await);
    }
    // A neighbouring prefix that must not count towards `remaining`.
    create_ok(&store, "/registry/secrets/other/s0", "other").await;
    let revision = current_revision(&store).await;

    for (limit, sizes) in [
        (2, vec![2, 2, 2, 1]),
        (3, vec![3, 3, 1]),
        (7, vec![7]),
        (1, vec![1; 7]),
        (100, vec![7]),
    ] {
        let pages = list_pages(&store, prefix, limit).await;
        let what = format!("list {prefix} with limit {limit}");
        let page_sizes: Vec<_> = pages.iter().map(|page| page.kvs.len()).collect();
        assert_eq!(page_sizes, sizes, "{what}: page sizes");
        let mut seen = 0;
        for (index, page) in pages.iter().enumerate() {
            seen += page.kvs.len();
            let remaining = (all.len() - seen) as u64;
            assert_eq!(
                page.remaining, remaining,
                "{what}: remaining after page {index}"
            );
            assert_eq!(
                page.continue_token.is_some(),
                remaining > 0,
                "{what}: page {index} has a continue token exactly when items remain"
            );
            assert_eq!(
                page.revision, revision,
                "{what}: page {index} is at the list's revision"
            );
        }
        let items: Vec<KeyValue> = pages.into_iter().flat_map(|page| page.kvs).collect();
        assert_eq!(
            items, all,
            "{what}: the pages together are the whole list, in order"
        );
    }
}

pub(super) async fn list_pages_stay_at_first_revision_while_writes_go_on(store: Arc<dyn Store>) {
    let prefix = "/registry/configmaps/default/";
    let key = |i: usize| format!("{prefix}cm{i:02}");
    let mut original = Vec::new();
    for i in 0..10 {
        original.push(create_kv(&store, &key(i), &format!("cm {i}")).await);
    }

    let first = list_ok(&store, prefix, &paged(3)).await;
    let revision = first.revision;
    assert_eq!(keys(&first.kvs), keys(&original[..3]), "first page");
    assert_eq!(first.remaining, 7, "remaining after the first page");

    // Between pages: delete a key not yet listed, update one, create keys before and after
    // the next page's start and at the end, delete one already listed.
    delete_ok(&store, &key(4)).await;
    update_kv(&store, &original[5], "updated").await;
    create_ok(&store, &format!("{prefix}cm03a"), "new").await;
    create_ok(&store, &format!("{prefix}cm99"), "new").await;
    delete_ok(&store, &key(1)).await;

    let second = next_page(&store, prefix, &first, 3).await;
    assert_eq!(
        second.kvs,
        original[3..6],
        "second page: as at the first page's revision"
    );
    assert_eq!(
        second.revision, revision,
        "second page is at the first page's revision"
    );
    assert_eq!(second.remaining, 4, "remaining after the second page");

    // More writes, including to keys of the next page.
    update_kv(&store, &original[7], "updated").await;
    delete_ok(&store, &key(8)).await;
    create_ok(&store, &format!("{prefix}cm06a"), "new").await;

    let third = next_page(&store, prefix, &second, 3).await;
    assert_eq!(
        third.kvs,
        original[6..9],
        "third page: as at the first page's revision"
    );
    assert_eq!(
        third.revision, revision,
        "third page is at the first page's revision"
    );
    assert_eq!(third.remaining, 1, "remaining after the third page");

    let last = next_page(&store, prefix, &third, 3).await;
    assert_eq!(
        last.kvs,
        original[9..],
        "last page: as at the first page's revision"
    );
    assert_eq!(
        last.revision, revision,
        "last page is at the first page's revision"
    );
    assert_eq!(
        (last.remaining, last.continue_token),
        (0, None),
        "nothing follows the last page"
    );

    // A fresh list sees the writes.
    let now = list_all(&store, prefix).await;
    let now_keys = keys(&now.kvs);
    for (key, present) in [
        (key(1), false),
        (key(4), false),
        (key(8), false),
        (format!("{prefix}cm03a"), true),
        (format!("{prefix}cm06a"), true),
        (format!("{prefix}cm99"), true),
    ] {
        assert_eq!(
            now_keys.contains(&key.as_str()),
            present,
            "a fresh list has {key}: {present}"
        );
    }
}

pub(super) async fn list_at_past_revision(store: Arc<dyn Store>) {
    let prefix = "/registry/services/";
    let a = create_kv(&store, &format!("{prefix}a"), "a1").await;
    let b = create_kv(&store, &format!("{prefix}b"), "b1").await;
    let c = create_kv(&store, &format!("{prefix}c"), "c1").await;
    let revision = c.mod_revision;

    update_kv(&store, &a, "a2").await;
    delete_ok(&store, &b.key).await;
    create_ok(&store, &format!("{prefix}aa"), "new").await;
    let list = list_ok(&store, prefix, &at_revision(revision)).await;
    assert_eq!(
        list.kvs,
        [a.clone(), b.clone(), c.clone()],
        "list at revision {revision}"
    );
    assert_eq!(
        list.revision, revision,
        "the list reports the revision it was read at"
    );
    let list = list_ok(&store, prefix, &at_revision(b.mod_revision)).await;
    assert_eq!(
        list.kvs,
        [a.clone(), b.clone()],
        "list at revision {}",
        b.mod_revision
    );

    // Paging at a past revision: the continue token carries that revision.
    let paged_at_past = ListOptions {
        revision: Some(revision),
        limit: Some(2),
        ..Default::default()
    };
    let first = list_ok(&store, prefix, &paged_at_past).await;
    assert_eq!(first.kvs, [a, b], "first page at revision {revision}");
    assert_eq!(
        (first.revision, first.remaining),
        (revision, 1),
        "first page at revision {revision}"
    );
    let second = next_page(&store, prefix, &first, 2).await;
    assert_eq!(second.kvs, [c], "second page at revision {revision}");
    assert_eq!(
        second.revision, revision,
        "second page at revision {revision}"
    );
    assert_eq!(
        second.continue_token, None,
        "nothing follows the second page"
    );
}

pub(super) async fn list_at_future_revision_fails(store: Arc<dyn Store>) {
    create_ok(&store, "/registry/a/1", "1").await;
    let future = current_revision(&store).await + 1;
    let result = store.list("/registry/a/", &at_revision(future)).await;
    assert!(
        matches!(result, Err(StorageError::FutureRevision { requested, .. }) if requested == future),
        "list at future revision {future}: expected FutureRevision, got {result:?}"
    );
}

pub(super) async fn list_rejects_revision_with_continue_token(store: Arc<dyn Store>) {
    let prefix = "/registry/a/";
    for i in 0..3 {
        create_ok(&store, &format!("{prefix}{i}"), "v").await;
    }
    let first = list_ok(&store, prefix, &paged(1)).await;
    let options = ListOptions {
        revision: Some(first.revision),
        limit: Some(1),
        continue_token: first.continue_token.clone(),
    };
    let result = store.list(prefix, &options).await;
    assert!(
        matches!(result, Err(StorageError::InvalidRequest(_))),
        "list with both a revision and a continue token: expected InvalidRequest, got {result:?}"
    );
}

pub(super) async fn list_rejects_garbage_continue_token(store: Arc<dyn Store>) {
    let prefix = "/registry/a/";
    create_ok(&store, &format!("{prefix}1"), "v").await;
    for garbage in ["garbage!", "bm90IGEgdG9rZW4", "e30"] {
        let options = continue_from(Some(garbage.to_string()), 1);
        let result = store.list(prefix, &options).await;
        assert!(
            matches!(result, Err(StorageError::InvalidContinue(_))),
            "list with continue token {garbage:?}: expected InvalidContinue, got {result:?}"
        );
    }
}

// =============================================================================================
// Watch.
