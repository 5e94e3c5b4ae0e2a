//! Go's text forms of protobuf times, as kube-apiserver's JSON writes them.

use kapi_apimachinery::gotime::{ZERO_TIME, format_rfc3339, format_rfc3339_micro};

/// Seconds from 0001-01-01T00:00:00Z (Go's zero `time.Time`) to the Unix epoch.
const ZERO_TIME_UNIX: i64 = ZERO_TIME.seconds;

/// A meta/v1 `Time`/`MicroTime` from protobuf seconds and nanos. `None` for
/// Go's zero time, which marshals as `null`.
pub(crate) fn timestamp(seconds: i64, nanos: i64, micro: bool) -> Option<String> {
    // time.Unix(sec, nsec) normalizes nsec into [0, 1e9).
    let seconds = seconds.saturating_add(nanos.div_euclid(1_000_000_000));
    let nanos = nanos.rem_euclid(1_000_000_000);
    if seconds == ZERO_TIME_UNIX && nanos == 0 {
        return None;
    }
    Some(match micro {
        true => format_rfc3339_micro(seconds, (nanos / 1000) as u32),
        false => format_rfc3339(seconds),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(
            timestamp(0, 0, false).as_deref(),
            Some("1970-01-01T00:00:00Z")
        );
        assert_eq!(
            timestamp(1_704_164_705, 123_456_789, false).as_deref(),
            Some("2024-01-02T03:05:05Z")
        );
        assert_eq!(
            timestamp(1_704_164_705, 123_456_789, true).as_deref(),
            Some("2024-01-02T03:05:05.123456Z")
        );
        assert_eq!(
            timestamp(951_782_400, 0, false).as_deref(),
            Some("2000-02-29T00:00:00Z")
        );
        assert_eq!(
            timestamp(-1, 0, false).as_deref(),
            Some("1969-12-31T23:59:59Z")
        );
        assert_eq!(
            timestamp(0, -1, true).as_deref(),
            Some("1969-12-31T23:59:59.999999Z")
        );
        assert_eq!(
            timestamp(253_402_300_799, 0, false).as_deref(),
            Some("9999-12-31T23:59:59Z")
        );
        assert_eq!(timestamp(ZERO_TIME_UNIX, 0, false), None);
        assert_eq!(
            timestamp(ZERO_TIME_UNIX, 1000, true).as_deref(),
            Some("0001-01-01T00:00:00.000001Z")
        );
    }
}
