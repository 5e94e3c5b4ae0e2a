//! Work estimation (upstream's `request/list_work_estimator.go`, size-based as 1.35 has it
//! by default): how many seats a request occupies. A LIST, and a watch that starts with
//! the current state, is estimated by the memory its objects take, one seat per 100 kB,
//! from the collection's object count and average size: from the watch cache at most 1 MB
//! (10 seats), otherwise all of it. Other requests take one seat. The result is bounded by
//! the level's own maximum (100 when it has none).

use std::borrow::Cow;

use kapi_apimachinery::request_info::RequestInfo;
use kapi_server::cacher::ObjectStats;

/// The most seats a request takes, when its level sets no lower maximum.
pub(crate) const MAX_LIST_SEATS: usize = 100;
/// The memory one seat stands for.
const BYTES_PER_SEAT: usize = 100_000;
/// What a LIST served from the watch cache is assumed to hold in memory at most.
const CACHE_LIST_BYTES: usize = 1_000_000;
/// The size assumed of objects of a collection whose size is unknown.
const UNKNOWN_OBJECT_SIZE: usize = 1_500_000;

/// The seats `info` (with `query`) takes, its collection holding `stats` (`None`: not
/// known, one seat), in a level allowing `level_max` seats a request (0: no level maximum).
pub(crate) fn seats(
    info: &RequestInfo,
    query: &str,
    stats: Option<ObjectStats>,
    level_max: usize,
) -> usize {
    if !matches!(info.verb.as_str(), "list" | "watch") {
        return 1;
    }
    let max = match level_max {
        0 => MAX_LIST_SEATS,
        m => m.min(MAX_LIST_SEATS),
    };
    let param = |key: &str| kapi_server::query::first(query, key).unwrap_or(Cow::Borrowed(""));
    let resource_version = param("resourceVersion");
    if info.verb == "watch"
        && param("sendInitialEvents") != "true"
        && !matches!(resource_version.as_ref(), "" | "0")
    {
        return 1;
    }
    let Some(stats) = stats else {
        return 1;
    };
    let limit: usize = param("limit").parse().unwrap_or(0);
    let from_storage = match param("resourceVersionMatch").as_ref() {
        "Exact" => true,
        "NotOlderThan" => false,
        "" if !param("continue").is_empty() => true,
        "" => limit > 0 && !matches!(resource_version.as_ref(), "" | "0"),
        _ => true,
    };
    let from_cache = info.verb == "watch" || !from_storage;
    let limited = match limit {
        0 => stats.count,
        limit => stats.count.min(limit),
    };
    let selected = !param("labelSelector").is_empty() || !param("fieldSelector").is_empty();
    let objects = if !info.name.is_empty() {
        1
    } else if !from_cache && selected {
        limited.max(stats.count / 2)
    } else {
        limited
    };
    let size = match stats.average_size {
        0 if stats.count > 0 => UNKNOWN_OBJECT_SIZE,
        size => size,
    };
    let mut bytes = objects.saturating_mul(size);
    if from_cache {
        bytes = bytes.min(CACHE_LIST_BYTES);
    }
    bytes.div_ceil(BYTES_PER_SEAT).clamp(1, max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(verb: &str) -> RequestInfo {
        RequestInfo {
            is_resource_request: true,
            verb: verb.into(),
            resource: "configmaps".into(),
            ..RequestInfo::default()
        }
    }

    const TEN_THOUSAND: Option<ObjectStats> = Some(ObjectStats {
        count: 10_000,
        average_size: 1_000,
    });

    #[test]
    fn lists_are_estimated_by_their_memory() {
        let list = request("list");
        // From the cache: 10 MB, capped at 1 MB, 10 seats.
        assert_eq!(seats(&list, "", TEN_THOUSAND, 0), 10);
        // Bounded by the level's maximum.
        assert_eq!(seats(&list, "", TEN_THOUSAND, 8), 8);
        // A page of 500 from the cache: 500 kB.
        assert_eq!(seats(&list, "limit=500", TEN_THOUSAND, 0), 5);
        // From storage (an exact revision): everything, up to the maximum.
        let exact = "resourceVersion=7&resourceVersionMatch=Exact";
        assert_eq!(seats(&list, exact, TEN_THOUSAND, 0), 100);
        // A selector from storage reads at least half of the collection.
        let selected = "limit=10&resourceVersion=7&labelSelector=a%3Db";
        assert_eq!(seats(&list, selected, TEN_THOUSAND, 0), 50);
        // One object, an unknown collection, an empty one.
        let single = RequestInfo {
            name: "x".into(),
            ..list.clone()
        };
        assert_eq!(seats(&single, "", TEN_THOUSAND, 0), 1);
        assert_eq!(seats(&list, "", None, 0), 1);
        assert_eq!(seats(&list, "", Some(ObjectStats::default()), 0), 1);
    }

    #[test]
    fn watches_cost_their_initial_state_and_other_requests_one_seat() {
        let watch = request("watch");
        assert_eq!(seats(&watch, "resourceVersion=5", TEN_THOUSAND, 0), 1);
        assert_eq!(seats(&watch, "", TEN_THOUSAND, 0), 10);
        assert_eq!(
            seats(
                &watch,
                "sendInitialEvents=true&resourceVersion=5",
                TEN_THOUSAND,
                0
            ),
            10
        );
        assert_eq!(seats(&request("get"), "", TEN_THOUSAND, 0), 1);
        assert_eq!(seats(&request("create"), "", TEN_THOUSAND, 0), 1);
    }
}
