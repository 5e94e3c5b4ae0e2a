//! The `kube-apiserver-legacy-service-account-token-tracking` ConfigMap in kube-system
//! (upstream's legacy-token-tracking controller): its `since` date tells
//! kube-controller-manager's legacy-token cleaner from when this server has been labelling
//! Secrets with `kubernetes.io/legacy-token-last-used`, so that a Secret without the label is
//! known unused only once tracking has run long enough.

use crate::kept_config_map;
use kapi_server::endpoints::Served;
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The ConfigMap's name; it lives in kube-system.
pub const LEGACY_TOKEN_TRACKING_CONFIG_MAP: &str =
    "kube-apiserver-legacy-service-account-token-tracking";
/// The key of the date (`YYYY-MM-DD`, UTC) tracking started.
const SINCE: &str = "since";

/// The data the ConfigMap should hold: what it holds, with today's date under `since` unless
/// a valid date is there already (an existing date is never moved forward).
fn wanted(existing: &Value, today: &str) -> Map<String, Value> {
    let mut data = existing.as_object().cloned().unwrap_or_default();
    if !data.get(SINCE).and_then(Value::as_str).is_some_and(is_date) {
        data.insert(SINCE.into(), today.into());
    }
    data
}

/// Whether `text` is a calendar date written `YYYY-MM-DD`, as Go's time.Parse with layout
/// "2006-01-02" accepts it.
pub(crate) fn is_date(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| {
        bytes[range.clone()]
            .iter()
            .all(u8::is_ascii_digit)
            .then(|| {
                text[range]
                    .parse::<u32>()
                    .expect("ASCII digits parse as a number")
            })
    };
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(0..4), digits(5..7), digits(8..10)) else {
        return false;
    };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// Keeps the ConfigMap with a valid `since` date until `stopping`.
pub fn start_legacy_token_tracking(config_maps: Served, stopping: CancellationToken) {
    let wanted = Arc::new(|existing: &Value| {
        let now = kapi_apimachinery::meta::now_rfc3339();
        wanted(existing, &now[..10])
    });
    kept_config_map::keep(
        config_maps,
        LEGACY_TOKEN_TRACKING_CONFIG_MAP,
        wanted,
        stopping,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dates_are_checked_as_go_parses_them() {
        for good in ["2026-11-26", "2024-02-29", "0001-01-01"] {
            assert!(is_date(good), "{good}");
        }
        for bad in [
            "",
            "2026-1-26",
            "2026-13-01",
            "2026-00-10",
            "2023-02-29",
            "2026-04-31",
            "2026-11-26T00:00:00Z",
            "20261126",
            "2026/11/26",
            "abcd-ef-gh",
        ] {
            assert!(!is_date(bad), "{bad}");
        }
    }

    #[test]
    fn a_valid_date_stays_and_others_are_replaced() {
        let today = "2026-11-26";
        assert_eq!(
            Value::Object(wanted(&Value::Null, today)),
            json!({"since": today})
        );
        let kept = json!({"since": "2020-01-02", "other": "x"});
        assert_eq!(Value::Object(wanted(&kept, today)), kept);
        let broken = json!({"since": "yesterday", "other": "x"});
        assert_eq!(
            Value::Object(wanted(&broken, today)),
            json!({"since": today, "other": "x"})
        );
    }
}
