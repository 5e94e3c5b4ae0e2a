use super::*;

pub(super) async fn concurrent_guaranteed_updates_lose_no_update(store: Arc<dyn Store>) {
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

pub(super) fn parse_count(value: &[u8]) -> u64 {
    std::str::from_utf8(value)
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or_else(|| panic!("counter value {value:?} is not a number"))
}

pub(super) async fn concurrent_creates_of_one_key_have_one_winner(store: Arc<dyn Store>) {
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

pub(super) async fn concurrent_updates_with_same_expected_revision_have_one_winner(
    store: Arc<dyn Store>,
) {
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
