//! Quantity parsing, printing and arithmetic, with upstream's tables
//! (k8s.io/apimachinery/pkg/api/resource/quantity_test.go) and cases where float arithmetic
//! would be off.

use std::cmp::Ordering;

use kapi_apimachinery::quantity::{Format, Quantity, QuantityError};

fn q(text: &str) -> Quantity {
    Quantity::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// Exactly `mantissa × 10^exponent` in `format`.
fn dec(mantissa: i128, exponent: i32, format: Format) -> Quantity {
    Quantity::new_scaled(mantissa, exponent, format)
}

use Format::{BinarySI, DecimalExponent, DecimalSI};

/// TestQuantityParse's table: input, expected value and format.
fn parse_table() -> Vec<(&'static str, Quantity)> {
    let max = dec(i64::MAX.into(), 0, BinarySI);
    vec![
        ("0", dec(0, 0, DecimalSI)),
        ("0n", dec(0, 0, DecimalSI)),
        ("0u", dec(0, 0, DecimalSI)),
        ("0m", dec(0, 0, DecimalSI)),
        ("0Ki", dec(0, 0, BinarySI)),
        ("0k", dec(0, 0, DecimalSI)),
        ("0Mi", dec(0, 0, BinarySI)),
        ("0M", dec(0, 0, DecimalSI)),
        ("0Gi", dec(0, 0, BinarySI)),
        ("0G", dec(0, 0, DecimalSI)),
        ("0Ti", dec(0, 0, BinarySI)),
        ("0T", dec(0, 0, DecimalSI)),
        ("1", dec(1, 0, DecimalSI)),
        ("1Ki", dec(1024, 0, BinarySI)),
        ("8Ki", dec(8 * 1024, 0, BinarySI)),
        ("7Mi", dec(7 << 20, 0, BinarySI)),
        ("6Gi", dec(6 << 30, 0, BinarySI)),
        ("5Ti", dec(5 << 40, 0, BinarySI)),
        ("4Pi", dec(4 << 50, 0, BinarySI)),
        ("3Ei", dec(3 << 60, 0, BinarySI)),
        ("10Ti", dec(10 << 40, 0, BinarySI)),
        ("100Ti", dec(100 << 40, 0, BinarySI)),
        ("5n", dec(5, -9, DecimalSI)),
        ("4u", dec(4, -6, DecimalSI)),
        ("3m", dec(3, -3, DecimalSI)),
        ("9", dec(9, 0, DecimalSI)),
        ("8k", dec(8, 3, DecimalSI)),
        ("50k", dec(5, 4, DecimalSI)),
        ("7M", dec(7, 6, DecimalSI)),
        ("6G", dec(6, 9, DecimalSI)),
        ("5T", dec(5, 12, DecimalSI)),
        ("40T", dec(4, 13, DecimalSI)),
        ("300T", dec(3, 14, DecimalSI)),
        ("2P", dec(2, 15, DecimalSI)),
        ("1E", dec(1, 18, DecimalSI)),
        ("1E-3", dec(1, -3, DecimalExponent)),
        ("1e3", dec(1, 3, DecimalExponent)),
        ("1E6", dec(1, 6, DecimalExponent)),
        ("1e9", dec(1, 9, DecimalExponent)),
        ("1E12", dec(1, 12, DecimalExponent)),
        ("1e15", dec(1, 15, DecimalExponent)),
        ("1E18", dec(1, 18, DecimalExponent)),
        ("1e14", dec(1, 14, DecimalExponent)),
        ("1e13", dec(1, 13, DecimalExponent)),
        ("100.035k", dec(100035, 0, DecimalSI)),
        ("0.001", dec(1, -3, DecimalSI)),
        ("0.0005k", dec(5, -1, DecimalSI)),
        ("0.005", dec(5, -3, DecimalSI)),
        ("0.05", dec(5, -2, DecimalSI)),
        ("0.5", dec(5, -1, DecimalSI)),
        ("0.00050k", dec(5, -1, DecimalSI)),
        ("0.00500", dec(5, -3, DecimalSI)),
        ("0.05000", dec(5, -2, DecimalSI)),
        ("0.50000", dec(5, -1, DecimalSI)),
        ("0.5e0", dec(5, -1, DecimalExponent)),
        ("0.5e-1", dec(5, -2, DecimalExponent)),
        ("0.5e-2", dec(5, -3, DecimalExponent)),
        ("10.035M", dec(10035, 3, DecimalSI)),
        ("1.2e3", dec(12, 2, DecimalExponent)),
        ("1.3E+6", dec(13, 5, DecimalExponent)),
        ("1.40e9", dec(14, 8, DecimalExponent)),
        ("1.53E12", dec(153, 10, DecimalExponent)),
        ("1.6e15", dec(16, 14, DecimalExponent)),
        ("1.7E18", dec(17, 17, DecimalExponent)),
        ("9.01", dec(901, -2, DecimalSI)),
        ("8.1k", dec(81, 2, DecimalSI)),
        ("7.123456M", dec(7123456, 0, DecimalSI)),
        ("6.987654321G", dec(6987654321, 0, DecimalSI)),
        ("5.444T", dec(5444, 9, DecimalSI)),
        ("40.1T", dec(401, 11, DecimalSI)),
        ("300.2T", dec(3002, 11, DecimalSI)),
        ("2.5P", dec(25, 14, DecimalSI)),
        ("1.01E", dec(101, 16, DecimalSI)),
        // Rounded up to nano precision.
        ("3.001n", dec(4, -9, DecimalSI)),
        ("1.1E-9", dec(2, -9, DecimalExponent)),
        ("0.0000000001", dec(1, -9, DecimalSI)),
        ("0.0000000005", dec(1, -9, DecimalSI)),
        ("0.00000000050", dec(1, -9, DecimalSI)),
        ("0.5e-9", dec(1, -9, DecimalExponent)),
        ("0.9n", dec(1, -9, DecimalSI)),
        ("0.00000012345", dec(124, -9, DecimalSI)),
        ("0.00000012354", dec(124, -9, DecimalSI)),
        // Binary values are capped at 2^63-1.
        ("9Ei", max.clone()),
        ("9223372036854775807Ki", max),
        ("12E", dec(12, 18, DecimalSI)),
        ("100.035Ki", dec(10243584, -2, BinarySI)),
        ("0.5Mi", dec(512 * 1024, 0, BinarySI)),
        ("0.05Gi", dec(536870912, -1, BinarySI)),
        ("0.025Ti", dec(274877906944, -1, BinarySI)),
        // A binary fraction below one rounds up and becomes decimal.
        ("0.000000000001Ki", dec(2, -9, DecimalSI)),
        (".001", dec(1, -3, DecimalSI)),
        (".0001k", dec(100, -3, DecimalSI)),
        ("1.", dec(1, 0, DecimalSI)),
        ("1.G", dec(1, 9, DecimalSI)),
    ]
}

#[test]
fn parse_table_values_and_formats() {
    for (input, want) in parse_table() {
        for (text, want) in [
            (input.to_string(), want.clone()),
            (format!("+{input}"), want.clone()),
            (format!("-{input}"), -&want),
        ] {
            let got = q(&text);
            assert_eq!(got.cmp(&want), Ordering::Equal, "{text}: {got} vs {want}");
            assert_eq!(got.format(), want.format(), "{text}");
        }
    }
}

#[test]
fn parse_rejects_as_upstream() {
    let wrong = QuantityError::FormatWrong;
    let suffix = QuantityError::Suffix;
    for (text, error) in [
        ("", &wrong),
        ("1.1.M", &wrong),
        ("1+1.0M", &wrong),
        ("0.1mi", &suffix),
        ("0.1am", &wrong),
        ("aoeu", &wrong),
        (".5i", &suffix),
        ("1i", &suffix),
        ("-3.01i", &suffix),
        ("-3.01e-", &suffix),
        (" 1", &wrong),
        ("1 ", &wrong),
        ("1Qi", &wrong),
        ("1KK", &suffix),
        ("e", &suffix),
        ("1e99999999999999999999", &suffix),
    ] {
        assert_eq!(Quantity::parse(text).as_ref(), Err(error), "{text:?}");
    }
    assert_eq!(
        QuantityError::FormatWrong.to_string(),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert_eq!(
        QuantityError::Numeric.to_string(),
        "unable to parse numeric part of quantity"
    );
    assert_eq!(
        QuantityError::Suffix.to_string(),
        "unable to parse quantity's suffix"
    );
    // Beyond 38 significant digits is kapi's limit.
    assert_eq!(
        Quantity::parse("123456789012345678901234567890.123456789").err(),
        Some(QuantityError::Numeric)
    );
}

#[test]
fn odd_numbers_parse_as_upstream_scanner_reads_them() {
    for text in [".", "-.", "+", "-", "00", "0.", "+0"] {
        assert!(q(text).is_zero(), "{text}");
    }
    // Long texts: many fraction digits only count as far as nano precision.
    assert_eq!(
        q("1.0000000000000000000000000000000000000000000001"),
        q("1000000001n")
    );
    assert_eq!(
        q("0.0000000000000000000000000000000000000000000000"),
        q("0")
    );
    assert_eq!(q(&format!("1{}", "0".repeat(60))), q("1e60"));
    assert_eq!(q("1e100").canonical(), "10e99");
    assert_eq!(q("1e100").to_string(), "10e99");
    assert_eq!(q("1e99").to_string(), "1e99");
    // Binary values past what an i128 holds are still capped.
    assert_eq!(
        q(&format!("{}Ei", "9".repeat(50))).to_string(),
        "9223372036854775807"
    );
}

#[test]
fn quantity_string() {
    // TestQuantityString: value, canonical text, and an alternate spelling of it.
    let table: &[(Quantity, &str, &str)] = &[
        (dec(1 << 30, 0, BinarySI), "1Gi", "1024Mi"),
        (dec(300 << 20, 0, BinarySI), "300Mi", "307200Ki"),
        (dec(6 * 1024, 0, BinarySI), "6Ki", ""),
        (dec(1001 << 30, 0, BinarySI), "1001Gi", "1025024Mi"),
        (dec(1 << 40, 0, BinarySI), "1Ti", "1024Gi"),
        (dec(5, 0, BinarySI), "5", "5000m"),
        (dec(500, -3, BinarySI), "500m", "0.5"),
        (dec(1, 9, DecimalSI), "1G", "1000M"),
        (dec(1000, 6, DecimalSI), "1G", "0.001T"),
        (dec(1000000, 3, DecimalSI), "1G", ""),
        (dec(1000000000, 0, DecimalSI), "1G", ""),
        (dec(1, -3, DecimalSI), "1m", "1000u"),
        (dec(80, -3, DecimalSI), "80m", ""),
        (dec(1080, -3, DecimalSI), "1080m", "1.08"),
        (dec(108, -2, DecimalSI), "1080m", "1080000000n"),
        (dec(10800, -4, DecimalSI), "1080m", ""),
        (dec(300, 6, DecimalSI), "300M", ""),
        (dec(1, 12, DecimalSI), "1T", ""),
        (dec(1234567, 6, DecimalSI), "1234567M", ""),
        (dec(1234567, -3, BinarySI), "1234567m", ""),
        (dec(3, 3, DecimalSI), "3k", ""),
        (dec(1025, 0, BinarySI), "1025", ""),
        (dec(0, 0, DecimalSI), "0", ""),
        (dec(0, 0, BinarySI), "0", ""),
        (dec(1, 9, DecimalExponent), "1e9", ".001e12"),
        (dec(1, -3, DecimalExponent), "1e-3", "0.001e0"),
        (dec(1, -9, DecimalExponent), "1e-9", "1000e-12"),
        (dec(80, -3, DecimalExponent), "80e-3", ""),
        (dec(300, 6, DecimalExponent), "300e6", ""),
        (dec(1, 12, DecimalExponent), "1e12", ""),
        (dec(1, 3, DecimalExponent), "1e3", ""),
        (dec(3, 3, DecimalExponent), "3e3", ""),
        (dec(3, 3, DecimalSI), "3k", ""),
        (dec(0, 0, DecimalExponent), "0", "00"),
        (dec(1, -9, DecimalSI), "1n", ""),
        (dec(80, -9, DecimalSI), "80n", ""),
        (dec(1080, -9, DecimalSI), "1080n", ""),
        (dec(108, -8, DecimalSI), "1080n", ""),
        (dec(10800, -10, DecimalSI), "1080n", ""),
        (dec(1, -6, DecimalSI), "1u", ""),
        (dec(80, -6, DecimalSI), "80u", ""),
        (dec(1080, -6, DecimalSI), "1080u", ""),
    ];
    for (value, want, alternate) in table {
        assert_eq!(value.to_string(), *want, "{value:?}");
        assert_eq!(q(want).to_string(), *want);
        if !alternate.is_empty() {
            assert_eq!(q(alternate).to_string(), *want, "{alternate}");
        }
        if !value.is_zero() {
            assert_eq!((-value).to_string(), format!("-{want}"));
        }
    }
}

#[test]
fn parse_emit() {
    // TestQuantityParseEmit, and the canonical forms the task names.
    for (input, want) in [
        ("1Ki", "1Ki"),
        ("1Mi", "1Mi"),
        ("1Gi", "1Gi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
        ("1.5Gi", "1536Mi"),
        ("1.1Gi", "1181116006400m"),
        ("0.1", "100m"),
        ("1e3", "1e3"),
        ("1000", "1k"),
        ("100m", "100m"),
        ("1.5", "1500m"),
        ("1500Mi", "1500Mi"),
        ("1536Ki", "1536Ki"),
        ("1048576Ki", "1Gi"),
        ("1.5e3", "1500"),
        ("2e-2", "20e-3"),
        ("8191Pi", "8191Pi"),
        ("8192Pi", "9223372036854775807"),
        ("8Ei", "9223372036854775807"),
    ] {
        assert_eq!(q(input).to_string(), want, "{input}");
        assert_eq!(q(input).canonical(), want, "{input}");
        let negative = q(&format!("-{input}"));
        assert_eq!(negative.to_string(), format!("-{want}"), "-{input}");
    }
}

#[test]
fn parsed_text_kept_as_upstream_keeps_it() {
    // Upstream's String() returns the parsed text when its fast path judged it canonical,
    // including a leading `+`, leading zeros and an upper-case or signed exponent.
    for (input, shown, canonical) in [
        ("+1Ki", "+1Ki", "1Ki"),
        ("05", "05", "5"),
        ("1.500", "1.500", "1500m"),
        ("5E3", "5E3", "5e3"),
        ("1e+3", "1e+3", "1e3"),
        ("1.5", "1500m", "1500m"),
        ("1000m", "1", "1"),
        ("8Ki", "8Ki", "8Ki"),
        ("1024Ki", "1Mi", "1Mi"),
    ] {
        let value = q(input);
        assert_eq!(value.to_string(), shown, "{input}");
        assert_eq!(value.canonical(), canonical, "{input}");
        // Arithmetic prints canonically.
        assert_eq!((&value + &q("0")).to_string(), canonical, "{input}");
    }
}

#[test]
fn decimal_past_exa_prints_without_suffix_as_upstream() {
    // Upstream has no suffix for 10^21 and prints the bare number.
    assert_eq!(q("1000E").to_string(), "1");
    // Nor for powers of 1024 past Ei.
    assert_eq!((q("4Ei") * 1048576).canonical(), "4");
}

#[test]
fn compare() {
    // TestQuantityCmp and TestQuantityCmpInt64AndDec.
    let most = i128::from(i64::MAX);
    let least = i128::from(i64::MIN);
    let e18 = 1_000_000_000_000_000_000i128;
    let table: &[(Quantity, Quantity, Ordering)] = &[
        (q("0"), q("0"), Ordering::Equal),
        (q("100m"), q("50m"), Ordering::Greater),
        (q("50m"), q("100m"), Ordering::Less),
        (q("10000T"), q("100Gi"), Ordering::Greater),
        (
            dec(901, -2, DecimalSI),
            dec(901, -2, DecimalSI),
            Ordering::Equal,
        ),
        (
            dec(90, -1, DecimalSI),
            dec(901, -2, DecimalSI),
            Ordering::Less,
        ),
        (
            dec(901, -2, DecimalSI),
            dec(900, -2, DecimalSI),
            Ordering::Greater,
        ),
        (dec(0, 1, DecimalSI), dec(0, -1, DecimalSI), Ordering::Equal),
        (
            dec(800, -3, DecimalSI),
            dec(1, 0, DecimalSI),
            Ordering::Less,
        ),
        (
            dec(800, -3, DecimalSI),
            dec(79, -2, DecimalSI),
            Ordering::Greater,
        ),
        (
            dec(most, 0, DecimalSI),
            dec(1, -1, DecimalSI),
            Ordering::Greater,
        ),
        (
            dec(most, 1, DecimalSI),
            dec(1, 0, DecimalSI),
            Ordering::Greater,
        ),
        (
            dec(most, 1, DecimalSI),
            dec(1, 1, DecimalSI),
            Ordering::Greater,
        ),
        (
            dec(most, 1, DecimalSI),
            dec(0, 1, DecimalSI),
            Ordering::Greater,
        ),
        (
            dec(most, -16, DecimalSI),
            dec(1, 3, DecimalSI),
            Ordering::Less,
        ),
        (
            dec(least, 0, DecimalSI),
            dec(0, 0, DecimalSI),
            Ordering::Less,
        ),
        (
            dec(least, -18, DecimalSI),
            dec(-1, 0, DecimalSI),
            Ordering::Less,
        ),
        (
            dec(least, -19, DecimalSI),
            dec(-1, 0, DecimalSI),
            Ordering::Greater,
        ),
        (
            dec(e18, -17, DecimalSI),
            dec(1, 1, DecimalSI),
            Ordering::Equal,
        ),
        (
            dec(e18, -17, DecimalSI),
            dec(-10, 0, DecimalSI),
            Ordering::Greater,
        ),
        (
            dec(-e18, -17, DecimalSI),
            dec(-10, 0, DecimalSI),
            Ordering::Equal,
        ),
        (
            dec(e18, -17, DecimalSI),
            dec(1, 0, DecimalSI),
            Ordering::Greater,
        ),
        (
            dec(e18 + 1, -17, DecimalSI),
            dec(1, 1, DecimalSI),
            Ordering::Greater,
        ),
        (
            dec(e18 - 1, -17, DecimalSI),
            dec(1, 1, DecimalSI),
            Ordering::Less,
        ),
        // Formats do not matter; far-apart exponents compare without overflow.
        (q("1Ki"), q("1024"), Ordering::Equal),
        (q("1e3"), q("1k"), Ordering::Equal),
        (q("0.000000001"), q("1n"), Ordering::Equal),
        (q("1e1000"), q("1n"), Ordering::Greater),
        (q("-1e1000"), q("-1n"), Ordering::Less),
        (q("-1e1000"), q("1e999"), Ordering::Less),
    ];
    for (a, b, want) in table {
        assert_eq!(a.cmp(b), *want, "{a} vs {b}");
        assert_eq!(b.cmp(a), want.reverse(), "{b} vs {a}");
    }
    assert!(q("1Ki") == 1024);
    assert!(q("1023") < 1024);
}

#[test]
fn add_sub_neg_mul() {
    // TestAdd / TestSub: the receiver's format stays unless it is zero.
    let add: &[(Quantity, Quantity, Quantity)] = &[
        (
            dec(10, 0, DecimalSI),
            dec(1, 1, DecimalSI),
            dec(20, 0, DecimalSI),
        ),
        (
            dec(10, 0, DecimalSI),
            dec(1, 0, BinarySI),
            dec(11, 0, DecimalSI),
        ),
        (
            dec(10, 0, BinarySI),
            dec(1, 0, DecimalSI),
            dec(11, 0, BinarySI),
        ),
        (
            Quantity::zero(DecimalSI),
            dec(50, 0, DecimalSI),
            dec(50, 0, DecimalSI),
        ),
        (
            dec(50, 0, DecimalSI),
            Quantity::zero(DecimalSI),
            dec(50, 0, DecimalSI),
        ),
    ];
    for (a, b, want) in add {
        let sum = a + b;
        assert_eq!(&sum, want);
        assert_eq!(sum.format(), want.format());
    }
    let sub: &[(Quantity, Quantity, Quantity)] = &[
        (
            dec(10, 0, DecimalSI),
            dec(1, 1, DecimalSI),
            dec(0, 0, DecimalSI),
        ),
        (
            dec(10, 0, DecimalSI),
            dec(1, 0, BinarySI),
            dec(9, 0, DecimalSI),
        ),
        (
            dec(10, 0, BinarySI),
            dec(1, 0, DecimalSI),
            dec(9, 0, BinarySI),
        ),
        (
            Quantity::zero(DecimalSI),
            dec(50, 0, DecimalSI),
            dec(-50, 0, DecimalSI),
        ),
        (
            dec(50, 0, DecimalSI),
            Quantity::zero(DecimalSI),
            dec(50, 0, DecimalSI),
        ),
    ];
    for (a, b, want) in sub {
        let difference = a - b;
        assert_eq!(&difference, want);
        assert_eq!(difference.format(), want.format());
    }
    // TestQuantityAddZeroPreservesSuffix / SubZero.
    for text in ["100m", "1Gi"] {
        assert_eq!((q(text) + q("0")).to_string(), text);
        assert_eq!((q("0") + q(text)).to_string(), text);
        assert_eq!((q(text) - q("0")).to_string(), text);
        assert_eq!((q("0") - q(text)).to_string(), (-q(text)).to_string());
    }
    // TestQuantityNeg.
    assert_eq!((-dec(901, -2, DecimalSI)).to_string(), "-9010m");
    assert_eq!((-q("10")).format(), DecimalSI);
    assert_eq!(-(-q("1.5Gi")), q("1.5Gi"));
    // TestMul.
    let most = i128::from(i64::MAX);
    let least = i128::from(i64::MIN);
    let mul: &[(i128, i64, i128)] = &[
        (10, 10, 100),
        (10, 1, 10),
        (0, 50, 0),
        (50, 0, 0),
        (10, -10, -100),
        (-50, -50, 2500),
        (most, 0, 0),
        (most, 1, most),
        (most, -1, -most),
        (most, 2, most * 2),
        (most, 10, most * 10),
        (least, -1, most + 1),
        (least, 2, least * 2),
        (least, -10, (most + 1) * 10),
    ];
    for (a, factor, want) in mul {
        assert_eq!(
            dec(*a, 0, DecimalSI) * *factor,
            dec(*want, 0, DecimalSI),
            "{a}×{factor}"
        );
    }
    assert_eq!((q("1.5Gi") * 2).to_string(), "3Gi");
}

#[test]
fn exact_where_floats_are_not() {
    assert_eq!(q("0.1") + q("0.2"), q("300m"));
    assert_eq!((q("0.1") + q("0.2")).to_string(), "300m");
    let mut total = Quantity::zero(DecimalSI);
    for _ in 0..1000 {
        total += &q("100m");
    }
    assert_eq!(total, q("100"));
    assert_eq!(total.to_string(), "100");
    let mut total = q("1");
    for _ in 0..10 {
        total -= &q("100m");
    }
    assert!(total.is_zero());
    assert_eq!(q("1.1Gi") + q("1.1Gi"), q("2.2Gi"));
    assert_eq!((q("1.1Gi") + q("1.1Gi")).to_string(), "2362232012800m");
    let big = q("9223372036854775807") + q("1");
    assert_eq!(big.to_string(), "9223372036854775808");
    assert!(big > q("9223372036854775807"));
    assert_eq!(q("0.000000001"), q("1n"));
    assert_eq!((q("1n") + q("1n")).to_string(), "2n");
    assert_eq!(q("1n") + q("1n"), q("2n"));
    assert_eq!((q("100Mi") - q("1")).to_string(), "104857599");
    assert_eq!((q("3") - q("1.5")).to_string(), "1500m");
}

#[test]
fn sums_past_38_digits_round_away_from_zero() {
    // 1e100 + 1n keeps 1e100's 39 leading digits: 1n rounds away from zero to 1e62.
    let huge = q("1e100");
    let sum = &huge + &q("1n");
    assert_eq!(sum.to_string(), format!("1{}100e60", "0".repeat(37)));
    assert!(sum > huge);
    assert!(&huge - &q("1n") < huge);
    // 2 × (10^38 - 1) needs 39 digits: both round to 10^38 first.
    let wide = q(&"9".repeat(38));
    let sum = &wide + &wide;
    assert_eq!(sum, q("2e38"));
    assert!(sum > wide);
    assert_eq!((&wide * i64::MAX).signum(), 1);
    assert_eq!((&-&wide * i64::MAX).signum(), -1);
}

#[test]
fn values_round_up() {
    // TestQuantityRoundUp through Value/MilliValue, and TestScaledValue.
    assert_eq!(q("9.01").value(), 10);
    assert_eq!(q("-9.01").value(), -10);
    assert_eq!(q("9.01").scaled_value(-1), 91);
    assert_eq!(q("9.01").scaled_value(-2), 901);
    assert_eq!(q("9.01").scaled_value(1), 1);
    assert_eq!(q("1n").milli_value(), 1);
    assert_eq!(q("1n").value(), 1);
    assert_eq!(q("-1n").milli_value(), -1);
    assert_eq!(q("0").value(), 0);
    assert_eq!(q("1.5Gi").value(), 1610612736);
    assert_eq!(q("100m").milli_value(), 100);
    assert_eq!(q("2").milli_value(), 2000);
    for (from, to, want) in [
        (-9, -9, 1),
        (-9, -6, 1),
        (-9, -3, 1),
        (-9, 0, 1),
        (-6, -9, 1000),
        (-6, -6, 1),
        (-6, -3, 1),
        (-6, 0, 1),
        (-3, -9, 1_000_000),
        (-3, -6, 1000),
        (-3, -3, 1),
        (-3, 0, 1),
        (0, -9, 1_000_000_000),
        (0, -6, 1_000_000),
        (0, -3, 1000),
        (0, 0, 1),
        (2, -2, 10000),
    ] {
        assert_eq!(
            dec(1, from, DecimalSI).scaled_value(to),
            want,
            "{from}->{to}"
        );
    }
    // TestQuantityRoundUp.
    for (text, scale, want) in [
        ("9.01", -3, "9010m"),
        ("9.01", -2, "9010m"),
        ("9.01", -1, "9100m"),
        ("9.01", 0, "10"),
        ("9.01", 1, "10"),
        ("9.01", 2, "100"),
        ("-9.01", -1, "-9100m"),
        ("-9.01", 0, "-10"),
        ("-9.01", 2, "-100"),
        ("1.5Gi", 0, "1536Mi"),
        ("0.5Ki", 0, "512"),
    ] {
        assert_eq!(q(text).round_up(scale).to_string(), want, "{text} {scale}");
    }
    assert_eq!(q("1.1").round_up(0).format(), DecimalSI);
    assert_eq!(q("1e30").value(), i64::MAX);
    assert_eq!(q("-1e30").milli_value(), i64::MIN);
}

#[test]
fn approximate_floats() {
    let cases: &[(Quantity, f64)] = &[
        (dec(0, 0, DecimalSI), 0.0),
        (dec(1, 0, BinarySI), 1.0),
        (dec(1024, 0, BinarySI), 1024.0),
        (dec(7 << 20, 1, BinarySI), 7340032.0 * 10.0),
        (dec(7 << 20, 8, DecimalSI), 7340032.0 * 100000000.0),
        (dec(7 << 20, -1, DecimalSI), 7340032.0 * 0.1),
        (dec(7 << 20, -8, DecimalExponent), 7340032.0 / 100000000.0),
        (dec(i64::MAX.into(), 0, DecimalSI), i64::MAX as f64),
        (dec(12, 18, DecimalSI), 1.2e19),
        (dec(12, 500, DecimalSI), f64::INFINITY),
        (dec(-12, 500, DecimalSI), f64::NEG_INFINITY),
    ];
    for (value, want) in cases {
        assert_eq!(value.as_approximate_f64(), *want, "{value}");
    }
    assert_eq!(q("100m").as_approximate_f64(), 0.1);
}

#[test]
fn json_values() {
    use serde_json::json;
    assert_eq!(Quantity::from_json(&json!(" 1Gi ")), Ok(q("1Gi")));
    assert_eq!(Quantity::from_json(&json!(2)), Ok(q("2")));
    assert_eq!(Quantity::from_json(&json!(0.5)), Ok(q("500m")));
    assert_eq!(Quantity::from_json(&json!(null)), Ok(q("0")));
    assert_eq!(
        Quantity::from_json(&json!(true)),
        Err(QuantityError::FormatWrong)
    );
    assert_eq!("1.5Gi".parse::<Quantity>(), Ok(q("1536Mi")));
}
