//! One priority level's seats and queues (upstream's `fairqueuing/queueset`).
//!
//! A level has a concurrency limit in seats. An exempt level admits everything at once; a
//! level that rejects admits a request if its seats fit, else refuses it. A queuing level
//! deals each flow (FlowSchema and distinguisher, hashed) a hand of its queues by shuffle
//! sharding, puts the request in the hand's queue with the least waiting work, and refuses
//! it only when every seat is taken and that queue is at its length limit. Waiting requests
//! are dispatched by fair queuing in virtual time: the virtual clock R advances at the rate
//! of the seats the level could use divided among its active queues, each queue's next
//! dispatch is at its last dispatch plus the work it was charged, and the head finishing
//! first in virtual time goes next when its seats fit. A request is charged its seats times
//! an estimated 3 ms when dispatched and its real duration when it finishes.
//!
//! A mutation whose event many watches will see (see `estimate.rs`) keeps its final seats
//! for a while after it finished, as upstream's: dispatched, it holds the larger of its
//! initial and final seats, and is charged its initial seats' estimate plus its final
//! seats' work.
//!
//! One addition to upstream's algorithm: when a request finishes while its queue is empty
//! and other queues wait, its seats are held for its flow for a few milliseconds
//! ([`ANTICIPATION`]), at most an eighth of the level's seats, and only while the flow's
//! next request would start before the head fair queuing picks (the flow's queue is
//! charged for every request, so it cannot keep seats for good). A client that sends its
//! next request as soon as it has an answer
//! (most clients: a controller's workers, a script's loop) is then not pushed out by a
//! flood of wide requests each time it was between two requests: without the hold, a
//! user's GETs in a level full of another user's LISTs ran only when a LIST ended
//! (docs/PERFORMANCE.md, "API Priority and Fairness").
//!
//! Every request that leaves a queue (dispatched, withdrawn when its wait ends or its client
//! goes away) does so under the set's one lock; seats are [`Seats`], given back on drop.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use tokio::sync::oneshot;

use crate::estimate::WorkEstimate;
use crate::metrics::{FlowHandles, LevelProgress, LevelRatios};

/// How long a request is assumed to hold its seats until it finishes (upstream's
/// estimated service duration), in seconds.
const SERVICE_ESTIMATE: f64 = 0.003;
/// How long a finished request's seats wait for its flow's next request when others wait:
/// longer than a busy client takes to answer one response with its next request (on the
/// 2-core machine of the fairness benchmark, 5 ms kept about half of what 20 ms keeps).
pub(crate) const ANTICIPATION: Duration = Duration::from_millis(20);
/// How far R is wound back when it reaches [`HIGH_R`] (upstream's `rDecrement`: half the
/// seat-seconds its fixed-point R can count), and with it every reading taken from it.
const R_DECREMENT: f64 = u64::MAX as f64 / 1e8 / 2.0;
/// The R at which it is wound back (upstream's `highR`).
const HIGH_R: f64 = R_DECREMENT * 1.5;
/// The share of a level's seats that may be held at once (one in eight), which bounds
/// what flows that do not come back cost the others.
const MAX_HELD_SHARE: usize = 8;

/// How a level admits requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Exempt,
    Reject,
    Queue(Queuing),
}

/// A queuing level's queues.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Queuing {
    pub queues: usize,
    pub hand_size: usize,
    pub queue_length_limit: usize,
}

/// Why a request was refused (the `reason` label of upstream's rejected-requests metric).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    QueueFull,
    ConcurrencyLimit,
    TimeOut,
}

impl Refusal {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Refusal::QueueFull => "queue-full",
            Refusal::ConcurrencyLimit => "concurrency-limit",
            Refusal::TimeOut => "time-out",
        }
    }
}

/// What the debug endpoints show of a request, and where its metrics go.
#[derive(Debug)]
pub(crate) struct Described {
    pub flow_schema: String,
    pub distinguisher: String,
    pub user: String,
    pub verb: String,
    pub path: String,
    pub namespace: String,
    pub name: String,
    pub api_version: String,
    pub resource: String,
    pub subresource: String,
    pub handles: Arc<FlowHandles>,
}

impl Described {
    /// Whether the request writes.
    fn mutating(&self) -> bool {
        kapi_apimachinery::request_info::is_mutating_verb(&self.verb)
    }
}

/// One level's seats and queues.
pub(crate) struct QueueSet {
    pub(crate) name: String,
    state: Mutex<State>,
}

struct State {
    /// How the level admits requests; a limited level's queuing changes in place.
    kind: Kind,
    /// The level's timing ratios, kept up to date with its seats and requests.
    ratios: LevelRatios,
    /// The level's progress in virtual time, for its metrics.
    progress: LevelProgress,
    limit: usize,
    seats_in_use: usize,
    waiting: usize,
    waiting_seats: usize,
    queues: Vec<Queue>,
    /// Virtual time, in seat-seconds, and when it was last advanced.
    r: f64,
    r_at: Instant,
    /// The queue dispatched from last.
    robin: usize,
    /// Enqueue attempts, which rotate where in its hand a flow starts looking.
    enqueues: usize,
    next_id: u64,
    executing: HashMap<u64, Executing>,
    dispatched: u64,
    rejected: u64,
    cancelled: u64,
    demand: Demand,
    smoothed: f64,
    /// Seats held for flows whose last request just finished and for the watch events of
    /// finished mutations (see the module documentation), and whether a task is releasing
    /// them as they expire.
    holds: Vec<Hold>,
    releasing: bool,
}

/// Seats held until a moment.
struct Hold {
    held: Held,
    seats: usize,
    until: Instant,
}

/// What seats are held for.
#[derive(Clone, Copy, PartialEq)]
enum Held {
    /// A flow's next request, and the queue its last request ran in (whose virtual time its
    /// next request would start at).
    Flow { flow: u64, queue: usize },
    /// A finished mutation's watch events: no request may use them.
    Events,
}

impl Hold {
    /// The flow the seats wait for, if they do.
    fn flow(&self) -> Option<u64> {
        match self.held {
            Held::Flow { flow, .. } => Some(flow),
            Held::Events => None,
        }
    }
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Waiting>,
    next_dispatch_r: f64,
    executing: usize,
    seats_in_use: usize,
    /// Sums over the waiting requests: work, seats, and initial seats.
    waiting_work: f64,
    waiting_seats: usize,
    waiting_initial: usize,
}

impl Queue {
    /// Takes a request that left the queue out of its sums (exactly zero once it is empty,
    /// so that rounding never makes an empty queue look busier than another).
    fn left(&mut self, waiting: &Waiting) {
        self.waiting_work -= waiting.work();
        self.waiting_seats -= waiting.seats;
        self.waiting_initial -= waiting.estimate.initial;
        if self.waiting.is_empty() {
            self.waiting_work = 0.0;
        }
    }
}

struct Waiting {
    id: u64,
    /// The flow's hash.
    flow: u64,
    /// The seats it needs ([`WorkEstimate::max_seats`]).
    seats: usize,
    estimate: WorkEstimate,
    arrival_r: f64,
    arrived: SystemTime,
    described: Arc<Described>,
    sender: oneshot::Sender<Seats>,
}

impl Waiting {
    fn work(&self) -> f64 {
        work(&self.estimate)
    }
}

/// The seat-seconds a request is charged when dispatched: its initial seats for the
/// estimated service time, its final seats for their time.
fn work(estimate: &WorkEstimate) -> f64 {
    estimate.initial as f64 * SERVICE_ESTIMATE
        + estimate.final_seats as f64 * estimate.additional.as_secs_f64()
}

struct Executing {
    queue: Option<usize>,
    flow: u64,
    seats: usize,
    estimate: WorkEstimate,
    arrived: SystemTime,
    started: SystemTime,
    described: Arc<Described>,
}

/// The seats a request executes in; dropping them gives them back and dispatches what they
/// make room for.
pub(crate) struct Seats {
    set: Option<Arc<QueueSet>>,
    id: u64,
    started: Instant,
}

impl Drop for Seats {
    fn drop(&mut self) {
        if let Some(set) = self.set.take() {
            let mut state = set.state.lock();
            let now = Instant::now();
            state.advance(now);
            let held = state.finish(self.id, now.duration_since(self.started).as_secs_f64());
            state.dispatch(&set, now);
            if held && !state.releasing {
                state.releasing = release_holds(&set);
            }
        }
    }
}

/// Starts the task that dispatches what expiring holds make room for, until none is left;
/// whether it started (not outside a runtime, where nothing is held).
fn release_holds(set: &Arc<QueueSet>) -> bool {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return false;
    };
    /// Says no task releases the holds any more when the task is dropped mid-sleep (its
    /// runtime shutting down); a task that found no hold left has said so under the lock.
    struct Releasing {
        set: Arc<QueueSet>,
        armed: bool,
    }
    impl Releasing {
        /// The task found no hold left and said so under the lock.
        fn disarm(&mut self) {
            self.armed = false;
        }
    }
    impl Drop for Releasing {
        fn drop(&mut self) {
            if self.armed {
                self.set.state.lock().releasing = false;
            }
        }
    }
    let mut releasing = Releasing {
        set: set.clone(),
        armed: true,
    };
    runtime.spawn(async move {
        loop {
            let next = {
                let set = &releasing.set;
                let mut state = set.state.lock();
                let now = Instant::now();
                state.advance(now);
                state.dispatch(set, now);
                let next = state.holds.iter().map(|h| h.until).min();
                state.releasing = next.is_some();
                next
            };
            match next {
                Some(until) => tokio::time::sleep_until(until.into()).await,
                None => {
                    releasing.disarm();
                    return;
                }
            }
        }
    });
    true
}

/// What [`QueueSet::admit`] decided.
pub(crate) enum Admit {
    Now(Seats),
    Queued(Waiter),
    Refused(Refusal),
}

/// A request waiting in a queue; dropping it takes the request out of its queue.
pub(crate) struct Waiter {
    set: Arc<QueueSet>,
    id: u64,
    queue: usize,
    receiver: oneshot::Receiver<Seats>,
    settled: bool,
    /// Called when the waiter is dropped while still queued (its client went away).
    on_cancel: Option<Box<dyn FnOnce() + Send>>,
}

impl Waiter {
    /// Calls `cancelled` if the waiter is dropped while its request is still queued: the
    /// client went away before its wait ended.
    pub(crate) fn on_cancel(&mut self, cancelled: impl FnOnce() + Send + 'static) {
        self.on_cancel = Some(Box::new(cancelled));
    }

    /// Its seats once dispatched, or a time-out refusal at `deadline`.
    pub(crate) async fn wait(mut self, deadline: tokio::time::Instant) -> Result<Seats, Refusal> {
        let waited = tokio::time::timeout_at(deadline, &mut self.receiver).await;
        self.settled = true;
        match waited {
            Ok(Ok(seats)) => Ok(seats),
            _ if self.set.withdraw(self.queue, self.id) => Err(Refusal::TimeOut),
            // Dispatched while the wait ended: the seats are in the channel.
            _ => self.receiver.try_recv().map_err(|_| Refusal::TimeOut),
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if !self.settled
            && self.set.withdraw(self.queue, self.id)
            && let Some(cancelled) = self.on_cancel.take()
        {
            cancelled();
        }
    }
}

/// A level's seat demand over one adjustment period.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Period {
    pub average: f64,
    pub deviation: f64,
    pub max: f64,
    pub smoothed: f64,
}

/// What the debug endpoints and metrics read of a set.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    pub active_queues: usize,
    pub waiting: usize,
    pub executing: usize,
    pub dispatched: u64,
    pub rejected: u64,
    pub cancelled: u64,
    pub queues: Vec<QueueSnapshot>,
    pub requests: Vec<RequestSnapshot>,
}

#[derive(Debug)]
pub(crate) struct QueueSnapshot {
    pub waiting: usize,
    pub executing: usize,
    pub seats_in_use: usize,
    pub next_dispatch_r: f64,
    pub initial_seats: usize,
    pub max_seats: usize,
    pub work: f64,
}

#[derive(Debug)]
pub(crate) struct RequestSnapshot {
    pub queue: Option<usize>,
    /// Its place in its queue; `None` once executing.
    pub index: Option<usize>,
    pub arrived: SystemTime,
    pub started: Option<SystemTime>,
    pub estimate: WorkEstimate,
    pub described: Arc<Described>,
}

impl QueueSet {
    /// A set of `kind` admitting `limit` seats at once.
    pub(crate) fn new(name: &str, kind: Kind, limit: usize) -> Arc<QueueSet> {
        let queues = match kind {
            Kind::Queue(queuing) => (0..queuing.queues).map(|_| Queue::default()).collect(),
            _ => Vec::new(),
        };
        let now = Instant::now();
        Arc::new(QueueSet {
            name: name.to_string(),
            state: Mutex::new(State {
                kind,
                ratios: LevelRatios::default(),
                progress: LevelProgress::default(),
                limit,
                seats_in_use: 0,
                waiting: 0,
                waiting_seats: 0,
                queues,
                r: 0.0,
                r_at: now,
                robin: 0,
                enqueues: 0,
                next_id: 0,
                executing: HashMap::new(),
                dispatched: 0,
                rejected: 0,
                cancelled: 0,
                demand: Demand::new(now),
                smoothed: 0.0,
                holds: Vec::new(),
                releasing: false,
            }),
        })
    }

    /// Admits a request of flow `hash` estimated at `estimate`.
    pub(crate) fn admit(
        self: &Arc<Self>,
        hash: u64,
        estimate: WorkEstimate,
        described: Arc<Described>,
    ) -> Admit {
        let seats = estimate.max_seats();
        let now = Instant::now();
        let mut state = self.state.lock();
        state.advance(now);
        let queuing = match state.kind {
            Kind::Exempt => {
                let now = SystemTime::now();
                return Admit::Now(state.start(self, (None, hash), estimate, now, described));
            }
            Kind::Reject if state.fits(seats, None) => {
                // Upstream times every non-exempt request's wait, none here.
                let now = SystemTime::now();
                described.handles.waited(now);
                return Admit::Now(state.start(self, (None, hash), estimate, now, described));
            }
            Kind::Reject => {
                state.rejected += 1;
                return Admit::Refused(Refusal::ConcurrencyLimit);
            }
            Kind::Queue(queuing) => queuing,
        };
        let index = state.choose_queue(hash, queuing);
        if state.seats_in_use + state.held_seats(None) >= state.limit
            && state.queues[index].waiting.len() >= queuing.queue_length_limit
        {
            state.rejected += 1;
            return Admit::Refused(Refusal::QueueFull);
        }
        let (sender, receiver) = oneshot::channel();
        let id = state.next_id();
        let r = state.r;
        let queue = &mut state.queues[index];
        if queue.waiting.is_empty() && queue.executing == 0 {
            queue.next_dispatch_r = r;
        }
        let waiting = Waiting {
            id,
            flow: hash,
            seats,
            estimate,
            arrival_r: r,
            arrived: SystemTime::now(),
            described,
            sender,
        };
        queue.waiting_work += waiting.work();
        queue.waiting_seats += seats;
        queue.waiting_initial += estimate.initial;
        let mutating = waiting.described.mutating();
        waiting.described.handles.waiting(1, seats, mutating);
        let handles = waiting.described.handles.clone();
        queue.waiting.push_back(waiting);
        handles.enqueued(queue.waiting.len());
        state.waiting += 1;
        state.waiting_seats += seats;
        state.note_demand(now);
        state.dispatch(self, now);
        drop(state);
        let mut waiter = Waiter {
            set: self.clone(),
            id,
            queue: index,
            receiver,
            settled: false,
            on_cancel: None,
        };
        // Dispatched at once (its seats fitted): no wait to pay for.
        match waiter.receiver.try_recv() {
            Ok(seats) => {
                waiter.settled = true;
                Admit::Now(seats)
            }
            Err(_) => Admit::Queued(waiter),
        }
    }

    /// Takes a waiting request out of queue `index`: whether it was still there.
    fn withdraw(self: &Arc<Self>, index: usize, id: u64) -> bool {
        let now = Instant::now();
        let mut state = self.state.lock();
        state.advance(now);
        let queue = &mut state.queues[index];
        let Some(position) = queue.waiting.iter().position(|w| w.id == id) else {
            return false;
        };
        let waiting = queue
            .waiting
            .remove(position)
            .expect("position is in the queue");
        queue.left(&waiting);
        let mutating = waiting.described.mutating();
        waiting
            .described
            .handles
            .waiting(-1, waiting.seats, mutating);
        state.waiting -= 1;
        state.waiting_seats -= waiting.seats;
        state.rejected += 1;
        state.cancelled += 1;
        state.note_demand(now);
        state.dispatch(self, now);
        true
    }

    /// Sets the concurrency limit, dispatching what it makes room for.
    pub(crate) fn set_limit(self: &Arc<Self>, limit: usize) {
        let now = Instant::now();
        let mut state = self.state.lock();
        state.advance(now);
        state.limit = limit;
        state.note_limits();
        state.dispatch(self, now);
    }

    /// The seat demand (seats executing and waiting) since the last call, and the smoothed
    /// demand of the periods so far (upstream's: the larger of this period's average plus
    /// deviation and an exponential average of those).
    pub(crate) fn take_demand(&self) -> Period {
        let mut state = self.state.lock();
        let (average, deviation, max, elapsed) = state.demand.take(Instant::now());
        let envelope = average + deviation;
        if elapsed > 0.0 {
            state.smoothed = envelope.max(0.977 * state.smoothed + 0.023 * envelope);
        }
        Period {
            average,
            deviation,
            max,
            smoothed: state.smoothed,
        }
    }

    /// Reports the level's utilization and demand to `ratios`, and its progress in virtual
    /// time to `progress`, from now on.
    pub(crate) fn report_to(&self, ratios: LevelRatios, progress: LevelProgress) {
        let mut state = self.state.lock();
        state.ratios = ratios;
        progress.current_r.set(state.r);
        state.progress = progress;
        state.note_limits();
        state.note_demand(Instant::now());
    }

    /// How the level admits requests now.
    pub(crate) fn kind(&self) -> Kind {
        self.state.lock().kind
    }

    /// Admits by `kind` from now on, as upstream's queue sets take a new configuration:
    /// what waits stays in its queue and is dispatched as before, queues are added at once
    /// and removed as they empty (from the last), and a level that no longer queues admits
    /// what fits and refuses the rest. Only an exempt level stays exempt, and only a limited
    /// one limited (a change between the two takes a new set).
    pub(crate) fn reconfigure(self: &Arc<Self>, kind: Kind) {
        let mut state = self.state.lock();
        state.kind = kind;
        state.note_limits();
        if let Kind::Queue(queuing) = kind
            && queuing.queues > state.queues.len()
        {
            let more = queuing.queues - state.queues.len();
            state.queues.extend((0..more).map(|_| Queue::default()));
        }
        state.remove_idle_queues();
        let now = Instant::now();
        state.advance(now);
        state.dispatch(self, now);
    }

    /// What the set holds now.
    pub(crate) fn snapshot(&self) -> Snapshot {
        let state = self.state.lock();
        let mut snapshot = Snapshot {
            active_queues: state
                .queues
                .iter()
                .filter(|q| !q.waiting.is_empty())
                .count(),
            waiting: state.waiting,
            executing: state.executing.len(),
            dispatched: state.dispatched,
            rejected: state.rejected,
            cancelled: state.cancelled,
            ..Snapshot::default()
        };
        // Upstream's order: each queue's waiting requests, then its executing ones; then
        // those that run without a queue.
        let mut executing: Vec<_> = state.executing.iter().collect();
        executing.sort_by_key(|(id, e)| (e.queue.is_none(), e.queue, **id));
        let mut executing = executing.into_iter().peekable();
        let running = |running: &Executing| RequestSnapshot {
            queue: running.queue,
            index: None,
            arrived: running.arrived,
            started: Some(running.started),
            estimate: running.estimate,
            described: running.described.clone(),
        };
        for (index, queue) in state.queues.iter().enumerate() {
            snapshot.queues.push(QueueSnapshot {
                waiting: queue.waiting.len(),
                executing: queue.executing,
                seats_in_use: queue.seats_in_use,
                next_dispatch_r: queue.next_dispatch_r,
                initial_seats: queue.waiting_initial,
                max_seats: queue.waiting_seats,
                work: queue.waiting_work,
            });
            for (position, waiting) in queue.waiting.iter().enumerate() {
                snapshot.requests.push(RequestSnapshot {
                    queue: Some(index),
                    index: Some(position),
                    arrived: waiting.arrived,
                    started: None,
                    estimate: waiting.estimate,
                    described: waiting.described.clone(),
                });
            }
            while let Some((_, e)) = executing.next_if(|(_, e)| e.queue == Some(index)) {
                snapshot.requests.push(running(e));
            }
        }
        snapshot.requests.extend(executing.map(|(_, e)| running(e)));
        snapshot
    }
}

impl State {
    /// Removes the last queues while there are more than the configuration wants and they
    /// are idle: nothing waits or runs in them, and no seats are held for their flows.
    fn remove_idle_queues(&mut self) {
        let wanted = match self.kind {
            Kind::Queue(queuing) => queuing.queues,
            _ => 0,
        };
        while self.queues.len() > wanted {
            let last = self.queues.len() - 1;
            let queue = &self.queues[last];
            let held = self
                .holds
                .iter()
                .any(|h| matches!(h.held, Held::Flow { queue, .. } if queue == last));
            if !queue.waiting.is_empty() || queue.executing > 0 || held {
                break;
            }
            self.queues.pop();
            self.robin %= self.queues.len().max(1);
        }
    }

    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// Records the seat demand (executing and waiting) as of `now`.
    fn note_demand(&mut self, now: Instant) {
        let demand = (self.seats_in_use + self.waiting_seats) as f64;
        self.demand.set(now, demand);
        let events = self.event_seats();
        let ratios = &self.ratios;
        ratios
            .seats
            .set_numerator((self.seats_in_use + events) as f64);
        ratios.executing.set_numerator(self.executing.len() as f64);
        ratios.waiting.set_numerator(self.waiting as f64);
        ratios.demand.set_numerator(demand);
    }

    /// Sets the ratios' denominators from the limit and queuing: seats (or the fallback
    /// when the level has none) for what executes, queue capacity for what waits.
    fn note_limits(&mut self) {
        let ratios = &self.ratios;
        let seats = match self.limit {
            0 => ratios.fallback,
            limit => limit,
        } as f64;
        ratios.seats.set_denominator(seats);
        ratios.executing.set_denominator(seats);
        ratios.demand.set_denominator(seats);
        let capacity = match self.kind {
            Kind::Queue(queuing) => queuing.queue_length_limit.max(1) * queuing.queues.max(1),
            _ => 1,
        };
        ratios.waiting.set_denominator(capacity as f64);
    }

    /// Whether `seats` more fit for a request of `flow`, leaving the seats held for other
    /// flows: a request wider than the limit fits only alone.
    fn fits(&self, seats: usize, flow: Option<u64>) -> bool {
        if seats > self.limit {
            return self.executing.is_empty();
        }
        self.seats_in_use + self.held_seats(flow) + seats <= self.limit
    }

    /// The seats held for finished mutations' watch events.
    fn event_seats(&self) -> usize {
        let events = self.holds.iter().filter(|h| h.flow().is_none());
        events.map(|h| h.seats).sum()
    }

    /// The seats held for flows' next requests.
    fn anticipated_seats(&self) -> usize {
        let anticipated = self.holds.iter().filter(|h| h.flow().is_some());
        anticipated.map(|h| h.seats).sum()
    }

    /// The seats held for watch events and for flows other than `flow` (for all, with
    /// `None`).
    fn held_seats(&self, flow: Option<u64>) -> usize {
        let others = self
            .holds
            .iter()
            .filter(|h| h.flow().is_none() || h.flow() != flow);
        others.map(|h| h.seats).sum()
    }

    /// Advances virtual time to `now`.
    fn advance(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.r_at).as_secs_f64();
        self.r_at = now;
        let active = self
            .queues
            .iter()
            .filter(|q| !q.waiting.is_empty() || q.executing > 0)
            .count();
        if active == 0 {
            return;
        }
        let events = self.event_seats();
        let demand = (self.seats_in_use + events + self.waiting_seats).min(self.limit);
        self.r += elapsed * demand as f64 / active as f64;
        if self.r >= HIGH_R {
            self.advance_epoch();
        }
        self.progress.current_r.set(self.r);
    }

    /// Winds R back by [`R_DECREMENT`], and every reading taken from it (the queues' next
    /// dispatches and the waiting requests' arrivals), as upstream does before its
    /// fixed-point R would overflow. An idle queue's next dispatch starts again from zero (it
    /// is raised to R when a request arrives). Counted as failed when a reading was behind
    /// the decrement (upstream's underflow).
    fn advance_epoch(&mut self) {
        self.r -= R_DECREMENT;
        let mut whole = true;
        for queue in &mut self.queues {
            if queue.waiting.is_empty() && queue.executing == 0 {
                queue.next_dispatch_r = 0.0;
                continue;
            }
            whole &= queue.next_dispatch_r >= R_DECREMENT;
            queue.next_dispatch_r -= R_DECREMENT;
            for waiting in &mut queue.waiting {
                whole &= waiting.arrival_r >= R_DECREMENT;
                waiting.arrival_r -= R_DECREMENT;
            }
        }
        tracing::info!(
            r = self.r,
            whole,
            "a priority level's virtual time was wound back"
        );
        self.progress.epoch_advances[usize::from(whole)].inc();
    }

    /// The queue of the hand dealt to flow `hash` with the least waiting work, starting at a
    /// place in the hand that rotates with every enqueue.
    fn choose_queue(&mut self, hash: u64, queuing: Queuing) -> usize {
        let hand = deal(hash, queuing.queues, queuing.hand_size);
        let offset = self.enqueues % hand.len();
        self.enqueues = self.enqueues.wrapping_add(1);
        let mut best = hand[offset];
        for k in 1..hand.len() {
            let candidate = hand[(offset + k) % hand.len()];
            if self.queues[candidate].waiting_work < self.queues[best].waiting_work {
                best = candidate;
            }
        }
        best
    }

    /// Starts a request of flow `hash` in `queue` (none for exempt and rejecting levels).
    fn start(
        &mut self,
        set: &Arc<QueueSet>,
        (queue, flow): (Option<usize>, u64),
        estimate: WorkEstimate,
        arrived: SystemTime,
        described: Arc<Described>,
    ) -> Seats {
        let seats = estimate.max_seats();
        let id = self.next_id();
        self.seats_in_use += seats;
        if let Some(index) = queue {
            self.queues[index].executing += 1;
            self.queues[index].seats_in_use += seats;
        }
        self.dispatched += 1;
        described.handles.executing(1, seats, described.mutating());
        self.executing.insert(
            id,
            Executing {
                queue,
                flow,
                seats,
                estimate,
                arrived,
                started: SystemTime::now(),
                described,
            },
        );
        self.note_demand(Instant::now());
        Seats {
            set: Some(set.clone()),
            id,
            started: Instant::now(),
        }
    }

    /// Ends request `id`, which ran for `duration` seconds: its queue is charged what it
    /// really used instead of the estimate, and its seats are held for its flow when its
    /// queue is empty and others wait. Returns whether they were held.
    fn finish(&mut self, id: u64, duration: f64) -> bool {
        let Some(done) = self.executing.remove(&id) else {
            return false;
        };
        self.seats_in_use -= done.seats;
        let mutating = done.described.mutating();
        done.described.handles.executing(-1, done.seats, mutating);
        done.described
            .handles
            .executed(done.described.verb == "watch", duration);
        // Only a runtime can release a hold.
        let runtime = tokio::runtime::Handle::try_current().is_ok();
        let estimate = done.estimate;
        // A mutation's watch events keep its seats taken for their time; an exempt level
        // limits nothing, so its mutations hold none (upstream's would count them in its
        // demand only: a hold a mutation, each released by a timer, for a figure).
        let exempt = matches!(self.kind, Kind::Exempt);
        let events =
            estimate.final_seats > 0 && !estimate.additional.is_zero() && runtime && !exempt;
        if events {
            self.holds.push(Hold {
                held: Held::Events,
                seats: done.seats,
                until: Instant::now() + estimate.additional,
            });
        }
        let mut held = events;
        if let Some(index) = done.queue {
            let anticipated = self.anticipated_seats();
            let queue = &mut self.queues[index];
            queue.executing -= 1;
            queue.seats_in_use -= done.seats;
            queue.next_dispatch_r += estimate.initial as f64 * (duration - SERVICE_ESTIMATE);
            let idle = queue.waiting.is_empty();
            let room = anticipated + done.seats <= self.limit / MAX_HELD_SHARE;
            // A watch is done with its seats once initialised.
            let returns = done.described.verb != "watch" && runtime && !events;
            if idle && self.waiting > 0 && room && returns {
                self.holds.push(Hold {
                    held: Held::Flow {
                        flow: done.flow,
                        queue: index,
                    },
                    seats: done.seats,
                    until: Instant::now() + ANTICIPATION,
                });
                held = true;
            }
        }
        self.note_demand(Instant::now());
        held
    }

    /// Drops expired holds, and uses up `seats` of those held for `flow`.
    fn use_holds(&mut self, now: Instant, flow: Option<u64>, mut seats: usize) {
        self.holds.retain_mut(|hold| {
            if hold.until <= now {
                return false;
            }
            if hold.flow().is_some() && hold.flow() == flow && seats > 0 {
                let used = hold.seats.min(seats);
                hold.seats -= used;
                seats -= used;
            }
            hold.seats > 0
        });
    }

    /// Dispatches waiting requests while their seats fit, the one finishing first in
    /// virtual time first.
    fn dispatch(&mut self, set: &Arc<QueueSet>, now: Instant) {
        self.use_holds(now, None, 0);
        while self.waiting > 0 {
            let Some((index, finish)) = self.next_queue() else {
                break;
            };
            let head = self.queues[index].waiting.front();
            let head = head.expect("a queue with a waiting head");
            let (seats, flow) = (head.seats, head.flow);
            let handles = head.described.handles.clone();
            self.drop_holds_behind(flow, finish);
            if !self.fits(seats, Some(flow)) {
                // Counted as upstream counts it: seats were free, but too few.
                if self.seats_in_use + self.event_seats() < self.limit {
                    handles.not_accommodated();
                }
                break;
            }
            self.use_holds(now, Some(flow), seats);
            self.note_dispatch(index);
            let queue = &mut self.queues[index];
            let waiting = queue.waiting.pop_front().expect("the head is there");
            queue.left(&waiting);
            queue.next_dispatch_r = queue.next_dispatch_r.max(waiting.arrival_r) + waiting.work();
            let mutating = waiting.described.mutating();
            waiting
                .described
                .handles
                .waiting(-1, waiting.seats, mutating);
            waiting.described.handles.waited(waiting.arrived);
            self.waiting -= 1;
            self.waiting_seats -= waiting.seats;
            self.robin = index;
            let seats = self.start(
                set,
                (Some(index), flow),
                waiting.estimate,
                waiting.arrived,
                waiting.described,
            );
            if let Err(mut seats) = waiting.sender.send(seats) {
                // Its client went away as it was dispatched: give the seats back here,
                // under the lock they would take, and hold none for it.
                seats.set = None;
                self.finish(seats.id, 0.0);
                self.holds.retain(|hold| hold.flow() != Some(flow));
            }
        }
        self.remove_idle_queues();
        self.note_demand(now);
    }

    /// Reports a dispatch from queue `index`: R now, its head's virtual start, and the
    /// bounds of the waiting heads' virtual starts (plain, and less each queue's estimated
    /// work in progress), as upstream reports each dispatch.
    fn note_dispatch(&self, index: usize) {
        let (mut s, mut discounted) = ([f64::MAX, f64::MIN], [f64::MAX, f64::MIN]);
        for queue in &self.queues {
            let Some(head) = queue.waiting.front() else {
                continue;
            };
            let start = queue.next_dispatch_r.max(head.arrival_r);
            let less = start - queue.seats_in_use as f64 * SERVICE_ESTIMATE;
            s = [s[0].min(start), s[1].max(start)];
            discounted = [discounted[0].min(less), discounted[1].max(less)];
        }
        let queue = &self.queues[index];
        let head = queue.waiting.front().expect("the head is there");
        let progress = &self.progress;
        progress.dispatch_r.set(self.r);
        progress
            .latest_s
            .set(queue.next_dispatch_r.max(head.arrival_r));
        for bound in 0..2 {
            progress.next_s[bound].set(s[bound]);
            progress.next_discounted_s[bound].set(discounted[bound]);
        }
    }

    /// Gives up the holds of flows whose next request would come after the one fair
    /// queuing dispatches next (of `flow`, finishing at `finish` in virtual time): a flow
    /// keeps seats only while it is ahead, so it cannot keep them from the others for good
    /// (its queue is charged for every request it runs).
    fn drop_holds_behind(&mut self, flow: u64, finish: f64) {
        let r = self.r;
        let queues = &self.queues;
        self.holds.retain(|hold| match hold.held {
            Held::Flow { flow: held, queue } => {
                let start = queues[queue].next_dispatch_r.max(r);
                held == flow || start + hold.seats as f64 * SERVICE_ESTIMATE <= finish
            }
            Held::Events => true,
        });
    }

    /// The queue whose head finishes first in virtual time, and when, looking from the one
    /// after the last dispatched from (the first seen wins ties).
    fn next_queue(&self) -> Option<(usize, f64)> {
        let count = self.queues.len();
        let mut best: Option<(usize, f64)> = None;
        for k in 1..=count {
            let index = (self.robin + k) % count;
            let queue = &self.queues[index];
            let Some(head) = queue.waiting.front() else {
                continue;
            };
            let finish = queue.next_dispatch_r.max(head.arrival_r) + head.work();
            if best.is_none_or(|(_, earliest)| finish < earliest) {
                best = Some((index, finish));
            }
        }
        best
    }
}

/// Shuffle sharding (upstream's `shufflesharding.Dealer`): the `hand` distinct queues of
/// `deck` that `hash` picks, as digits of the hash in a shrinking base.
fn deal(mut hash: u64, deck: usize, hand: usize) -> Vec<usize> {
    let hand = hand.clamp(1, deck.max(1));
    let mut remainders = Vec::with_capacity(hand);
    for i in 0..hand {
        let base = (deck - i) as u64;
        remainders.push((hash % base) as usize);
        hash /= base;
    }
    (0..hand)
        .map(|i| {
            let mut card = remainders[i];
            for j in (1..=i).rev() {
                if card >= remainders[j - 1] {
                    card += 1;
                }
            }
            card
        })
        .collect()
}

/// The time-weighted statistics of a level's seat demand, for borrowing.
struct Demand {
    at: Instant,
    value: f64,
    duration: f64,
    sum: f64,
    sum_of_squares: f64,
    max: f64,
}

impl Demand {
    fn new(now: Instant) -> Demand {
        Demand {
            at: now,
            value: 0.0,
            duration: 0.0,
            sum: 0.0,
            sum_of_squares: 0.0,
            max: 0.0,
        }
    }

    fn set(&mut self, now: Instant, value: f64) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.duration += elapsed;
        self.sum += self.value * elapsed;
        self.sum_of_squares += self.value * self.value * elapsed;
        self.at = now;
        self.value = value;
        self.max = self.max.max(value);
    }

    /// Average, standard deviation and maximum since the last call, and the seconds it
    /// covers.
    fn take(&mut self, now: Instant) -> (f64, f64, f64, f64) {
        self.set(now, self.value);
        let (average, deviation) = match self.duration > 0.0 {
            true => {
                let average = self.sum / self.duration;
                let variance = self.sum_of_squares / self.duration - average * average;
                (average, variance.max(0.0).sqrt())
            }
            false => (self.value, 0.0),
        };
        let (max, elapsed) = (self.max, self.duration);
        *self = Demand {
            max: self.value,
            value: self.value,
            ..Demand::new(now)
        };
        (average, deviation, max, elapsed)
    }
}

#[cfg(test)]
mod tests;
