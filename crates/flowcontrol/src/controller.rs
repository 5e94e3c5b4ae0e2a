//! The flow controller (upstream's `apf_controller.go` and `apf_filter.go`): the current
//! configuration — the FlowSchemas' digest and a queue set per priority level with its
//! concurrency limits — rebuilt when the FlowSchemas or levels change, the levels' limits
//! adjusted to their demand every 10 seconds (lending and borrowing), and the admission of
//! every request the server's flow-control filter hands it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use kapi_apimachinery::request_info::RequestInfo;
use kapi_server::UserInfo;
use kapi_server::cacher::ObjectStats;
use kapi_server::endpoints::Served;
use kapi_server::filters::flow_control::{
    Admission, FlowClass, FlowControl, FlowRequest, RetryAfter, Withdrawn,
};
use parking_lot::{Mutex, RwLock};
use tokio_util::sync::CancellationToken;

use crate::classify::{Classification, Digest};
use crate::ensurer::FlowControlResources;
use crate::estimate;
use crate::limits::{self, Limits};
use crate::metrics::{FlowHandles, FlowMetrics, LevelFigures};
use crate::queueset::{Admit, Described, Kind, QueueSet, Refusal};
use crate::retry::DroppedRequests;
use crate::watches::WatchTracker;

/// How often the levels' limits follow their demand.
const ADJUSTMENT_PERIOD: Duration = Duration::from_secs(10);

/// The size of the collection a LIST or watch reads (`None`: not known here).
pub type StatsFn = Arc<dyn Fn(&RequestInfo) -> Option<ObjectStats> + Send + Sync>;

/// Admits requests by API Priority and Fairness; see the module documentation.
pub struct FlowController {
    configuration: RwLock<Arc<Configuration>>,
    /// `--max-requests-inflight` + `--max-mutating-requests-inflight`.
    server_concurrency: usize,
    stats: StatsFn,
    /// The open watches, for what mutations cost.
    watches: Arc<WatchTracker>,
    metrics: FlowMetrics,
    started: Instant,
    /// Held by a rebuild or adjustment: one at a time, so that each demand period is
    /// measured once and the last limits set are the latest computed.
    adjusting: Mutex<()>,
}

struct Configuration {
    digest: Digest,
    levels: HashMap<String, Level>,
    /// Each FlowSchema's metric handles, by name.
    handles: HashMap<String, Arc<FlowHandles>>,
}

struct Level {
    set: Arc<QueueSet>,
    limits: Limits,
    /// The most seats one request may take (0: no level maximum).
    max_seats: usize,
    dropped: Arc<Mutex<DroppedRequests>>,
}

/// The most requests the levels' queues hold (upstream's `maxWaitingRequests`).
fn max_waiting(levels: &HashMap<String, Level>) -> usize {
    levels
        .values()
        .map(|level| match level.set.kind() {
            Kind::Queue(queuing) => queuing.queues * queuing.queue_length_limit,
            _ => 0,
        })
        .sum()
}

/// The levels' nominal limits summed (upstream's `maxExecutingRequests`).
fn max_executing(levels: &HashMap<String, Level>) -> usize {
    levels.values().map(|level| level.limits.nominal).sum()
}

impl FlowController {
    /// A controller sharing `server_concurrency` seats, with the bootstrap's mandatory
    /// configuration until the first [`refresh`](Self::refresh).
    pub fn new(server_concurrency: usize, stats: StatsFn) -> FlowController {
        let controller = FlowController {
            configuration: RwLock::new(Arc::new(Configuration {
                digest: Digest::new(&[], &[]),
                levels: HashMap::new(),
                handles: HashMap::new(),
            })),
            server_concurrency,
            stats,
            watches: Arc::default(),
            metrics: FlowMetrics::default(),
            started: Instant::now(),
            adjusting: Mutex::new(()),
        };
        controller.rebuild(Digest::new(&[], &[]));
        controller
    }

    /// The metrics, to register.
    pub fn metrics(&self) -> &FlowMetrics {
        &self.metrics
    }

    /// Rebuilds the configuration from the collections' caches.
    pub fn refresh(&self, resources: &FlowControlResources) {
        // What a digest reads: the spec, the name and the uid.
        let parts = |served: &Served| served.cached_list_parts(&["spec"], &["name", "uid"]);
        let schemas = parts(&resources.flow_schemas);
        let levels = parts(&resources.priority_levels);
        self.rebuild(Digest::new(&schemas, &levels));
    }

    /// Makes `digest` the configuration: levels that kept their name and way of admitting
    /// keep their queue set (and what waits and runs in it); the limits are recomputed.
    fn rebuild(&self, digest: Digest) {
        let _one_at_a_time = self.adjusting.lock();
        let previous = self.configuration.read().clone();
        let mut names: Vec<&String> = digest.levels.keys().collect();
        names.sort();
        let shares: Vec<_> = names.iter().map(|n| digest.levels[*n].shares).collect();
        let limits = limits::nominal_limits(self.server_concurrency, &shares);
        let mut levels = HashMap::new();
        for (name, limits) in names.into_iter().zip(limits) {
            let kind = digest.levels[name].kind;
            // A level keeps its queue set while it stays limited (or exempt): its queuing
            // changes in place, as upstream's.
            let exempt = |kind: Kind| matches!(kind, Kind::Exempt);
            let kept = previous
                .levels
                .get(name)
                .filter(|l| exempt(l.set.kind()) == exempt(kind));
            let (set, dropped) = match kept {
                Some(level) => {
                    if level.set.kind() != kind {
                        level.set.reconfigure(kind);
                    }
                    (level.set.clone(), level.dropped.clone())
                }
                None => {
                    let set = QueueSet::new(name, kind, limits.initial());
                    let fallback =
                        ((self.server_concurrency as f64 / 10.0).round() as usize).max(1);
                    let ratios = self.metrics.level_ratios(name, fallback);
                    set.report_to(ratios, self.metrics.level_progress(name));
                    (set, Arc::default())
                }
            };
            let max_seats = match kind {
                Kind::Queue(queuing) => {
                    let fifteen_percent = (limits.nominal as f64 * 0.15).ceil() as usize;
                    let per_hand = limits.nominal / queuing.hand_size.max(1);
                    fifteen_percent.min(per_hand).max(1)
                }
                _ => 0,
            };
            let level = Level {
                set,
                limits,
                max_seats,
                dropped,
            };
            levels.insert(name.clone(), level);
        }
        let capacity = (max_waiting(&levels), max_executing(&levels));
        self.metrics.request_capacity(capacity.0, capacity.1);
        let handles = digest
            .schemas
            .iter()
            .map(|s| (s.name.clone(), self.metrics.handles(&s.level, &s.name)))
            .collect();
        *self.configuration.write() = Arc::new(Configuration {
            digest,
            levels,
            handles,
        });
        self.adjust_now();
    }

    /// Sets every level's limit from its demand since the last adjustment.
    pub fn adjust(&self) {
        let _one_at_a_time = self.adjusting.lock();
        self.adjust_now();
    }

    fn adjust_now(&self) {
        let configuration = self.configuration.read().clone();
        let mut names: Vec<&String> = configuration.levels.keys().collect();
        names.sort();
        let mut input = Vec::new();
        let mut periods = Vec::new();
        for name in &names {
            let level = &configuration.levels[*name];
            let period = level.set.take_demand();
            let demand = limits::Demand {
                high_watermark: period.max,
                smoothed: period.smoothed,
            };
            input.push((
                configuration.digest.levels[*name].shares,
                level.limits,
                demand,
            ));
            periods.push(period);
        }
        let (current, fraction) = limits::adjust(&input);
        self.metrics.fair_fraction(fraction);
        for (((name, seats), period), (_, limits, demand)) in
            names.iter().zip(current).zip(periods).zip(&input)
        {
            configuration.levels[*name].set.set_limit(seats);
            let figures = LevelFigures {
                nominal: limits.nominal,
                lower: limits.min,
                upper: limits.max,
                current: seats,
                high_watermark: period.max.round(),
                average: period.average,
                deviation: period.deviation,
                smoothed: demand.smoothed,
                target: limits.target(demand),
            };
            self.metrics.level(name, &figures);
        }
    }

    /// Adjusts the limits every period until `stopping` (the `priority-and-fairness-config-consumer`
    /// hook's work).
    pub async fn run_adjustments(self: Arc<Self>, stopping: CancellationToken) {
        let mut ticks = tokio::time::interval(ADJUSTMENT_PERIOD);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                () = stopping.cancelled() => return,
                _ = ticks.tick() => self.adjust(),
            }
        }
    }

    /// The classification of `user`'s request `info`.
    pub fn classify(&self, user: &UserInfo, info: &RequestInfo) -> Classification {
        self.configuration.read().digest.classify(user, info)
    }

    /// The levels' queue sets, by name.
    fn sets(&self) -> (Arc<Configuration>, Vec<String>) {
        let configuration = self.configuration.read().clone();
        let mut names: Vec<String> = configuration.levels.keys().cloned().collect();
        names.sort();
        (configuration, names)
    }

    /// A debug endpoint's table (`dump_priority_levels`, `dump_queues`, `dump_requests`,
    /// the last with who asked for what when `details`); `None` for another name.
    pub fn dump(&self, endpoint: &str, details: bool) -> Option<String> {
        let (configuration, names) = self.sets();
        let sets: Vec<&QueueSet> = names
            .iter()
            .map(|n| configuration.levels[n].set.as_ref())
            .collect();
        match endpoint {
            "dump_priority_levels" => Some(crate::dump::priority_levels(&sets)),
            "dump_queues" => Some(crate::dump::queues(&sets)),
            "dump_requests" => Some(crate::dump::requests(&sets, details)),
            _ => None,
        }
    }
}

/// Records a refusal in `dropped`'s level and returns the seconds its client is told to wait
/// (seconds counted from `started`).
fn retry_after(dropped: &Mutex<DroppedRequests>, started: Instant) -> RetryAfter {
    let second = started.elapsed().as_secs();
    RetryAfter(u32::try_from(dropped.lock().refused(second)).unwrap_or(u32::MAX))
}

impl FlowControl for FlowController {
    fn admit(&self, request: FlowRequest<'_>) -> (FlowClass, Admission) {
        let arrived = SystemTime::now();
        let configuration = self.configuration.read().clone();
        let digest = &configuration.digest;
        let schema = digest.matching(request.user, request.info);
        let level = &configuration.levels[&schema.level];
        let class = FlowClass {
            flow_schema_uid: schema.uid_header.clone(),
            priority_level_uid: digest.levels[&schema.level].uid_header.clone(),
        };
        let handles = configuration.handles[&schema.name].clone();
        let info = request.info;
        let stats = match info.verb.as_str() {
            "list" | "watch" => (self.stats)(info),
            _ => None,
        };
        // Every request is estimated, exempt ones too (their seats count in their level's
        // demand only), as upstream estimates before it looks at the level.
        let kind = digest.levels[&schema.level].kind;
        let watches = match info.verb.as_str() {
            "create" | "update" | "patch" | "delete" if estimate::causes_event(info) => {
                let watches = self.watches.interested(info);
                handles.watch_count(watches);
                watches
            }
            _ => 0,
        };
        let estimate = estimate::estimate(info, request.query, stats, watches, level.max_seats);
        handles.estimated(estimate.max_seats());
        let distinguisher = digest.distinguisher(schema, request.user, info);
        let hash = match kind {
            Kind::Queue(queuing) if queuing.queues > 1 => flow_hash(&schema.name, distinguisher),
            _ => 0,
        };
        let described = Arc::new(describe(
            &schema.name,
            distinguisher,
            request.user,
            info,
            handles.clone(),
        ));
        let admission = match level.set.admit(hash, estimate, described) {
            Admit::Now(seats) => Admission::Now(Ok(Box::new(seats))),
            Admit::Refused(refusal) => {
                handles.refused(refusal, arrived);
                Admission::Now(Err(retry_after(&level.dropped, self.started)))
            }
            Admit::Queued(mut waiter) => {
                // A client that goes away while its request waits is a time-out too, as
                // upstream's wait ends when the request's context does, for either cause,
                // and counts in its level's Retry-After.
                let cancelled = handles.clone();
                let dropped = level.dropped.clone();
                let started = self.started;
                let refused = dropped.clone();
                let withdrawn = Withdrawn::default();
                let left = withdrawn.clone();
                waiter.on_cancel(move || {
                    cancelled.refused(Refusal::TimeOut, arrived);
                    retry_after(&refused, started);
                    left.set();
                });
                let deadline = tokio::time::Instant::now() + request.wait_limit;
                let waiting = async move {
                    match waiter.wait(deadline).await {
                        Ok(seats) => Ok(Box::new(seats) as _),
                        Err(refusal) => {
                            handles.refused(refusal, arrived);
                            Err(retry_after(&dropped, started))
                        }
                    }
                };
                Admission::Later(Box::pin(waiting), withdrawn)
            }
        };
        (class, admission)
    }

    fn track_watch(&self, info: &RequestInfo, query: &str) -> Option<Box<dyn Send + Sync>> {
        let tracked = self.watches.register(info, query)?;
        Some(Box::new(tracked))
    }
}

/// The hash of a flow (upstream's): the first 8 bytes, little-endian, of the SHA-256 of
/// the FlowSchema's name, a zero byte and the distinguisher.
fn flow_hash(flow_schema: &str, distinguisher: &str) -> u64 {
    let mut context = ring::digest::Context::new(&ring::digest::SHA256);
    context.update(flow_schema.as_bytes());
    context.update(&[0]);
    context.update(distinguisher.as_bytes());
    let digest = context.finish();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_ref()[..8]);
    u64::from_le_bytes(first)
}

/// What the debug endpoints show of a request.
fn describe(
    flow_schema: &str,
    distinguisher: &str,
    user: &UserInfo,
    info: &RequestInfo,
    handles: Arc<FlowHandles>,
) -> Described {
    let api_version = match (info.is_resource_request, info.api_group.as_str()) {
        (false, _) => String::new(),
        (true, "") => info.api_version.clone(),
        (true, group) => format!("{group}/{}", info.api_version),
    };
    Described {
        flow_schema: flow_schema.to_string(),
        distinguisher: distinguisher.to_string(),
        user: user.name.clone(),
        verb: info.verb.clone(),
        path: info.path.clone(),
        namespace: info.namespace.clone(),
        name: info.name.clone(),
        api_version,
        resource: info.resource.clone(),
        subresource: info.subresource.clone(),
        handles,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flows_hash_as_upstreams() {
        // SHA-256("a\0b") starts 0x... ; the value is fixed by the hash, so any change of the
        // recipe (order, separator, endianness) changes it.
        let hash = flow_hash("global-default", "alice");
        assert_eq!(hash, flow_hash("global-default", "alice"));
        assert_ne!(hash, flow_hash("global-default", "bob"));
        assert_ne!(flow_hash("ab", "c"), flow_hash("a", "bc"));
    }

    #[tokio::test]
    async fn the_mandatory_configuration_admits_masters_and_limits_others() {
        let controller = FlowController::new(6, Arc::new(|_: &RequestInfo| None));
        let admin = UserInfo {
            name: "admin".into(),
            groups: vec!["system:masters".into()],
            ..UserInfo::default()
        };
        let alice = UserInfo {
            name: "alice".into(),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        };
        let info = RequestInfo {
            verb: "get".into(),
            path: "/version".into(),
            ..RequestInfo::default()
        };
        let ask = |user| FlowRequest {
            user,
            info: &info,
            query: "",
            wait_limit: Duration::from_millis(10),
        };
        // catch-all has all 6 seats (exempt has no shares) and rejects beyond them.
        let mut held = Vec::new();
        for _ in 0..6 {
            match controller.admit(ask(&alice)).1 {
                Admission::Now(Ok(seats)) => held.push(seats),
                _ => panic!("admitted"),
            }
        }
        let refused = controller.admit(ask(&alice)).1;
        assert!(matches!(refused, Admission::Now(Err(RetryAfter(1)))));
        for _ in 0..20 {
            assert!(matches!(
                controller.admit(ask(&admin)).1,
                Admission::Now(Ok(_))
            ));
        }
        let dump = controller.dump("dump_priority_levels", false).unwrap();
        let catch_all = dump.lines().find(|l| l.starts_with("catch-all,")).unwrap();
        let cells: Vec<_> = catch_all.split(',').map(str::trim).collect();
        assert_eq!(cells[5], "6", "{dump}");
        assert_eq!(cells[7], "1", "{dump}");
    }
}
