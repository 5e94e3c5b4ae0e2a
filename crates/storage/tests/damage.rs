//! A damaged embedded store is refused, never served: flipped bytes anywhere in a cleanly
//! closed file, stores written before values carried checksums, the offline check, and
//! snapshots (consistent under writes; damaged or cut ones refused on restore).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use kapi_storage::{
    EMBEDDED_DB_FILE, EmbeddedConfig, EmbeddedStore, ListOptions, Revision, StorageError, Store,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn config(dir: &Path) -> EmbeddedConfig {
    EmbeddedConfig {
        closed_cleanly: true,
        ..EmbeddedConfig::new(dir)
    }
}

/// Writes `count` keys (each updated once, some deleted) and returns the latest state.
async fn fill(store: &EmbeddedStore, count: usize) -> BTreeMap<String, (Bytes, Revision)> {
    for i in 0..count {
        let key = format!("/r/k{i:04}");
        let rev = store
            .create(&key, Bytes::from(format!("first value of {key}")))
            .await
            .unwrap();
        store
            .update(&key, Bytes::from(format!("second value of {key}")), rev)
            .await
            .unwrap();
        if i % 5 == 0 {
            store.delete(&key, None).await.unwrap();
        }
    }
    latest(store).await
}

async fn latest(store: &EmbeddedStore) -> BTreeMap<String, (Bytes, Revision)> {
    let listed = store.list("/r/", &ListOptions::default()).await.unwrap();
    listed
        .kvs
        .into_iter()
        .map(|kv| (kv.key.to_string(), (kv.value, kv.mod_revision)))
        .collect()
}

/// Flipping any one byte of a cleanly closed store either fails its open with
/// [`StorageError::Damaged`] or leaves what it serves exactly as it was (the byte was in
/// unused space): never a panic, never damaged or rolled-back data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_is_refused_or_harmless() {
    let dir = tempfile::tempdir().unwrap();
    let expected = {
        let store = EmbeddedStore::open(config(dir.path())).unwrap();
        fill(&store, 200).await
    };
    let pristine = std::fs::read(dir.path().join(EMBEDDED_DB_FILE)).unwrap();
    // Most of a small file is unallocated zeroes; flip where something is written.
    let written: Vec<usize> = (0..pristine.len()).filter(|&i| pristine[i] != 0).collect();
    let seed = rand::random();
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut refused, mut harmless) = (0, 0);
    for _ in 0..60 {
        let trial = tempfile::tempdir().unwrap();
        let mut bytes = pristine.clone();
        let at = written[rng.random_range(0..written.len())];
        bytes[at] ^= 1 << rng.random_range(0..8);
        std::fs::write(trial.path().join(EMBEDDED_DB_FILE), &bytes).unwrap();
        match EmbeddedStore::open(config(trial.path())) {
            Err(StorageError::Damaged(why)) => {
                assert!(
                    why.contains(EMBEDDED_DB_FILE) || why.contains("revision"),
                    "{why}"
                );
                refused += 1;
            }
            Err(other) => panic!("seed {seed}: byte {at}: not named as damage: {other}"),
            Ok(store) => {
                assert_eq!(latest(&store).await, expected, "seed {seed}: byte {at}");
                harmless += 1;
            }
        }
    }
    eprintln!("seed {seed}: {refused} flips refused, {harmless} harmless");
    assert!(
        refused > 0,
        "seed {seed}: no flip was detected ({harmless} harmless)"
    );
}

/// A flip in the file's magic number (redb reads it before any checksum) is named as damage
/// too, as a random flip there found.
#[tokio::test]
async fn a_damaged_header_is_named_as_damage() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = EmbeddedStore::open(config(dir.path())).unwrap();
        fill(&store, 10).await;
    }
    let path = dir.path().join(EMBEDDED_DB_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[8] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    match EmbeddedStore::open(config(dir.path())) {
        Err(StorageError::Damaged(why)) => assert!(why.contains(EMBEDDED_DB_FILE), "{why}"),
        Err(other) => panic!("not named as damage: {other}"),
        Ok(_) => panic!("a damaged header was opened"),
    }
}

/// The offline check verifies a store without changing a byte of it, and names damage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_verifies_without_changing_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let expected = {
        let store = EmbeddedStore::open(config(dir.path())).unwrap();
        fill(&store, 50).await
    };
    let file = dir.path().join(EMBEDDED_DB_FILE);
    let before = std::fs::read(&file).unwrap();
    let census = EmbeddedStore::check(dir.path(), true).unwrap();
    assert_eq!(census.keys, expected.len() as u64);
    assert!(
        census.versions >= census.keys && census.log_entries > 0,
        "{census:?}"
    );
    assert_eq!(
        std::fs::read(&file).unwrap(),
        before,
        "check changed the file"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(leftovers.len(), 1, "check left files behind: {leftovers:?}");

    let value = b"second value of /r/k0001";
    let at = find(&before, value).expect("a value in the file");
    let mut damaged = before.clone();
    damaged[at + 3] ^= 0x20;
    std::fs::write(&file, &damaged).unwrap();
    match EmbeddedStore::check(dir.path(), true) {
        Err(StorageError::Damaged(why)) => assert!(why.contains(EMBEDDED_DB_FILE), "{why}"),
        other => panic!("damage not found: {other:?}"),
    }
    std::fs::write(&file, b"").unwrap();
    match EmbeddedStore::check(dir.path(), true) {
        Err(StorageError::Damaged(why)) => assert!(why.ends_with("is empty"), "{why}"),
        other => panic!("empty file not found: {other:?}"),
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A store written before values carried checksums is upgraded in place on open and serves
/// what it held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_without_checksums_is_upgraded() {
    use redb::{Database, TableDefinition};
    const HISTORY: TableDefinition<(&[u8], u64), &[u8]> = TableDefinition::new("history");
    const LOG: TableDefinition<u64, &[u8]> = TableDefinition::new("log");
    const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
    let dir = tempfile::tempdir().unwrap();
    {
        // Format 1: history = tag, create revision, value; log = tag, previous revision, key.
        let db = Database::create(dir.path().join(EMBEDDED_DB_FILE)).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut history = txn.open_table(HISTORY).unwrap();
            let mut log = txn.open_table(LOG).unwrap();
            let mut meta = txn.open_table(META).unwrap();
            for (rev, prev, value) in [(2u64, 0u64, "one"), (3, 2, "two")] {
                let mut version = vec![0u8];
                version.extend_from_slice(&2u64.to_le_bytes());
                version.extend_from_slice(value.as_bytes());
                history
                    .insert((b"/r/a".as_slice(), rev), version.as_slice())
                    .unwrap();
                let mut entry = vec![0u8];
                entry.extend_from_slice(&prev.to_le_bytes());
                entry.extend_from_slice(b"/r/a");
                log.insert(rev, entry.as_slice()).unwrap();
            }
            meta.insert("revision", 3).unwrap();
        }
        txn.commit().unwrap();
    }
    let store = EmbeddedStore::open(EmbeddedConfig::new(dir.path())).unwrap();
    let kv = store.get("/r/a", None).await.unwrap().kv.unwrap();
    assert_eq!(
        (kv.value, kv.create_revision, kv.mod_revision),
        (Bytes::from("two"), 2, 3)
    );
    let old = store.get("/r/a", Some(2)).await.unwrap().kv.unwrap();
    assert_eq!(old.value, Bytes::from("one"));
    drop(store);
    let census = EmbeddedStore::check(dir.path(), true).unwrap();
    assert_eq!((census.revision, census.keys, census.versions), (3, 1, 2));
}

/// A snapshot taken while writers run restores to a store that holds exactly what the store
/// held at the snapshot's revision, and serves writes after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_under_writes_restores_its_revision() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(EmbeddedStore::open(config(dir.path())).unwrap());
    fill(&store, 100).await;
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                for i in 0..300 {
                    let key = format!("/r/w{w}-{i:04}");
                    store.create(&key, Bytes::from(key.clone())).await.unwrap();
                }
            })
        })
        .collect();
    let snapshot = {
        let store = store.clone();
        tokio::task::spawn_blocking(move || {
            let mut bytes = Vec::new();
            let info = store.write_snapshot(&mut bytes).unwrap();
            (info, bytes)
        })
    };
    let (info, bytes) = snapshot.await.unwrap();
    for writer in writers {
        writer.await.unwrap();
    }
    assert_eq!(info.bytes, bytes.len() as u64);
    assert_eq!(
        EmbeddedStore::verify_snapshot(&mut bytes.as_slice()).unwrap(),
        info
    );
    let at_snapshot = store
        .list(
            "/r/",
            &ListOptions {
                revision: Some(info.revision),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .kvs;

    let restored_dir = tempfile::tempdir().unwrap();
    let restored = EmbeddedStore::restore_snapshot(&mut bytes.as_slice(), restored_dir.path());
    assert_eq!(restored.unwrap(), info);
    let restored = EmbeddedStore::open(config(restored_dir.path())).unwrap();
    assert_eq!(restored.current_revision().await.unwrap(), info.revision);
    let listed = restored.list("/r/", &ListOptions::default()).await.unwrap();
    assert_eq!(listed.kvs, at_snapshot);
    let next = restored.create("/r/after", Bytes::new()).await.unwrap();
    assert_eq!(next, info.revision + 1);
}

/// A snapshot with any byte flipped, cut short, or with bytes after its end is refused, and
/// the refused restore leaves no store behind; a restore never overwrites a store.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_snapshot_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedStore::open(config(dir.path())).unwrap();
    fill(&store, 30).await;
    let mut bytes = Vec::new();
    store.write_snapshot(&mut bytes).unwrap();
    let seed = rand::random();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut damaged: Vec<Vec<u8>> = (0..40)
        .map(|_| {
            let mut copy = bytes.clone();
            let at = rng.random_range(0..copy.len());
            copy[at] ^= 1 << rng.random_range(0..8);
            copy
        })
        .collect();
    damaged.push(bytes[..bytes.len() / 2].to_vec());
    damaged.push(bytes[..bytes.len() - 1].to_vec());
    damaged.push([bytes.as_slice(), b"x"].concat());
    for (i, snapshot) in damaged.iter().enumerate() {
        assert!(EmbeddedStore::verify_snapshot(&mut snapshot.as_slice()).is_err());
        let target = tempfile::tempdir().unwrap();
        match EmbeddedStore::restore_snapshot(&mut snapshot.as_slice(), target.path()) {
            Err(StorageError::Damaged(why)) => {
                assert!(why.starts_with("the snapshot is not usable") || why.contains("checksum"))
            }
            other => panic!("seed {seed}: damaged snapshot {i} not refused: {other:?}"),
        }
        let left: Vec<_> = std::fs::read_dir(target.path()).unwrap().collect();
        assert!(left.is_empty(), "seed {seed}: snapshot {i} left {left:?}");
    }
    match EmbeddedStore::restore_snapshot(&mut bytes.as_slice(), dir.path()) {
        Err(StorageError::InvalidRequest(why)) => assert!(why.contains("already holds a store")),
        other => panic!("restored over a store: {other:?}"),
    }
}
