use super::*;

pub(super) async fn watch_from_now_sees_only_later_changes(store: Arc<dyn Store>) {
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

pub(super) async fn watch_from_past_revision_replays_history_then_continues_live(
    store: Arc<dyn Store>,
) {
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

pub(super) async fn watch_single_key_ignores_other_keys(store: Arc<dyn Store>) {
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

pub(super) async fn watch_prefix_ignores_keys_outside_prefix(store: Arc<dyn Store>) {
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
pub(super) async fn watch_delivers_many_events_in_order_to_slow_consumers(store: Arc<dyn Store>) {
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
pub(super) async fn write_churn(
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

pub(super) async fn periodic_progress_is_sent_to_idle_watch(store: Arc<dyn Store>) {
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
pub(super) async fn request_progress_notifies_every_watch(store: Arc<dyn Store>) {
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
