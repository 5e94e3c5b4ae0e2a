//! JSON patch (RFC 6902) vectors: the RFC's examples, upstream's deviations from it, and
//! upstream's answers to bad patches.

use kapi_patch::{
    ApplyOptions, NoSchema, PatchError, PatchType, UNPROCESSABLE_MESSAGE, apply, apply_with_options,
};
use serde_json::{Value, json};

fn jp(original: &Value, patch: &Value) -> Result<Value, PatchError> {
    let body = serde_json::to_vec(patch).expect("patch");
    apply(PatchType::Json, original, &body, &NoSchema)
}

fn jp_raw(original: &Value, body: &str, options: &ApplyOptions) -> Result<Value, PatchError> {
    apply_with_options(
        PatchType::Json,
        original,
        body.as_bytes(),
        &NoSchema,
        options,
    )
}

/// (name, original, patch, expected result or None for a 422).
type Vector = (&'static str, Value, Value, Option<Value>);

fn run(vectors: Vec<Vector>) {
    let mut failures = Vec::new();
    for (name, original, patch, expected) in vectors {
        match (jp(&original, &patch), expected) {
            (Ok(got), Some(want)) if got == want => {}
            (Err(PatchError::Unprocessable(_)), None) => {}
            (got, want) => failures.push(format!("{name}: expected {want:?}, got {got:?}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rfc6902_appendix_a() {
    run(vec![
        (
            "A.1 adding an object member",
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz", "value": "qux"}]),
            Some(json!({"baz": "qux", "foo": "bar"})),
        ),
        (
            "A.2 adding an array element",
            json!({"foo": ["bar", "baz"]}),
            json!([{"op": "add", "path": "/foo/1", "value": "qux"}]),
            Some(json!({"foo": ["bar", "qux", "baz"]})),
        ),
        (
            "A.3 removing an object member",
            json!({"baz": "qux", "foo": "bar"}),
            json!([{"op": "remove", "path": "/baz"}]),
            Some(json!({"foo": "bar"})),
        ),
        (
            "A.4 removing an array element",
            json!({"foo": ["bar", "qux", "baz"]}),
            json!([{"op": "remove", "path": "/foo/1"}]),
            Some(json!({"foo": ["bar", "baz"]})),
        ),
        (
            "A.5 replacing a value",
            json!({"baz": "qux", "foo": "bar"}),
            json!([{"op": "replace", "path": "/baz", "value": "boo"}]),
            Some(json!({"baz": "boo", "foo": "bar"})),
        ),
        (
            "A.6 moving a value",
            json!({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}}),
            json!([{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}]),
            Some(json!({"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}})),
        ),
        (
            "A.7 moving an array element",
            json!({"foo": ["all", "grass", "cows", "eat"]}),
            json!([{"op": "move", "from": "/foo/1", "path": "/foo/3"}]),
            Some(json!({"foo": ["all", "cows", "eat", "grass"]})),
        ),
        (
            "A.8 testing a value: success",
            json!({"baz": "qux", "foo": ["a", 2, "c"]}),
            json!([{"op": "test", "path": "/baz", "value": "qux"}, {"op": "test", "path": "/foo/1", "value": 2}]),
            Some(json!({"baz": "qux", "foo": ["a", 2, "c"]})),
        ),
        (
            "A.9 testing a value: error",
            json!({"baz": "qux"}),
            json!([{"op": "test", "path": "/baz", "value": "bar"}]),
            None,
        ),
        (
            "A.10 adding a nested member object",
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/child", "value": {"grandchild": {}}}]),
            Some(json!({"foo": "bar", "child": {"grandchild": {}}})),
        ),
        (
            "A.11 ignoring unrecognized elements",
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz", "value": "qux", "xyz": 123}]),
            Some(json!({"foo": "bar", "baz": "qux"})),
        ),
        (
            "A.12 adding to a nonexistent target",
            json!({"foo": "bar"}),
            json!([{"op": "add", "path": "/baz/bat", "value": "qux"}]),
            None,
        ),
        (
            "A.14 ~ escape ordering",
            json!({"/": 9, "~1": 10}),
            json!([{"op": "test", "path": "/~01", "value": 10}]),
            Some(json!({"/": 9, "~1": 10})),
        ),
        (
            "A.15 comparing strings and numbers",
            json!({"/": 9, "~1": 10}),
            json!([{"op": "test", "path": "/~01", "value": "10"}]),
            None,
        ),
        (
            "A.16 adding an array value",
            json!({"foo": ["bar"]}),
            json!([{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}]),
            Some(json!({"foo": ["bar", ["abc", "def"]]})),
        ),
    ]);
}

#[test]
fn rfc6902_a13_duplicate_op_keeps_the_last() {
    // {"op":"add", ..., "op":"remove"}: the last "op" wins, and /baz does not exist.
    let err = jp_raw(
        &json!({"foo": "bar"}),
        r#"[{"op": "add", "path": "/baz", "value": "qux", "op": "remove"}]"#,
        &ApplyOptions::default(),
    )
    .unwrap_err();
    assert!(matches!(err, PatchError::Unprocessable(_)), "{err:?}");
}

#[test]
fn upstream_deviations_from_the_rfc() {
    run(vec![
        (
            "replace of a missing member adds it",
            json!({"metadata": {"labels": {"a": "1"}}}),
            json!([{"op": "replace", "path": "/metadata/labels/b", "value": "2"}]),
            Some(json!({"metadata": {"labels": {"a": "1", "b": "2"}}})),
        ),
        (
            "replace under a missing member fails",
            json!({"metadata": {}}),
            json!([{"op": "replace", "path": "/metadata/labels/b", "value": "2"}]),
            None,
        ),
        (
            "negative index in add counts from the end, -1 appends",
            json!({"l": [1, 2, 3]}),
            json!([{"op": "add", "path": "/l/-1", "value": 9}, {"op": "add", "path": "/l/-2", "value": 8}]),
            Some(json!({"l": [1, 2, 3, 8, 9]})),
        ),
        (
            "negative index in remove and replace",
            json!({"l": [1, 2, 3]}),
            json!([{"op": "remove", "path": "/l/-1"}, {"op": "replace", "path": "/l/-2", "value": 7}]),
            Some(json!({"l": [7, 2]})),
        ),
        (
            "index with a sign or leading zeros",
            json!({"l": [1, 2, 3]}),
            json!([{"op": "replace", "path": "/l/+01", "value": 5}]),
            Some(json!({"l": [1, 5, 3]})),
        ),
        (
            "index past the end of an add",
            json!({"l": [1]}),
            json!([{"op": "add", "path": "/l/2", "value": 5}]),
            None,
        ),
        (
            "index equal to the length appends",
            json!({"l": [1]}),
            json!([{"op": "add", "path": "/l/1", "value": 5}]),
            Some(json!({"l": [1, 5]})),
        ),
        (
            "remove of a missing member fails",
            json!({"a": 1}),
            json!([{"op": "remove", "path": "/b"}]),
            None,
        ),
        (
            "add of the whole document fails",
            json!({"a": 1}),
            json!([{"op": "add", "path": "", "value": {"b": 2}}]),
            None,
        ),
        (
            "replace of the whole document with an object",
            json!({"a": 1}),
            json!([{"op": "replace", "path": "", "value": {"b": 2}}]),
            Some(json!({"b": 2})),
        ),
        (
            "replace of the whole document with a scalar fails",
            json!({"a": 1}),
            json!([{"op": "replace", "path": "", "value": 3}]),
            None,
        ),
        (
            "the segment before the first slash is ignored",
            json!({"a": 1}),
            json!([{"op": "add", "path": "x/b", "value": 2}]),
            Some(json!({"a": 1, "b": 2})),
        ),
        (
            "a path without a slash fails",
            json!({"a": 1}),
            json!([{"op": "add", "path": "b", "value": 2}]),
            None,
        ),
        (
            "a missing value adds null",
            json!({"a": 1}),
            json!([{"op": "add", "path": "/b"}]),
            Some(json!({"a": 1, "b": null})),
        ),
        (
            "test of a missing member against null passes",
            json!({"a": 1}),
            json!([{"op": "test", "path": "/b", "value": null}, {"op": "test", "path": "/c"}]),
            Some(json!({"a": 1})),
        ),
        (
            "test of a present member without value fails",
            json!({"a": 1}),
            json!([{"op": "test", "path": "/a"}]),
            None,
        ),
        (
            "test of the whole document",
            json!({"a": 1}),
            json!([{"op": "test", "path": "", "value": {"a": 1}}]),
            Some(json!({"a": 1})),
        ),
        (
            "copy of a missing member copies null",
            json!({"a": 1}),
            json!([{"op": "copy", "from": "/x", "path": "/b"}]),
            Some(json!({"a": 1, "b": null})),
        ),
        (
            "copy of a value",
            json!({"a": {"b": [1]}}),
            json!([{"op": "copy", "from": "/a", "path": "/c"}]),
            Some(json!({"a": {"b": [1]}, "c": {"b": [1]}})),
        ),
        (
            "move of a missing member fails",
            json!({"a": 1}),
            json!([{"op": "move", "from": "/x", "path": "/b"}]),
            None,
        ),
        (
            "move into its own child fails",
            json!({"a": {"b": 1}}),
            json!([{"op": "move", "from": "/a", "path": "/a/c"}]),
            None,
        ),
        (
            "escaped keys",
            json!({"metadata": {"labels": {}}}),
            json!([{"op": "add", "path": "/metadata/labels/app.kubernetes.io~1name", "value": "x"}]),
            Some(json!({"metadata": {"labels": {"app.kubernetes.io/name": "x"}}})),
        ),
        (
            "unknown op",
            json!({"a": 1}),
            json!([{"op": "frobnicate", "path": "/a"}]),
            None,
        ),
        ("a null operation", json!({"a": 1}), json!([null]), None),
        (
            "a null patch changes nothing",
            json!({"a": 1}),
            Value::Null,
            Some(json!({"a": 1})),
        ),
        (
            "an empty patch changes nothing",
            json!({"a": 1}),
            json!([]),
            Some(json!({"a": 1})),
        ),
        (
            "a failed operation undoes nothing but fails the patch",
            json!({"a": 1}),
            json!([{"op": "add", "path": "/b", "value": 2}, {"op": "test", "path": "/a", "value": 2}]),
            None,
        ),
    ]);
}

#[test]
fn application_errors_answer_with_upstreams_fixed_422() {
    let err = jp(
        &json!({"a": 1}),
        &json!([{"op": "test", "path": "/a", "value": 2}]),
    )
    .unwrap_err();
    assert_eq!(err.status_code(), 422);
    assert_eq!(err.reason(), "Invalid");
    assert_eq!(err.message(), UNPROCESSABLE_MESSAGE);
    assert!(err.has_details());
    assert!(err.causes().is_empty());
    assert_eq!(err.to_string(), "testing value /a failed: test failed");
}

#[test]
fn malformed_patches_are_400s() {
    let doc = json!({"a": 1});
    let default = ApplyOptions::default();
    let strict = ApplyOptions {
        strict: true,
        ..ApplyOptions::default()
    };
    let cases: Vec<(&str, &ApplyOptions, &str)> = vec![
        ("{", &default, "invalid JSON patch"),
        ("", &default, "invalid JSON patch"),
        (
            "{}",
            &default,
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
        ),
        (
            "\"x\"",
            &default,
            "json: cannot unmarshal string into Go value of type jsonpatch.Patch",
        ),
        (
            "[1]",
            &default,
            "json: cannot unmarshal number into Go value of type jsonpatch.Operation",
        ),
        (
            "[{}, []]",
            &default,
            "json: cannot unmarshal array into Go value of type jsonpatch.Operation",
        ),
        (
            "{}",
            &strict,
            "error decoding patch: json: cannot unmarshal object into Go value of type []handlers.jsonPatchOp",
        ),
        (
            "[true]",
            &strict,
            "error decoding patch: json: cannot unmarshal bool into Go value of type handlers.jsonPatchOp",
        ),
        (
            r#"[{"op": 1, "path": "/a"}]"#,
            &strict,
            "error decoding patch: json: cannot unmarshal number into Go struct field jsonPatchOp.op of type string",
        ),
    ];
    for (body, options, message) in cases {
        let err = jp_raw(&doc, body, options).unwrap_err();
        assert_eq!(
            (err.status_code(), err.reason(), err.message().as_str()),
            (400, "BadRequest", message),
            "body {body}"
        );
    }
}

#[test]
fn too_many_operations_is_413() {
    let op = json!({"op": "test", "path": "/a", "value": 1});
    let ok = Value::Array(vec![op.clone(); 10_000]);
    assert!(jp(&json!({"a": 1}), &ok).is_ok());
    let too_many = Value::Array(vec![op; 10_001]);
    let err = jp(&json!({"a": 1}), &too_many).unwrap_err();
    assert_eq!(err.status_code(), 413);
    assert_eq!(err.reason(), "RequestEntityTooLarge");
    assert_eq!(
        err.message(),
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );
}

#[test]
fn copy_size_limit() {
    let options = ApplyOptions {
        max_json_patch_copy_bytes: 10,
        ..ApplyOptions::default()
    };
    let doc = json!({"a": "0123456789"});
    let once = r#"[{"op": "copy", "from": "/b", "path": "/c"}, {"op": "copy", "from": "/a", "path": "/b"}]"#;
    let err = jp_raw(&doc, once, &options).unwrap_err();
    assert!(matches!(err, PatchError::Unprocessable(_)), "{err:?}");
    let small = r#"[{"op": "copy", "from": "/x", "path": "/y"}]"#;
    assert!(jp_raw(&json!({"x": 1}), small, &options).is_ok());
}

#[test]
fn a_patched_array_is_not_an_object() {
    let err = jp(
        &json!({"a": 1}),
        &json!([{"op": "replace", "path": "", "value": [1, {"b": "<x>"}]}]),
    )
    .unwrap_err();
    assert_eq!(err.status_code(), 422);
    assert_eq!(err.reason(), "Invalid");
    let decode = "couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }";
    let cause =
        format!("Invalid value: \"[1,{{\\\"b\\\":\\\"\\\\u003cx\\\\u003e\\\"}}]\": {decode}");
    assert_eq!(err.message(), format!(" \"\" is invalid: patch: {cause}"));
    let causes = err.causes();
    assert_eq!(causes.len(), 1);
    assert_eq!(
        (
            causes[0].reason,
            causes[0].field,
            causes[0].message.as_str()
        ),
        ("FieldValueInvalid", "patch", cause.as_str())
    );
}

/// Admission webhooks' patches: decoded and applied as upstream's mutating webhook
/// dispatcher does, their errors in the library's words (which reach the client).
#[test]
fn webhook_patches_report_the_library_s_errors() {
    use kapi_patch::JsonPatch;
    let decode_error = |body: &str| JsonPatch::decode(body.as_bytes()).unwrap_err().to_string();
    assert_eq!(
        decode_error(r#"{"op": "add"}"#),
        "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
    );
    assert_eq!(
        decode_error("[1]"),
        "json: cannot unmarshal number into Go value of type jsonpatch.Operation"
    );
    assert_eq!(
        decode_error("[x"),
        "invalid character 'x' looking for beginning of value"
    );
    assert!(JsonPatch::decode(b"null").unwrap().is_empty());
    assert!(JsonPatch::decode(b"[]").unwrap().is_empty());

    let doc = json!({"metadata": {"name": "a"}, "spec": {"items": [1, 2]}});
    let patch = |body: Value| JsonPatch::decode(body.to_string().as_bytes()).unwrap();
    let added = patch(json!([{"op": "add", "path": "/spec/items/-1", "value": 3},
        {"op": "replace", "path": "/metadata/labels", "value": {"a": "b"}}]));
    assert_eq!(
        added.apply(&doc).unwrap(),
        json!({"metadata": {"name": "a", "labels": {"a": "b"}}, "spec": {"items": [1, 2, 3]}})
    );
    let missing = patch(json!([{"op": "add", "path": "/status/phase", "value": "x"}]));
    assert_eq!(
        missing.apply(&doc).unwrap_err().to_string(),
        r#"add operation does not apply: doc is missing path: "/status/phase": missing value"#
    );
    let failed = patch(json!([{"op": "test", "path": "/metadata/name", "value": "b"}]));
    assert_eq!(
        failed.apply(&doc).unwrap_err().to_string(),
        "testing value /metadata/name failed: test failed"
    );
}
