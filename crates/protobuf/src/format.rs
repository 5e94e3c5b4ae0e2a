//! Go's text forms of times and durations, as kube-apiserver's JSON writes them.

use kapi_apimachinery::meta::{format_rfc3339, format_rfc3339_micro};

/// Seconds from 0001-01-01T00:00:00Z (Go's zero `time.Time`) to the Unix epoch.
const ZERO_TIME_UNIX: i64 = -62_135_596_800;

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

/// Go's `time.Duration(nanos).String()`: `1h2m3.5s`, `1.5ms`, `0s`.
pub(crate) fn go_duration(nanos: i64) -> String {
    let neg = nanos < 0;
    let mut u = nanos.unsigned_abs();
    let mut out = String::new();
    if u == 0 {
        return "0s".into();
    }
    if u < 1_000_000_000 {
        let (unit, prec) = match u {
            0..1_000 => ("ns", 0),
            1_000..1_000_000 => ("µs", 3),
            _ => ("ms", 6),
        };
        let frac;
        (frac, u) = fraction(u, prec);
        out.push_str(&format!("{u}{frac}{unit}"));
    } else {
        let frac;
        (frac, u) = fraction(u, 9);
        let (secs, mins) = (u % 60, u / 60);
        if mins > 0 {
            let (m, hours) = (mins % 60, mins / 60);
            if hours > 0 {
                out.push_str(&format!("{hours}h"));
            }
            out.push_str(&format!("{m}m"));
        }
        out.push_str(&format!("{secs}{frac}s"));
    }
    if neg {
        out.insert(0, '-');
    }
    out
}

/// Splits `v` into `v / 10^prec` and the fraction `.ddd` without trailing
/// zeros (empty when zero), as Go's `fmtFrac`.
fn fraction(v: u64, prec: u32) -> (String, u64) {
    let scale = 10u64.pow(prec);
    let (int, frac) = (v / scale, v % scale);
    if frac == 0 {
        return (String::new(), int);
    }
    let digits = format!("{frac:0width$}", width = prec as usize);
    (format!(".{}", digits.trim_end_matches('0')), int)
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

    #[test]
    fn durations() {
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1µs"),
            (2_200_000, "2.2ms"),
            (1_500_000_000, "1.5s"),
            (60_000_000_000, "1m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_723_000_000_000, "1h2m3s"),
            (-90_000_000_000, "-1m30s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
            (i64::MAX, "2562047h47m16.854775807s"),
        ];
        for (nanos, want) in cases {
            assert_eq!(go_duration(nanos), want, "{nanos}");
        }
    }
}
