//! The `Retry-After` a priority level advises with its 429s (upstream's
//! `dropped_requests_tracker.go`): one second at first; doubled (up to 32) when in the last
//! `Retry-After` seconds at least three times that many requests were refused and it has
//! not grown for that long; one less when fewer than that many were.

use std::collections::VecDeque;

/// The longest wait advised.
const MAX_RETRY_AFTER: u64 = 32;

/// One level's refusals, by second.
#[derive(Debug)]
pub(crate) struct DroppedRequests {
    retry_after: u64,
    last_increase: u64,
    /// `(second, refusals)`, oldest first.
    history: VecDeque<(u64, u64)>,
}

impl Default for DroppedRequests {
    fn default() -> Self {
        DroppedRequests {
            retry_after: 1,
            last_increase: 0,
            history: VecDeque::new(),
        }
    }
}

impl DroppedRequests {
    /// Records a refusal at `second` (since any fixed origin) and returns the seconds to
    /// advise.
    pub(crate) fn refused(&mut self, second: u64) -> u64 {
        if self.history.back().is_none_or(|(s, _)| *s != second) {
            self.recompute(second);
            self.history.push_back((second, 0));
        }
        if let Some((_, refusals)) = self.history.back_mut() {
            *refusals += 1;
        }
        self.retry_after
    }

    /// Adjusts the advice at the start of `second`, from the refusals of the seconds before.
    fn recompute(&mut self, second: u64) {
        let window_start = second.saturating_sub(self.retry_after);
        let recent: u64 = self
            .history
            .iter()
            .filter(|(s, _)| *s >= window_start && *s < second)
            .map(|(_, n)| n)
            .sum();
        if second.saturating_sub(self.last_increase) >= self.retry_after
            && recent >= 3 * self.retry_after
        {
            self.retry_after = (2 * self.retry_after).min(MAX_RETRY_AFTER);
            self.last_increase = second;
        } else if recent < self.retry_after && self.retry_after > 1 {
            self.retry_after -= 1;
        }
        let kept = (2 * self.retry_after).min(MAX_RETRY_AFTER);
        while self
            .history
            .front()
            .is_some_and(|(s, _)| *s + kept < second)
        {
            self.history.pop_front();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn advice_grows_under_refusals_and_shrinks_after() {
        let mut dropped = DroppedRequests::default();
        assert_eq!(dropped.refused(100), 1);
        for _ in 0..5 {
            dropped.refused(100);
        }
        // Six refusals in the last second: at least three times one.
        assert_eq!(dropped.refused(101), 2);
        for _ in 0..10 {
            dropped.refused(101);
            dropped.refused(102);
        }
        assert_eq!(dropped.refused(103), 4);
        // Quiet seconds bring it down one at a time.
        assert_eq!(dropped.refused(120), 3);
        assert_eq!(dropped.refused(130), 2);
        assert_eq!(dropped.refused(140), 1);
    }
}
