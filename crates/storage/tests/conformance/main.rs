//! The storage conformance suite: one set of cases, run against both backends.
//!
//! Every case is an `async fn(Arc<dyn Store>)` written once, in this directory's modules; [`conformance_suite!`]
//! turns the list of cases into one test module per backend (`embedded`, `etcd`), each test
//! on a fresh store: the embedded store in its own temporary directory, the etcd store on its
//! own single-member etcd cluster. The etcd tests fail (they do not skip) when there is no
//! etcd binary (`$KAPI_ETCD_BIN`, else `/usr/bin/etcd`, else `etcd` on `PATH`).
//!
//! The contract checked here is the one in the crate documentation: etcd's semantics for
//! revisions, conditional writes, paginated consistent lists, watches and compaction.
//! Revisions are never assumed to be contiguous.

#[path = "../common/mod.rs"]
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

mod basics;
mod compaction;
mod concurrency;
mod expiry;
mod lists;
mod watches;

use basics::*;
use compaction::*;
use concurrency::*;
use expiry::*;
use lists::*;
use watches::*;

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
                expiring_key_is_deleted_after_its_ttl,
                writes_reset_or_clear_a_keys_ttl,
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
