//! The `apiserver_flowcontrol_*` metrics, with upstream's names, labels, help and buckets.
//! Each FlowSchema of a configuration gets its handles once ([`FlowMetrics::handles`]), so
//! a request updates its metrics without looking its labels up.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::SystemTime;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use crate::queueset::Refusal;
use crate::timing::TimingRatio;

/// Upstream's buckets of the wait and execution durations.
const DURATION_BUCKETS: [f64; 13] = [
    0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
];
/// Upstream's buckets of the estimated seats.
const SEAT_BUCKETS: [f64; 8] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 100.0];
/// Upstream's buckets of a level's seat utilization.
const SEAT_UTILIZATION_BUCKETS: &[f64] = &[
    0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0,
];
/// Upstream's buckets of a level's request utilization.
const REQUEST_UTILIZATION_BUCKETS: &[f64] =
    &[0.0, 0.001, 0.003, 0.01, 0.03, 0.1, 0.25, 0.5, 0.75, 1.0];
/// Upstream's buckets of the read-only and mutating requests' share of the capacity.
const READ_VS_WRITE_BUCKETS: &[f64] = &[
    0.0, 0.001, 0.01, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0,
];
/// Upstream's buckets of a level's seat demand over its limit.
const DEMAND_BUCKETS: &[f64] = &[0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.7, 2.0, 2.8, 4.0, 6.0];
/// Upstream's buckets of a queue's length.
const QUEUE_LENGTH_BUCKETS: [f64; 8] = [0.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1000.0];
/// Upstream's buckets of the watches a mutation reaches.
const WATCH_COUNT_BUCKETS: [f64; 6] = [0.0, 1.0, 10.0, 100.0, 1000.0, 10000.0];

type FloatGauge = Gauge<f64, AtomicU64>;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct FlowLabels {
    priority_level: String,
    flow_schema: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RejectedLabels {
    priority_level: String,
    flow_schema: String,
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WaitLabels {
    priority_level: String,
    flow_schema: String,
    execute: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ExecutionLabels {
    priority_level: String,
    flow_schema: String,
    r#type: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct LevelLabels {
    priority_level: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLevelLabels {
    phase: &'static str,
    priority_level: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseKindLabels {
    phase: &'static str,
    request_kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BoundLabels {
    priority_level: String,
    bound: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EpochLabels {
    priority_level: String,
    success: &'static str,
}

type Ratios<L> = Family<L, TimingRatio, fn() -> TimingRatio>;

fn seat_utilization() -> TimingRatio {
    TimingRatio::new(SEAT_UTILIZATION_BUCKETS)
}

fn request_utilization() -> TimingRatio {
    TimingRatio::new(REQUEST_UTILIZATION_BUCKETS)
}

fn read_vs_write() -> TimingRatio {
    TimingRatio::new(READ_VS_WRITE_BUCKETS)
}

fn demand() -> TimingRatio {
    TimingRatio::new(DEMAND_BUCKETS)
}

/// One level's timing ratios (upstream's `priority_level_seat_utilization`,
/// `priority_level_request_utilization` and `demand_seats`), which its queue set keeps up to
/// date, and the level's denominator when its seat limit is zero.
#[derive(Clone, Debug)]
pub(crate) struct LevelRatios {
    pub seats: TimingRatio,
    pub waiting: TimingRatio,
    pub executing: TimingRatio,
    pub demand: TimingRatio,
    /// max(1, round(server seats / 10)), upstream's denominator for a level without seats.
    pub fallback: usize,
}

impl Default for LevelRatios {
    /// Ratios registered nowhere.
    fn default() -> Self {
        LevelRatios {
            seats: seat_utilization(),
            waiting: request_utilization(),
            executing: request_utilization(),
            demand: demand(),
            fallback: 1,
        }
    }
}

/// One level's fair-queuing progress in virtual time (seat-seconds), which its queue set
/// keeps up to date: upstream's `current_r`, `dispatch_r`, `latest_s`, `next_s_bounds`,
/// `next_discounted_s_bounds` and `epoch_advance_total`.
#[derive(Clone, Debug, Default)]
pub(crate) struct LevelProgress {
    /// R when it last changed.
    pub current_r: FloatGauge,
    /// R at the last dispatch.
    pub dispatch_r: FloatGauge,
    /// The virtual start of the request dispatched last.
    pub latest_s: FloatGauge,
    /// The least and greatest virtual start of the queues' oldest waiting requests, as
    /// of the last dispatch.
    pub next_s: [FloatGauge; 2],
    /// The same less each queue's estimated work in progress.
    pub next_discounted_s: [FloatGauge; 2],
    /// Times R was wound back, by whether every reading it was taken from stayed whole:
    /// failed, succeeded.
    pub epoch_advances: [Counter; 2],
}

/// The read-only and mutating requests waiting and executing, over every level (upstream's
/// `read_vs_write_current_requests`): the waiting ones over what the levels' queues hold,
/// the executing ones over the levels' nominal limits summed.
#[derive(Clone, Debug)]
pub(crate) struct RequestKinds {
    /// By phase (waiting, executing) and kind (read-only, mutating).
    ratios: [[TimingRatio; 2]; 2],
}

impl Default for RequestKinds {
    fn default() -> Self {
        let pair = || [read_vs_write(), read_vs_write()];
        RequestKinds {
            ratios: [pair(), pair()],
        }
    }
}

impl RequestKinds {
    /// The kinds' ratios in `family`.
    fn registered(family: &Ratios<PhaseKindLabels>) -> RequestKinds {
        let ratio = |phase, request_kind| {
            let labels = PhaseKindLabels {
                phase,
                request_kind,
            };
            family.get_or_create(&labels).clone()
        };
        RequestKinds {
            ratios: [
                [ratio("waiting", "readOnly"), ratio("waiting", "mutating")],
                [
                    ratio("executing", "readOnly"),
                    ratio("executing", "mutating"),
                ],
            ],
        }
    }

    /// Sets the denominators: `waiting` requests the queues hold, `executing` seats.
    fn capacity(&self, waiting: usize, executing: usize) {
        for (phase, most) in [waiting, executing].into_iter().enumerate() {
            for ratio in &self.ratios[phase] {
                ratio.set_denominator(most as f64);
            }
        }
    }

    /// `delta` requests of the kind (`mutating` or not) began (1) or ended (-1) waiting or
    /// executing.
    fn add(&self, executing: bool, mutating: bool, delta: i64) {
        self.ratios[usize::from(executing)][usize::from(mutating)].add_numerator(delta as f64);
    }
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

fn seat_histogram() -> Histogram {
    Histogram::new(SEAT_BUCKETS)
}

fn queue_length_histogram() -> Histogram {
    Histogram::new(QUEUE_LENGTH_BUCKETS)
}

fn watch_count_histogram() -> Histogram {
    Histogram::new(WATCH_COUNT_BUCKETS)
}

/// Every flow-control metric.
#[derive(Clone)]
pub struct FlowMetrics {
    rejected: Family<RejectedLabels, Counter>,
    dispatched: Family<FlowLabels, Counter>,
    inqueue_requests: Family<FlowLabels, Gauge>,
    inqueue_seats: Family<FlowLabels, Gauge>,
    executing_requests: Family<FlowLabels, Gauge>,
    executing_seats: Family<FlowLabels, Gauge>,
    wait: Family<WaitLabels, Histogram, fn() -> Histogram>,
    execution: Family<ExecutionLabels, Histogram, fn() -> Histogram>,
    estimated: Family<FlowLabels, Histogram, fn() -> Histogram>,
    watch_counts: Family<FlowLabels, Histogram, fn() -> Histogram>,
    queue_lengths: Family<FlowLabels, Histogram, fn() -> Histogram>,
    no_accommodation: Family<FlowLabels, Counter>,
    seat_utilization: Ratios<PhaseLevelLabels>,
    request_utilization: Ratios<PhaseLevelLabels>,
    demand: Ratios<LevelLabels>,
    read_vs_write: Ratios<PhaseKindLabels>,
    kinds: RequestKinds,
    nominal: Family<LevelLabels, Gauge>,
    lower: Family<LevelLabels, Gauge>,
    upper: Family<LevelLabels, Gauge>,
    current: Family<LevelLabels, Gauge>,
    high_watermark: Family<LevelLabels, FloatGauge>,
    average: Family<LevelLabels, FloatGauge>,
    deviation: Family<LevelLabels, FloatGauge>,
    smoothed: Family<LevelLabels, FloatGauge>,
    target: Family<LevelLabels, FloatGauge>,
    fair_fraction: FloatGauge,
    current_r: Family<LevelLabels, FloatGauge>,
    dispatch_r: Family<LevelLabels, FloatGauge>,
    latest_s: Family<LevelLabels, FloatGauge>,
    next_s: Family<BoundLabels, FloatGauge>,
    next_discounted_s: Family<BoundLabels, FloatGauge>,
    epoch_advances: Family<EpochLabels, Counter>,
}

impl Default for FlowMetrics {
    fn default() -> Self {
        let read_vs_write_family: Ratios<PhaseKindLabels> =
            Family::new_with_constructor(read_vs_write);
        FlowMetrics {
            rejected: Family::default(),
            dispatched: Family::default(),
            inqueue_requests: Family::default(),
            inqueue_seats: Family::default(),
            executing_requests: Family::default(),
            executing_seats: Family::default(),
            wait: Family::new_with_constructor(duration_histogram),
            execution: Family::new_with_constructor(duration_histogram),
            estimated: Family::new_with_constructor(seat_histogram),
            watch_counts: Family::new_with_constructor(watch_count_histogram),
            queue_lengths: Family::new_with_constructor(queue_length_histogram),
            no_accommodation: Family::default(),
            seat_utilization: Family::new_with_constructor(seat_utilization),
            request_utilization: Family::new_with_constructor(request_utilization),
            demand: Family::new_with_constructor(demand),
            read_vs_write: read_vs_write_family.clone(),
            kinds: RequestKinds::registered(&read_vs_write_family),
            nominal: Family::default(),
            lower: Family::default(),
            upper: Family::default(),
            current: Family::default(),
            high_watermark: Family::default(),
            average: Family::default(),
            deviation: Family::default(),
            smoothed: Family::default(),
            target: Family::default(),
            fair_fraction: FloatGauge::default(),
            current_r: Family::default(),
            dispatch_r: Family::default(),
            latest_s: Family::default(),
            next_s: Family::default(),
            next_discounted_s: Family::default(),
            epoch_advances: Family::default(),
        }
    }
}

/// One FlowSchema's metrics within its priority level.
#[derive(Debug)]
pub(crate) struct FlowHandles {
    rejected: [Counter; 3],
    dispatched: Counter,
    inqueue_requests: Gauge,
    inqueue_seats: Gauge,
    executing_requests: Gauge,
    executing_seats: Gauge,
    waited: Histogram,
    refused_wait: Histogram,
    regular: Histogram,
    watch: Histogram,
    estimated: Histogram,
    watch_counts: Histogram,
    queue_lengths: Histogram,
    no_accommodation: Counter,
    kinds: RequestKinds,
}

impl Default for FlowHandles {
    /// Handles registered nowhere.
    fn default() -> Self {
        FlowHandles {
            rejected: Default::default(),
            dispatched: Counter::default(),
            inqueue_requests: Gauge::default(),
            inqueue_seats: Gauge::default(),
            executing_requests: Gauge::default(),
            executing_seats: Gauge::default(),
            waited: duration_histogram(),
            refused_wait: duration_histogram(),
            regular: duration_histogram(),
            watch: duration_histogram(),
            estimated: seat_histogram(),
            watch_counts: watch_count_histogram(),
            queue_lengths: queue_length_histogram(),
            no_accommodation: Counter::default(),
            kinds: RequestKinds::default(),
        }
    }
}

fn signed(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl FlowHandles {
    /// `delta` requests (`mutating` or read-only) needing `seats` each joined (1) or left
    /// (-1) a queue.
    pub(crate) fn waiting(&self, delta: i64, seats: usize, mutating: bool) {
        self.kinds.add(false, mutating, delta);
        self.inqueue_requests.inc_by(delta);
        self.inqueue_seats.inc_by(delta * signed(seats));
    }

    /// A request (`mutating` or read-only) holding `seats` started (1) or finished (-1).
    pub(crate) fn executing(&self, delta: i64, seats: usize, mutating: bool) {
        self.kinds.add(true, mutating, delta);
        if delta > 0 {
            self.dispatched.inc();
        }
        self.executing_requests.inc_by(delta);
        self.executing_seats.inc_by(delta * signed(seats));
    }

    /// A request that arrived at `arrived` leaves its queue to execute.
    pub(crate) fn waited(&self, arrived: SystemTime) {
        let waited = arrived.elapsed().unwrap_or_default();
        self.waited.observe(waited.as_secs_f64());
    }

    /// A request ran for `seconds`.
    pub(crate) fn executed(&self, watch: bool, seconds: f64) {
        match watch {
            true => self.watch.observe(seconds),
            false => self.regular.observe(seconds),
        }
    }

    /// A request was refused for `refusal` after waiting since `arrived`.
    pub(crate) fn refused(&self, refusal: Refusal, arrived: SystemTime) {
        let index = match refusal {
            Refusal::QueueFull => 0,
            Refusal::ConcurrencyLimit => 1,
            Refusal::TimeOut => 2,
        };
        self.rejected[index].inc();
        let waited = arrived.elapsed().unwrap_or_default().as_secs_f64();
        match refusal {
            // Upstream's quirk: a request that timed out in its queue is observed as one
            // that executed.
            Refusal::TimeOut => self.waited.observe(waited),
            _ => self.refused_wait.observe(waited),
        }
    }

    /// A request was estimated to need `seats`.
    pub(crate) fn estimated(&self, seats: usize) {
        self.estimated.observe(seats as f64);
    }

    /// A request was enqueued in a queue now `length` long.
    pub(crate) fn enqueued(&self, length: usize) {
        self.queue_lengths.observe(length as f64);
    }

    /// A dispatch found this flow's request at the head without the seats it needs.
    pub(crate) fn not_accommodated(&self) {
        self.no_accommodation.inc();
    }

    /// How often the flow's head found seats free, but too few.
    #[cfg(test)]
    pub(crate) fn unaccommodated(&self) -> u64 {
        self.no_accommodation.get()
    }

    /// A mutation was estimated to reach `watches` watches.
    pub(crate) fn watch_count(&self, watches: usize) {
        self.watch_counts.observe(watches as f64);
    }
}

/// A level's concurrency limits and seat demand, as its metrics report them.
pub(crate) struct LevelFigures {
    pub nominal: usize,
    pub lower: usize,
    pub upper: usize,
    pub current: usize,
    pub high_watermark: f64,
    pub average: f64,
    pub deviation: f64,
    pub smoothed: f64,
    pub target: f64,
}

impl FlowMetrics {
    /// The handles of FlowSchema `flow_schema` in level `priority_level`.
    pub(crate) fn handles(&self, priority_level: &str, flow_schema: &str) -> Arc<FlowHandles> {
        let flow = FlowLabels {
            priority_level: priority_level.to_string(),
            flow_schema: flow_schema.to_string(),
        };
        let rejected = |reason| {
            let labels = RejectedLabels {
                priority_level: flow.priority_level.clone(),
                flow_schema: flow.flow_schema.clone(),
                reason,
            };
            self.rejected.get_or_create(&labels).clone()
        };
        let wait = |execute| {
            let labels = WaitLabels {
                priority_level: flow.priority_level.clone(),
                flow_schema: flow.flow_schema.clone(),
                execute,
            };
            self.wait.get_or_create(&labels).clone()
        };
        let execution = |r#type| {
            let labels = ExecutionLabels {
                priority_level: flow.priority_level.clone(),
                flow_schema: flow.flow_schema.clone(),
                r#type,
            };
            self.execution.get_or_create(&labels).clone()
        };
        Arc::new(FlowHandles {
            rejected: [
                rejected(Refusal::QueueFull.as_str()),
                rejected(Refusal::ConcurrencyLimit.as_str()),
                rejected(Refusal::TimeOut.as_str()),
            ],
            dispatched: self.dispatched.get_or_create(&flow).clone(),
            inqueue_requests: self.inqueue_requests.get_or_create(&flow).clone(),
            inqueue_seats: self.inqueue_seats.get_or_create(&flow).clone(),
            executing_requests: self.executing_requests.get_or_create(&flow).clone(),
            executing_seats: self.executing_seats.get_or_create(&flow).clone(),
            waited: wait("true"),
            refused_wait: wait("false"),
            regular: execution("regular"),
            watch: execution("watch"),
            estimated: self.estimated.get_or_create(&flow).clone(),
            watch_counts: self.watch_counts.get_or_create(&flow).clone(),
            queue_lengths: self.queue_lengths.get_or_create(&flow).clone(),
            no_accommodation: self.no_accommodation.get_or_create(&flow).clone(),
            kinds: self.kinds.clone(),
        })
    }

    /// What the configuration's levels can hold: `waiting` requests in their queues,
    /// `executing` seats (the denominators of `read_vs_write_current_requests`).
    pub(crate) fn request_capacity(&self, waiting: usize, executing: usize) {
        self.kinds.capacity(waiting, executing);
    }

    /// Reports level `name`'s limits and demand.
    pub(crate) fn level(&self, name: &str, figures: &LevelFigures) {
        let labels = LevelLabels {
            priority_level: name.to_string(),
        };
        self.nominal
            .get_or_create(&labels)
            .set(signed(figures.nominal));
        self.lower.get_or_create(&labels).set(signed(figures.lower));
        self.upper.get_or_create(&labels).set(signed(figures.upper));
        self.current
            .get_or_create(&labels)
            .set(signed(figures.current));
        self.high_watermark
            .get_or_create(&labels)
            .set(figures.high_watermark);
        self.average.get_or_create(&labels).set(figures.average);
        self.deviation.get_or_create(&labels).set(figures.deviation);
        self.smoothed.get_or_create(&labels).set(figures.smoothed);
        self.target.get_or_create(&labels).set(figures.target);
    }

    /// Level `name`'s timing ratios, whose denominator is `fallback` while its limit is 0.
    pub(crate) fn level_ratios(&self, name: &str, fallback: usize) -> LevelRatios {
        let level = |phase| PhaseLevelLabels {
            phase,
            priority_level: name.to_string(),
        };
        let labels = LevelLabels {
            priority_level: name.to_string(),
        };
        // One at a time: a family's guard must be gone before it is asked again (a second
        // entry of one family in a single expression would wait for the first's guard).
        let seats = self
            .seat_utilization
            .get_or_create(&level("executing"))
            .clone();
        let waiting = self
            .request_utilization
            .get_or_create(&level("waiting"))
            .clone();
        let executing = self
            .request_utilization
            .get_or_create(&level("executing"))
            .clone();
        let demand = self.demand.get_or_create(&labels).clone();
        LevelRatios {
            seats,
            waiting,
            executing,
            demand,
            fallback,
        }
    }

    /// The progress gauges of the level `name`, registered (and shared by every set that
    /// asks for the same level's).
    pub(crate) fn level_progress(&self, name: &str) -> LevelProgress {
        let level = LevelLabels {
            priority_level: name.to_string(),
        };
        let bound = |bound| BoundLabels {
            priority_level: name.to_string(),
            bound,
        };
        let epoch = |success| EpochLabels {
            priority_level: name.to_string(),
            success,
        };
        // One entry at a time (see `level_ratios`).
        let current_r = self.current_r.get_or_create(&level).clone();
        let dispatch_r = self.dispatch_r.get_or_create(&level).clone();
        let latest_s = self.latest_s.get_or_create(&level).clone();
        let s_min = self.next_s.get_or_create(&bound("min")).clone();
        let s_max = self.next_s.get_or_create(&bound("max")).clone();
        let ds_min = self.next_discounted_s.get_or_create(&bound("min")).clone();
        let ds_max = self.next_discounted_s.get_or_create(&bound("max")).clone();
        let failed = self.epoch_advances.get_or_create(&epoch("false")).clone();
        let succeeded = self.epoch_advances.get_or_create(&epoch("true")).clone();
        LevelProgress {
            current_r,
            dispatch_r,
            latest_s,
            next_s: [s_min, s_max],
            next_discounted_s: [ds_min, ds_max],
            epoch_advances: [failed, succeeded],
        }
    }

    /// Reports the fair fraction of the last allocation.
    pub(crate) fn fair_fraction(&self, fraction: f64) {
        self.fair_fraction.set(fraction);
    }

    /// Adds the metrics to `registry`.
    pub fn register(&self, registry: &mut Registry) {
        let executing_help = "Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem";
        let seats_help = "Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem";
        registry.register(
            "apiserver_flowcontrol_rejected_requests",
            "Number of requests rejected by API Priority and Fairness subsystem",
            self.rejected.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_dispatched_requests",
            "Number of requests executed by API Priority and Fairness subsystem",
            self.dispatched.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_inqueue_requests",
            "Number of requests currently pending in queues of the API Priority and Fairness subsystem",
            self.inqueue_requests.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_inqueue_seats",
            "Number of seats currently pending in queues of the API Priority and Fairness subsystem",
            self.inqueue_seats.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_executing_requests",
            executing_help,
            self.executing_requests.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_executing_seats",
            seats_help,
            self.executing_seats.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_request_wait_duration_seconds",
            "Length of time a request spent waiting in its queue",
            self.wait.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_request_execution_seconds",
            "Duration of initial stage (for a WATCH) or any (for a non-WATCH) stage of request execution in the API Priority and Fairness subsystem",
            self.execution.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_work_estimated_seats",
            "Number of estimated seats (maximum of initial and final seats) associated with requests in API Priority and Fairness",
            self.estimated.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_watch_count_samples",
            "count of watchers for mutating requests in API Priority and Fairness",
            self.watch_counts.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_request_queue_length_after_enqueue",
            "Length of queue in the API Priority and Fairness subsystem, as seen by each request after it is enqueued",
            self.queue_lengths.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_request_dispatch_no_accommodation",
            "Number of times a dispatch attempt resulted in a non accommodation due to lack of available seats",
            self.no_accommodation.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_priority_level_seat_utilization",
            "Observations, at the end of every nanosecond, of utilization of seats for any stage of execution (but only initial stage for WATCHes); denominator is current seat limit or max(1, round(server seat limit/10))",
            self.seat_utilization.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_priority_level_request_utilization",
            "Observations, at the end of every nanosecond, of number of requests waiting or in any stage of execution (but only initial stage for WATCHes); denominator for waiting is max(1, QueueLengthLimit) X max(1, DesiredNumQueues), for executing is current seat limit if that is not zero otherwise max(1, round(server seat limit/10))",
            self.request_utilization.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_read_vs_write_current_requests",
            "Observations, at the end of every nanosecond, of the number of requests (as a fraction of the relevant limit) waiting or in regular stage of execution",
            self.read_vs_write.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_demand_seats",
            "Observations, at the end of every nanosecond, of (the number of seats each priority level could use) / (current seat limit for that level if that is not zero otherwise max(1, round(server seat limit/10.0)))",
            self.demand.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_nominal_limit_seats",
            "Nominal number of execution seats configured for each priority level",
            self.nominal.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_lower_limit_seats",
            "Configured lower bound on number of execution seats available to each priority level",
            self.lower.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_upper_limit_seats",
            "Configured upper bound on number of execution seats available to each priority level",
            self.upper.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_limit_seats",
            "current derived number of execution seats available to each priority level",
            self.current.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_demand_seats_high_watermark",
            "High watermark, over last adjustment period, of demand_seats",
            self.high_watermark.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_demand_seats_average",
            "Time-weighted average, over last adjustment period, of demand_seats",
            self.average.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_demand_seats_stdev",
            "Time-weighted standard deviation, over last adjustment period, of demand_seats",
            self.deviation.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_demand_seats_smoothed",
            "Smoothed seat demands",
            self.smoothed.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_target_seats",
            "Seat allocation targets",
            self.target.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_current_r",
            "R(time of last change)",
            self.current_r.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_dispatch_r",
            "R(time of last dispatch)",
            self.dispatch_r.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_latest_s",
            "S(most recently dispatched request)",
            self.latest_s.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_next_s_bounds",
            "min and max, over queues, of S(oldest waiting request in queue)",
            self.next_s.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_next_discounted_s_bounds",
            "min and max, over queues, of S(oldest waiting request in queue) - estimated work in progress",
            self.next_discounted_s.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_epoch_advance",
            "Number of times the queueset's progress meter jumped backward",
            self.epoch_advances.clone(),
        );
        registry.register(
            "apiserver_flowcontrol_seat_fair_frac",
            "Fair fraction of server's concurrency to allocate to each priority level that can use it",
            self.fair_fraction.clone(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_s_ratios_are_registered_and_shared() {
        let metrics = FlowMetrics::default();
        let first = metrics.level_ratios("l", 60);
        let again = metrics.level_ratios("l", 60);
        first.waiting.set_numerator(2.0);
        again.executing.set_numerator(1.0);
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for family in [
            "apiserver_flowcontrol_priority_level_seat_utilization",
            "apiserver_flowcontrol_priority_level_request_utilization",
            "apiserver_flowcontrol_demand_seats",
            "apiserver_flowcontrol_read_vs_write_current_requests",
        ] {
            assert!(
                text.contains(&format!("# TYPE {family} histogram")),
                "{text}"
            );
        }
        let waiting = r#"apiserver_flowcontrol_priority_level_request_utilization_count{phase="waiting",priority_level="l"}"#;
        assert!(text.contains(waiting), "{text}");
    }
}
