//! Resource quantities (k8s.io/apimachinery/pkg/api/resource): `500m`, `1.5Gi`, `1e3`,
//! parsed, compared, added and printed as upstream's `Quantity` does them.
//!
//! A quantity is an exact decimal, `mantissa × 10^exponent` with an `i128` mantissa, never a
//! float: quota, LimitRange and QoS compare sums such as `0.1 + 0.2` against `300m`, and a
//! rounding error would admit or refuse the wrong object.
//!
//! Parsing rounds up (away from zero) to nano precision (10^-9) and caps binary quantities
//! at 2^63-1, as ParseQuantity does. Upstream's decimals are unbounded; ours hold 38
//! significant digits (about 1.7e29 at nano precision, far beyond the int64 range
//! Kubernetes relies on):
//! - parsing a number with more significant digits fails with [`QuantityError::Numeric`]
//!   (binary quantities that large are capped first, as upstream caps them);
//! - a sum or product with more digits keeps its 38 leading ones, rounded away from zero,
//!   instead of wrapping or panicking.

use std::cmp::Ordering;
use std::fmt;
use std::ops::{Add, AddAssign, Mul, Neg, Sub, SubAssign};
use std::str::FromStr;

use serde_json::Value;

/// Parsed values are rounded up to a multiple of 10^NANO.
const NANO: i64 = -9;

/// The largest binary (`Ki`..`Ei`) quantity parsing keeps; larger ones are capped to it.
const MAX_BINARY: i128 = i64::MAX as i128;

/// The significant digits an `i128` mantissa always holds.
const MAX_DIGITS: usize = 38;

/// Decimal SI suffixes and their powers of ten.
const DECIMAL_SUFFIXES: [(&str, i64); 10] = [
    ("n", -9),
    ("u", -6),
    ("m", -3),
    ("", 0),
    ("k", 3),
    ("M", 6),
    ("G", 9),
    ("T", 12),
    ("P", 15),
    ("E", 18),
];

/// Binary SI suffixes, indexed by their power of 1024.
const BINARY_SUFFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// How a quantity prints: chosen by the suffix it was parsed with, kept through arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// `12e6`: a power of ten written as an exponent.
    DecimalExponent,
    /// `12Mi`: powers of 1024.
    BinarySI,
    /// `12M`: powers of 1000 (and `m`, `u`, `n`).
    DecimalSI,
}

/// Why a text is not a quantity; the messages are upstream's errors.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// The text is not a number followed by a suffix.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    FormatWrong,
    /// The number cannot be held: here, more than 38 significant digits.
    #[error("unable to parse numeric part of quantity")]
    Numeric,
    /// The suffix is none of the known ones.
    #[error("unable to parse quantity's suffix")]
    Suffix,
}

/// An exact resource quantity. Equality and order compare values, whatever the format.
#[derive(Clone, Debug)]
pub struct Quantity {
    /// The value is `mantissa × 10^exponent`; the mantissa has no trailing zeros, and zero
    /// has exponent 0, so each value has one representation.
    mantissa: i128,
    exponent: i64,
    format: Format,
    /// The parsed text, when upstream keeps it as the quantity's string (it judged it
    /// canonical); arithmetic drops it.
    text: Option<Box<str>>,
}

/// A parsed text's pieces: sign, integer digits (leading zeros removed, `0` when none),
/// fraction digits and suffix.
struct Parts<'a> {
    negative: bool,
    whole: &'a str,
    fraction: &'a str,
    suffix: &'a str,
}

/// What a suffix means: base 10 or 2, the power, and the format it gives.
struct Suffix {
    binary: bool,
    power: i32,
    format: Format,
}

impl Quantity {
    /// `value` units, printed in `format`.
    pub fn new(value: i64, format: Format) -> Quantity {
        Quantity::from_parts(value.into(), 0, format)
    }

    /// `value` thousandths, printed in `format`.
    pub fn new_milli(value: i64, format: Format) -> Quantity {
        Quantity::from_parts(value.into(), -3, format)
    }

    /// Exactly `mantissa × 10^exponent` (no rounding to nano precision), printed in
    /// `format`: upstream's NewScaledQuantity and NewDecimalQuantity.
    pub fn new_scaled(mantissa: i128, exponent: i32, format: Format) -> Quantity {
        Quantity::from_parts(mantissa, exponent.into(), format)
    }

    /// Zero, printed in `format` (a sum starting from it takes the first addend's format).
    pub fn zero(format: Format) -> Quantity {
        Quantity::from_parts(0, 0, format)
    }

    /// `mantissa × 10^exponent`.
    fn from_parts(mantissa: i128, exponent: i64, format: Format) -> Quantity {
        let (mantissa, exponent) = normalize(mantissa, exponent);
        Quantity {
            mantissa,
            exponent,
            format,
            text: None,
        }
    }

    /// Parses a quantity as ParseQuantity does: no surrounding spaces, a number (`1`, `1.5`,
    /// `.5`, `1.`) and a suffix (`m`, `Ki`, `e3`, ...), rounded up to nano precision.
    pub fn parse(text: &str) -> Result<Quantity, QuantityError> {
        if text.is_empty() {
            return Err(QuantityError::FormatWrong);
        }
        if text == "0" {
            let mut zero = Quantity::zero(Format::DecimalSI);
            zero.text = Some(text.into());
            return Ok(zero);
        }
        let parts = split(text)?;
        let suffix = interpret(parts.suffix).ok_or(QuantityError::Suffix)?;
        let mut quantity = exact_value(&parts, &suffix)?;
        if keeps_text(&parts, &suffix) {
            quantity.text = Some(text.into());
        }
        Ok(quantity)
    }

    /// A quantity field's exact value, a string (spaces trimmed) or a number as JSON decoding
    /// reads it; `None` when it is neither (absent, null) or does not parse.
    pub fn of_field(value: &Value) -> Option<Quantity> {
        match value {
            Value::String(_) | Value::Number(_) => Quantity::from_json(value).ok(),
            _ => None,
        }
    }

    /// A quantity field's JSON value as UnmarshalJSON reads it: a string (spaces trimmed)
    /// or a number; `null` is zero.
    pub fn from_json(value: &Value) -> Result<Quantity, QuantityError> {
        match value {
            Value::String(text) => Quantity::parse(text.trim()),
            Value::Number(number) => Quantity::parse(&number.to_string()),
            Value::Null => Ok(Quantity::zero(Format::DecimalSI)),
            _ => Err(QuantityError::FormatWrong),
        }
    }

    /// How the quantity prints.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The same value, printed in `format`.
    pub fn with_format(mut self, format: Format) -> Quantity {
        self.format = format;
        self.text = None;
        self
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// -1, 0 or 1 as the value is negative, zero or positive.
    pub fn signum(&self) -> i32 {
        self.mantissa.signum() as i32
    }

    /// The value in units, rounded up (away from zero) as upstream's Value(); values
    /// beyond the i64 range saturate.
    pub fn value(&self) -> i64 {
        self.scaled_value(0)
    }

    /// The value in thousandths, rounded up (away from zero) as upstream's MilliValue();
    /// values beyond the i64 range saturate.
    pub fn milli_value(&self) -> i64 {
        self.scaled_value(-3)
    }

    /// The value in units of 10^`scale`, rounded up (away from zero), saturating at the
    /// i64 range.
    pub fn scaled_value(&self, scale: i32) -> i64 {
        let scale = i64::from(scale);
        let scaled = if self.exponent >= scale {
            pow10(self.exponent - scale).and_then(|f| self.mantissa.checked_mul(f))
        } else {
            Some(coarsen((self.mantissa, self.exponent), scale).0)
        };
        let saturated = if self.mantissa < 0 {
            i64::MIN
        } else {
            i64::MAX
        };
        scaled
            .and_then(|v| i64::try_from(v).ok())
            .unwrap_or(saturated)
    }

    /// The value rounded up (away from zero) to a multiple of 10^`scale`, as upstream's
    /// RoundUp (quota counts claims' storage in whole bytes this way).
    pub fn round_up(&self, scale: i32) -> Quantity {
        let scale = i64::from(scale);
        if self.exponent >= scale {
            return self.clone();
        }
        let (mantissa, exponent) = coarsen(self.parts(), scale);
        Quantity::from_parts(mantissa, exponent, self.format)
    }

    /// The value as a float, for ratios and display: the mantissa times Go's math.Pow10 of
    /// the exponent, as upstream's AsApproximateFloat64 computes it.
    pub fn as_approximate_f64(&self) -> f64 {
        let base = self.mantissa as f64;
        if self.exponent == 0 {
            return base;
        }
        base * go_pow10(self.exponent)
    }

    /// The canonical text, as upstream's CanonicalizeBytes builds it: the largest suffix of
    /// the format that keeps the number whole (`1536Mi`, `100m`, `1e3`, `1k`). A binary
    /// quantity that is not a whole number of units, or below 1024, prints as decimal.
    pub fn canonical(&self) -> String {
        if self.is_zero() {
            return "0".into();
        }
        if self.format == Format::BinarySI
            && self.exponent >= 0
            && let Some(text) = self.binary_text()
        {
            return text;
        }
        self.decimal_text()
    }

    /// The binary form, when the value is a whole number of at least 1024 in magnitude
    /// (and fits an i128).
    fn binary_text(&self) -> Option<String> {
        let mut value = pow10(self.exponent)?.checked_mul(self.mantissa)?;
        if value.unsigned_abs() < 1024 {
            return None;
        }
        let mut power = 0;
        while value.unsigned_abs() >= 1024 && value % 1024 == 0 {
            value /= 1024;
            power += 1;
        }
        // Upstream knows no suffix past Ei and then prints none.
        let suffix = BINARY_SUFFIXES.get(power).copied().unwrap_or_default();
        Some(format!("{value}{suffix}"))
    }

    /// The decimal form: the exponent lowered to a multiple of three, then a suffix (or
    /// none, as upstream, for powers past E) or `e<exponent>`.
    fn decimal_text(&self) -> String {
        let shift = self.exponent.rem_euclid(3);
        let exponent = self.exponent - shift;
        let mut text = self.mantissa.to_string();
        text.extend(std::iter::repeat_n('0', shift as usize));
        match self.format {
            Format::DecimalExponent if exponent != 0 => format!("{text}e{exponent}"),
            Format::DecimalExponent => text,
            _ => {
                let suffix = DECIMAL_SUFFIXES.iter().find(|(_, p)| *p == exponent);
                text + suffix.map(|(s, _)| *s).unwrap_or_default()
            }
        }
    }

    /// The value and exponent, for arithmetic.
    fn parts(&self) -> (i128, i64) {
        (self.mantissa, self.exponent)
    }

    /// A result of arithmetic on `self`: upstream keeps the receiver's format unless the
    /// receiver is zero, when it takes the other operand's.
    fn result(&self, other: &Quantity, (mantissa, exponent): (i128, i64)) -> Quantity {
        let format = if self.is_zero() {
            other.format
        } else {
            self.format
        };
        Quantity::from_parts(mantissa, exponent, format)
    }
}

/// Splits a text as upstream's scanner does; a text that is not a number followed by
/// suffix letters and an optional signed exponent is wrongly formatted.
fn split(text: &str) -> Result<Parts<'_>, QuantityError> {
    let bytes = text.as_bytes();
    let negative = bytes.first() == Some(&b'-');
    let mut pos = usize::from(matches!(bytes.first(), Some(b'-' | b'+')));
    while bytes.get(pos) == Some(&b'0') {
        pos += 1;
    }
    let start = pos;
    pos += digits_at(bytes, pos);
    let whole = if pos == start { "0" } else { &text[start..pos] };
    let mut fraction = "";
    if bytes.get(pos) == Some(&b'.') {
        let start = pos + 1;
        pos = start + digits_at(bytes, start);
        fraction = &text[start..pos];
    }
    let suffix_start = pos;
    while bytes.get(pos).is_some_and(|c| b"eEinumkKMGTP".contains(c)) {
        pos += 1;
    }
    if matches!(bytes.get(pos), Some(b'-' | b'+')) {
        pos += 1;
    }
    pos += digits_at(bytes, pos);
    if pos != bytes.len() {
        return Err(QuantityError::FormatWrong);
    }
    Ok(Parts {
        negative,
        whole,
        fraction,
        suffix: &text[suffix_start..],
    })
}

/// How many ASCII digits start at `pos`.
fn digits_at(bytes: &[u8], pos: usize) -> usize {
    let rest = bytes.get(pos..).unwrap_or_default();
    rest.iter().take_while(|c| c.is_ascii_digit()).count()
}

/// The meaning of a suffix, or `None` when it has none. An exponent wider than 32 bits
/// wraps as upstream's conversion does.
fn interpret(suffix: &str) -> Option<Suffix> {
    if let Some((_, power)) = DECIMAL_SUFFIXES.iter().find(|(s, _)| *s == suffix) {
        return Some(Suffix {
            binary: false,
            power: *power as i32,
            format: Format::DecimalSI,
        });
    }
    if let Some(index) = BINARY_SUFFIXES[1..].iter().position(|s| *s == suffix) {
        return Some(Suffix {
            binary: true,
            power: 10 * (index as i32 + 1),
            format: Format::BinarySI,
        });
    }
    let exponent = suffix.strip_prefix(['e', 'E']).filter(|e| !e.is_empty())?;
    Some(Suffix {
        binary: false,
        power: exponent.parse::<i64>().ok()? as i32,
        format: Format::DecimalExponent,
    })
}

/// The exact value of the parsed pieces, rounded up to nano precision; binary values are
/// capped at 2^63-1 and print as decimal when below one.
fn exact_value(parts: &Parts<'_>, suffix: &Suffix) -> Result<Quantity, QuantityError> {
    let digits = format!("{}{}", parts.whole, parts.fraction);
    let fraction = parts.fraction.len() as i64;
    let (digits, exponent) = if suffix.binary {
        (times_power_of_two(&digits, suffix.power as u32), -fraction)
    } else {
        (digits, i64::from(suffix.power) - fraction)
    };
    let magnitude = match round_to_nano(&digits, exponent) {
        Some((mantissa, exponent)) => Quantity::from_parts(mantissa, exponent, suffix.format),
        None if !suffix.binary => return Err(QuantityError::Numeric),
        // More digits than an i128 holds at nano precision is far past the binary cap.
        None => Quantity::from_parts(MAX_BINARY, 0, suffix.format),
    };
    let magnitude = match suffix.binary {
        true if magnitude > MAX_BINARY => Quantity::from_parts(MAX_BINARY, 0, suffix.format),
        // A binary fraction below one would round to nothing in binary: print it as decimal.
        true if !magnitude.is_zero() && magnitude < 1 => magnitude.with_format(Format::DecimalSI),
        _ => magnitude,
    };
    Ok(if parts.negative {
        -magnitude
    } else {
        magnitude
    })
}

/// `digits × 10^exponent` rounded up to a multiple of 10^-9: the magnitude's mantissa and
/// exponent, or `None` when more than 38 significant digits remain.
fn round_to_nano(digits: &str, exponent: i64) -> Option<(i128, i64)> {
    let (kept, dropped) = if exponent < NANO {
        let drop = usize::try_from(NANO - exponent).unwrap_or(usize::MAX);
        digits.split_at(digits.len().saturating_sub(drop))
    } else {
        (digits, "")
    };
    let exponent = exponent.max(NANO);
    let round_up = dropped.bytes().any(|b| b != b'0');
    let significant = kept.trim_start_matches('0');
    let (significant, exponent) = if round_up {
        (significant, exponent)
    } else {
        let trimmed = significant.trim_end_matches('0');
        let zeros = (significant.len() - trimmed.len()) as i64;
        (trimmed, exponent + zeros)
    };
    if significant.len() > MAX_DIGITS {
        return None;
    }
    let mantissa: i128 = significant.parse().unwrap_or(0);
    Some((mantissa + i128::from(round_up), exponent))
}

/// A decimal digit string times 2^`power` (`power` at most 60), as a digit string.
fn times_power_of_two(digits: &str, power: u32) -> String {
    let factor = 1u128 << power;
    let mut out = Vec::with_capacity(digits.len() + 20);
    let mut carry = 0u128;
    for digit in digits.bytes().rev() {
        let product = u128::from(digit - b'0') * factor + carry;
        out.push(b'0' + (product % 10) as u8);
        carry = product / 10;
    }
    while carry > 0 {
        out.push(b'0' + (carry % 10) as u8);
        carry /= 10;
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// Whether upstream keeps the parsed text as the quantity's string: its fast path
/// (at most 18 digits, nano precision, fits an int64) with a text it judges canonical.
fn keeps_text(parts: &Parts<'_>, suffix: &Suffix) -> bool {
    let digits = parts.whole.len() + parts.fraction.len();
    let power = i64::from(suffix.power);
    let precision = match (suffix.binary, parts.fraction.is_empty()) {
        (false, _) => 18 - digits as i64,
        (true, true) => 15 - parts.whole.len() as i64 - power * 3 / 10 - 1,
        (true, false) => -1,
    };
    let scale = if suffix.binary { 0 } else { power } - parts.fraction.len() as i64;
    if precision < 0 || scale < NANO {
        return false;
    }
    let shifted = format!("{}{}", parts.whole, parts.fraction);
    let Ok(value) = shifted.parse::<i64>() else {
        return false;
    };
    if suffix.binary {
        let fits = value.checked_mul(1i64 << suffix.power).is_some();
        fits && power % 10 == 0 && value & 7 != 0
    } else {
        scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
    }
}

/// The mantissa without trailing zeros (moved into the exponent); zero has exponent 0.
fn normalize(mut mantissa: i128, mut exponent: i64) -> (i128, i64) {
    if mantissa == 0 {
        return (0, 0);
    }
    while mantissa % 10 == 0 {
        mantissa /= 10;
        exponent += 1;
    }
    (mantissa, exponent)
}

/// 10^`n`, when it fits an i128.
fn pow10(n: i64) -> Option<i128> {
    10i128.checked_pow(u32::try_from(n).ok()?)
}

/// `mantissa × 10^exponent` rounded away from zero to a multiple of 10^`to` (`to` at least
/// `exponent`).
fn coarsen((mantissa, exponent): (i128, i64), to: i64) -> (i128, i64) {
    match pow10(to - exponent) {
        Some(divisor) => {
            let remainder = mantissa % divisor;
            (mantissa / divisor + remainder.signum(), to)
        }
        None => (mantissa.signum(), to),
    }
}

/// `a + b`, exact when the sum has at most 38 significant digits (about); otherwise the
/// finer operand gives up its lowest digits, rounded away from zero, until the sum fits.
fn add_parts(mut a: (i128, i64), mut b: (i128, i64)) -> (i128, i64) {
    loop {
        if a.0 == 0 {
            return b;
        }
        if b.0 == 0 {
            return a;
        }
        let exponent = a.1.min(b.1);
        let aligned = |(m, e): (i128, i64)| pow10(e - exponent)?.checked_mul(m);
        if let Some(sum) = aligned(a)
            .zip(aligned(b))
            .and_then(|(x, y)| x.checked_add(y))
        {
            return (sum, exponent);
        }
        match a.1.cmp(&b.1) {
            Ordering::Less => a = coarsen(a, (a.1 + 1).max(b.1 - MAX_DIGITS as i64)),
            Ordering::Greater => b = coarsen(b, (b.1 + 1).max(a.1 - MAX_DIGITS as i64)),
            Ordering::Equal => (a, b) = (coarsen(a, a.1 + 1), coarsen(b, b.1 + 1)),
        }
    }
}

/// `a × factor`, exact when the product fits an i128; otherwise `a` gives up its lowest
/// digits, rounded away from zero, until it does.
fn mul_parts(mut a: (i128, i64), factor: i64) -> (i128, i64) {
    loop {
        if let Some(product) = a.0.checked_mul(factor.into()) {
            return (product, a.1);
        }
        a = coarsen(a, a.1 + 1);
    }
}

/// The magnitude order of two nonzero values `m × 10^e`.
fn cmp_magnitude(a: (u128, i64), b: (u128, i64)) -> Ordering {
    let scaled = |(m, e): (u128, i64), to: i64| {
        10u128
            .checked_pow(u32::try_from(e - to).ok()?)?
            .checked_mul(m)
    };
    match a.1.cmp(&b.1) {
        Ordering::Equal => a.0.cmp(&b.0),
        // The coarser value scaled to the finer exponent; past u128 it is the larger.
        Ordering::Greater => scaled(a, b.1).map_or(Ordering::Greater, |x| x.cmp(&b.0)),
        Ordering::Less => scaled(b, a.1).map_or(Ordering::Less, |y| a.0.cmp(&y)),
    }
}

/// Go's math.Pow10: table products, infinite past 10^308 and zero below 10^-323.
fn go_pow10(n: i64) -> f64 {
    let power = |k: i64| format!("1e{k}").parse::<f64>().unwrap_or_default();
    match n {
        0..=308 => power(n / 32 * 32) * power(n % 32),
        -323..=-1 => power(n / 32 * 32) / power(-n % 32),
        n if n > 308 => f64::INFINITY,
        _ => 0.0,
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Quantity) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Quantity) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Quantity) -> Ordering {
        let signs = self.signum().cmp(&other.signum());
        if signs != Ordering::Equal || self.is_zero() {
            return signs;
        }
        let magnitude = |q: &Quantity| (q.mantissa.unsigned_abs(), q.exponent);
        let order = cmp_magnitude(magnitude(self), magnitude(other));
        if self.mantissa < 0 {
            order.reverse()
        } else {
            order
        }
    }
}

impl PartialEq<i128> for Quantity {
    fn eq(&self, other: &i128) -> bool {
        self.partial_cmp(other) == Some(Ordering::Equal)
    }
}

/// A quantity against a whole number, as upstream's CmpInt64.
impl PartialOrd<i128> for Quantity {
    fn partial_cmp(&self, other: &i128) -> Option<Ordering> {
        Some(self.cmp(&Quantity::from_parts(*other, 0, self.format)))
    }
}

impl Add<&Quantity> for &Quantity {
    type Output = Quantity;

    fn add(self, other: &Quantity) -> Quantity {
        self.result(other, add_parts(self.parts(), other.parts()))
    }
}

impl Add for Quantity {
    type Output = Quantity;

    fn add(self, other: Quantity) -> Quantity {
        &self + &other
    }
}

impl AddAssign<&Quantity> for Quantity {
    fn add_assign(&mut self, other: &Quantity) {
        *self = &*self + other;
    }
}

impl Sub<&Quantity> for &Quantity {
    type Output = Quantity;

    fn sub(self, other: &Quantity) -> Quantity {
        self.result(other, add_parts(self.parts(), (-other).parts()))
    }
}

impl Sub for Quantity {
    type Output = Quantity;

    fn sub(self, other: Quantity) -> Quantity {
        &self - &other
    }
}

impl SubAssign<&Quantity> for Quantity {
    fn sub_assign(&mut self, other: &Quantity) {
        *self = &*self - other;
    }
}

impl Neg for &Quantity {
    type Output = Quantity;

    fn neg(self) -> Quantity {
        // i128::MIN has no positive counterpart: give up its lowest digit first.
        let (mantissa, exponent) = match self.mantissa.checked_neg() {
            Some(negated) => (negated, self.exponent),
            None => {
                let (m, e) = coarsen(self.parts(), self.exponent + 1);
                (-m, e)
            }
        };
        Quantity::from_parts(mantissa, exponent, self.format)
    }
}

impl Neg for Quantity {
    type Output = Quantity;

    fn neg(self) -> Quantity {
        -&self
    }
}

/// A quantity times a whole number (upstream's Mul), keeping the format; a product past 38
/// digits keeps its leading ones, rounded away from zero.
impl Mul<i64> for &Quantity {
    type Output = Quantity;

    fn mul(self, factor: i64) -> Quantity {
        let (mantissa, exponent) = mul_parts(self.parts(), factor);
        Quantity::from_parts(mantissa, exponent, self.format)
    }
}

impl Mul<i64> for Quantity {
    type Output = Quantity;

    fn mul(self, factor: i64) -> Quantity {
        &self * factor
    }
}

impl FromStr for Quantity {
    type Err = QuantityError;

    fn from_str(text: &str) -> Result<Quantity, QuantityError> {
        Quantity::parse(text)
    }
}

/// Upstream's String(): the parsed text when it kept it, the canonical text otherwise.
impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.text {
            Some(text) => f.write_str(text),
            None => f.write_str(&self.canonical()),
        }
    }
}
