//! The watch cache's window of recent events, sized as upstream's watch cache sizes its
//! event buffer: it keeps at least [`FRESH`] of history (so that a watch resumed from a
//! bookmark, sent every minute, finds its events) and at least [`LOWER`] events, and no
//! more than that once events slow down. Its capacity doubles, up to [`UPPER`], when it is
//! full of events younger than [`FRESH`], and halves when even its newest quarter is older:
//! an idle collection whose few objects change now and then (leases renewed every few
//! seconds) keeps a hundred events, not the thousands a fixed window would fill over hours.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kapi_storage::Revision;

use super::CacheEvent;

/// The history every window keeps at least (upstream's `DefaultEventsHistoryWindow`: a
/// bookmark's minute plus a margin).
const FRESH: Duration = Duration::from_secs(75);
/// The fewest events a window holds (upstream's `defaultLowerBoundCapacity`).
const LOWER: usize = 100;
/// The most events a window holds (upstream's `defaultUpperBoundCapacity`).
const UPPER: usize = 100 * 1024;

/// Recent events, oldest first, and when the cache received each.
pub(super) struct EventWindow {
    events: VecDeque<Arc<CacheEvent>>,
    /// When each event came, in seconds since `origin`: four bytes an event (a window may
    /// hold one event per stored object).
    received: VecDeque<u32>,
    origin: Instant,
    capacity: usize,
    /// Every event after this revision is in the window.
    start: Revision,
}

impl EventWindow {
    /// An empty window of everything after `revision`.
    pub(super) fn new(revision: Revision) -> Self {
        EventWindow {
            events: VecDeque::new(),
            received: VecDeque::new(),
            origin: Instant::now(),
            capacity: LOWER,
            start: revision,
        }
    }

    /// Every event after this revision is in the window.
    pub(super) fn start(&self) -> Revision {
        self.start
    }

    /// The events, oldest first.
    pub(super) fn events(&self) -> impl Iterator<Item = &Arc<CacheEvent>> {
        self.events.iter()
    }

    /// Adds `event`, received `now`, resizing the window first as upstream's
    /// `resizeCacheLocked` does, and dropping the oldest events beyond its capacity.
    pub(super) fn push(&mut self, event: Arc<CacheEvent>, now: Instant) {
        let now =
            u32::try_from(now.saturating_duration_since(self.origin).as_secs()).unwrap_or(u32::MAX);
        let fresh = FRESH.as_secs() as u32;
        if self.events.len() >= self.capacity {
            let age = |index: usize| now.saturating_sub(self.received[index]);
            if age(0) < fresh {
                self.capacity = (self.capacity * 2).min(UPPER);
            } else if age(self.events.len() - self.capacity / 4) > fresh {
                self.capacity = (self.capacity / 2).max(LOWER);
            }
        }
        while self.events.len() >= self.capacity {
            let Some(dropped) = self.events.pop_front() else {
                break;
            };
            self.received.pop_front();
            self.start = dropped.revision();
        }
        self.events.push_back(event);
        self.received.push_back(now);
        // A window that shrank gives its memory back.
        if self.events.capacity() > 2 * self.capacity {
            self.events.shrink_to(self.capacity);
            self.received.shrink_to(self.capacity);
        }
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;
    use crate::cacher::{CachedObject, EventType};

    fn event(revision: Revision) -> Arc<CacheEvent> {
        Arc::new(CacheEvent {
            type_: EventType::Modified,
            object: Arc::new(CachedObject {
                key: "/leases/l".into(),
                stored: Bytes::new(),
                revision,
                names: "l".into(),
                name_at: 0,
                labels: Default::default(),
                fields: None,
                encodings: Default::default(),
            }),
            prev: None,
        })
    }

    /// Pushes `count` events one `every` apart from `at`, from revision `from`; returns the
    /// instant after the last.
    fn push(
        window: &mut EventWindow,
        from: Revision,
        count: usize,
        at: Instant,
        every: Duration,
    ) -> Instant {
        let mut now = at;
        for i in 0..count {
            window.push(event(from + i as Revision), now);
            now += every;
        }
        now
    }

    #[test]
    fn a_slow_collection_keeps_a_hundred_events() {
        // A lease renewed every 2 s for a day: the window stays at its lower bound.
        let mut window = EventWindow::new(0);
        push(
            &mut window,
            1,
            43_200,
            Instant::now(),
            Duration::from_secs(2),
        );
        assert_eq!(window.events().count(), LOWER);
        assert_eq!(window.start(), 43_200 - LOWER as Revision);
        assert!(window.events.capacity() <= 2 * LOWER);
    }

    #[test]
    fn a_burst_is_kept_while_fresh_and_given_back_once_stale() {
        let mut window = EventWindow::new(5);
        let start = Instant::now();
        // 10,000 events in 10 s: all are younger than FRESH, all are kept.
        let now = push(&mut window, 6, 10_000, start, Duration::from_millis(1));
        assert_eq!(window.events().count(), 10_000);
        assert_eq!(window.start(), 5);
        // Events a minute apart afterwards: once they fill the window (grown to 12,800),
        // it halves at each while its newest quarter is stale, down to its lower bound.
        let minute = Duration::from_secs(60);
        let later = push(&mut window, 10_006, 2_700, now + FRESH, minute);
        assert_eq!(window.events().count(), 12_700);
        push(&mut window, 12_706, 200, later, minute);
        assert_eq!(window.events().count(), LOWER);
        assert_eq!(window.start(), 12_905 - LOWER as Revision);
        assert!(window.events.capacity() <= 2 * LOWER);
        // Never more than the upper bound, however fast.
        let mut fast = EventWindow::new(0);
        push(&mut fast, 1, UPPER + 5_000, start, Duration::from_micros(1));
        assert_eq!(fast.events().count(), UPPER);
        assert_eq!(fast.start(), 5_000);
    }
}
