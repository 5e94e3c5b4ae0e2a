//! Upstream's validation test cases, re-expressed, plus the exact messages clients see.

use serde_json::{Value, json};

use super::field::Path;
use super::*;

fn a(n: usize) -> String {
    "a".repeat(n)
}

/// Asserts that a check accepts every good value and rejects every bad one.
fn check(f: fn(&str) -> Vec<String>, good: &[&str], bad: &[&str]) {
    for v in good {
        assert!(f(v).is_empty(), "{v:?} should be valid: {:?}", f(v));
    }
    for v in bad {
        assert!(!f(v).is_empty(), "{v:?} should be invalid");
    }
}

#[test]
fn dns1123_label() {
    let max = a(63);
    let good = [
        "a",
        "ab",
        "abc",
        "a1",
        "a-1",
        "a--1--2--b",
        "0",
        "01",
        "012",
        "1a",
        "1-a",
        "1--a--b--2",
        &max,
    ];
    let long = a(64);
    let bad = [
        "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_", "_a",
        "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2", " ", "a ", " a",
        "a b", "1 ", " 1", "1 2", &long,
    ];
    check(is_dns1123_label, &good, &bad);
    assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
    assert_eq!(
        is_dns1123_label("Foo"),
        vec![
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        ]
    );
    assert_eq!(
        is_dns1123_label(&long),
        vec!["must be no more than 63 characters"]
    );
}

#[test]
fn dns1123_subdomain() {
    let max = a(253);
    let good = [
        "a",
        "ab",
        "abc",
        "a1",
        "a-1",
        "a--1--2--b",
        "0",
        "01",
        "012",
        "1a",
        "1-a",
        "1--a--b--2",
        "a.a",
        "ab.a",
        "abc.a",
        "a1.a",
        "a-1.a",
        "a--1--2--b.a",
        "a.1",
        "ab.1",
        "abc.1",
        "a1.1",
        "a-1.1",
        "a--1--2--b.1",
        "0.a",
        "01.a",
        "012.a",
        "1a.a",
        "1-a.a",
        "0.1",
        "01.1",
        "012.1",
        "1a.1",
        "1-a.1",
        "1--a--b--2.1",
        "a.b.c.d.e",
        "aa.bb.cc.dd.ee",
        "1.2.3.4.5",
        "11.22.33.44.55",
        &max,
    ];
    let long = a(254);
    let bad = [
        "",
        "A",
        "ABC",
        "aBc",
        "A1",
        "A-1",
        "1-A",
        "-",
        "a-",
        "-a",
        "1-",
        "-1",
        "_",
        "a_",
        "_a",
        "a_b",
        "1_",
        "_1",
        "1_2",
        ".",
        "a.",
        ".a",
        "a..b",
        "1.",
        ".1",
        "1..2",
        " ",
        "a ",
        " a",
        "a b",
        "1 ",
        " 1",
        "1 2",
        "A.a",
        "aB.a",
        "ab.A",
        "A1.a",
        "a1.A",
        "A.1",
        "aB.1",
        "A1.1",
        "1A.1",
        "0.A",
        "01.A",
        "012.A",
        "1A.a",
        "1a.A",
        "A.B.C.D.E",
        "AA.BB.CC.DD.EE",
        "a.B.c.d.e",
        "aa.bB.cc.dd.ee",
        "a@b",
        "a,b",
        "a;b",
        "a:b",
        "a%b",
        "a?b",
        "a$b",
        &long,
    ];
    check(is_dns1123_subdomain, &good, &bad);
    assert_eq!(
        is_dns1123_subdomain("Foo"),
        vec![
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ]
    );
    assert_eq!(
        is_dns1123_subdomain(&long),
        vec!["must be no more than 253 characters"]
    );
}

#[test]
fn dns1035_label() {
    let max = a(63);
    let good = ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", &max];
    let long = a(64);
    let bad = [
        "0",
        "01",
        "012",
        "1a",
        "1-a",
        "1--a--b--2",
        "",
        "A",
        "ABC",
        "aBc",
        "A1",
        "A-1",
        "1-A",
        "-",
        "a-",
        "-a",
        "1-",
        "-1",
        "_",
        "a_",
        "_a",
        "a_b",
        "1_",
        "_1",
        "1_2",
        ".",
        "a.",
        ".a",
        "a.b",
        "1.",
        ".1",
        "1.2",
        " ",
        "a ",
        " a",
        "a b",
        "1 ",
        " 1",
        "1 2",
        &long,
    ];
    check(is_dns1035_label, &good, &bad);
    assert_eq!(
        is_dns1035_label("1a"),
        vec![
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
        ]
    );
}

#[test]
fn qualified_name() {
    let max = a(63);
    let max_prefixed = format!("{}/{}", a(253), "b".repeat(63));
    let good = [
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "1234",
        "simple/simple",
        "now-with-dashes/simple",
        "now-with-dashes/now-with-dashes",
        "now.with.dots/simple",
        "now-with.dashes-and.dots/simple",
        "1-num.2-num/3-num",
        "1234/5678",
        "1.2.3.4/5678",
        "Uppercase_Is_OK_123",
        "example.com/Uppercase_Is_OK_123",
        "requests.storage-foo",
        &max,
        &max_prefixed,
    ];
    let long = a(64);
    let long_prefix = format!("{}/abc", a(254));
    let bad = [
        "nospecialchars%^=@",
        "cantendwithadash-",
        "-cantstartwithadash-",
        "only/one/slash",
        "Example.com/abc",
        "example_com/abc",
        "example.com/",
        "/simple",
        &long,
        &long_prefix,
    ];
    check(is_qualified_name, &good, &bad);
    let name_rule = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    assert_eq!(is_qualified_name("a-"), vec![name_rule]);
    assert_eq!(
        is_qualified_name("example.com/"),
        vec!["name part must be non-empty", name_rule]
    );
    assert_eq!(
        is_qualified_name("/a"),
        vec!["prefix part must be non-empty"]
    );
    assert_eq!(
        is_qualified_name(&long),
        vec!["name part must be no more than 63 bytes"]
    );
    assert_eq!(
        is_qualified_name(&long_prefix),
        vec!["prefix part must be no more than 253 bytes"]
    );
    assert_eq!(
        is_qualified_name("a/b/c"),
        vec![
            "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    );
}

#[test]
fn label_value() {
    let max = a(63);
    let good = [
        "simple",
        "now-with-dashes",
        "1-starts-with-num",
        "end-with-num-1",
        "1234",
        &max,
        "",
    ];
    let long = a(64);
    let bad = [
        "nospecialchars%^=@",
        "Tama-nui-te-rā.is.Māori.sun",
        "\\backslashes\\are\\bad",
        "-starts-with-dash",
        "ends-with-dash-",
        ".starts.with.dot",
        "ends.with.dot.",
        &long,
    ];
    check(is_valid_label_value, &good, &bad);
    assert_eq!(
        is_valid_label_value(&long),
        vec!["must be no more than 63 bytes"]
    );
    assert_eq!(
        is_valid_label_value("-x"),
        vec![
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        ]
    );
}

#[test]
fn config_map_key() {
    let good = [
        "a",
        "good",
        "good-good",
        "still.good",
        "this.is.also.good",
        ".so.is.this",
        "THIS_IS_GOOD",
        "so_is_this_17",
    ];
    check(
        is_config_map_key,
        &good,
        &[".", "..", "..bad", "b*d", "bad!&bad", ""],
    );
    assert_eq!(is_config_map_key("."), vec!["must not be '.'"]);
    assert_eq!(is_config_map_key(".."), vec!["must not be '..'"]);
    assert_eq!(is_config_map_key("..bad"), vec!["must not start with '..'"]);
    assert_eq!(
        is_config_map_key("b*d"),
        vec![
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
        ]
    );
}

#[test]
fn path_segment_names() {
    assert_eq!(is_valid_path_segment_name("."), vec!["may not be '.'"]);
    assert_eq!(is_valid_path_segment_name(".."), vec!["may not be '..'"]);
    assert_eq!(
        is_valid_path_segment_name("a/b%c"),
        vec!["may not contain '/'", "may not contain '%'"]
    );
    assert!(is_valid_path_segment_name("Any Thing:here").is_empty());
    assert!(validate_path_segment_name("..", true).is_empty());
    assert_eq!(
        validate_path_segment_name("a%", true),
        vec!["may not contain '%'"]
    );
}

#[test]
fn trailing_dash_masking() {
    let cases = [
        ("", ""),
        ("-", "-"),
        ("-foo", "-foo"),
        ("-foo-", "-foa"),
        ("b-", "a"),
        ("ab", "ab"),
    ];
    for (before, after) in cases {
        assert_eq!(mask_trailing_dash(before), after);
    }
    assert!(name_is_dns_subdomain("foo-", true).is_empty());
    assert!(!name_is_dns_subdomain("foo-", false).is_empty());
    assert!(name_is_dns_label("ns-", true).is_empty());
    assert!(validate_namespace_name("kube-system", false).is_empty());
    assert_eq!(
        validate_namespace_name("a.b", false),
        vec!["must not contain dots"]
    );
    assert!(name_is_dns1035_label("svc-", true).is_empty());
}

fn meta_path() -> Path {
    Path::root("metadata")
}

fn messages(errs: &FieldErrors) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn object_meta_name_and_generate_name() {
    let errs = validate_object_meta(&json!({}), true, name_is_dns_subdomain, &meta_path());
    assert_eq!(
        messages(&errs),
        vec![
            "metadata.name: Required value: name or generateName is required",
            "metadata.namespace: Required value"
        ]
    );
    assert_eq!(
        errs.iter().next().unwrap().error_type.as_str(),
        "FieldValueRequired"
    );

    let meta = json!({"name": "Foo", "namespace": "default"});
    let errs = validate_object_meta(&meta, true, name_is_dns_subdomain, &meta_path());
    assert_eq!(
        messages(&errs),
        vec![
            "metadata.name: Invalid value: \"Foo\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        ]
    );

    fn only_test(s: &str, _prefix: bool) -> Vec<String> {
        if s == "test" {
            Vec::new()
        } else {
            vec!["wrong value".into()]
        }
    }
    let cases = [
        (json!({"name": "test"}), 0),
        (json!({"name": "test", "generateName": "test"}), 0),
        (json!({"name": "invalid"}), 1),
        (json!({"name": "invalid", "generateName": "test"}), 1),
        (json!({"name": "invalid", "generateName": "invalid"}), 2),
    ];
    for (meta, count) in cases {
        let errs = validate_object_meta(&meta, false, only_test, &Path::root("field"));
        assert_eq!(errs.len(), count, "{meta}");
        if let Some(first) = errs.iter().next() {
            assert!(first.to_string().contains("wrong value"));
        }
    }
    let meta = json!({"generateName": "Foo-", "name": "foo-abcde"});
    let errs = validate_object_meta(&meta, false, name_is_dns_subdomain, &meta_path());
    assert_eq!(errs.iter().next().unwrap().field, "metadata.generateName");
}

#[test]
fn object_meta_namespace() {
    let errs = validate_object_meta(
        &json!({"name": "test", "namespace": "foo.bar"}),
        true,
        name_is_dns_subdomain,
        &meta_path(),
    );
    assert_eq!(
        messages(&errs),
        vec!["metadata.namespace: Invalid value: \"foo.bar\": must not contain dots"]
    );
    let long = "a".repeat(64) + "B";
    let errs = validate_object_meta(
        &json!({"name": "test", "namespace": long}),
        true,
        name_is_dns_subdomain,
        &meta_path(),
    );
    assert_eq!(errs.len(), 2);
    assert!(errs.iter().all(|e| e.to_string().contains("Invalid value")));
    let errs = validate_object_meta(
        &json!({"name": "test", "namespace": "x"}),
        false,
        name_is_dns_subdomain,
        &meta_path(),
    );
    assert_eq!(
        messages(&errs),
        vec!["metadata.namespace: Forbidden: not allowed on this type"]
    );
}

#[test]
fn object_meta_labels_annotations_generation() {
    let meta = json!({
        "name": "x",
        "generation": -1,
        "labels": {"a/b/c": "ok", "k": "-bad"},
        "annotations": {"Good.Example.com/Upper": "v", "bad key": "v"},
    });
    let errs = validate_object_meta(&meta, false, name_is_dns_subdomain, &meta_path());
    let msgs = messages(&errs);
    assert_eq!(
        msgs[0],
        "metadata.generation: Invalid value: -1: must be greater than or equal to 0"
    );
    assert!(
        msgs[1].starts_with(
            "metadata.labels: Invalid value: \"a/b/c\": a valid label key must consist"
        )
    );
    assert!(msgs[2].starts_with(
        "metadata.labels: Invalid value: \"-bad\": a valid label must be an empty string"
    ));
    assert!(
        msgs[3].starts_with(
            "metadata.annotations: Invalid value: \"bad key\": name part must consist"
        )
    );
    assert_eq!(msgs.len(), 4);

    let big = "x".repeat(TOTAL_ANNOTATION_SIZE_LIMIT_BYTES);
    let meta = json!({"name": "x", "annotations": {"k": big}});
    let errs = validate_object_meta(&meta, false, name_is_dns_subdomain, &meta_path());
    assert_eq!(
        messages(&errs),
        vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
    );
    assert_eq!(
        errs.iter().next().unwrap().error_type.as_str(),
        "FieldValueTooLong"
    );
}

fn owner(api_version: &str, kind: &str, uid: &str, controller: Option<bool>) -> Value {
    let mut r = json!({"apiVersion": api_version, "kind": kind, "name": "name", "uid": uid});
    if let Some(c) = controller {
        r["controller"] = json!(c);
    }
    r
}

#[test]
fn object_meta_owner_references() {
    let validate = |refs: Vec<Value>| {
        let meta = json!({"name": "test", "namespace": "test", "ownerReferences": refs});
        messages(&validate_object_meta(
            &meta,
            true,
            name_is_dns_subdomain,
            &Path::root("field"),
        ))
    };
    assert!(
        validate(vec![owner(
            "customresourceVersion",
            "customresourceKind",
            "1",
            None
        )])
        .is_empty()
    );
    assert_eq!(
        validate(vec![owner("v1", "Event", "1", None)]),
        vec![
            r#"field.ownerReferences: Invalid value: {"apiVersion":"v1","kind":"Event","name":"name","uid":"1"}: /v1, Kind=Event is disallowed from being an owner"#
        ]
    );
    let one_controller = vec![
        owner("v", "customresourceKind", "1", Some(false)),
        owner("v", "customresourceKind", "2", Some(true)),
        owner("v", "customresourceKind", "3", Some(false)),
        owner("v", "customresourceKind", "4", None),
    ];
    assert!(validate(one_controller).is_empty());
    let two_controllers = vec![
        owner("v", "customresourceKind1", "1", Some(false)),
        owner("v", "customresourceKind2", "2", Some(true)),
        owner("v", "customresourceKind3", "3", Some(true)),
        owner("v", "customresourceKind4", "4", None),
    ];
    let msgs = validate(two_controllers);
    assert_eq!(msgs.len(), 1);
    assert!(msgs[0].starts_with(r#"field.ownerReferences: Invalid value: [{"apiVersion":"v","kind":"customresourceKind1","name":"name","uid":"1","controller":false},"#));
    assert!(msgs[0].ends_with(r#": Only one reference can have Controller set to true. Found "true" in references for customresourceKind2/name and customresourceKind3/name"#));
    assert_eq!(
        validate(vec![json!({"apiVersion": "apps/", "kind": ""})]),
        vec![
            "field.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be empty",
            "field.ownerReferences.kind: Invalid value: \"\": must not be empty",
            "field.ownerReferences.name: Invalid value: \"\": must not be empty",
            "field.ownerReferences.uid: Invalid value: \"\": must not be empty",
        ]
    );
}

#[test]
fn object_meta_finalizers_and_managed_fields() {
    let meta =
        json!({"name": "test", "finalizers": ["orphan", "foregroundDeletion", "bad/name/x"]});
    let msgs = messages(&validate_object_meta(
        &meta,
        false,
        name_is_dns_subdomain,
        &meta_path(),
    ));
    assert_eq!(msgs.len(), 2);
    assert!(
        msgs[0]
            .starts_with("metadata.finalizers: Invalid value: \"bad/name/x\": a valid label key")
    );
    assert_eq!(
        msgs[1],
        r#"metadata.finalizers: Invalid value: ["orphan","foregroundDeletion","bad/name/x"]: finalizer orphan and foregroundDeletion cannot be both set"#
    );
    let meta = json!({"finalizers": ["kubernetes", "example.com/x", "custom"]});
    let errs = validate_kube_finalizers(&meta, &meta_path());
    assert_eq!(
        messages(&errs),
        vec![
            "metadata.finalizers[2]: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"
        ]
    );

    let meta = json!({"name": "test", "managedFields": [
        {"manager": "kubectl", "operation": "Apply", "fieldsType": "FieldsV1"},
        {"manager": "bad\u{7}", "operation": "Patch", "fieldsType": "FieldsV2", "subresource": "s".repeat(257)},
    ]});
    let msgs = messages(&validate_object_meta(
        &meta,
        false,
        name_is_dns_subdomain,
        &meta_path(),
    ));
    assert_eq!(
        msgs,
        vec![
            "metadata.managedFields[1].operation: Invalid value: \"Patch\": must be `Apply` or `Update`",
            "metadata.managedFields[1].fieldsType: Invalid value: \"FieldsV2\": must be `FieldsV1`",
            "metadata.managedFields[1].manager: Invalid value: \"bad\\a\": invalid character U+0007 (at position 3)",
            "metadata.managedFields[1].subresource: Too long: may not be more than 256 bytes",
        ]
    );
}

#[test]
fn object_meta_update() {
    let path = Path::root("field");
    let old = json!({"name": "test", "resourceVersion": "1", "creationTimestamp": "1970-01-01T00:00:10Z"});
    let new = json!({"name": "test", "resourceVersion": "1"});
    assert_eq!(
        messages(&validate_object_meta_update(&new, &old, &path)),
        vec!["field.creationTimestamp: Invalid value: null: field is immutable"]
    );
    let new = json!({"name": "test", "resourceVersion": "1", "creationTimestamp": "1970-01-01T00:00:11Z"});
    assert_eq!(
        messages(&validate_object_meta_update(&new, &old, &path)),
        vec![
            "field.creationTimestamp: Invalid value: \"1970-01-01T00:00:11Z\": field is immutable"
        ]
    );

    let old = json!({"name": "a", "namespace": "n", "uid": "u1", "generation": 2, "resourceVersion": "5",
        "deletionGracePeriodSeconds": 30, "generateName": "x"});
    let new = json!({"name": "b", "namespace": "m", "uid": "u2", "generation": 1,
        "deletionGracePeriodSeconds": 10, "generateName": "y"});
    assert_eq!(
        messages(&validate_object_meta_update(&new, &old, &path)),
        vec![
            "field.resourceVersion: Invalid value: \"\": must be specified for an update",
            "field.generation: Invalid value: 1: must not be decremented",
            "field.name: Invalid value: \"b\": field is immutable",
            "field.namespace: Invalid value: \"m\": field is immutable",
            "field.uid: Invalid value: \"u2\": field is immutable",
            "field.deletionGracePeriodSeconds: Invalid value: 10: field is immutable",
        ]
    );
    let same = json!({"name": "a", "resourceVersion": "1", "namespace": null, "labels": {}});
    assert!(validate_object_meta_update(&same, &json!({"name": "a"}), &path).is_empty());
}

#[test]
fn finalizers_on_deleting_objects() {
    let path = Path::root("field");
    let deleting = |finalizers: &[&str]| json!({"name": "test", "resourceVersion": "1", "deletionTimestamp": "2024-01-01T00:00:00Z", "finalizers": finalizers});
    let errs = validate_object_meta_update(
        &deleting(&["x/a", "y/b", "w/c"]),
        &deleting(&["x/a"]),
        &path,
    );
    assert_eq!(
        messages(&errs),
        vec![
            r#"field.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{"w/c", "y/b"}"#
        ]
    );
    assert!(
        validate_object_meta_update(&deleting(&["x/a"]), &deleting(&["x/a", "y/b"]), &path)
            .is_empty()
    );
    let live = |f: &[&str]| json!({"name": "test", "resourceVersion": "1", "finalizers": f});
    assert!(validate_object_meta_update(&live(&["x/a", "y/b"]), &live(&["x/a"]), &path).is_empty());
}

#[test]
fn invalid_error_from_meta() {
    let errs = validate_object_meta(
        &json!({"name": "Foo"}),
        false,
        name_is_dns_subdomain,
        &meta_path(),
    );
    let err = crate::ApiError::invalid(
        &crate::schema::GroupKind::new("", "ConfigMap"),
        "Foo",
        &errs,
    );
    assert!(err.message().starts_with(r#"ConfigMap "Foo" is invalid: metadata.name: Invalid value: "Foo": a lowercase RFC 1123 subdomain"#));
    let cause = &err.status().details.as_ref().unwrap().causes[0];
    assert_eq!(
        (cause.reason.as_str(), cause.field.as_str()),
        ("FieldValueInvalid", "metadata.name")
    );
    assert!(
        cause
            .message
            .starts_with(r#"Invalid value: "Foo": a lowercase"#)
    );
}

#[test]
fn label_selectors() {
    let path = Path::root("spec").child("selector");
    assert!(validate_label_selector(&Value::Null, &path).is_empty());
    let selector = json!({
        "matchLabels": {"app": "-x"},
        "matchExpressions": [
            {"key": "a", "operator": "In"},
            {"key": "b", "operator": "Exists", "values": ["v"]},
            {"key": "c/d/e", "operator": "Gt", "values": ["1", "-"]},
        ],
    });
    let msgs = messages(&validate_label_selector(&selector, &path));
    assert!(msgs[0].starts_with("spec.selector.matchLabels: Invalid value: \"-x\": a valid label"));
    assert_eq!(
        msgs[1],
        "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"
    );
    assert_eq!(
        msgs[2],
        "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
    );
    assert_eq!(
        msgs[3],
        "spec.selector.matchExpressions[2].operator: Invalid value: \"Gt\": not a valid selector operator"
    );
    assert!(msgs[4].starts_with(
        "spec.selector.matchExpressions[2].key: Invalid value: \"c/d/e\": a valid label key"
    ));
    assert!(msgs[5].starts_with(
        "spec.selector.matchExpressions[2].values[1]: Invalid value: \"-\": a valid label"
    ));
    assert_eq!(msgs.len(), 6);
}

/// IsValidPortName, with upstream's own cases (validation_test.go TestIsValidPortName),
/// including the empty name, which upstream refuses on two counts.
#[test]
fn port_names_as_upstream() {
    for good in [
        "telnet",
        "re-mail-ck",
        "pop3",
        "a",
        "a-1",
        "1-a",
        "a-1-b-2-c",
        "1-a-2-b-3",
    ] {
        assert!(is_valid_port_name(good).is_empty(), "{good}");
    }
    assert_eq!(
        is_valid_port_name(""),
        [
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            "must contain at least one letter (a-z)",
        ]
    );
    for bad in [
        "longerthan15characters",
        "12345",
        "1-2-3-4",
        "-begin",
        "end-",
        "two--hyphens",
        "whois++",
    ] {
        assert!(!is_valid_port_name(bad).is_empty(), "{bad}");
    }
    assert_eq!(
        is_valid_port_name("-Ab--"),
        [
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
            "must not contain consecutive hyphens",
            "must not begin or end with a hyphen",
        ]
    );
}
