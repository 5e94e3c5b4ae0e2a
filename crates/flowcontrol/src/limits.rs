//! Concurrency limits (upstream's `apf_controller.go` and `conc_alloc.go`): the server's
//! concurrency (`--max-requests-inflight` + `--max-mutating-requests-inflight`) shared among
//! the priority levels by their nominal concurrency shares; what each may lend and borrow;
//! and, every adjustment period, the limits the levels' recent seat demand earns them.

/// One level's configured shares and percentages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Shares {
    pub exempt: bool,
    pub nominal_shares: u64,
    pub lendable_percent: u64,
    /// `None` is no limit on borrowing.
    pub borrowing_limit_percent: Option<u64>,
}

/// One level's limits in seats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Limits {
    pub nominal: usize,
    pub lendable: usize,
    /// The least it keeps (nominal less what it lends).
    pub min: usize,
    /// The most it may have (nominal plus what it may borrow).
    pub max: usize,
}

impl Limits {
    /// The limit a new level starts with, before any demand is known.
    pub(crate) fn initial(&self) -> usize {
        self.nominal - self.lendable / 2
    }

    /// The least a non-exempt level gets for the next period with `demand` (upstream's
    /// `minCurrentCL`): what it cannot lend, and what it used up to its nominal limit.
    pub(crate) fn lower_bound(&self, demand: &Demand) -> f64 {
        let used = demand.high_watermark.round();
        (self.min as f64).max((self.nominal as f64).min(used))
    }

    /// The seats a level aims at for the next period (upstream's `target`): its smoothed
    /// demand, at least its lower bound.
    pub(crate) fn target(&self, demand: &Demand) -> f64 {
        self.lower_bound(demand).max(demand.smoothed)
    }
}

/// Each level's limits out of `server` seats (in floating point, as upstream computes
/// them, so that no share or percentage overflows; results saturate).
pub(crate) fn nominal_limits(server: usize, levels: &[Shares]) -> Vec<Limits> {
    let share_sum: f64 = levels.iter().map(|l| l.nominal_shares as f64).sum();
    levels
        .iter()
        .map(|level| {
            let nominal = match share_sum > 0.0 {
                true => (server as f64 * level.nominal_shares as f64 / share_sum).ceil() as usize,
                false => 0,
            };
            let percent_of = |percent: u64| (nominal as f64 * percent as f64 / 100.0).round();
            let lendable = (percent_of(level.lendable_percent) as usize).min(nominal);
            let borrowing = level
                .borrowing_limit_percent
                .map_or(server, |percent| percent_of(percent) as usize);
            Limits {
                nominal,
                lendable,
                min: nominal - lendable,
                max: nominal.saturating_add(borrowing),
            }
        })
        .collect()
}

/// A level's seat demand over the last period, for [`adjust`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Demand {
    pub high_watermark: f64,
    /// Its smoothed demand (upstream's exponential smoothing of average + deviation).
    pub smoothed: f64,
}

/// The limits each level gets for the next period (upstream's `updateBorrowingLocked`):
/// exempt levels keep what they used; the others get at least what they cannot lend and
/// what they used up to their nominal limit, and the seats left are shared by a fair
/// fraction of their smoothed demands. With the fraction (0 when the seats were too few to
/// share fairly).
pub(crate) fn adjust(levels: &[(Shares, Limits, Demand)]) -> (Vec<usize>, f64) {
    let nominal_sum: f64 = levels
        .iter()
        .map(|(_, limits, _)| limits.nominal as f64)
        .sum();
    let mut remaining = nominal_sum;
    let mut current = vec![0.0; levels.len()];
    let mut items = Vec::new();
    for (index, (shares, limits, demand)) in levels.iter().enumerate() {
        if shares.exempt {
            current[index] = (limits.min as f64).max(demand.high_watermark.round());
            remaining -= current[index];
            continue;
        }
        let (lower, target) = (limits.lower_bound(demand), limits.target(demand));
        items.push((index, limits.min as f64, lower, limits.max as f64, target));
    }
    let min_sum: f64 = items.iter().map(|(_, min, ..)| min).sum();
    let lower_sum: f64 = items.iter().map(|(_, _, lower, ..)| lower).sum();
    let mut fraction = 0.0;
    if remaining <= min_sum {
        for (index, min, ..) in &items {
            current[*index] = *min;
        }
    } else if remaining <= lower_sum {
        let share = (remaining - min_sum) / (lower_sum - min_sum);
        for (index, min, lower, ..) in &items {
            current[*index] = min + ((lower - min) * share).round();
        }
    } else {
        let bounds: Vec<_> = items.iter().map(|i| (i.2, i.3, i.4)).collect();
        let (allocation, fair) = allocate(nominal_sum, &bounds);
        fraction = fair;
        for ((index, ..), seats) in items.iter().zip(allocation) {
            current[*index] = seats;
        }
    }
    let rounded = current
        .iter()
        .map(|c| c.round().max(0.0) as usize)
        .collect();
    (rounded, fraction)
}

/// Shares `total` among items `(lower, upper, target)`: each gets its target times one
/// fair fraction, clamped to its bounds, the fraction chosen so that the shares add up to
/// `total` (as near as the bounds allow). Targets below 0.001 count as 0.001, as
/// upstream's.
fn allocate(total: f64, items: &[(f64, f64, f64)]) -> (Vec<f64>, f64) {
    let share = |fraction: f64| -> Vec<f64> {
        items
            .iter()
            .map(|&(lower, upper, target)| {
                (fraction * target.max(0.001)).clamp(lower, upper.max(lower))
            })
            .collect()
    };
    let sum = |fraction: f64| share(fraction).iter().sum::<f64>();
    let (mut low, mut high) = (0.0, 1.0);
    while sum(high) < total && high < 1e12 {
        high *= 2.0;
    }
    for _ in 0..100 {
        let middle = (low + high) / 2.0;
        if sum(middle) < total {
            low = middle;
        } else {
            high = middle;
        }
    }
    (share(high), high)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queuing(nominal_shares: u64, lendable_percent: u64) -> Shares {
        Shares {
            exempt: false,
            nominal_shares,
            lendable_percent,
            borrowing_limit_percent: None,
        }
    }

    /// The bootstrap levels, in research order: exempt, catch-all, system, node-high,
    /// leader-election, workload-high, workload-low, global-default.
    fn bootstrap() -> Vec<Shares> {
        let mut levels = vec![Shares {
            exempt: true,
            nominal_shares: 0,
            lendable_percent: 0,
            borrowing_limit_percent: None,
        }];
        for (shares, lendable) in [
            (5, 0),
            (30, 33),
            (40, 25),
            (10, 0),
            (40, 50),
            (100, 90),
            (20, 50),
        ] {
            levels.push(queuing(shares, lendable));
        }
        levels
    }

    #[test]
    fn the_bootstrap_levels_share_600_seats_as_upstream() {
        let limits = nominal_limits(600, &bootstrap());
        let table: Vec<_> = limits
            .iter()
            .map(|l| (l.nominal, l.lendable, l.min, l.max))
            .collect();
        assert_eq!(
            table,
            vec![
                (0, 0, 0, 600),
                (13, 0, 13, 613),
                (74, 24, 50, 674),
                (98, 25, 73, 698),
                (25, 0, 25, 625),
                (98, 49, 49, 698),
                (245, 221, 24, 845),
                (49, 25, 24, 649),
            ]
        );
        assert_eq!(limits[7].initial(), 49 - 12);
    }

    #[test]
    fn a_levels_target_is_at_least_what_it_used_up_to_its_nominal_limit() {
        let limits = Limits {
            nominal: 10,
            lendable: 5,
            min: 5,
            max: 20,
        };
        let demand = |high_watermark, smoothed| Demand {
            high_watermark,
            smoothed,
        };
        assert_eq!(limits.target(&demand(7.6, 2.0)), 8.0);
        assert_eq!(limits.target(&demand(30.0, 2.0)), 10.0);
        assert_eq!(limits.target(&demand(1.0, 2.0)), 5.0);
        assert_eq!(limits.target(&demand(30.0, 14.5)), 14.5);
    }

    #[test]
    fn idle_levels_lend_to_a_busy_one() {
        let levels = bootstrap();
        let limits = nominal_limits(600, &levels);
        let idle = Demand {
            high_watermark: 0.0,
            smoothed: 0.0,
        };
        let mut input: Vec<_> = levels
            .iter()
            .zip(&limits)
            .map(|(s, l)| (*s, *l, idle))
            .collect();
        // global-default is flooded.
        input[7].2 = Demand {
            high_watermark: 400.0,
            smoothed: 400.0,
        };
        let (current, fraction) = adjust(&input);
        assert!(fraction > 0.0);
        // Every idle level keeps what it cannot lend; global-default gets the rest.
        assert_eq!(current[1], 13);
        assert_eq!(current[6], 24);
        assert!(current[7] > 49, "{current:?}");
        let total: usize = current.iter().sum();
        let nominal: usize = limits.iter().map(|l| l.nominal).sum();
        assert!(total.abs_diff(nominal) <= levels.len(), "{total} {nominal}");
    }
}
