//! NodePort allocation from `--service-node-port-range`, as upstream's port allocator
//! (pkg/registry/core/service/portallocator): one core/v1 RangeAllocation at
//! `<prefix>/ranges/servicenodeports`, kube-apiserver's key, holds the bitmap of reserved
//! ports (bit i is the range's i-th port; `data` is the bitmap as a big-endian integer, as
//! upstream writes it). Every change is a compare-and-swap on that key, so servers sharing a
//! store (kube-apiserver too: its protobuf value is read, kapi writes JSON, which it reads)
//! agree. Automatic picks are random, from the upper (dynamic) part of the range first.

use std::sync::Arc;

use bytes::Bytes;
use kapi_apimachinery::status::ApiError;
use kapi_server::storage_codec::decode_value;
use kapi_storage::{StorageError, Store};
use rand::Rng;
use serde_json::{Value, json};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// How many times a reservation retries after losing a compare-and-swap race.
const CAS_ATTEMPTS: usize = 64;

/// Why a port range does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PortRangeError {
    #[error("unable to parse port range: {0}")]
    Invalid(String),
}

/// A range of ports, both ends included (`30000-32767`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortRange {
    pub base: u16,
    pub size: u16,
}

impl PortRange {
    /// Parses `first-last` or `first+count` (upstream's net.ParsePortRange).
    pub fn parse(text: &str) -> Result<PortRange, PortRangeError> {
        let invalid = || PortRangeError::Invalid(text.to_string());
        let number = |s: &str| s.trim().parse::<u32>().map_err(|_| invalid());
        let (base, size) = if let Some((first, last)) = text.split_once('-') {
            let (first, last) = (number(first)?, number(last)?);
            (first, last.checked_sub(first).ok_or_else(invalid)? + 1)
        } else if let Some((first, count)) = text.split_once('+') {
            (number(first)?, number(count)? + 1)
        } else {
            (number(text)?, 1)
        };
        if base == 0 || base + size - 1 > 65535 {
            return Err(invalid());
        }
        Ok(PortRange {
            base: base as u16,
            size: size as u16,
        })
    }

    /// Whether `port` is in the range.
    pub fn contains(&self, port: i64) -> bool {
        (i64::from(self.base)..i64::from(self.base) + i64::from(self.size)).contains(&port)
    }

    /// The size of the static block at the start of the range that automatic picks use
    /// last: min(max(16, size/32), 128), none for ranges of 16 ports or fewer.
    pub fn static_block(&self) -> u16 {
        if self.size <= 16 {
            return 0;
        }
        (self.size / 32).clamp(16, 128)
    }
}

impl std::fmt::Display for PortRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}-{}",
            self.base,
            u32::from(self.base) + u32::from(self.size) - 1
        )
    }
}

/// Why a port could not be reserved, worded as upstream's allocator errors.
#[derive(Debug, thiserror::Error)]
pub(super) enum PortError {
    #[error("provided port is already allocated")]
    Allocated,
    #[error("provided port is not in the valid range. The range of valid ports is {0}")]
    NotInRange(PortRange),
    #[error("range is full")]
    Full,
    #[error("{0}")]
    Storage(ApiError),
}

/// The reserved offsets of a range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Bitmap(Vec<bool>);

impl Bitmap {
    fn empty(size: u16) -> Bitmap {
        Bitmap(vec![false; usize::from(size)])
    }

    /// The bitmap of a stored RangeAllocation, re-based onto `range` when it was written for
    /// another one (ports outside `range` are dropped).
    fn decode(stored: &Value, range: PortRange) -> Bitmap {
        let mut bitmap = Bitmap::empty(range.size);
        let stored_base = stored["range"]
            .as_str()
            .and_then(|r| PortRange::parse(r).ok())
            .map_or(range.base, |r| r.base);
        let data = stored["data"].as_str().unwrap_or("");
        let bytes = STANDARD.decode(data).unwrap_or_default();
        for (index, byte) in bytes.iter().rev().enumerate() {
            for bit in 0..8 {
                if byte & (1 << bit) != 0 {
                    let port = i64::from(stored_base) + (index * 8 + bit) as i64;
                    bitmap.set(range, port, true);
                }
            }
        }
        bitmap
    }

    /// The RangeAllocation object holding this bitmap.
    fn encode(&self, range: PortRange) -> Value {
        let mut bytes = vec![0u8; self.0.len().div_ceil(8)];
        let last = bytes.len().saturating_sub(1);
        for (offset, _) in self.0.iter().enumerate().filter(|(_, set)| **set) {
            bytes[last - offset / 8] |= 1 << (offset % 8);
        }
        let first_used = bytes.iter().position(|b| *b != 0).unwrap_or(bytes.len());
        json!({
            "apiVersion": "v1",
            "kind": "RangeAllocation",
            "metadata": { "name": "" },
            "range": range.to_string(),
            "data": STANDARD.encode(&bytes[first_used..]),
        })
    }

    fn get(&self, range: PortRange, port: i64) -> bool {
        range.contains(port) && self.0[(port - i64::from(range.base)) as usize]
    }

    fn set(&mut self, range: PortRange, port: i64, reserved: bool) {
        if range.contains(port) {
            self.0[(port - i64::from(range.base)) as usize] = reserved;
        }
    }

    /// A free port, picked at random in the dynamic block first.
    fn pick(&self, range: PortRange) -> Option<i64> {
        let static_block = usize::from(range.static_block());
        let size = self.0.len();
        for (start, end) in [(static_block, size), (0, static_block)] {
            if start >= end {
                continue;
            }
            let first = rand::rng().random_range(0..end - start);
            let found = (0..end - start)
                .map(|step| start + (first + step) % (end - start))
                .find(|offset| !self.0[*offset]);
            if let Some(offset) = found {
                return Some(i64::from(range.base) + offset as i64);
            }
        }
        None
    }
}

/// Reserves NodePorts in the stored RangeAllocation.
pub(super) struct PortAllocator {
    pub range: PortRange,
    store: Arc<dyn Store>,
    key: String,
}

impl PortAllocator {
    /// The allocator of `range`, its bitmap at `<storage_prefix>/ranges/servicenodeports`.
    /// (Earlier kapi kept it at `services/nodeports`, now left unused; the repair at start
    /// marks every port stored Services use, so the bitmap moves with nothing lost.)
    pub fn new(
        range: PortRange,
        store: Arc<dyn Store>,
        storage_prefix: &str,
    ) -> Arc<PortAllocator> {
        let key = format!(
            "{}/ranges/servicenodeports",
            storage_prefix.trim_end_matches('/')
        );
        Arc::new(PortAllocator { range, store, key })
    }

    /// Reserves `port` (a dry run only checks that it is free).
    pub async fn allocate(&self, port: i64, dry_run: bool) -> Result<(), PortError> {
        if !self.range.contains(port) {
            return Err(PortError::NotInRange(self.range));
        }
        self.change(dry_run, |bitmap| {
            if bitmap.get(self.range, port) {
                return Err(PortError::Allocated);
            }
            bitmap.set(self.range, port, true);
            Ok(port)
        })
        .await
        .map(drop)
    }

    /// Reserves a free port.
    pub async fn allocate_next(&self, dry_run: bool) -> Result<i64, PortError> {
        self.change(dry_run, |bitmap| {
            let port = bitmap.pick(self.range).ok_or(PortError::Full)?;
            bitmap.set(self.range, port, true);
            Ok(port)
        })
        .await
    }

    /// Releases `ports`.
    pub async fn release(&self, ports: &[i64]) {
        if ports.is_empty() {
            return;
        }
        let released = self
            .change(false, |bitmap| {
                ports
                    .iter()
                    .for_each(|port| bitmap.set(self.range, *port, false));
                Ok(0)
            })
            .await;
        if let Err(err) = released {
            tracing::warn!(%err, ?ports, "releasing NodePorts");
        }
    }

    /// Marks `ports` reserved (the repair of a restart: every port a stored Service uses).
    pub async fn mark(&self, ports: &[i64]) -> Result<(), PortError> {
        self.change(false, |bitmap| {
            ports
                .iter()
                .for_each(|port| bitmap.set(self.range, *port, true));
            Ok(0)
        })
        .await
        .map(drop)
    }

    /// Applies `edit` to the stored bitmap with compare-and-swap, retrying on races; a dry
    /// run (or an edit changing nothing) writes nothing.
    async fn change(
        &self,
        dry_run: bool,
        edit: impl Fn(&mut Bitmap) -> Result<i64, PortError>,
    ) -> Result<i64, PortError> {
        for _ in 0..CAS_ATTEMPTS {
            let current = self.store.get(&self.key, None).await.map_err(storage)?.kv;
            // A value that does not read is an error, never an empty bitmap written over it.
            let stored = match &current {
                Some(kv) => Some(decode_value(&kv.key, kv.value.clone()).map_err(storage)?),
                None => None,
            };
            let mut bitmap = match &stored {
                Some(stored) => Bitmap::decode(stored, self.range),
                None => Bitmap::empty(self.range.size),
            };
            let before = bitmap.clone();
            let result = edit(&mut bitmap)?;
            if dry_run || (bitmap == before && current.is_some()) {
                return Ok(result);
            }
            let value = Bytes::from(bitmap.encode(self.range).to_string());
            let written = match &current {
                Some(kv) => self.store.update(&self.key, value, kv.mod_revision).await,
                None => self.store.create(&self.key, value).await,
            };
            match written {
                Ok(_) => return Ok(result),
                Err(StorageError::Conflict { .. } | StorageError::KeyExists { .. }) => continue,
                Err(StorageError::KeyNotFound { .. }) => continue,
                Err(err) => return Err(storage(err)),
            }
        }
        Err(PortError::Storage(ApiError::internal(
            "too many concurrent NodePort allocations",
        )))
    }
}

fn storage(err: StorageError) -> PortError {
    PortError::Storage(ApiError::internal(err))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_port_ranges_as_upstream() {
        let range = PortRange::parse("30000-32767").unwrap();
        assert_eq!(
            range,
            PortRange {
                base: 30000,
                size: 2768
            }
        );
        assert_eq!(range.to_string(), "30000-32767");
        assert_eq!(range.static_block(), 86);
        assert_eq!(
            PortRange::parse("100+9").unwrap(),
            PortRange {
                base: 100,
                size: 10
            }
        );
        assert_eq!(
            PortRange::parse("80").unwrap(),
            PortRange { base: 80, size: 1 }
        );
        for bad in ["", "a-b", "10-5", "0-10", "65000-70000"] {
            assert!(PortRange::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bitmaps_round_trip_as_big_endian_integers() {
        let range = PortRange::parse("30000-30015").unwrap();
        let mut bitmap = Bitmap::empty(range.size);
        bitmap.set(range, 30000, true);
        bitmap.set(range, 30009, true);
        let stored = bitmap.encode(range);
        // Bits 0 and 9: the integer 0x0201.
        assert_eq!(stored["data"], STANDARD.encode([0x02, 0x01]));
        assert_eq!(stored["range"], "30000-30015");
        assert_eq!(Bitmap::decode(&stored, range), bitmap);
        // Read for a wider range, the same ports stay reserved.
        let wider = PortRange::parse("29990-30020").unwrap();
        let rebased = Bitmap::decode(&stored, wider);
        assert!(rebased.get(wider, 30000) && rebased.get(wider, 30009));
        assert!(!rebased.get(wider, 30001));
    }

    #[test]
    fn picks_the_dynamic_block_first_then_the_static_one() {
        let range = PortRange::parse("30000-30099").unwrap();
        let mut bitmap = Bitmap::empty(range.size);
        for _ in 0..84 {
            let port = bitmap.pick(range).unwrap();
            assert!(port >= 30016, "{port} is in the static block");
            bitmap.set(range, port, true);
        }
        let port = bitmap.pick(range).unwrap();
        assert!(port < 30016);
        for port in 30000..30100 {
            bitmap.set(range, port, true);
        }
        assert_eq!(bitmap.pick(range), None);
    }
}
