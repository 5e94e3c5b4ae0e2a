//! The debug endpoints' tables (upstream's `apf_controller_debug.go`): the levels, their
//! queues and their requests, one row a line, cells separated by `,` and aligned as Go's
//! `text/tabwriter` aligns them (minimum width 8, padding 1, spaces).

use std::time::{SystemTime, UNIX_EPOCH};

use kapi_apimachinery::{goduration, gotime};

use crate::queueset::{QueueSet, RequestSnapshot};

/// The minimum width of a column, and the spaces after its widest cell.
const MIN_WIDTH: usize = 8;
const PADDING: usize = 1;

/// Lays `rows` out: every cell but the last of a line ends in `,` and is padded to its
/// column's width.
fn table(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut widths = vec![MIN_WIDTH; columns];
    for row in rows {
        for (column, cell) in row.iter().enumerate().take(row.len().saturating_sub(1)) {
            widths[column] = widths[column].max(cell.chars().count() + 1 + PADDING);
        }
    }
    let mut out = String::new();
    for row in rows {
        for (column, cell) in row.iter().enumerate() {
            if column + 1 == row.len() {
                out.push_str(cell);
            } else {
                let cell = format!("{cell},");
                out.push_str(&format!("{cell:<width$}", width = widths[column]));
            }
        }
        out.push('\n');
    }
    out
}

fn header(names: &str) -> Vec<String> {
    names.split(", ").map(str::to_string).collect()
}

/// Virtual time as upstream's SeatSeconds print it: truncated to eight decimals, and `ss`.
fn seat_seconds(value: f64) -> String {
    let units = (value.max(0.0) * 1e8) as u64;
    format!("{}.{:08}ss", units / 100_000_000, units % 100_000_000)
}

fn time(at: Option<SystemTime>) -> String {
    let Some(since) = at.and_then(|t| t.duration_since(UNIX_EPOCH).ok()) else {
        return "0001-01-01T00:00:00Z".into();
    };
    let seconds = i64::try_from(since.as_secs()).unwrap_or(i64::MAX);
    gotime::format_rfc3339_nano(seconds, since.subsec_nanos())
}

/// `dump_priority_levels`: one row a level, by name.
pub(crate) fn priority_levels(sets: &[&QueueSet]) -> String {
    let mut rows = vec![header(
        "PriorityLevelName, ActiveQueues, IsIdle, IsQuiescing, WaitingRequests, ExecutingRequests, DispatchedRequests, RejectedRequests, TimedoutRequests, CancelledRequests",
    )];
    for set in sets {
        let s = set.snapshot();
        let idle = s.waiting == 0 && s.executing == 0;
        rows.push(vec![
            set.name.clone(),
            s.active_queues.to_string(),
            idle.to_string(),
            "false".into(),
            s.waiting.to_string(),
            s.executing.to_string(),
            s.dispatched.to_string(),
            s.rejected.to_string(),
            "0".into(),
            s.cancelled.to_string(),
        ]);
    }
    table(&rows)
}

/// `dump_queues`: one row a queue of each queuing level.
pub(crate) fn queues(sets: &[&QueueSet]) -> String {
    let mut rows = vec![header(
        "PriorityLevelName, Index, PendingRequests, ExecutingRequests, SeatsInUse, NextDispatchR, InitialSeatsSum, MaxSeatsSum, TotalWorkSum",
    )];
    for set in sets {
        for (index, queue) in set.snapshot().queues.iter().enumerate() {
            rows.push(vec![
                set.name.clone(),
                index.to_string(),
                queue.waiting.to_string(),
                queue.executing.to_string(),
                queue.seats_in_use.to_string(),
                seat_seconds(queue.next_dispatch_r),
                queue.initial_seats.to_string(),
                queue.max_seats.to_string(),
                seat_seconds(queue.work),
            ]);
        }
    }
    table(&rows)
}

/// `dump_requests`: the waiting and executing requests of every level, with who asked for
/// what when `details`.
pub(crate) fn requests(sets: &[&QueueSet], details: bool) -> String {
    let mut names = String::from(
        "PriorityLevelName, FlowSchemaName, QueueIndex, RequestIndexInQueue, FlowDistingsher, ArriveTime, InitialSeats, FinalSeats, AdditionalLatency, StartTime",
    );
    if details {
        names.push_str(
            ", UserName, Verb, APIPath, Namespace, Name, APIVersion, Resource, SubResource",
        );
    }
    let mut rows = vec![header(&names)];
    for set in sets {
        for request in set.snapshot().requests {
            rows.push(request_row(&set.name, &request, details));
        }
    }
    table(&rows)
}

fn request_row(level: &str, request: &RequestSnapshot, details: bool) -> Vec<String> {
    let index = |i: Option<usize>| i.map_or("-1".to_string(), |i| i.to_string());
    let d = &request.described;
    let mut row = vec![
        level.to_string(),
        d.flow_schema.clone(),
        index(request.queue),
        index(request.index),
        d.distinguisher.clone(),
        time(Some(request.arrived)),
        request.estimate.initial.to_string(),
        request.estimate.final_seats.to_string(),
        goduration::format(request.estimate.additional),
        time(request.started),
    ];
    if details {
        row.extend([
            d.user.clone(),
            d.verb.clone(),
            d.path.clone(),
            d.namespace.clone(),
            d.name.clone(),
            d.api_version.clone(),
            d.resource.clone(),
            d.subresource.clone(),
        ]);
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_align_as_go_tabwriter() {
        let rows = vec![
            header("PriorityLevelName, ActiveQueues, IsIdle"),
            vec!["catch-all".into(), "0".into(), "true".into()],
        ];
        assert_eq!(
            table(&rows),
            "PriorityLevelName, ActiveQueues, IsIdle\ncatch-all,         0,            true\n"
        );
        assert_eq!(seat_seconds(0.0), "0.00000000ss");
        assert_eq!(time(None), "0001-01-01T00:00:00Z");
    }
}
