use super::*;

pub(super) async fn fresh_store_starts_at_revision_one(store: Arc<dyn Store>) {
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

pub(super) async fn create_then_get_returns_value_and_revisions(store: Arc<dyn Store>) {
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

pub(super) async fn create_existing_key_fails_with_key_exists(store: Arc<dyn Store>) {
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

pub(super) async fn get_missing_key_returns_none(store: Arc<dyn Store>) {
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

pub(super) async fn revisions_increase_across_keys_and_match_reads(store: Arc<dyn Store>) {
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

pub(super) async fn get_at_past_revision_returns_value_then(store: Arc<dyn Store>) {
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

pub(super) async fn get_at_future_revision_fails(store: Arc<dyn Store>) {
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

pub(super) async fn update_with_current_revision_succeeds(store: Arc<dyn Store>) {
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

pub(super) async fn update_with_stale_revision_conflicts_with_current_value(store: Arc<dyn Store>) {
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

pub(super) async fn update_missing_key_fails_with_key_not_found(store: Arc<dyn Store>) {
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

pub(super) async fn delete_without_precondition_returns_previous_value(store: Arc<dyn Store>) {
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

pub(super) async fn delete_with_precondition_succeeds_or_conflicts(store: Arc<dyn Store>) {
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

pub(super) async fn delete_missing_key_fails_with_key_not_found(store: Arc<dyn Store>) {
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

pub(super) async fn deleted_key_can_be_recreated(store: Arc<dyn Store>) {
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
