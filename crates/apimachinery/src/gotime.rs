//! Go's times as the API writes and reads them: metav1.Time and MicroTime text (RFC 3339 in
//! UTC), `time.RFC1123` for HTTP dates, and `duration.HumanDuration` for AGE columns.
//!
//! One civil-calendar conversion serves them all (Howard Hinnant's days-from-civil
//! algorithms). It is exact over every `i64` second, as Go's is, where the `time` crate stops
//! at year 9,999 (or 999,999): protobuf bodies can carry any seconds, and printing them must
//! neither fail nor panic.

use std::time::{SystemTime, UNIX_EPOCH};

/// A point in time: seconds since the Unix epoch and nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Timestamp {
    /// Seconds since 1970-01-01T00:00:00Z.
    pub seconds: i64,
    /// Nanoseconds within the second (below 10^9).
    pub nanos: u32,
}

/// Go's zero time (`0001-01-01T00:00:00Z`), which metav1 times write as `null`.
pub const ZERO_TIME: Timestamp = Timestamp {
    seconds: -62_135_596_800,
    nanos: 0,
};

impl Timestamp {
    /// The current time (the epoch if the clock is before it).
    pub fn now() -> Timestamp {
        match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => Timestamp {
                seconds: i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                nanos: d.subsec_nanos(),
            },
            Err(_) => Timestamp {
                seconds: 0,
                nanos: 0,
            },
        }
    }

    /// Nanoseconds from `earlier` to `self` (negative if `earlier` is later).
    pub fn nanos_since(self, earlier: Timestamp) -> i128 {
        let a = i128::from(self.seconds) * 1_000_000_000 + i128::from(self.nanos);
        let b = i128::from(earlier.seconds) * 1_000_000_000 + i128::from(earlier.nanos);
        a - b
    }
}

/// Parses an RFC 3339 timestamp as Go's `time.Parse(time.RFC3339, ...)` accepts it:
/// `2006-01-02T15:04:05[.fraction](Z|±hh:mm)`, with a real calendar date.
pub fn parse_rfc3339(text: &str) -> Option<Timestamp> {
    let b = text.as_bytes();
    let year = digits(b.get(0..4)?)?;
    parse_after_year(year, b.get(4..)?)
}

/// Parses what [`format_rfc3339`] and [`format_rfc3339_micro`] write for any time: RFC 3339,
/// and beyond its four-digit years (more digits, or a `-` before the year), which protobuf
/// times can carry.
pub fn parse_formatted(text: &str) -> Option<Timestamp> {
    if let Some(t) = parse_rfc3339(text) {
        return Some(t);
    }
    let (negative, body) = match text.strip_prefix('-') {
        Some(body) => (true, body.as_bytes()),
        None => (false, text.as_bytes()),
    };
    let end = body.iter().position(|&c| c == b'-')?;
    if !(4..=12).contains(&end) {
        return None;
    }
    let year = digits(&body[..end])?;
    parse_after_year(if negative { -year } else { year }, &body[end..])
}

/// The decimal number `part` spells, if it is all digits.
fn digits(part: &[u8]) -> Option<i64> {
    if part.is_empty() || !part.iter().all(u8::is_ascii_digit) {
        return None;
    }
    part.iter().try_fold(0i64, |n, d| {
        n.checked_mul(10)?.checked_add(i64::from(d - b'0'))
    })
}

/// The time whose year is `year` and whose text after the year is `b`
/// (`-01-02T15:04:05[.fraction](Z|±hh:mm)`).
fn parse_after_year(year: i64, b: &[u8]) -> Option<Timestamp> {
    if b.len() < 16 || b[0] != b'-' || b[3] != b'-' || b[6] != b'T' || b[9] != b':' || b[12] != b':'
    {
        return None;
    }
    let (month, day) = (digits(&b[1..3])?, digits(&b[4..6])?);
    let (hour, minute, second) = (digits(&b[7..9])?, digits(&b[10..12])?, digits(&b[13..15])?);
    if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
        return None;
    }
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let (nanos, rest) = fraction(&b[15..])?;
    let offset = utc_offset(rest)?;
    // i128: the day's first second can lie beyond i64 where the time itself does not.
    let seconds = i128::from(days_from_civil(year, month, day)) * 86_400
        + i128::from(hour * 3600 + minute * 60 + second - offset);
    let seconds = i64::try_from(seconds).ok()?;
    Some(Timestamp { seconds, nanos })
}

/// The optional `.fraction` after the seconds (one to nine digits) as nanoseconds, and what
/// follows it.
fn fraction(rest: &[u8]) -> Option<(u32, &[u8])> {
    let Some(digits) = rest.strip_prefix(b".") else {
        return Some((0, rest));
    };
    let count = digits.iter().take_while(|c| c.is_ascii_digit()).count();
    if count == 0 || count > 9 {
        return None;
    }
    let nanos = digits[..count]
        .iter()
        .enumerate()
        .map(|(i, d)| u32::from(d - b'0') * 10u32.pow(8 - i as u32))
        .sum();
    Some((nanos, &digits[count..]))
}

/// The seconds east of UTC of `Z` or `±hh:mm`.
fn utc_offset(zone: &[u8]) -> Option<i64> {
    match zone {
        b"Z" | b"z" => Some(0),
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            if ![h1, h2, m1, m2].iter().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let hh = i64::from(h1 - b'0') * 10 + i64::from(h2 - b'0');
            let mm = i64::from(m1 - b'0') * 10 + i64::from(m2 - b'0');
            if hh > 23 || mm > 59 {
                return None;
            }
            let total = hh * 3600 + mm * 60;
            Some(if *sign == b'-' { -total } else { total })
        }
        _ => None,
    }
}

/// A Unix time in seconds as metav1.Time writes it (`1970-01-01T00:00:00Z`).
pub fn format_rfc3339(unix_seconds: i64) -> String {
    format_time(unix_seconds, None)
}

/// A Unix time with microseconds as metav1.MicroTime writes it
/// (`1970-01-01T00:00:00.000000Z`).
pub fn format_rfc3339_micro(unix_seconds: i64, micros: u32) -> String {
    format_time(unix_seconds, Some(micros))
}

/// A Unix time with nanoseconds in Go's `time.RFC3339Nano` layout in UTC: the fraction
/// without trailing zeros, none when it is zero (`1970-01-01T00:00:00.5Z`).
pub fn format_rfc3339_nano(unix_seconds: i64, nanos: u32) -> String {
    let mut out = format_time(unix_seconds, None);
    if nanos > 0 {
        let fraction = format!(".{nanos:09}");
        out.insert_str(out.len() - 1, fraction.trim_end_matches('0'));
    }
    out
}

/// Go's RFC 3339 layout in UTC: at least four year digits, with a '-' for negative years.
fn format_time(unix_seconds: i64, micros: Option<u32>) -> String {
    let (year, month, day) = civil_from_days(unix_seconds.div_euclid(86_400));
    let secs = unix_seconds.rem_euclid(86_400);
    let sign = if year < 0 { "-" } else { "" };
    let mut out = format!(
        "{sign}{:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}",
        year.unsigned_abs(),
        secs / 3600,
        secs % 3600 / 60,
        secs % 60
    );
    if let Some(micros) = micros {
        out.push_str(&format!(".{micros:06}"));
    }
    out.push('Z');
    out
}

/// A Unix time in Go's `time.RFC1123` layout in UTC (`Mon, 02 Jan 2006 15:04:05 UTC`), as
/// upstream's OpenAPI handler writes `Last-Modified`.
pub fn format_rfc1123_utc(unix_seconds: i64) -> String {
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = unix_seconds.div_euclid(86_400);
    let secs = unix_seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    format!(
        "{}, {day:02} {} {year:04} {:02}:{:02}:{:02} UTC",
        WEEKDAYS[days.rem_euclid(7) as usize],
        MONTHS[month as usize - 1],
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The number of days in a month.
fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

const NANOS_PER_SECOND: i128 = 1_000_000_000;
const NANOS_PER_MINUTE: i128 = 60 * NANOS_PER_SECOND;
const NANOS_PER_HOUR: i128 = 60 * NANOS_PER_MINUTE;

/// A duration as upstream's `duration.HumanDuration` prints it (kubectl's AGE columns): about
/// two or three significant figures (`45s`, `3m20s`, `15m`, `5h3m`, `20h`, `3d4h`, `120d`,
/// `2y30d`, `10y`); `0s` for up to a second in the future, `<invalid>` beyond.
pub fn human_duration(nanos: i128) -> String {
    let seconds = nanos / NANOS_PER_SECOND;
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = nanos / NANOS_PER_MINUTE;
    if minutes < 10 {
        return with_rest(minutes, "m", seconds % 60, "s");
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / NANOS_PER_HOUR;
    if hours < 8 {
        return with_rest(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return with_rest(hours / 24, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return with_rest(hours / 24 / 365, "y", (hours / 24) % 365, "d");
    }
    format!("{}y", hours / 24 / 365)
}

/// `3m` or `3m20s`: the minor unit only when it is not zero.
fn with_rest(major: i128, unit: &str, minor: i128, minor_unit: &str) -> String {
    if minor == 0 {
        format!("{major}{unit}")
    } else {
        format!("{major}{unit}{minor}{minor_unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i128 = NANOS_PER_SECOND;

    #[test]
    fn formats_rfc3339() {
        assert_eq!(format_rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_rfc3339(1_704_164_645), "2024-01-02T03:04:05Z");
        assert_eq!(format_rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(format_rfc3339(-1), "1969-12-31T23:59:59Z");
        assert_eq!(format_rfc3339(253_402_300_799), "9999-12-31T23:59:59Z");
        assert_eq!(format_rfc3339(253_402_300_800), "10000-01-01T00:00:00Z");
        assert_eq!(format_rfc3339_micro(1, 5), "1970-01-01T00:00:01.000005Z");
        // Any seconds at all print without panicking.
        for seconds in [i64::MIN, i64::MAX] {
            assert!(format_rfc3339(seconds).ends_with('Z'));
            assert!(format_rfc1123_utc(seconds).ends_with(" UTC"));
        }
    }

    #[test]
    fn parses_rfc3339() {
        let seconds = |text: &str| parse_rfc3339(text).map(|t| t.seconds);
        assert_eq!(seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(seconds("2024-02-29T12:34:56Z"), Some(1_709_210_096));
        assert_eq!(seconds("2024-02-29T12:30:15.5Z"), Some(1_709_209_815));
        assert_eq!(seconds("2026-11-22T09:00:00.5Z"), Some(1_795_338_000));
        assert_eq!(seconds("1970-01-01T01:00:00+01:00"), Some(0));
        assert_eq!(seconds("2026-13-01T00:00:00Z"), None);
        assert_eq!(seconds("2023-02-29T00:00:00Z"), None);
        assert_eq!(seconds("2023-01-01T00:00:00.Z"), None);
        assert_eq!(seconds("2023-01-01T00:00:00+24:00"), None);
        assert_eq!(seconds("yesterday"), None);
        assert_eq!(seconds("nope"), None);
        let t = parse_rfc3339("0001-01-01T00:00:00Z").unwrap();
        assert_eq!(t, ZERO_TIME);
        let t = parse_rfc3339("2024-03-01T01:00:00.123456789+02:00").unwrap();
        assert_eq!(t.nanos, 123_456_789);
        assert_eq!(format_rfc3339(t.seconds), "2024-02-29T23:00:00Z");
    }

    #[test]
    fn http_dates_are_go_rfc1123() {
        assert_eq!(
            format_rfc1123_utc(1_700_000_000),
            "Tue, 14 Nov 2023 22:13:20 UTC"
        );
        assert_eq!(format_rfc1123_utc(0), "Thu, 01 Jan 1970 00:00:00 UTC");
        assert_eq!(format_rfc1123_utc(-86_400), "Wed, 31 Dec 1969 00:00:00 UTC");
    }

    #[test]
    fn human_durations_like_upstream() {
        let cases: &[(i128, &str)] = &[
            (-2 * S, "<invalid>"),
            (-S - S / 2, "0s"),
            (-S / 2, "0s"),
            (0, "0s"),
            (S, "1s"),
            (5 * S, "5s"),
            (119 * S, "119s"),
            (120 * S, "2m"),
            (121 * S, "2m1s"),
            (125 * S, "2m5s"),
            (9 * 60 * S + 59 * S, "9m59s"),
            (10 * 60 * S, "10m"),
            (179 * 60 * S, "179m"),
            (180 * 60 * S, "3h"),
            (3 * 3600 * S + 120 * S, "3h2m"),
            (3 * 3600 * S + 59 * 60 * S, "3h59m"),
            (7 * 3600 * S + 60 * S, "7h1m"),
            (8 * 3600 * S, "8h"),
            (9 * 3600 * S, "9h"),
            (47 * 3600 * S, "47h"),
            (48 * 3600 * S, "2d"),
            (49 * 3600 * S, "2d1h"),
            (3 * 86400 * S + 3600 * S, "3d1h"),
            (191 * 3600 * S, "7d23h"),
            (192 * 3600 * S, "8d"),
            (30 * 86400 * S, "30d"),
            (729 * 24 * 3600 * S, "729d"),
            (730 * 24 * 3600 * S, "2y"),
            (731 * 24 * 3600 * S, "2y1d"),
            (3 * 365 * 86400 * S + 86400 * S, "3y1d"),
            (8 * 365 * 24 * 3600 * S - 1, "7y364d"),
            (8 * 365 * 24 * 3600 * S, "8y"),
            (100 * 365 * 24 * 3600 * S, "100y"),
        ];
        for (nanos, want) in cases {
            assert_eq!(human_duration(*nanos), *want, "{nanos}ns");
        }
    }
}
