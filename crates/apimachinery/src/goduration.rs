//! Go's duration syntax (`time.ParseDuration` and `Duration.String`): `60s`, `1m30s`, `1.5h`,
//! `300ms`. kube-apiserver's duration flags and the `timeout` query parameter use it, and its
//! parse errors are sent to clients, so they read exactly as Go's.

use std::time::Duration;

/// Why a duration did not parse; the message is Go's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseDurationError(String);

/// One nanosecond-based unit of Go's syntax.
const UNITS: [(&str, u64); 8] = [
    ("ns", 1),
    ("us", 1_000),
    ("\u{b5}s", 1_000),
    ("\u{3bc}s", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
];

/// The largest magnitude Go accepts (the magnitude of `i64::MIN`).
const MAX_MAGNITUDE: u64 = 1 << 63;

/// Parses a signed duration into nanoseconds, as Go's `time.ParseDuration`.
pub fn parse_nanos(text: &str) -> Result<i64, ParseDurationError> {
    let invalid = || ParseDurationError(format!("time: invalid duration {}", quote(text)));
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u64 = 0;
    while !rest.is_empty() {
        let (nanos, tail) = parse_component(rest, text)?;
        rest = tail;
        total = total
            .checked_add(nanos)
            .filter(|t| *t <= MAX_MAGNITUDE)
            .ok_or_else(invalid)?;
    }
    if negative {
        return Ok((total as i128).wrapping_neg() as i64);
    }
    i64::try_from(total).map_err(|_| invalid())
}

/// Parses a duration flag value: Go's syntax, not negative.
pub fn parse(text: &str) -> Result<Duration, ParseDurationError> {
    let nanos = parse_nanos(text)?;
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| ParseDurationError(format!("negative duration {}", quote(text))))
}

/// Parses one `<number><unit>` component at the start of `rest`; returns its nanoseconds and
/// what follows. `whole` is the full input, for error messages.
fn parse_component<'a>(rest: &'a str, whole: &str) -> Result<(u64, &'a str), ParseDurationError> {
    let invalid = || ParseDurationError(format!("time: invalid duration {}", quote(whole)));
    if !rest.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
        return Err(invalid());
    }
    let int_len = digits_len(rest);
    let integer = leading_int(&rest[..int_len]).ok_or_else(invalid)?;
    let mut rest = &rest[int_len..];
    let mut fraction = (0u64, 1f64, 0usize);
    if let Some(after_dot) = rest.strip_prefix('.') {
        let frac_len = digits_len(after_dot);
        fraction = leading_fraction(&after_dot[..frac_len]);
        rest = &after_dot[frac_len..];
    }
    if int_len == 0 && fraction.2 == 0 {
        return Err(invalid());
    }
    let unit_len = rest
        .find(|c: char| c == '.' || c.is_ascii_digit())
        .unwrap_or(rest.len());
    if unit_len == 0 {
        return Err(ParseDurationError(format!(
            "time: missing unit in duration {}",
            quote(whole)
        )));
    }
    let unit_name = &rest[..unit_len];
    let unit = UNITS
        .iter()
        .find(|(name, _)| *name == unit_name)
        .map(|(_, n)| *n)
        .ok_or_else(|| {
            ParseDurationError(format!(
                "time: unknown unit {} in duration {}",
                quote(unit_name),
                quote(whole)
            ))
        })?;
    let mut nanos = integer
        .checked_mul(unit)
        .filter(|n| *n <= MAX_MAGNITUDE)
        .ok_or_else(invalid)?;
    if fraction.0 > 0 {
        nanos += (fraction.0 as f64 * (unit as f64 / fraction.1)) as u64;
        if nanos > MAX_MAGNITUDE {
            return Err(invalid());
        }
    }
    Ok((nanos, &rest[unit_len..]))
}

/// How many ASCII digits `text` starts with.
fn digits_len(text: &str) -> usize {
    text.bytes().take_while(u8::is_ascii_digit).count()
}

/// The value of a run of digits; `None` when it exceeds Go's range.
fn leading_int(digits: &str) -> Option<u64> {
    digits.bytes().try_fold(0u64, |value, digit| {
        let value = value
            .checked_mul(10)?
            .checked_add(u64::from(digit - b'0'))?;
        (value <= MAX_MAGNITUDE).then_some(value)
    })
}

/// The digits after a decimal point as (value, scale, digits consumed); digits past the
/// precision of the value are consumed but ignored, as Go does.
fn leading_fraction(digits: &str) -> (u64, f64, usize) {
    let (mut value, mut scale, mut overflow) = (0u64, 1f64, false);
    for digit in digits.bytes() {
        if overflow {
            continue;
        }
        match value
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(digit - b'0')))
        {
            Some(next) if next <= MAX_MAGNITUDE => {
                value = next;
                scale *= 10.0;
            }
            _ => overflow = true,
        }
    }
    (value, scale, digits.len())
}

/// Formats a duration as Go's `Duration.String`: `0s`, `300ms`, `1.5s`, `1m0s`, `2h0m0s`.
pub fn format(duration: Duration) -> String {
    format_magnitude(duration.as_nanos())
}

/// Formats signed nanoseconds as Go's `Duration.String` (`-1m30s`), as metav1.Duration
/// writes a protobuf duration.
pub fn format_nanos(nanos: i64) -> String {
    let magnitude = format_magnitude(u128::from(nanos.unsigned_abs()));
    if nanos < 0 {
        format!("-{magnitude}")
    } else {
        magnitude
    }
}

/// `Duration.String` of a magnitude in nanoseconds.
fn format_magnitude(nanos: u128) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}\u{b5}s", decimal(nanos, 3));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", decimal(nanos, 6));
    }
    let seconds = decimal(nanos % 60_000_000_000, 9);
    let minutes = nanos / 60_000_000_000;
    if minutes == 0 {
        return format!("{seconds}s");
    }
    let hours = minutes / 60;
    if hours == 0 {
        return format!("{minutes}m{seconds}s");
    }
    format!("{hours}h{}m{seconds}s", minutes % 60)
}

/// `value / 10^places` with the fraction's trailing zeros (and a bare point) dropped.
fn decimal(value: u128, places: u32) -> String {
    let scale = 10u128.pow(places);
    let (whole, fraction) = (value / scale, value % scale);
    if fraction == 0 {
        return whole.to_string();
    }
    let digits = format!("{fraction:0width$}", width = places as usize);
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

/// Quotes as Go's time package does in its errors: `"` and `\` escaped, bytes of control or
/// non-ASCII characters as `\xNN`.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c.is_ascii() && !c.is_ascii_control() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{byte:02x}"));
            }
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_go_syntax() {
        assert_eq!(parse_nanos("0").unwrap(), 0);
        assert_eq!(parse_nanos("60s").unwrap(), 60_000_000_000);
        assert_eq!(parse_nanos("1m30s").unwrap(), 90_000_000_000);
        assert_eq!(parse_nanos("1.5h").unwrap(), 5_400_000_000_000);
        assert_eq!(parse_nanos(".5s").unwrap(), 500_000_000);
        assert_eq!(parse_nanos("-2ms").unwrap(), -2_000_000);
        assert_eq!(parse_nanos("3\u{b5}s").unwrap(), 3_000);
        assert_eq!(parse_nanos("-9223372036854775808ns").unwrap(), i64::MIN);
    }

    #[test]
    fn errors_read_as_go() {
        let message = |s: &str| parse_nanos(s).unwrap_err().to_string();
        assert_eq!(message(""), r#"time: invalid duration """#);
        assert_eq!(message("abc"), r#"time: invalid duration "abc""#);
        assert_eq!(message("5"), r#"time: missing unit in duration "5""#);
        assert_eq!(message("5x"), r#"time: unknown unit "x" in duration "5x""#);
        assert_eq!(message("."), r#"time: invalid duration ".""#);
        assert_eq!(
            message("9223372036854775808ns"),
            r#"time: invalid duration "9223372036854775808ns""#
        );
        assert_eq!(
            message("1\u{e9}"),
            r#"time: unknown unit "\xc3\xa9" in duration "1\xc3\xa9""#
        );
    }

    #[test]
    fn formats_as_go() {
        let f = |nanos: u64| format(Duration::from_nanos(nanos));
        assert_eq!(f(0), "0s");
        assert_eq!(f(1), "1ns");
        assert_eq!(f(1_500), "1.5\u{b5}s");
        assert_eq!(f(300_000_000), "300ms");
        assert_eq!(f(1_500_000_000), "1.5s");
        assert_eq!(f(60_000_000_000), "1m0s");
        assert_eq!(f(300_000_000_000), "5m0s");
        assert_eq!(f(7_200_000_000_000), "2h0m0s");
        assert_eq!(f(3_723_000_000_000), "1h2m3s");
    }

    #[test]
    fn formats_signed_nanos_as_go() {
        let cases = [
            (0, "0s"),
            (1, "1ns"),
            (1_100, "1.1\u{b5}s"),
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
            assert_eq!(format_nanos(nanos), want, "{nanos}");
        }
    }
}
