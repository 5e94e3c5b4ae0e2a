//! JSON merge patch (RFC 7386) vectors: the RFC's examples with object documents and
//! patches, upstream's dropping of nulls in new values, and upstream's answers to patches
//! that are not objects.

use kapi_patch::{ApplyOptions, NoSchema, PatchError, PatchType, apply, apply_with_options};
use serde_json::{Value, json};

fn mp(original: &Value, body: &str) -> Result<Value, PatchError> {
    apply(PatchType::Merge, original, body.as_bytes(), &NoSchema)
}

#[test]
fn rfc7386_appendix_a() {
    let cases = [
        (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
        (
            json!({"a": "b"}),
            json!({"b": "c"}),
            json!({"a": "b", "b": "c"}),
        ),
        (json!({"a": "b"}), json!({"a": null}), json!({})),
        (
            json!({"a": "b", "b": "c"}),
            json!({"a": null}),
            json!({"b": "c"}),
        ),
        (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
        (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
        (
            json!({"a": {"b": "c"}}),
            json!({"a": {"b": "d", "c": null}}),
            json!({"a": {"b": "d"}}),
        ),
        (
            json!({"a": [{"b": "c"}]}),
            json!({"a": [1]}),
            json!({"a": [1]}),
        ),
        (
            json!({"e": null}),
            json!({"a": 1}),
            json!({"e": null, "a": 1}),
        ),
        (
            json!({}),
            json!({"a": {"bb": {"ccc": null}}}),
            json!({"a": {"bb": {}}}),
        ),
    ];
    for (original, patch, expected) in cases {
        let got = mp(&original, &patch.to_string()).unwrap();
        assert_eq!(got, expected, "{original} + {patch}");
    }
}

#[test]
fn nulls_in_new_values_are_dropped_as_upstream_does() {
    let cases = [
        // A new member: nulls go, also in objects inside lists.
        (
            json!({}),
            json!({"a": [{"b": null, "c": 1}, null]}),
            json!({"a": [{"c": 1}, null]}),
        ),
        // Replacing a non-object: the same.
        (
            json!({"a": "s"}),
            json!({"a": {"b": [{"c": null}]}}),
            json!({"a": {"b": [{}]}}),
        ),
        // Replacing an object with a list: the list is taken as it is.
        (
            json!({"a": {"x": 1}}),
            json!({"a": [{"b": null}]}),
            json!({"a": [{"b": null}]}),
        ),
        // Merging into an object: a new nested list is cleaned.
        (
            json!({"a": {"x": 1}}),
            json!({"a": {"l": [{"b": null}]}}),
            json!({"a": {"x": 1, "l": [{}]}}),
        ),
    ];
    for (original, patch, expected) in cases {
        let got = mp(&original, &patch.to_string()).unwrap();
        assert_eq!(got, expected, "{original} + {patch}");
    }
}

#[test]
fn kubectl_style_label_and_annotation_patch() {
    let original = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": "s", "labels": {"a": "1", "b": "2"}, "annotations": {"x": "y"}},
        "data": {"k": "dg=="}
    });
    let got = mp(
        &original,
        r#"{"metadata":{"labels":{"a":"3","b":null},"annotations":null}}"#,
    )
    .unwrap();
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "labels": {"a": "3"}},
            "data": {"k": "dg=="}
        })
    );
}

#[test]
fn patches_that_are_not_objects() {
    let doc = json!({"a": "foo"});
    for body in ["null", "\"bar\"", "1", "true"] {
        let err = mp(&doc, body).unwrap_err();
        assert_eq!(
            (err.status_code(), err.reason(), err.message().as_str()),
            (400, "BadRequest", "Invalid JSON Patch"),
            "{body}"
        );
    }
    let err = mp(&doc, "nope").unwrap_err();
    assert_eq!(err.message(), "invalid JSON patch");

    let err = mp(&doc, r#"["c", {"d": null}]"#).unwrap_err();
    assert_eq!(
        err,
        PatchError::NotAnObject {
            patched: json!(["c", {}])
        }
    );
    assert_eq!(err.status_code(), 422);

    let strict = ApplyOptions {
        strict: true,
        ..ApplyOptions::default()
    };
    let err = apply_with_options(PatchType::Merge, &doc, b"[1]", &NoSchema, &strict).unwrap_err();
    assert_eq!(
        (err.status_code(), err.message().as_str()),
        (
            400,
            "error decoding patch: json: cannot unmarshal array into Go value of type map[string]interface {}"
        )
    );
    let err = apply_with_options(PatchType::Merge, &doc, b"null", &NoSchema, &strict).unwrap_err();
    assert_eq!(err.message(), "Invalid JSON Patch");
}
