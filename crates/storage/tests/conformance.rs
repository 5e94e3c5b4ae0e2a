//! The storage conformance suite: one set of cases, run against both backends.
//!
//! Every case is an `async fn(Arc<dyn Store>)` written once below; [`conformance_suite!`]
//! turns the list of cases into one test module per backend (`embedded`, `etcd`), each test
//! on a fresh store: the embedded store in its own temporary directory, the etcd store on its
//! own single-member etcd cluster. The etcd tests fail (they do not skip) when there is no
//! etcd binary (`$KAPI_ETCD_BIN`, else `/usr/bin/etcd`, else `etcd` on `PATH`).
//!
//! The contract checked here is the one in the crate documentation: etcd's semantics for
//! revisions, conditional writes, paginated consistent lists, watches and compaction.
//! Revisions are never assumed to be contiguous.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kapi_storage::{
    Event, EventKind, KeyValue, ListOptions, Revision, StorageError, Store, WatchOptions,
    guaranteed_update,
};

use common::*;

/// Generates the test module of one backend: one `#[tokio::test]` per case, each on a fresh
/// store opened by `$open(progress_interval)`.
macro_rules! conformance_suite {
    ($backend:ident, $open:path) => {
        mod $backend {
            use super::*;

            conformance_suite!(@cases $open, FAST_PROGRESS: [
                fresh_store_starts_at_revision_one,
                create_then_get_returns_value_and_revisions,
                create_existing_key_fails_with_key_exists,
                get_missing_key_returns_none,
                revisions_increase_across_keys_and_match_reads,
                get_at_past_revision_returns_value_then,
                get_at_future_revision_fails,
                update_with_current_revision_succeeds,
                update_with_stale_revision_conflicts_with_current_value,
                update_missing_key_fails_with_key_not_found,
                delete_without_precondition_returns_previous_value,
                delete_with_precondition_succeeds_or_conflicts,
                delete_missing_key_fails_with_key_not_found,
                deleted_key_can_be_recreated,
                list_returns_keys_in_order_at_current_revision,
                list_isolates_prefixes,
                list_of_more_than_four_mib_in_one_page,
                list_pages_with_limit_and_continue,
                list_pages_stay_at_first_revision_while_writes_go_on,
                list_at_past_revision,
                list_at_future_revision_fails,
                list_rejects_revision_with_continue_token,
                list_rejects_garbage_continue_token,
                watch_from_now_sees_only_later_changes,
                watch_from_past_revision_replays_history_then_continues_live,
                watch_single_key_ignores_other_keys,
                watch_prefix_ignores_keys_outside_prefix,
                watch_delivers_many_events_in_order_to_slow_consumers,
                periodic_progress_is_sent_to_idle_watch,
                compaction_fails_reads_before_compacted_revision,
                compaction_fails_lists_and_continue_tokens_at_old_revisions,
                compaction_fails_watches_from_old_revisions,
                compaction_keeps_latest_value_of_every_live_key,
                compacting_an_already_compacted_revision_fails_with_compacted,
                concurrent_guaranteed_updates_lose_no_update,
                concurrent_creates_of_one_key_have_one_winner,
                concurrent_updates_with_same_expected_revision_have_one_winner,
            ]);

            conformance_suite!(@cases $open, NO_PERIODIC_PROGRESS: [
                request_progress_notifies_every_watch,
            ]);
        }
    };
    (@cases $open:path, $progress_interval:ident: [$($case:ident),* $(,)?]) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                run_case($open($progress_interval).await, super::$case).await;
            }
        )*
    };
}

conformance_suite!(embedded, open_embedded);
conformance_suite!(etcd, open_etcd);

// =============================================================================================
// Create and get.

async fn fresh_store_starts_at_revision_one(store: Arc<dyn Store>) {
    assert_eq!(
        current_revision(&store).await,
        1,
        "an empty store is at revision 1"
    );
    let empty = list_all(&store, "/").await;
    assert!(
        empty.kvs.is_empty(),
        "an empty store lists nothing: {:?}",
        empty.kvs
    );
    assert_eq!(
        empty.revision, 1,
        "a list of an empty store is at revision 1"
    );

    let revision = create_ok(&store, "/registry/pods/default/a", "a").await;
    assert!(
        revision > 1,
        "the first write's revision {revision} is after 1"
    );
    assert_eq!(
        current_revision(&store).await,
        revision,
        "the store is at the write's revision"
    );
}

async fn create_then_get_returns_value_and_revisions(store: Arc<dyn Store>) {
    let key = "/registry/pods/default/a";
    let revision = create_ok(&store, key, "pod a").await;

    let response = bounded("get", store.get(key, None)).await.expect("get");
    assert_eq!(
        response.kv,
        Some(kv(key, "pod a", revision, revision)),
        "a created key reads back with create and mod revision = the create's revision"
    );
    assert!(
        response.revision >= revision,
        "get is served at {} which is before the create at {revision}",
        response.revision
    );
}

async fn create_existing_key_fails_with_key_exists(store: Arc<dyn Store>) {
    let key = "/registry/pods/default/a";
    let created = create_kv(&store, key, "first").await;

    let result = store.create(key, val("second")).await;
    assert!(
        matches!(&result, Err(StorageError::KeyExists { key: k }) if k == key),
        "create of an existing key: expected KeyExists, got {result:?}"
    );
    assert_eq!(
        get_ok(&store, key, None).await,
        Some(created.clone()),
        "the failed create changed nothing"
    );
    assert_eq!(
        current_revision(&store).await,
        created.mod_revision,
        "a failed create is no write"
    );
}

async fn get_missing_key_returns_none(store: Arc<dyn Store>) {
    create_ok(&store, "/registry/pods/default/a", "a").await;
    for missing in [
        "/registry/pods/default/b",
        "/registry/pods/default/",
        "/registry/pods/default/a/",
    ] {
        assert_eq!(
            get_ok(&store, missing, None).await,
            None,
            "get {missing} finds nothing"
        );
    }
}

async fn revisions_increase_across_keys_and_match_reads(store: Arc<dyn Store>) {
    let mut last = current_revision(&store).await;
    let mut check = |revision: Revision, what: &str| {
        assert!(
            revision > last,
            "{what}: revision {revision} is not after the previous {last}"
        );
        last = revision;
    };

    let a = create_kv(&store, "/registry/a", "a1").await;
    check(a.mod_revision, "create a");
    let b = create_kv(&store, "/registry/b", "b1").await;
    check(b.mod_revision, "create b");
    let a = update_kv(&store, &a, "a2").await;
    check(a.mod_revision, "update a");
    let deleted = delete_ok(&store, "/registry/b").await;
    check(deleted.revision, "delete b");
    let c = create_kv(&store, "/registry/c", "c1").await;
    check(c.mod_revision, "create c");

    assert_eq!(get_ok(&store, "/registry/a", None).await, Some(a), "get a");
    assert_eq!(
        get_ok(&store, "/registry/b", None).await,
        None,
        "get deleted b"
    );
    assert_eq!(
        get_ok(&store, "/registry/c", None).await,
        Some(c.clone()),
        "get c"
    );
    assert_eq!(
        current_revision(&store).await,
        c.mod_revision,
        "the current revision is the last write's"
    );
}

async fn get_at_past_revision_returns_value_then(store: Arc<dyn Store>) {
    let key = "/registry/configmaps/default/a";
    let before = current_revision(&store).await;
    let v1 = create_kv(&store, key, "v1").await;
    let other = create_kv(&store, "/registry/configmaps/default/b", "b").await;
    let v2 = update_kv(&store, &v1, "v2").await;
    let deleted = delete_ok(&store, key).await;
    let v3 = create_kv(&store, key, "v3").await;

    let cases = [
        (before, None, "before the create"),
        (v1.mod_revision, Some(&v1), "at the create"),
        (other.mod_revision, Some(&v1), "at another key's write"),
        (v2.mod_revision, Some(&v2), "at the update"),
        (deleted.revision, None, "at the deletion"),
        (v3.mod_revision, Some(&v3), "at the re-create"),
    ];
    for (revision, expected, what) in cases {
        assert_eq!(
            get_ok(&store, key, Some(revision)).await.as_ref(),
            expected,
            "get {key} at revision {revision} ({what})"
        );
    }
}

async fn get_at_future_revision_fails(store: Arc<dyn Store>) {
    let key = "/registry/a";
    create_ok(&store, key, "a").await;
    let future = current_revision(&store).await + 1;
    let result = store.get(key, Some(future)).await;
    assert!(
        matches!(result, Err(StorageError::FutureRevision { requested, .. }) if requested == future),
        "get at future revision {future}: expected FutureRevision, got {result:?}"
    );
}

// =============================================================================================
// Update and delete.

async fn update_with_current_revision_succeeds(store: Arc<dyn Store>) {
    let key = "/registry/a";
    let v1 = create_kv(&store, key, "v1").await;
    let v2 = update_kv(&store, &v1, "v2").await;
    assert_eq!(
        get_ok(&store, key, None).await,
        Some(v2.clone()),
        "get after the update"
    );
    let v3 = update_kv(&store, &v2, "v3").await;
    assert_eq!(
        get_ok(&store, key, None).await,
        Some(v3),
        "get after the second update"
    );
}

async fn update_with_stale_revision_conflicts_with_current_value(store: Arc<dyn Store>) {
    let key = "/registry/a";
    let v1 = create_kv(&store, key, "v1").await;
    let v2 = update_kv(&store, &v1, "v2").await;

    let result = store.update(key, val("stale write"), v1.mod_revision).await;
    match result {
        Err(StorageError::Conflict {
            key: conflict_key,
            expected,
            current,
        }) => {
            assert_eq!(conflict_key, key, "the conflict names the key");
            assert_eq!(
                expected, v1.mod_revision,
                "the conflict names the expected revision"
            );
            assert_eq!(*current, v2, "the conflict carries the current value");
        }
        other => panic!("update with a stale revision: expected Conflict, got {other:?}"),
    }
    assert_eq!(
        get_ok(&store, key, None).await,
        Some(v2.clone()),
        "the conflict changed nothing"
    );
    assert_eq!(
        current_revision(&store).await,
        v2.mod_revision,
        "a conflict is no write"
    );
}

async fn update_missing_key_fails_with_key_not_found(store: Arc<dyn Store>) {
    let key = "/registry/a";
    let result = store.update(key, val("v"), 1).await;
    assert!(
        matches!(&result, Err(StorageError::KeyNotFound { key: k }) if k == key),
        "update of a never-created key: expected KeyNotFound, got {result:?}"
    );

    let created = create_kv(&store, key, "v1").await;
    delete_ok(&store, key).await;
    let result = store.update(key, val("v2"), created.mod_revision).await;
    assert!(
        matches!(&result, Err(StorageError::KeyNotFound { key: k }) if k == key),
        "update of a deleted key: expected KeyNotFound, got {result:?}"
    );
    assert_eq!(
        get_ok(&store, key, None).await,
        None,
        "the failed update created nothing"
    );
}

async fn delete_without_precondition_returns_previous_value(store: Arc<dyn Store>) {
    let key = "/registry/a";
    let v1 = create_kv(&store, key, "v1").await;
    let v2 = update_kv(&store, &v1, "v2").await;

    let deleted = delete_ok(&store, key).await;
    assert_eq!(deleted.prev_kv, v2, "delete returns the last value");
    assert!(
        deleted.revision > v2.mod_revision,
        "the deletion's revision {} is after the last write {}",
        deleted.revision,
        v2.mod_revision
    );
    assert_eq!(
        current_revision(&store).await,
        deleted.revision,
        "the store is at the deletion"
    );
    assert_eq!(get_ok(&store, key, None).await, None, "the key is gone");
    assert_eq!(
        get_ok(&store, key, Some(deleted.revision - 1)).await,
        Some(v2),
        "the key is still readable just before its deletion"
    );
}

async fn delete_with_precondition_succeeds_or_conflicts(store: Arc<dyn Store>) {
    let key = "/registry/a";
    let v1 = create_kv(&store, key, "v1").await;
    let v2 = update_kv(&store, &v1, "v2").await;

    let result = store.delete(key, Some(v1.mod_revision)).await;
    match result {
        Err(StorageError::Conflict {
            current, expected, ..
        }) => {
            assert_eq!(
                expected, v1.mod_revision,
                "the conflict names the expected revision"
            );
            assert_eq!(*current, v2, "the conflict carries the current value");
        }
        other => panic!("delete with a stale revision: expected Conflict, got {other:?}"),
    }
    assert_eq!(
        get_ok(&store, key, None).await,
        Some(v2.clone()),
        "the conflict deleted nothing"
    );

    let deleted = bounded("delete", store.delete(key, Some(v2.mod_revision)))
        .await
        .expect("delete with the current revision");
    assert_eq!(deleted.prev_kv, v2, "delete returns the last value");
    assert!(
        deleted.revision > v2.mod_revision,
        "the deletion is a new revision"
    );
    assert_eq!(get_ok(&store, key, None).await, None, "the key is gone");
}

async fn delete_missing_key_fails_with_key_not_found(store: Arc<dyn Store>) {
    let key = "/registry/a";
    for expected in [None, Some(1)] {
        let result = store.delete(key, expected).await;
        assert!(
            matches!(&result, Err(StorageError::KeyNotFound { key: k }) if k == key),
            "delete of a missing key with precondition {expected:?}: expected KeyNotFound, got {result:?}"
        );
    }
    create_ok(&store, key, "v").await;
    delete_ok(&store, key).await;
    let revision = current_revision(&store).await;
    let result = store.delete(key, None).await;
    assert!(
        matches!(&result, Err(StorageError::KeyNotFound { .. })),
        "second delete of a key: expected KeyNotFound, got {result:?}"
    );
    assert_eq!(
        current_revision(&store).await,
        revision,
        "a failed delete is no write"
    );
}

async fn deleted_key_can_be_recreated(store: Arc<dyn Store>) {
    let key = "/registry/a";
    let first = create_kv(&store, key, "first").await;
    let deleted = delete_ok(&store, key).await;
    let second = create_kv(&store, key, "second").await;
    assert!(
        second.create_revision > deleted.revision,
        "the new key has a new create revision"
    );
    assert_eq!(
        get_ok(&store, key, None).await,
        Some(second),
        "get the re-created key"
    );
    assert_eq!(
        get_ok(&store, key, Some(first.mod_revision)).await,
        Some(first),
        "the first incarnation is still readable at its revision"
    );
}

// =============================================================================================
// List.

async fn list_returns_keys_in_order_at_current_revision(store: Arc<dyn Store>) {
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
async fn list_of_more_than_four_mib_in_one_page(store: Arc<dyn Store>) {
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

async fn list_isolates_prefixes(store: Arc<dyn Store>) {
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

async fn list_pages_with_limit_and_continue(store: Arc<dyn Store>) {
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

async fn list_pages_stay_at_first_revision_while_writes_go_on(store: Arc<dyn Store>) {
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

async fn list_at_past_revision(store: Arc<dyn Store>) {
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

async fn list_at_future_revision_fails(store: Arc<dyn Store>) {
    create_ok(&store, "/registry/a/1", "1").await;
    let future = current_revision(&store).await + 1;
    let result = store.list("/registry/a/", &at_revision(future)).await;
    assert!(
        matches!(result, Err(StorageError::FutureRevision { requested, .. }) if requested == future),
        "list at future revision {future}: expected FutureRevision, got {result:?}"
    );
}

async fn list_rejects_revision_with_continue_token(store: Arc<dyn Store>) {
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

async fn list_rejects_garbage_continue_token(store: Arc<dyn Store>) {
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

async fn watch_from_now_sees_only_later_changes(store: Arc<dyn Store>) {
    let prefix = "/registry/pods/";
    let old = create_kv(&store, &format!("{prefix}old"), "old").await;
    let other = create_kv(&store, &format!("{prefix}other"), "other").await;

    let mut from_now = Watcher::prefix(&store, prefix, None).await;
    let mut from_current = Watcher::prefix(&store, prefix, Some(other.mod_revision)).await;

    let updated = update_kv(&store, &old, "updated").await;
    let new = create_kv(&store, &format!("{prefix}new"), "new").await;
    let expected = [
        update_event(&old, "updated", updated.mod_revision),
        create_event(&new.key, "new", new.mod_revision),
    ];
    for (watcher, what) in [
        (&mut from_now, "watch from now"),
        (&mut from_current, "watch after the current revision"),
    ] {
        let events = watcher.next_events(2).await;
        assert_events_eq(&events, &expected, what);
        assert!(!events[0].is_create(), "{what}: an update is not a create");
        assert!(events[1].is_create(), "{what}: a create is a create");
    }
}

async fn watch_from_past_revision_replays_history_then_continues_live(store: Arc<dyn Store>) {
    let prefix = "/registry/deployments/default/";
    let start = current_revision(&store).await;

    let a1 = create_kv(&store, &format!("{prefix}a"), "a1").await;
    let a2 = update_kv(&store, &a1, "a2").await;
    let b1 = create_kv(&store, &format!("{prefix}b"), "b1").await;
    let deleted_a = delete_ok(&store, &a1.key).await;
    let b2 = update_kv(&store, &b1, "b2").await;
    let history = vec![
        create_event(&a1.key, "a1", a1.mod_revision),
        update_event(&a1, "a2", a2.mod_revision),
        create_event(&b1.key, "b1", b1.mod_revision),
        delete_event(&a2, deleted_a.revision),
        update_event(&b1, "b2", b2.mod_revision),
    ];

    let mut from_start = Watcher::prefix(&store, prefix, Some(start)).await;
    let replayed = from_start.next_events(history.len()).await;
    assert_events_eq(&replayed, &history, "replay from the start");
    let kinds: Vec<_> = replayed.iter().map(|e| (e.kind, e.is_create())).collect();
    assert_eq!(
        kinds,
        [
            (EventKind::Put, true),
            (EventKind::Put, false),
            (EventKind::Put, true),
            (EventKind::Delete, false),
            (EventKind::Put, false),
        ],
        "event kinds of the replay"
    );

    // From the middle of the history: only what came after.
    let mut from_middle = Watcher::prefix(&store, prefix, Some(a2.mod_revision)).await;
    let replayed = from_middle.next_events(3).await;
    assert_events_eq(&replayed, &history[2..], "replay after the update of a");

    // Both continue live, a deleted key's re-creation included.
    let a3 = create_kv(&store, &format!("{prefix}a"), "a3").await;
    let deleted_b = delete_ok(&store, &b1.key).await;
    let live = [
        create_event(&a3.key, "a3", a3.mod_revision),
        delete_event(&b2, deleted_b.revision),
    ];
    assert_events_eq(
        &from_start.next_events(2).await,
        &live,
        "live events after the replay from the start",
    );
    assert_events_eq(
        &from_middle.next_events(2).await,
        &live,
        "live events after the replay from the middle",
    );
}

async fn watch_single_key_ignores_other_keys(store: Arc<dyn Store>) {
    let key = "/registry/pods/default/a";
    let start = current_revision(&store).await;
    let mut watcher = Watcher::key(&store, key, None).await;

    // Keys that share the watched key as a prefix, or that sort next to it.
    create_ok(&store, &format!("{key}b"), "ab").await;
    create_ok(&store, &format!("{key}/child"), "child").await;
    create_ok(&store, "/registry/pods/default/b", "b").await;
    let a1 = create_kv(&store, key, "a1").await;
    create_ok(&store, "/registry/pods/default/c", "c").await;
    let a2 = update_kv(&store, &a1, "a2").await;
    let deleted = delete_ok(&store, key).await;

    let expected = [
        create_event(key, "a1", a1.mod_revision),
        update_event(&a1, "a2", a2.mod_revision),
        delete_event(&a2, deleted.revision),
    ];
    assert_events_eq(
        &watcher.next_events(3).await,
        &expected,
        "live single-key watch",
    );

    // The same from history.
    let mut replay = Watcher::key(&store, key, Some(start)).await;
    assert_events_eq(
        &replay.next_events(3).await,
        &expected,
        "replayed single-key watch",
    );
    // Nothing else is queued: the next event is the next write to the key.
    create_ok(&store, "/registry/pods/default/d", "d").await;
    let again = create_kv(&store, key, "again").await;
    let sentinel = create_event(key, "again", again.mod_revision);
    assert_eq!(
        replay.next_event().await,
        sentinel,
        "the next event of the replayed watch"
    );
    assert_eq!(
        watcher.next_event().await,
        sentinel,
        "the next event of the live watch"
    );
}

async fn watch_prefix_ignores_keys_outside_prefix(store: Arc<dyn Store>) {
    let prefix = "/registry/pods/ns/";
    let start = current_revision(&store).await;
    let mut watcher = Watcher::prefix(&store, prefix, None).await;

    create_ok(&store, "/registry/pods/ns", "the prefix without its slash").await;
    create_ok(&store, "/registry/pods/ns2/x", "x").await;
    create_ok(&store, "/registry/pods/nt/y", "y").await;
    let inside = create_kv(&store, &format!("{prefix}z"), "z").await;
    create_ok(&store, "/registry/pods/nr/w", "w").await;
    let nested = create_kv(&store, &format!("{prefix}deep/er"), "deeper").await;

    let expected = [
        create_event(&inside.key, "z", inside.mod_revision),
        create_event(&nested.key, "deeper", nested.mod_revision),
    ];
    assert_events_eq(
        &watcher.next_events(2).await,
        &expected,
        "live prefix watch",
    );
    let mut replay = Watcher::prefix(&store, prefix, Some(start)).await;
    assert_events_eq(
        &replay.next_events(2).await,
        &expected,
        "replayed prefix watch",
    );

    create_ok(&store, "/registry/pods/ns3/q", "q").await;
    let sentinel = create_kv(&store, &format!("{prefix}sentinel"), "s").await;
    let expected = create_event(&sentinel.key, "s", sentinel.mod_revision);
    assert_eq!(
        watcher.next_event().await,
        expected,
        "next event of the live watch"
    );
    assert_eq!(
        replay.next_event().await,
        expected,
        "next event of the replayed watch"
    );
}

/// 500 writes by 4 concurrent writers; one watcher consumes slowly while they write, another
/// only starts reading after the last write. Both must see exactly the writes, in order.
async fn watch_delivers_many_events_in_order_to_slow_consumers(store: Arc<dyn Store>) {
    const WRITERS: usize = 4;
    const WRITES_PER_WRITER: usize = 125;
    let prefix = "/registry/events/";

    let mut lagging = Watcher::prefix(&store, prefix, None).await;
    let slow = Watcher::prefix(&store, prefix, None).await;
    let slow_consumer = tokio::spawn(async move {
        let mut slow = slow;
        let mut events = Vec::with_capacity(WRITERS * WRITES_PER_WRITER);
        while events.len() < WRITERS * WRITES_PER_WRITER {
            events.push(slow.next_event().await);
            if events.len() % 25 == 0 {
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        }
        events
    });

    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let store = store.clone();
            tokio::spawn(
                async move { write_churn(&store, prefix, writer, WRITES_PER_WRITER).await },
            )
        })
        .collect();
    let mut expected = Vec::new();
    for writer in writers {
        expected.extend(writer.await.expect("writer task"));
    }
    expected.sort_by_key(Event::revision);
    let revisions: HashSet<_> = expected.iter().map(Event::revision).collect();
    assert_eq!(
        revisions.len(),
        expected.len(),
        "every write has its own revision"
    );

    let slow_events = slow_consumer.await.expect("slow consumer task");
    let lagging_events = lagging.next_events(expected.len()).await;
    for (events, what) in [
        (slow_events, "slow watcher"),
        (lagging_events, "lagging watcher"),
    ] {
        for pair in events.windows(2) {
            assert!(
                pair[0].revision() < pair[1].revision(),
                "{what}: revision {} followed by {}",
                pair[0].revision(),
                pair[1].revision()
            );
        }
        assert_events_eq(&events, &expected, what);
    }
}

/// Cycles through creates, updates and deletes of a writer's own five keys; returns the
/// events the writes should cause.
async fn write_churn(
    store: &Arc<dyn Store>,
    prefix: &str,
    writer: usize,
    writes: usize,
) -> Vec<Event> {
    let mut live: BTreeMap<usize, KeyValue> = BTreeMap::new();
    let mut events = Vec::with_capacity(writes);
    for i in 0..writes {
        let slot = i % 5;
        let key = format!("{prefix}w{writer}-k{slot}");
        let value = format!("w{writer} write {i}");
        let event = match live.remove(&slot) {
            None => {
                let created = create_kv(store, &key, &value).await;
                live.insert(slot, created.clone());
                create_event(&key, &value, created.mod_revision)
            }
            Some(current) if (i / 5) % 3 != 2 => {
                let updated = update_kv(store, &current, &value).await;
                live.insert(slot, updated.clone());
                update_event(&current, &value, updated.mod_revision)
            }
            Some(current) => {
                let deleted = delete_ok(store, &key).await;
                assert_eq!(
                    deleted.prev_kv, current,
                    "delete of {key} returns its last value"
                );
                delete_event(&current, deleted.revision)
            }
        };
        events.push(event);
    }
    events
}

async fn periodic_progress_is_sent_to_idle_watch(store: Arc<dyn Store>) {
    let before = current_revision(&store).await;
    let mut idle = Watcher::prefix(&store, "/registry/nothing-here/", None).await;
    let mut busy = Watcher::prefix(&store, "/registry/pods/", None).await;
    let progress = idle.progress_at_least(before).await;
    assert!(
        progress >= before,
        "periodic progress {progress} is at least the watch's start"
    );

    // After writes elsewhere, the idle watch's periodic progress catches up with them,
    // without anyone asking.
    let written = create_kv(&store, "/registry/pods/a", "a").await;
    assert_eq!(
        busy.next_event().await,
        create_event(&written.key, "a", written.mod_revision),
        "the busy watch sees the write"
    );
    idle.progress_at_least(written.mod_revision).await;
    busy.progress_at_least(written.mod_revision).await;
    idle.assert_no_pending_events();
    busy.assert_no_pending_events();
}

/// Runs on a store whose periodic progress is effectively off, so the notifications come
/// from `request_progress`.
async fn request_progress_notifies_every_watch(store: Arc<dyn Store>) {
    let mut busy = Watcher::prefix(&store, "/registry/pods/", None).await;
    let mut single = Watcher::key(&store, "/registry/pods/a", None).await;
    let mut idle = Watcher::prefix(&store, "/registry/nothing-here/", None).await;

    let a = create_kv(&store, "/registry/pods/a", "a").await;
    let b = create_kv(&store, "/registry/pods/b", "b").await;
    let last = create_kv(&store, "/registry/services/c", "c").await;
    assert_events_eq(
        &busy.next_events(2).await,
        &[
            create_event(&a.key, "a", a.mod_revision),
            create_event(&b.key, "b", b.mod_revision),
        ],
        "prefix watch",
    );
    assert_eq!(
        single.next_event().await,
        create_event(&a.key, "a", a.mod_revision),
        "single-key watch"
    );

    bounded("request_progress", store.request_progress())
        .await
        .expect("request_progress");
    for (watcher, what) in [
        (&mut busy, "prefix watch"),
        (&mut single, "single-key watch"),
        (&mut idle, "idle watch"),
    ] {
        let progress = watcher.progress_at_least(last.mod_revision).await;
        assert!(progress >= last.mod_revision, "{what}: progress {progress}");
        watcher.assert_no_pending_events();
    }

    // Asking again after more writes moves the notifications on.
    let later = create_kv(&store, "/registry/pods/d", "d").await;
    assert_eq!(
        busy.next_event().await,
        create_event(&later.key, "d", later.mod_revision),
        "prefix watch"
    );
    bounded("request_progress", store.request_progress())
        .await
        .expect("second request_progress");
    for watcher in [&mut busy, &mut single, &mut idle] {
        watcher.progress_at_least(later.mod_revision).await;
        watcher.assert_no_pending_events();
    }
}

// =============================================================================================
// Compaction.

/// Writes a key three times and another key once; returns (the key's versions, the other).
async fn history_for_compaction(store: &Arc<dyn Store>) -> (Vec<KeyValue>, KeyValue) {
    let key = "/registry/a/x";
    let v1 = create_kv(store, key, "v1").await;
    let v2 = update_kv(store, &v1, "v2").await;
    let v3 = update_kv(store, &v2, "v3").await;
    let other = create_kv(store, "/registry/a/y", "y").await;
    (vec![v1, v2, v3], other)
}

async fn compact_ok(store: &Arc<dyn Store>, revision: Revision) {
    bounded("compact", store.compact(revision))
        .await
        .unwrap_or_else(|err| panic!("compact at {revision} failed: {err}"));
}

async fn compaction_fails_reads_before_compacted_revision(store: Arc<dyn Store>) {
    let untouched = create_kv(&store, "/registry/b/untouched", "old but live").await;
    let (versions, other) = history_for_compaction(&store).await;
    let key = &*versions[0].key;
    let compacted = versions[2].mod_revision;
    compact_ok(&store, compacted).await;

    for old in [
        untouched.mod_revision,
        versions[0].mod_revision,
        versions[1].mod_revision,
        compacted - 1,
    ] {
        assert_compacted(
            store.get(key, Some(old)).await,
            &format!("get {key} at {old}"),
        );
    }
    assert_eq!(
        get_ok(&store, key, Some(compacted)).await.as_ref(),
        Some(&versions[2]),
        "get at the compacted revision"
    );
    assert_eq!(
        get_ok(&store, key, Some(other.mod_revision)).await.as_ref(),
        Some(&versions[2]),
        "get after the compacted revision"
    );
    assert_eq!(
        get_ok(&store, key, None).await.as_ref(),
        Some(&versions[2]),
        "get latest"
    );
    assert_eq!(
        get_ok(&store, &other.key, Some(compacted)).await,
        None,
        "other did not exist at the compacted revision"
    );
    assert_eq!(
        get_ok(&store, &untouched.key, Some(compacted)).await,
        Some(untouched.clone()),
        "a key last written before the compacted revision is readable at it"
    );
    assert_eq!(
        get_ok(&store, &untouched.key, None).await,
        Some(untouched),
        "get the untouched key"
    );

    // The store goes on normally.
    let v4 = update_kv(&store, &versions[2], "v4").await;
    assert_eq!(
        get_ok(&store, key, None).await,
        Some(v4),
        "get after a write after compaction"
    );
}

async fn compaction_fails_lists_and_continue_tokens_at_old_revisions(store: Arc<dyn Store>) {
    let prefix = "/registry/a/";
    for i in 0..4 {
        create_ok(&store, &format!("{prefix}{i}"), "v").await;
    }
    let first = list_ok(&store, prefix, &paged(2)).await;
    let old = first.revision;
    let later = create_kv(&store, &format!("{prefix}9"), "later").await;
    compact_ok(&store, later.mod_revision).await;

    let at_old = at_revision(old);
    assert_compacted(
        store.list(prefix, &at_old).await,
        &format!("list at compacted revision {old}"),
    );
    let continued = continue_from(first.continue_token.clone(), 2);
    assert_compacted(
        store.list(prefix, &continued).await,
        &format!("continue a list whose revision {old} was compacted"),
    );
    let list = list_ok(&store, prefix, &at_revision(later.mod_revision)).await;
    assert_eq!(
        list.kvs.len(),
        5,
        "list at the compacted revision has every key: {:?}",
        keys(&list.kvs)
    );
    let pages = list_pages(&store, prefix, 2).await;
    let total: usize = pages.iter().map(|page| page.kvs.len()).sum();
    assert_eq!(total, 5, "a new paged list after compaction sees every key");
}

async fn compaction_fails_watches_from_old_revisions(store: Arc<dyn Store>) {
    let prefix = "/registry/a/";
    let start = current_revision(&store).await;
    let (versions, other) = history_for_compaction(&store).await;
    let compacted = versions[2].mod_revision;
    compact_ok(&store, compacted).await;

    for after in [start, versions[0].mod_revision, compacted - 2] {
        assert_watch_compacted(
            &store,
            prefix,
            WatchOptions {
                prefix: true,
                after: Some(after),
            },
        )
        .await;
        assert_watch_compacted(
            &store,
            &versions[0].key,
            WatchOptions {
                prefix: false,
                after: Some(after),
            },
        )
        .await;
    }

    // From the compacted revision on, watches replay what is left and continue live.
    let mut watcher = Watcher::prefix(&store, prefix, Some(compacted)).await;
    assert_eq!(
        watcher.next_event().await,
        create_event(&other.key, "y", other.mod_revision),
        "the replay after the compacted revision"
    );
    let v4 = update_kv(&store, &versions[2], "v4").await;
    assert_eq!(
        watcher.next_event().await,
        update_event(&versions[2], "v4", v4.mod_revision),
        "a live event after compaction"
    );
}

async fn compaction_keeps_latest_value_of_every_live_key(store: Arc<dyn Store>) {
    let prefix = "/registry/a/";
    let mut expected = BTreeMap::new();
    for i in 0..6 {
        let key = format!("{prefix}{i}");
        let mut current = create_kv(&store, &key, "v0").await;
        for version in 1..=i {
            current = update_kv(&store, &current, &format!("v{version}")).await;
        }
        expected.insert(key, current);
    }
    for i in [1, 4] {
        let key = format!("{prefix}{i}");
        delete_ok(&store, &key).await;
        expected.remove(&key);
    }
    let expected: Vec<KeyValue> = expected.into_values().collect();
    let revision = current_revision(&store).await;

    // Compact all history up to now.
    compact_ok(&store, revision).await;
    let list = list_all(&store, prefix).await;
    assert_eq!(
        list.kvs, expected,
        "every live key keeps its latest value after compaction"
    );
    assert_eq!(
        list_ok(&store, prefix, &at_revision(revision)).await.kvs,
        expected,
        "list at the compacted revision"
    );
    for kv in &expected {
        assert_eq!(
            get_ok(&store, &kv.key, None).await.as_ref(),
            Some(kv),
            "get {} after compaction",
            kv.key
        );
    }
    for i in [1, 4] {
        assert_eq!(
            get_ok(&store, &format!("{prefix}{i}"), None).await,
            None,
            "deleted key {i} stays deleted"
        );
    }

    let extra = create_kv(&store, "/registry/b/extra", "x").await;
    compact_ok(&store, extra.mod_revision).await;
    assert_eq!(
        list_all(&store, prefix).await.kvs,
        expected,
        "after a second compaction"
    );
    assert_eq!(
        get_ok(&store, &extra.key, None).await,
        Some(extra),
        "the newest key after a second compaction"
    );
}

/// Several kapi replicas compact the same etcd; the compactor treats `Compacted` from a
/// compaction as "someone else already did it".
async fn compacting_an_already_compacted_revision_fails_with_compacted(store: Arc<dyn Store>) {
    let (versions, other) = history_for_compaction(&store).await;
    compact_ok(&store, versions[2].mod_revision).await;
    assert_compacted(
        store.compact(versions[2].mod_revision).await,
        "compact again at the compacted revision",
    );
    assert_compacted(
        store.compact(versions[1].mod_revision).await,
        "compact at a revision before the compacted one",
    );
    compact_ok(&store, other.mod_revision).await;
    assert_eq!(
        get_ok(&store, &versions[2].key, None).await.as_ref(),
        Some(&versions[2]),
        "the data survives repeated compactions"
    );
}

// =============================================================================================
// Concurrency.

async fn concurrent_guaranteed_updates_lose_no_update(store: Arc<dyn Store>) {
    const TASKS: usize = 16;
    const INCREMENTS: usize = 25;
    let key = "/registry/counters/c";

    let tasks: Vec<_> = (0..TASKS)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut written = Vec::with_capacity(INCREMENTS);
                for _ in 0..INCREMENTS {
                    let kv = guaranteed_update(&*store, key, None, |current| {
                        let count = current.map_or(0, |kv| parse_count(&kv.value));
                        Ok(Bytes::from((count + 1).to_string()))
                    })
                    .await
                    .expect("guaranteed_update");
                    written.push(kv);
                }
                written
            })
        })
        .collect();
    let mut written = Vec::new();
    for task in tasks {
        written.extend(task.await.expect("incrementing task"));
    }

    let total = (TASKS * INCREMENTS) as u64;
    let last = get_ok(&store, key, None).await.expect("the counter exists");
    assert_eq!(
        parse_count(&last.value),
        total,
        "the counter counts every increment"
    );

    written.sort_by_key(|kv| kv.mod_revision);
    let counts: Vec<u64> = written.iter().map(|kv| parse_count(&kv.value)).collect();
    assert_eq!(
        counts,
        (1..=total).collect::<Vec<_>>(),
        "each increment wrote the next count"
    );
    assert_eq!(
        written.last(),
        Some(&last),
        "the last increment is what is stored"
    );
    let creates = written
        .iter()
        .filter(|kv| kv.create_revision == kv.mod_revision)
        .count();
    assert_eq!(creates, 1, "exactly one increment created the counter");
}

fn parse_count(value: &[u8]) -> u64 {
    std::str::from_utf8(value)
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| panic!("counter value {value:?} is not a number"))
}

async fn concurrent_creates_of_one_key_have_one_winner(store: Arc<dyn Store>) {
    const TASKS: usize = 16;
    let key = "/registry/namespaces/contested";
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let store = store.clone();
            tokio::spawn(
                async move { (task, store.create(key, val(&format!("task {task}"))).await) },
            )
        })
        .collect();

    let mut winners = Vec::new();
    for task in tasks {
        match task.await.expect("create task") {
            (task, Ok(revision)) => winners.push((task, revision)),
            (_, Err(StorageError::KeyExists { .. })) => {}
            (task, Err(err)) => panic!("task {task}: expected success or KeyExists, got {err:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one create wins: {winners:?}");
    let (task, revision) = winners[0];
    assert_eq!(
        get_ok(&store, key, None).await,
        Some(kv(key, &format!("task {task}"), revision, revision)),
        "the stored key is the winner's"
    );
}

async fn concurrent_updates_with_same_expected_revision_have_one_winner(store: Arc<dyn Store>) {
    const TASKS: usize = 8;
    let key = "/registry/namespaces/contested";
    let original = create_kv(&store, key, "original").await;
    let tasks: Vec<_> = (0..TASKS)
        .map(|task| {
            let store = store.clone();
            let expected = original.mod_revision;
            tokio::spawn(async move {
                (
                    task,
                    store
                        .update(key, val(&format!("task {task}")), expected)
                        .await,
                )
            })
        })
        .collect();

    let mut winners = Vec::new();
    let mut conflicts = Vec::new();
    for task in tasks {
        match task.await.expect("update task") {
            (task, Ok(revision)) => winners.push((task, revision)),
            (_, Err(StorageError::Conflict { current, .. })) => conflicts.push(*current),
            (task, Err(err)) => panic!("task {task}: expected success or Conflict, got {err:?}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one update wins: {winners:?}");
    let (task, revision) = winners[0];
    let winner = kv(
        key,
        &format!("task {task}"),
        original.create_revision,
        revision,
    );
    assert_eq!(
        get_ok(&store, key, None).await.as_ref(),
        Some(&winner),
        "the stored value is the winner's"
    );
    for current in conflicts {
        assert_eq!(current, winner, "every conflict carries the winner's value");
    }
}
