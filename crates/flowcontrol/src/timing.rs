//! Upstream's timing ratio histograms (component-base's `TimingHistogram` under
//! apiserver's `TimingRatioHistogram`): a ratio that changes over time, observed "at the end
//! of every nanosecond". Each change weighs the value it ends by the nanoseconds it lasted,
//! so the histogram's count is the nanoseconds observed, its sum the integral of the ratio
//! over them, and each bucket the nanoseconds the ratio spent at or below its bound.

use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder, NoLabelSet};
use prometheus_client::metrics::{MetricType, TypedMetric};

/// One ratio's time-weighted histogram; clones share it.
#[derive(Clone, Debug)]
pub(crate) struct TimingRatio {
    bounds: &'static [f64],
    state: Arc<Mutex<State>>,
}

#[derive(Debug)]
struct State {
    numerator: f64,
    denominator: f64,
    /// When the ratio took its present value.
    since: Instant,
    /// Nanoseconds per bucket (the last one unbounded), their total, and the weighted sum.
    buckets: Vec<u64>,
    count: u64,
    sum: f64,
}

impl TimingRatio {
    /// A ratio of 0/1 from now on, in buckets bounded by `bounds` (ascending).
    pub(crate) fn new(bounds: &'static [f64]) -> TimingRatio {
        TimingRatio {
            bounds,
            state: Arc::new(Mutex::new(State {
                numerator: 0.0,
                denominator: 1.0,
                since: Instant::now(),
                buckets: vec![0; bounds.len() + 1],
                count: 0,
                sum: 0.0,
            })),
        }
    }

    /// The ratio's numerator from now on.
    pub(crate) fn set_numerator(&self, numerator: f64) {
        let mut state = self.state.lock();
        self.observe(&mut state);
        state.numerator = numerator;
    }

    /// Adds `delta` to the ratio's numerator from now on.
    pub(crate) fn add_numerator(&self, delta: f64) {
        let mut state = self.state.lock();
        self.observe(&mut state);
        state.numerator += delta;
    }

    /// The ratio's denominator from now on (a zero one counts as one).
    pub(crate) fn set_denominator(&self, denominator: f64) {
        let mut state = self.state.lock();
        self.observe(&mut state);
        state.denominator = if denominator > 0.0 { denominator } else { 1.0 };
    }

    /// Weighs the present value by the nanoseconds since it was set.
    fn observe(&self, state: &mut State) {
        let now = Instant::now();
        let weight = now.saturating_duration_since(state.since).as_nanos();
        let weight = u64::try_from(weight).unwrap_or(u64::MAX);
        if weight == 0 {
            return;
        }
        state.since = now;
        let ratio = state.numerator / state.denominator;
        let bucket = self.bounds.partition_point(|bound| *bound < ratio);
        state.buckets[bucket] = state.buckets[bucket].saturating_add(weight);
        state.count = state.count.saturating_add(weight);
        state.sum += ratio * weight as f64;
    }
}

impl TypedMetric for TimingRatio {
    const TYPE: MetricType = MetricType::Histogram;
}

impl EncodeMetric for TimingRatio {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let mut state = self.state.lock();
        self.observe(&mut state);
        let bounds = self.bounds.iter().copied().chain(std::iter::once(f64::MAX));
        let buckets: Vec<(f64, u64)> = bounds.zip(state.buckets.iter().copied()).collect();
        encoder.encode_histogram::<NoLabelSet>(state.sum, state.count, &buckets, None)
    }

    fn metric_type(&self) -> MetricType {
        Self::TYPE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_weighed_by_how_long_they_last() {
        let ratio = TimingRatio::new(&[0.5, 1.0]);
        ratio.set_denominator(4.0);
        ratio.set_numerator(1.0);
        std::thread::sleep(std::time::Duration::from_millis(20));
        ratio.set_numerator(3.0);
        std::thread::sleep(std::time::Duration::from_millis(20));
        ratio.set_numerator(8.0);
        let state = ratio.state.lock();
        // 0.25 for ~20 ms, 0.75 for ~20 ms, 2.0 for no time yet.
        assert!(state.buckets[0] >= 20_000_000, "{state:?}");
        assert!(state.buckets[1] >= 20_000_000, "{state:?}");
        assert_eq!(state.buckets[2], 0);
        assert_eq!(state.count, state.buckets.iter().sum::<u64>());
        let mean = state.sum / state.count as f64;
        assert!((0.25..=0.75).contains(&mean), "{mean}");
    }
}
