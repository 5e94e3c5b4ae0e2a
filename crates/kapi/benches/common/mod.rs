//! What the benchmarks share: running operations at a fixed concurrency and the report line
//! of their rate and latencies.

use std::time::{Duration, Instant};

use futures::StreamExt;

/// Requests in flight.
pub const CONCURRENCY: usize = 32;

/// Runs `n` operations `op(i)` with [`CONCURRENCY`] in flight; returns the report line.
pub async fn creates<F, Fut>(n: usize, op: F) -> String
where
    F: Fn(usize) -> Fut,
    Fut: Future<Output = Result<(), kube::Error>>,
{
    let started = Instant::now();
    let results: Vec<(Duration, Result<(), kube::Error>)> = futures::stream::iter(0..n)
        .map(|i| {
            let operation = op(i);
            async move {
                let begun = Instant::now();
                let result = operation.await;
                (begun.elapsed(), result)
            }
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let elapsed = started.elapsed();
    summary(results, elapsed)
}

pub fn summary(results: Vec<(Duration, Result<(), kube::Error>)>, elapsed: Duration) -> String {
    let mut latencies: Vec<Duration> = Vec::with_capacity(results.len());
    let mut errors = 0;
    let mut first_error = None;
    for (latency, result) in results {
        match result {
            Ok(()) => latencies.push(latency),
            Err(err) => {
                errors += 1;
                first_error.get_or_insert(err.to_string());
            }
        }
    }
    latencies.sort();
    let at = |q: f64| {
        latencies
            .get(((latencies.len() as f64 * q) as usize).min(latencies.len().saturating_sub(1)))
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    };
    let rate = latencies.len() as f64 / elapsed.as_secs_f64();
    let mut line = format!(
        "{rate:.0}/s; p50 {:.1} ms, p99 {:.1} ms; {} ok",
        at(0.5),
        at(0.99),
        latencies.len()
    );
    if errors > 0 {
        line.push_str(&format!(
            "; {errors} errors, first: {}",
            first_error.unwrap_or_default()
        ));
    }
    line
}
