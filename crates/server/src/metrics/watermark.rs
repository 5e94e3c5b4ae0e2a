//! Upstream's request watermarks: `apiserver_current_inflight_requests` and
//! `apiserver_current_inqueue_requests`, by request kind (readOnly, mutating), each the
//! most requests executing (or waiting in a flow-control queue) at once during the last
//! complete second. Both the max-in-flight filter and API Priority and Fairness report to
//! them, as upstream's do.
//!
//! Upstream rolls its windows with a ticker every second; here a window is rolled by the
//! first update or scrape after it ends, so that an idle server does not wake up for it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;

/// A window's length.
const WINDOW: Duration = Duration::from_secs(1);

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabels {
    request_kind: &'static str,
}

/// The watermarks of one phase (executing, or waiting), for read-only and mutating
/// requests; clones share them.
#[derive(Clone, Debug)]
pub struct Watermarks {
    kinds: Arc<[Mutex<Mark>; 2]>,
}

/// One kind's count and its highs.
#[derive(Debug)]
struct Mark {
    current: i64,
    /// When the current window started, and its highest count so far.
    window_start: Instant,
    window_high: i64,
    /// The highest count of the last complete window.
    reported: i64,
}

impl Mark {
    /// Ends the window if it is over: its high is reported, and a window that passed
    /// without a change reports the count it kept throughout.
    fn roll(&mut self, now: Instant) {
        let since = now.saturating_duration_since(self.window_start);
        if since < WINDOW {
            return;
        }
        self.reported = if since < 2 * WINDOW {
            self.window_high
        } else {
            self.current
        };
        self.window_start = now;
        self.window_high = self.current;
    }
}

impl Default for Watermarks {
    fn default() -> Self {
        let mark = || {
            Mutex::new(Mark {
                current: 0,
                window_start: Instant::now(),
                window_high: 0,
                reported: 0,
            })
        };
        Watermarks {
            kinds: Arc::new([mark(), mark()]),
        }
    }
}

/// A request counted in a phase until dropped.
#[derive(Debug)]
pub struct Counted {
    marks: Watermarks,
    mutating: bool,
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.marks.add(self.mutating, -1);
    }
}

impl Watermarks {
    /// Counts a request (`mutating`, or read-only) in the phase until the result drops.
    pub fn count(&self, mutating: bool) -> Counted {
        self.add(mutating, 1);
        Counted {
            marks: self.clone(),
            mutating,
        }
    }

    fn add(&self, mutating: bool, delta: i64) {
        let mut mark = self.kinds[usize::from(mutating)].lock();
        mark.roll(Instant::now());
        mark.current += delta;
        mark.window_high = mark.window_high.max(mark.current);
    }

    /// The high of the last complete window, for each kind: read-only, mutating.
    fn reported(&self) -> [i64; 2] {
        let now = Instant::now();
        self.kinds.each_ref().map(|mark| {
            let mut mark = mark.lock();
            mark.roll(now);
            mark.reported
        })
    }
}

impl EncodeMetric for Watermarks {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let [read_only, mutating] = self.reported();
        for (request_kind, value) in [("readOnly", read_only), ("mutating", mutating)] {
            encoder
                .encode_family(&KindLabels { request_kind })?
                .encode_gauge(&value)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reports_its_highest_count_once_complete() {
        let marks = Watermarks::default();
        let start = Instant::now();
        let first = marks.count(false);
        let second = marks.count(false);
        drop(second);
        let _writing = marks.count(true);
        // Nothing is complete yet: the first window reports nothing.
        assert_eq!(marks.reported(), [0, 0]);
        let roll = |at: Instant| {
            for mark in marks.kinds.iter() {
                mark.lock().roll(at);
            }
        };
        roll(start + WINDOW + Duration::from_millis(1));
        assert_eq!(marks.reported(), [2, 1], "the window's highs");
        roll(start + 3 * WINDOW);
        assert_eq!(
            marks.reported(),
            [1, 1],
            "a window without a change: its count"
        );
        drop(first);
        roll(start + 4 * WINDOW + Duration::from_millis(500));
        assert_eq!(
            marks.reported(),
            [1, 1],
            "the high of a window that ended at 0"
        );
        roll(start + 6 * WINDOW);
        assert_eq!(marks.reported(), [0, 1]);
    }
}
