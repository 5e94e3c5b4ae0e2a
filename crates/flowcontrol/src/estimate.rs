//! Work estimation (upstream's `request/width.go` and its list and mutating estimators,
//! size-based as 1.35 has it by default): how many seats a request occupies, and for how
//! long after it finishes. A LIST, and a watch that starts with the current state, is
//! estimated by the memory its objects take, one seat per 100 kB, from the collection's
//! object count and average size: from the watch cache at most 1 MB (10 seats), otherwise
//! all of it, bounded by the level's own maximum (100 when it has none). A create, update,
//! patch or delete is one seat while it runs and then, for the watches its event will reach
//! (ten or more), one seat per ten watches (at most the level's maximum, and never more than
//! 10) for 5 ms of work per seat those seats would have taken, spread over the seats kept.
//! Other requests take one seat.

use std::borrow::Cow;
use std::time::Duration;

use kapi_apimachinery::request_info::RequestInfo;
use kapi_server::cacher::ObjectStats;

/// The most seats a request takes, when its level sets no lower maximum.
pub(crate) const MAX_LIST_SEATS: usize = 100;
/// The most seats a mutating request keeps for its watch events.
const MAX_MUTATING_SEATS: usize = 10;
/// The watches one seat stands for.
const WATCHES_PER_SEAT: usize = 10;
/// The work of delivering one seat's share of an event, in seat-time.
const EVENT_DURATION: Duration = Duration::from_millis(5);

/// What a request occupies: `initial` seats while it executes, then `final_seats` for
/// `additional` after it finished (the watch events it caused).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct WorkEstimate {
    pub initial: usize,
    pub final_seats: usize,
    pub additional: Duration,
}

impl WorkEstimate {
    /// `seats` while executing, nothing after.
    pub(crate) fn seats(seats: usize) -> WorkEstimate {
        WorkEstimate {
            initial: seats,
            ..WorkEstimate::default()
        }
    }

    /// The seats the request holds from dispatch until its final phase ends.
    pub(crate) fn max_seats(&self) -> usize {
        self.initial.max(self.final_seats)
    }
}

/// The estimate of `info` (with `query`): LISTs and watches from their collection's `stats`,
/// mutations from the `watches` interested in them, in a level allowing `level_max` seats a
/// request (0: no level maximum).
pub(crate) fn estimate(
    info: &RequestInfo,
    query: &str,
    stats: Option<ObjectStats>,
    watches: usize,
    level_max: usize,
) -> WorkEstimate {
    match info.verb.as_str() {
        "create" | "update" | "patch" | "delete" => mutating(info, watches, level_max),
        _ => WorkEstimate::seats(seats(info, query, stats, level_max)),
    }
}

/// Whether a mutation causes an event its watches see: all but a service account token
/// request, which writes nothing (upstream's `isRequestExemptFromWatchEvents`).
pub(crate) fn causes_event(info: &RequestInfo) -> bool {
    !(info.resource == "serviceaccounts" && info.subresource == "token")
}

/// A mutation's estimate (upstream's `mutatingWorkEstimator`): one seat, then the work of
/// its event's delivery to `watches` watches, reshaped to at most the level's (or ten) seats.
fn mutating(info: &RequestInfo, watches: usize, level_max: usize) -> WorkEstimate {
    if !causes_event(info) || watches < WATCHES_PER_SEAT {
        return WorkEstimate::seats(1);
    }
    let max = match level_max {
        0 => MAX_MUTATING_SEATS,
        m => m.min(MAX_MUTATING_SEATS),
    };
    let wide = watches.div_ceil(WATCHES_PER_SEAT);
    let final_seats = wide.min(max);
    WorkEstimate {
        initial: 1,
        final_seats,
        additional: EVENT_DURATION * wide as u32 / final_seats as u32,
    }
}
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
    let send_initial_events = kapi_server::query::first(query, "sendInitialEvents");
    if info.verb == "watch"
        && !kapi_server::query::option_flag(send_initial_events.as_deref())
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
        // Any value but 0 and false asks for them, as upstream decodes the option.
        let asked = |value: &str| {
            let query = format!("sendInitialEvents={value}&resourceVersion=5");
            seats(&watch, &query, TEN_THOUSAND, 0)
        };
        assert_eq!(
            [
                asked("1"),
                asked("yes"),
                asked(""),
                asked("False"),
                asked("0")
            ],
            [10, 10, 10, 1, 1]
        );
        assert_eq!(seats(&request("get"), "", TEN_THOUSAND, 0), 1);
        assert_eq!(seats(&request("create"), "", TEN_THOUSAND, 0), 1);
    }

    #[test]
    fn mutations_keep_seats_for_their_watch_events() {
        let create = request("create");
        // Fewer than ten watches: one seat, nothing after.
        assert_eq!(estimate(&create, "", None, 9, 0), WorkEstimate::seats(1));
        // 15 watches: two seats for 5 ms.
        let fifteen = estimate(&create, "", None, 15, 0);
        assert_eq!((fifteen.initial, fifteen.final_seats), (1, 2));
        assert_eq!(fifteen.additional, Duration::from_millis(5));
        // 500 watches: 50 seats' work reshaped to ten seats for 25 ms, or to the level's 4.
        let many = estimate(&create, "", None, 500, 0);
        assert_eq!(
            (many.final_seats, many.additional),
            (10, Duration::from_millis(25))
        );
        let narrow = estimate(&create, "", None, 500, 4);
        assert_eq!(narrow.final_seats, 4);
        assert_eq!(narrow.additional, Duration::from_micros(62_500));
        assert_eq!(narrow.max_seats(), 4);
        // A token request causes no event; a GET is no mutation.
        let token = RequestInfo {
            resource: "serviceaccounts".into(),
            subresource: "token".into(),
            ..create
        };
        assert_eq!(estimate(&token, "", None, 500, 0), WorkEstimate::seats(1));
        assert_eq!(
            estimate(&request("get"), "", None, 500, 0),
            WorkEstimate::seats(1)
        );
    }
}
