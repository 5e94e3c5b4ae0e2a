//! The queue set's tests: admission, fair dispatch, holds, final seats, reconfiguration.

use super::*;

fn described(flow: &str) -> Arc<Described> {
    Arc::new(Described {
        flow_schema: flow.into(),
        distinguisher: String::new(),
        user: String::new(),
        verb: "get".into(),
        path: "/".into(),
        namespace: String::new(),
        name: String::new(),
        api_version: String::new(),
        resource: String::new(),
        subresource: String::new(),
        handles: Arc::new(FlowHandles::default()),
    })
}

const QUEUING: Queuing = Queuing {
    queues: 8,
    hand_size: 2,
    queue_length_limit: 2,
};

#[test]
fn hands_are_distinct_queues_as_upstream_deals_them() {
    // Upstream's dealer on hash 0 with a deck of 8 and a hand of 3 picks 0, 1, 2.
    assert_eq!(deal(0, 8, 3), vec![0, 1, 2]);
    for hash in [1, 77, u64::MAX, 0x1234_5678_9abc_def0] {
        let mut hand = deal(hash, 128, 6);
        assert!(hand.iter().all(|&c| c < 128));
        hand.sort_unstable();
        hand.dedup();
        assert_eq!(hand.len(), 6, "{hash}");
    }
    // hash 13 in a deck of 4: 13 % 4 = 1, then 3 % 3 = 0 -> card 0 (below 1).
    assert_eq!(deal(13, 4, 2), vec![1, 0]);
}

#[tokio::test]
async fn a_full_level_queues_then_refuses_and_dispatches_in_turn() {
    let set = QueueSet::new("l", Kind::Queue(QUEUING), 1);
    let Admit::Now(running) = set.admit(1, WorkEstimate::seats(1), described("a")) else {
        panic!("the first runs at once");
    };
    // The seat is taken: one flow fills its two queues of two, then is refused.
    let waiters: Vec<_> = (0..4)
        .map(
            |_| match set.admit(1, WorkEstimate::seats(1), described("a")) {
                Admit::Queued(w) => w,
                _ => panic!("queued"),
            },
        )
        .collect();
    assert!(matches!(
        set.admit(1, WorkEstimate::seats(1), described("a")),
        Admit::Refused(Refusal::QueueFull)
    ));
    // Another flow still queues.
    let other = match set.admit(99, WorkEstimate::seats(1), described("b")) {
        Admit::Queued(w) => w,
        _ => panic!("another flow queues"),
    };
    assert_eq!(set.snapshot().waiting, 5);
    // Each waiter notes when it runs, and runs for 20 ms (as the first did).
    let order = Arc::new(Mutex::new(Vec::new()));
    let far = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    let mut tasks = Vec::new();
    for (flow, waiter) in std::iter::once(("b", other)).chain(waiters.into_iter().map(|w| ("a", w)))
    {
        let order = order.clone();
        tasks.push(tokio::spawn(async move {
            let seats = waiter.wait(far).await.expect("dispatched in turn");
            order.lock().push(flow);
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            drop(seats);
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    drop(running);
    for task in tasks {
        task.await.unwrap();
    }
    // Fair queuing: the other flow's request, alone in its queue, does not wait for
    // all of the first flow's.
    let order = order.lock().clone();
    assert_eq!(order.len(), 5);
    let b = order.iter().position(|f| *f == "b").unwrap();
    assert!(b < 2, "{order:?}");
    let snapshot = set.snapshot();
    assert_eq!((snapshot.waiting, snapshot.executing), (0, 0));
    assert_eq!(snapshot.dispatched, 6);
    assert_eq!(snapshot.rejected, 1);
}

#[test]
fn only_free_seats_too_few_for_the_head_count_as_no_accommodation() {
    // All seats taken: the queued head is not counted, as upstream does not count it.
    let full = QueueSet::new("l", Kind::Queue(QUEUING), 1);
    let Admit::Now(_running) = full.admit(1, WorkEstimate::seats(1), described("a")) else {
        panic!("the first runs at once");
    };
    let queued = described("b");
    let Admit::Queued(_waiter) = full.admit(2, WorkEstimate::seats(1), queued.clone()) else {
        panic!("the second queues");
    };
    assert_eq!(queued.handles.unaccommodated(), 0);
    // One of two seats free, the head needs two: counted.
    let wide = QueueSet::new("l", Kind::Queue(QUEUING), 2);
    let Admit::Now(_running) = wide.admit(1, WorkEstimate::seats(1), described("a")) else {
        panic!("the first runs at once");
    };
    let queued = described("b");
    let Admit::Queued(_waiter) = wide.admit(2, WorkEstimate::seats(2), queued.clone()) else {
        panic!("the wide one queues");
    };
    assert_eq!(queued.handles.unaccommodated(), 1);
}

#[tokio::test]
async fn a_wait_that_ends_withdraws_the_request() {
    let set = QueueSet::new("l", Kind::Queue(QUEUING), 1);
    let Admit::Now(_running) = set.admit(1, WorkEstimate::seats(1), described("a")) else {
        panic!("the first runs at once");
    };
    let Admit::Queued(second) = set.admit(1, WorkEstimate::seats(1), described("a")) else {
        panic!("queued");
    };
    let soon = tokio::time::Instant::now() + std::time::Duration::from_millis(10);
    assert_eq!(second.wait(soon).await.err(), Some(Refusal::TimeOut));
    // Whether a queued request's client is noted gone when its waiter is dropped.
    let noted_gone = |waiter: &mut Waiter| {
        let gone = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let noted = gone.clone();
        waiter.on_cancel(move || noted.store(true, std::sync::atomic::Ordering::SeqCst));
        move || gone.load(std::sync::atomic::Ordering::SeqCst)
    };
    let Admit::Queued(mut third) = set.admit(1, WorkEstimate::seats(1), described("a")) else {
        panic!("queued");
    };
    let third_gone = noted_gone(&mut third);
    drop(third);
    assert!(third_gone());
    let snapshot = set.snapshot();
    assert_eq!((snapshot.waiting, snapshot.cancelled), (0, 2));
    // One dispatched before its client went away was not cancelled.
    let Admit::Queued(mut fourth) = set.admit(1, WorkEstimate::seats(1), described("a")) else {
        panic!("queued");
    };
    let fourth_gone = noted_gone(&mut fourth);
    drop(_running);
    tokio::task::yield_now().await;
    drop(fourth);
    assert!(!fourth_gone());
}

#[tokio::test]
async fn a_flow_between_two_requests_keeps_its_seat_for_a_moment() {
    let set = QueueSet::new("l", Kind::Queue(QUEUING), 8);
    // Flow b runs one request; flow a waits with one of all eight seats.
    let Admit::Now(b) = set.admit(99, WorkEstimate::seats(1), described("b")) else {
        panic!("b runs");
    };
    let Admit::Queued(wide) = set.admit(1, WorkEstimate::seats(8), described("a")) else {
        panic!("the wide one waits");
    };
    // b's request ends while a's waits: b's seat is held, so a's cannot start yet...
    drop(b);
    assert_eq!(set.snapshot().waiting, 1);
    // ...and b's next request, coming at once, takes it.
    let Admit::Now(b) = set.admit(99, WorkEstimate::seats(1), described("b")) else {
        panic!("b's next request runs in its held seat");
    };
    drop(b);
    // Once b stops asking, the hold expires and a's wide request runs.
    let soon = tokio::time::Instant::now() + 10 * ANTICIPATION;
    assert!(wide.wait(soon).await.is_ok());
}

#[tokio::test]
async fn a_flow_keeps_held_seats_only_while_it_is_ahead_in_virtual_time() {
    let set = QueueSet::new("l", Kind::Queue(QUEUING), 8);
    let Admit::Now(mut b) = set.admit(99, WorkEstimate::seats(1), described("b")) else {
        panic!("b runs");
    };
    let Admit::Queued(wide) = set.admit(1, WorkEstimate::seats(8), described("a")) else {
        panic!("the wide one waits");
    };
    let far = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    let wide = tokio::spawn(async move { wide.wait(far).await.map(drop) });
    // b asks again at once each time, each request running 5 ms: its queue is charged
    // for them, and once it is behind a's request its seat is no longer held.
    for _ in 0..100 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        drop(b);
        if wide.is_finished() {
            break;
        }
        b = match set.admit(99, WorkEstimate::seats(1), described("b")) {
            Admit::Now(seats) => seats,
            Admit::Queued(waiter) => waiter.wait(far).await.expect("b runs after a"),
            Admit::Refused(_) => panic!("b is not refused"),
        };
    }
    assert!(
        wide.await.unwrap().is_ok(),
        "a's request ran while b kept asking"
    );
}

#[tokio::test]
async fn a_mutation_keeps_its_final_seats_for_its_watch_events() {
    let set = QueueSet::new("l", Kind::Reject, 8);
    let mutation = WorkEstimate {
        initial: 1,
        final_seats: 4,
        additional: Duration::from_millis(200),
    };
    let Admit::Now(running) = set.admit(1, mutation, described("a")) else {
        panic!("the mutation runs");
    };
    // Running, it holds its final seats already: five more do not fit.
    assert!(matches!(
        set.admit(2, WorkEstimate::seats(5), described("b")),
        Admit::Refused(_)
    ));
    // Finished, its four seats stay taken for its events' time...
    drop(running);
    assert!(matches!(
        set.admit(2, WorkEstimate::seats(5), described("b")),
        Admit::Refused(_)
    ));
    let Admit::Now(four) = set.admit(2, WorkEstimate::seats(4), described("b")) else {
        panic!("four seats are free");
    };
    drop(four);
    // ...and then are free.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(matches!(
        set.admit(2, WorkEstimate::seats(8), described("b")),
        Admit::Now(_)
    ));
}

#[tokio::test]
async fn a_changed_level_keeps_what_waits_and_takes_its_new_queuing() {
    let set = QueueSet::new("l", Kind::Queue(QUEUING), 1);
    let Admit::Now(running) = set.admit(1, WorkEstimate::seats(1), described("a")) else {
        panic!("a runs");
    };
    let Admit::Queued(waiting) = set.admit(2, WorkEstimate::seats(1), described("b")) else {
        panic!("b waits");
    };
    // Fewer queues, then none: b stays where it waits; new requests are refused now
    // that the level rejects what does not fit.
    let one = Queuing {
        queues: 1,
        hand_size: 1,
        queue_length_limit: 1,
    };
    set.reconfigure(Kind::Queue(one));
    assert_eq!(set.snapshot().waiting, 1);
    set.reconfigure(Kind::Reject);
    assert!(matches!(
        set.admit(3, WorkEstimate::seats(1), described("c")),
        Admit::Refused(_)
    ));
    // The freed seat goes to b; once it is done, the queues no one wants are gone.
    drop(running);
    let soon = tokio::time::Instant::now() + Duration::from_secs(1);
    let b = waiting.wait(soon).await.expect("b runs after a");
    assert_eq!(set.snapshot().executing, 1);
    drop(b);
    assert!(set.snapshot().queues.is_empty());
    // Queuing again: its queues are there at once.
    set.reconfigure(Kind::Queue(QUEUING));
    assert_eq!(set.snapshot().queues.len(), QUEUING.queues);
    assert_eq!(set.kind(), Kind::Queue(QUEUING));
}

#[test]
fn rejecting_and_exempt_levels_never_queue() {
    let reject = QueueSet::new("r", Kind::Reject, 2);
    let wide = reject.admit(0, WorkEstimate::seats(5), described("a"));
    assert!(matches!(wide, Admit::Now(_)), "a wide request runs alone");
    assert!(matches!(
        reject.admit(0, WorkEstimate::seats(1), described("a")),
        Admit::Refused(Refusal::ConcurrencyLimit)
    ));
    drop(wide);
    let exempt = QueueSet::new("e", Kind::Exempt, 0);
    let held: Vec<_> = (0..10)
        .map(|_| exempt.admit(0, WorkEstimate::seats(1), described("a")))
        .collect();
    assert!(held.iter().all(|a| matches!(a, Admit::Now(_))));
}

#[test]
fn demand_is_time_weighted() {
    let start = Instant::now();
    let mut demand = Demand::new(start);
    demand.set(start, 4.0);
    let later = start + std::time::Duration::from_secs(1);
    demand.set(later, 0.0);
    let (average, deviation, max, elapsed) = demand.take(later + std::time::Duration::from_secs(1));
    assert_eq!(elapsed, 2.0);
    assert!((average - 2.0).abs() < 1e-9);
    assert!((deviation - 2.0).abs() < 1e-9);
    assert_eq!(max, 4.0);
}

#[tokio::test]
async fn dispatches_report_virtual_time_as_upstream() {
    let set = QueueSet::new("l", Kind::Queue(QUEUING), 1);
    let progress = LevelProgress::default();
    set.report_to(LevelRatios::default(), progress.clone());
    let Admit::Now(running) = set.admit(1, WorkEstimate::seats(1), described("a")) else {
        panic!("the first runs at once");
    };
    let waiters: Vec<_> = [2, 99]
        .into_iter()
        .map(
            |flow| match set.admit(flow, WorkEstimate::seats(1), described("a")) {
                Admit::Queued(w) => w,
                _ => panic!("queued"),
            },
        )
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    drop(running);
    // R advanced while the first ran; the next request's dispatch is reported.
    let (r, dispatch_r) = (progress.current_r.get(), progress.dispatch_r.get());
    assert!(
        r > 0.0 && dispatch_r > 0.0 && dispatch_r <= r,
        "{r} {dispatch_r}"
    );
    let [s_min, s_max] = progress.next_s.clone().map(|g| g.get());
    assert!(s_min <= s_max, "{s_min} {s_max}");
    assert!(progress.latest_s.get() >= s_min);
    let [d_min, d_max] = progress.next_discounted_s.clone().map(|g| g.get());
    assert!(d_min <= s_min && d_max <= s_max, "{d_min} {d_max}");
    let far = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
    for waiter in waiters {
        drop(waiter.wait(far).await.expect("dispatched"));
    }
    assert_eq!(progress.epoch_advances.clone().map(|c| c.get()), [0, 0]);
}

#[test]
fn virtual_time_is_wound_back_before_it_grows_too_large() {
    let set = QueueSet::new("l", Kind::Queue(QUEUING), 1);
    let progress = LevelProgress::default();
    set.report_to(LevelRatios::default(), progress.clone());
    let Admit::Now(running) = set.admit(1, WorkEstimate::seats(1), described("a")) else {
        panic!("the first runs at once");
    };
    let waiter = match set.admit(2, WorkEstimate::seats(1), described("a")) {
        Admit::Queued(w) => w,
        _ => panic!("queued"),
    };
    {
        let mut state = set.state.lock();
        state.r = HIGH_R;
        for queue in &mut state.queues {
            queue.next_dispatch_r += HIGH_R;
            for waiting in &mut queue.waiting {
                waiting.arrival_r += HIGH_R;
            }
        }
        state.advance(Instant::now());
        assert!(state.r < HIGH_R - R_DECREMENT / 2.0, "{}", state.r);
        let busy = state
            .queues
            .iter()
            .filter(|q| !q.waiting.is_empty() || q.executing > 0);
        for queue in busy {
            assert!(queue.next_dispatch_r >= 0.0 && queue.next_dispatch_r < R_DECREMENT);
        }
    }
    assert_eq!(progress.epoch_advances.clone().map(|c| c.get()), [0, 1]);
    assert!(progress.current_r.get() < R_DECREMENT);
    drop(waiter);
    drop(running);
}

#[test]
fn dump_requests_shows_estimates_queue_by_queue_as_upstream() {
    let set = QueueSet::new("l", Kind::Queue(QUEUING), 1);
    let watched = WorkEstimate {
        initial: 1,
        final_seats: 2,
        additional: std::time::Duration::from_millis(5),
    };
    let Admit::Now(_running) = set.admit(1, watched, described("a")) else {
        panic!("the first runs at once");
    };
    let waiters: Vec<_> = (2..6)
        .map(|hash| set.admit(hash, WorkEstimate::seats(1), described("b")))
        .collect();
    assert!(waiters.iter().all(|w| matches!(w, Admit::Queued(_))));
    let dump = crate::dump::requests(&[&set], false);
    let rows: Vec<Vec<&str>> = dump
        .lines()
        .skip(1)
        .map(|line| line.split(',').map(str::trim).collect())
        .collect();
    assert_eq!(rows.len(), 5, "{dump}");
    let running = rows
        .iter()
        .find(|row| row[3] == "-1")
        .expect("the running row");
    assert_eq!(running[6..9], ["1", "2", "5ms"], "{dump}");
    // Queue by queue: its waiting requests in order, then its executing ones.
    let order: Vec<(i64, i64)> = rows
        .iter()
        .map(|row| (row[2].parse().unwrap(), row[3].parse().unwrap()))
        .collect();
    let mut sorted = order.clone();
    sorted.sort_by_key(|&(queue, index)| (queue, index < 0, index));
    assert_eq!(order, sorted, "{dump}");
}
