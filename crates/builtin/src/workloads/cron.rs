//! The standard cron schedule parser CronJobs are validated with (robfig/cron v3's
//! ParseStandard: five fields or a `@descriptor`), reproducing its error texts, which
//! upstream returns as the message of an invalid `spec.schedule`.

/// The bounds and names of one schedule field.
struct Bounds {
    min: i64,
    max: i64,
    names: &'static [(&'static str, i64)],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DAYS_OF_MONTH: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DAYS_OF_WEEK: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[
        ("sun", 0),
        ("mon", 1),
        ("tue", 2),
        ("wed", 3),
        ("thu", 4),
        ("fri", 5),
        ("sat", 6),
    ],
};

/// Checks a schedule; the error is the parser's message.
pub(crate) fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".to_string());
    }
    let mut rest = spec;
    for prefix in ["TZ=", "CRON_TZ="] {
        if let Some(after) = spec.strip_prefix(prefix) {
            let (zone, schedule) = after.split_once(' ').unwrap_or((after, ""));
            if !super::batch::known_time_zone(zone) {
                return Err(format!(
                    "provided bad location {zone}: unknown time zone {zone}"
                ));
            }
            rest = schedule.trim();
        }
    }
    if rest.starts_with('@') {
        return parse_descriptor(rest);
    }
    let fields: Vec<&str> = rest.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    let bounds = [&MINUTES, &HOURS, &DAYS_OF_MONTH, &MONTHS, &DAYS_OF_WEEK];
    for (field, bounds) in fields.iter().zip(bounds) {
        for expression in field.split(',') {
            parse_range(expression, bounds)?;
        }
    }
    Ok(())
}

/// `@yearly`, `@monthly`, ..., `@every <duration>`.
fn parse_descriptor(descriptor: &str) -> Result<(), String> {
    match descriptor {
        "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly" => {
            Ok(())
        }
        _ => match descriptor.strip_prefix("@every ") {
            Some(duration) if kapi_go_duration_ok(duration) => Ok(()),
            Some(duration) => Err(format!(
                "failed to parse duration {descriptor}: time: invalid duration {}",
                kapi_apimachinery::quote(duration)
            )),
            None => Err(format!("unrecognized descriptor: {descriptor}")),
        },
    }
}

/// Whether a Go duration (`1h30m`, `90s`, `1.5h`) parses.
fn kapi_go_duration_ok(text: &str) -> bool {
    let mut rest = text.strip_prefix(['+', '-']).unwrap_or(text);
    if rest == "0" {
        return true;
    }
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return false;
        }
        rest = &rest[digits..];
        let unit = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
            .iter()
            .filter(|u| rest.starts_with(*u))
            .max_by_key(|u| u.len());
        match unit {
            Some(unit) => rest = &rest[unit.len()..],
            None => return false,
        }
    }
    true
}

/// One range expression: `*`, `?`, `n`, `n-m`, each with an optional `/step`.
fn parse_range(expression: &str, bounds: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expression.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (bounds.min, bounds.max)
    } else {
        let start = parse_int_or_name(low_and_high[0], bounds)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], bounds)?,
            _ => return Err(format!("too many hyphens: {expression}")),
        };
        (start, end)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            if single {
                end = bounds.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expression}")),
    };
    if start < bounds.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expression}",
            bounds.min
        ));
    }
    if end > bounds.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expression}",
            bounds.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expression}"
        ));
    }
    if step == 0 {
        return Err(format!(
            "step of range should be a positive number: {expression}"
        ));
    }
    Ok(())
}

/// A number, or one of the field's names (case-insensitively).
fn parse_int_or_name(text: &str, bounds: &Bounds) -> Result<i64, String> {
    let lower = text.to_lowercase();
    if let Some((_, value)) = bounds.names.iter().find(|(name, _)| *name == lower) {
        return Ok(*value);
    }
    must_parse_int(text)
}

/// A non-negative integer, with strconv.Atoi's error texts.
fn must_parse_int(text: &str) -> Result<i64, String> {
    let quoted = kapi_apimachinery::quote(text);
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "failed to parse int from {text}: strconv.Atoi: parsing {quoted}: invalid syntax"
        ));
    }
    let number: i64 = match text.parse() {
        Ok(number) => number,
        Err(_) => {
            return Err(format!(
                "failed to parse int from {text}: strconv.Atoi: parsing {quoted}: value out of range"
            ));
        }
    };
    if number < 0 {
        return Err(format!("negative number ({number}) not allowed: {text}"));
    }
    Ok(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules() {
        for good in [
            "*/5 * * * *",
            "0 0 1 1 *",
            "0 12 * jan-mar mon-fri",
            "@hourly",
            "@every 1h30m",
            "5,10 1-3/2 * * 0",
        ] {
            assert_eq!(parse_standard(good), Ok(()), "{good}");
        }
        let cases = [
            ("", "empty spec string"),
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            (
                "x * * * *",
                "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            (
                "5-1 * * * *",
                "beginning of range (5) beyond end of range (1): 5-1",
            ),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
            ("@sometimes", "unrecognized descriptor: @sometimes"),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
        ];
        for (spec, want) in cases {
            assert_eq!(parse_standard(spec), Err(want.to_string()), "{spec}");
        }
    }
}
