use super::*;

/// A key written with a time to live is deleted once it has passed: a Delete event at a new
/// revision, as etcd's lease expiry gives.
pub(super) async fn expiring_key_is_deleted_after_its_ttl(store: Arc<dyn Store>) {
    let key = "/registry/events/default/a";
    let revision = bounded(
        "create",
        store.create_expiring(key, val("a"), Some(Duration::from_secs(1))),
    )
    .await
    .expect("create with a ttl");
    let created = kv(key, "a", revision, revision);
    let mut watch = Watcher::key(&store, key, Some(revision)).await;
    let event = watch.next_event().await;
    assert_eq!(event.kind, EventKind::Delete, "the key expires: {event:?}");
    assert!(event.revision() > revision, "the expiry is a new revision");
    assert_eq!(event.prev_kv.as_ref(), Some(&created), "what expired");
    assert_eq!(
        get_ok(&store, key, None).await,
        None,
        "an expired key is gone"
    );
}

/// A write without a time to live makes the key permanent again, and one with a time to
/// live moves its deadline; a key written later with the same time to live expires first.
pub(super) async fn writes_reset_or_clear_a_keys_ttl(store: Arc<dyn Store>) {
    let ttl = Some(Duration::from_secs(1));
    let (kept, renewed, sentinel) = (
        "/registry/events/default/kept",
        "/registry/events/default/renewed",
        "/registry/events/default/sentinel",
    );
    let kept_rev = bounded("create", store.create_expiring(kept, val("k"), ttl))
        .await
        .expect("create kept");
    let renewed_rev = bounded("create", store.create_expiring(renewed, val("r"), ttl))
        .await
        .expect("create renewed");
    bounded("update", store.update(kept, val("k2"), kept_rev))
        .await
        .expect("update without a ttl");
    let start = current_revision(&store).await;
    bounded(
        "create",
        store.create_expiring(sentinel, val("s"), Some(Duration::from_secs(2))),
    )
    .await
    .expect("create sentinel");
    bounded(
        "update",
        store.update_expiring(
            renewed,
            val("r2"),
            renewed_rev,
            Some(Duration::from_secs(30)),
        ),
    )
    .await
    .expect("update with a longer ttl");
    let mut watch = Watcher::prefix(&store, "/registry/events/", Some(start)).await;
    let mut deleted = Vec::new();
    while !deleted.contains(&sentinel.to_string()) {
        let event = watch.next_event().await;
        if event.kind == EventKind::Delete {
            deleted.push(event.kv.key.to_string());
        }
    }
    assert_eq!(
        deleted,
        [sentinel],
        "only the sentinel, written after the others with a longer ttl, has expired"
    );
    assert!(
        get_ok(&store, kept, None).await.is_some(),
        "{kept} lost its ttl"
    );
    assert!(
        get_ok(&store, renewed, None).await.is_some(),
        "{renewed} got a new ttl"
    );
}
