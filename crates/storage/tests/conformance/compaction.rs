use super::*;

/// Writes a key three times and another key once; returns (the key's versions, the other).
pub(super) async fn history_for_compaction(store: &Arc<dyn Store>) -> (Vec<KeyValue>, KeyValue) {
    let key = "/registry/a/x";
    let v1 = create_kv(store, key, "v1").await;
    let v2 = update_kv(store, &v1, "v2").await;
    let v3 = update_kv(store, &v2, "v3").await;
    let other = create_kv(store, "/registry/a/y", "y").await;
    (vec![v1, v2, v3], other)
}

pub(super) async fn compact_ok(store: &Arc<dyn Store>, revision: Revision) {
    bounded("compact", store.compact(revision))
        .await
        .unwrap_or_else(|err| panic!("compact at {revision} failed: {err}"));
}

pub(super) async fn compaction_fails_reads_before_compacted_revision(store: Arc<dyn Store>) {
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

pub(super) async fn compaction_fails_lists_and_continue_tokens_at_old_revisions(
    store: Arc<dyn Store>,
) {
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

pub(super) async fn compaction_fails_watches_from_old_revisions(store: Arc<dyn Store>) {
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

pub(super) async fn compaction_keeps_latest_value_of_every_live_key(store: Arc<dyn Store>) {
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
pub(super) async fn compacting_an_already_compacted_revision_fails_with_compacted(
    store: Arc<dyn Store>,
) {
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
