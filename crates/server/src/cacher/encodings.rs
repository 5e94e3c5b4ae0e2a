//! What the watch cache remembers of an object's encodings in a response format other than
//! its stored one: the length of one encoding, always, and the encoded bytes themselves
//! while a process-wide byte budget allows.
//!
//! A JSON LIST served from the cache copies each object's stored bytes; a protobuf LIST must
//! transcode each one, which costs several times more CPU than the copy. Keeping the
//! encoded item lets every later protobuf LIST of an unchanged object copy it as JSON LISTs
//! do (many protobuf clients listing the same objects: every node's kube-proxy relisting
//! Services and EndpointSlices). It costs memory only for objects read in protobuf, and
//! never more than the budget: an object read once the budget is spent is encoded for each
//! response, as it was before it. The bytes are released with the cached object, when the
//! object changes or leaves the cache.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use bytes::Bytes;
use prometheus_client::encoding::{EncodeMetric, MetricEncoder};
use prometheus_client::metrics::MetricType;

/// The budget of kept encodings' bytes, for the whole process (it is the process's memory
/// it bounds, whatever the number of servers and caches in it).
static BUDGET: Budget = Budget {
    limit: AtomicUsize::new(DEFAULT_BUDGET),
    used: AtomicUsize::new(0),
};

/// The default budget: 128 MiB, 20,000 encoded Pods of a realistic size.
pub const DEFAULT_BUDGET: usize = 128 << 20;

#[derive(Debug)]
struct Budget {
    limit: AtomicUsize,
    used: AtomicUsize,
}

impl Budget {
    /// Charges `len` bytes if they fit.
    fn charge(&self, len: usize) -> bool {
        let limit = self.limit.load(Ordering::Relaxed);
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                used.checked_add(len).filter(|&after| after <= limit)
            })
            .is_ok()
    }

    fn release(&self, len: usize) {
        self.used.fetch_sub(len, Ordering::Relaxed);
    }
}

/// Sets how many bytes of encodings the watch caches may keep (0: none); encodings kept
/// already stay until their objects change.
pub fn set_budget(bytes: usize) {
    BUDGET.limit.store(bytes, Ordering::Relaxed);
}

/// How many bytes of encodings the watch caches keep now.
pub fn kept_bytes() -> usize {
    BUDGET.used.load(Ordering::Relaxed)
}

/// The bytes kept now, as a gauge read when the metrics are scraped.
#[derive(Debug)]
pub(crate) struct KeptBytesGauge;

impl EncodeMetric for KeptBytesGauge {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        encoder.encode_gauge(&(kept_bytes() as i64))
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Gauge
    }
}

/// The encodings remembered for one cached object (its bytes at its revision). An encoding
/// is named by any nonzero number its encoder chooses.
#[derive(Debug, Default)]
pub struct Encodings {
    /// The encoding's name and the length, in one atomic word, so that readers never see
    /// one without the other. A protobuf LIST must write its items' total length before the
    /// first item; with the lengths known it can encode the items as the client reads
    /// instead of holding them all (see the LIST body).
    len: AtomicU64,
    /// The first encoding kept, boxed so that an object never encoded pays one word.
    kept: OnceLock<Box<Kept>>,
}

/// Encoded bytes charged to the budget until dropped.
#[derive(Debug)]
struct Kept {
    encoding: u32,
    bytes: Bytes,
    budget: &'static Budget,
}

impl Drop for Kept {
    fn drop(&mut self) {
        self.budget.release(self.bytes.len());
    }
}

impl Encodings {
    /// The remembered length of the encoding `encoding`, if that is the one remembered.
    pub fn len(&self, encoding: u32) -> Option<usize> {
        let word = self.len.load(Ordering::Relaxed);
        (encoding != 0 && (word >> 32) as u32 == encoding).then_some(word as u32 as usize)
    }

    /// Remembers `len` as the length of the encoding `encoding` (a length that does not fit
    /// 32 bits is not remembered).
    pub fn set_len(&self, encoding: u32, len: usize) {
        if let Ok(len) = u32::try_from(len) {
            self.len.store(
                u64::from(encoding) << 32 | u64::from(len),
                Ordering::Relaxed,
            );
        }
    }

    /// The kept bytes of the encoding `encoding`, if those are the ones kept.
    pub fn bytes(&self, encoding: u32) -> Option<Bytes> {
        let kept = self.kept.get()?;
        (encoding != 0 && kept.encoding == encoding).then(|| kept.bytes.clone())
    }

    /// Keeps a copy of `encoded` as the encoding `encoding` if none is kept and the budget
    /// allows, and returns it (shared, not copied again, by whoever asks next).
    pub fn keep(&self, encoding: u32, encoded: &[u8]) -> Option<Bytes> {
        self.keep_within(&BUDGET, encoding, encoded)
    }

    fn keep_within(&self, budget: &'static Budget, encoding: u32, encoded: &[u8]) -> Option<Bytes> {
        if encoding == 0 || self.kept.get().is_some() || !budget.charge(encoded.len()) {
            return None;
        }
        let kept = Box::new(Kept {
            encoding,
            bytes: Bytes::copy_from_slice(encoded),
            budget,
        });
        let bytes = kept.bytes.clone();
        // Another response may have kept it first: this copy is then dropped, and released.
        self.kept.set(kept).ok()?;
        Some(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_are_remembered_per_encoding() {
        let encodings = Encodings::default();
        assert_eq!(encodings.len(7), None);
        encodings.set_len(7, 1234);
        assert_eq!(encodings.len(7), Some(1234));
        assert_eq!(encodings.len(9), None);
        assert_eq!(encodings.len(0), None);
        encodings.set_len(9, 5);
        assert_eq!((encodings.len(7), encodings.len(9)), (None, Some(5)));
    }

    fn budget(limit: usize) -> &'static Budget {
        Box::leak(Box::new(Budget {
            limit: AtomicUsize::new(limit),
            used: AtomicUsize::new(0),
        }))
    }

    #[test]
    fn kept_bytes_are_charged_until_dropped() {
        let budget = budget(5);
        let encodings = Encodings::default();
        let kept = encodings.keep_within(budget, 3, &[1, 2, 3]).unwrap();
        assert_eq!(&kept[..], [1, 2, 3]);
        assert_eq!(encodings.bytes(3).unwrap(), kept);
        assert_eq!(encodings.bytes(4), None, "another encoding");
        assert_eq!(
            encodings.keep_within(budget, 4, &[9]),
            None,
            "one encoding is kept"
        );
        assert_eq!(budget.used.load(Ordering::Relaxed), 3);
        let other = Encodings::default();
        assert_eq!(
            other.keep_within(budget, 3, &[1, 2, 3]),
            None,
            "beyond the budget"
        );
        assert_eq!(other.bytes(3), None);
        drop(encodings);
        // The bytes may outlive their object in a response, but the budget is released.
        assert_eq!(budget.used.load(Ordering::Relaxed), 0);
        assert_eq!(&kept[..], [1, 2, 3]);
        assert!(other.keep_within(budget, 3, &[1, 2, 3]).is_some());
    }

    #[test]
    fn a_budget_charges_what_fits() {
        let budget = budget(10);
        assert!(budget.charge(6));
        assert!(!budget.charge(6));
        assert!(budget.charge(4));
        budget.release(10);
        assert!(budget.charge(10));
        assert!(!budget.charge(usize::MAX));
    }
}
