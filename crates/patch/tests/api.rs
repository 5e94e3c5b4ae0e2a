//! Content types and body validation.

use kapi_patch::{PatchType, validate_body};

#[test]
fn content_types() {
    let cases = [
        ("application/json-patch+json", Some(PatchType::Json)),
        ("application/merge-patch+json", Some(PatchType::Merge)),
        (
            "application/strategic-merge-patch+json",
            Some(PatchType::StrategicMerge),
        ),
        (
            "application/merge-patch+json; charset=utf-8",
            Some(PatchType::Merge),
        ),
        (
            "application/json-patch+json;charset=UTF-8",
            Some(PatchType::Json),
        ),
        ("  application/merge-patch+json  ", Some(PatchType::Merge)),
        ("application/apply-patch+yaml", None),
        ("application/json", None),
        ("Application/Merge-Patch+JSON", None),
        ("application/merge-patch+json ; charset=utf-8", None),
        ("", None),
    ];
    for (header, expected) in cases {
        assert_eq!(PatchType::from_content_type(header), expected, "{header:?}");
    }
    for t in [PatchType::Json, PatchType::Merge, PatchType::StrategicMerge] {
        assert_eq!(PatchType::from_content_type(t.content_type()), Some(t));
    }
}

#[test]
fn bodies() {
    assert!(validate_body(b" {\"a\": 1} ").is_ok());
    assert!(validate_body(b"null").is_ok());
    for bad in [&b""[..], b"{", b"{} {}", b"nope"] {
        let err = validate_body(bad).unwrap_err();
        assert_eq!(
            (err.status_code(), err.message().as_str()),
            (400, "invalid JSON patch")
        );
    }
}
