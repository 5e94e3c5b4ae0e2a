use super::*;

#[test]
fn validate_valid() {
    run(crd, vec![(vec![], vec![])]);
    run(two_versions, vec![(vec![], vec![])]);
}

#[test]
fn validate_name_group_scope() {
    run(
        crd,
        vec![
            (
                vec![("/metadata/name", json!("widgets.example.org"))],
                vec![s(
                    r#"metadata.name: Invalid value: "widgets.example.org": must be spec.names.plural+"."+spec.group"#,
                )],
            ),
            (
                vec![
                    ("/spec/group", json!("")),
                    ("/metadata/name", json!("widgets.")),
                ],
                vec![s("spec.group: Required value")],
            ),
            (
                vec![
                    ("/spec/group", json!("example")),
                    ("/metadata/name", json!("widgets.example")),
                ],
                vec![s(
                    r#"spec.group: Invalid value: "example": should be a domain with at least one dot"#,
                )],
            ),
            (
                vec![
                    ("/spec/group", json!("Example.com")),
                    ("/metadata/name", json!("widgets.Example.com")),
                ],
                vec![s(
                    r#"spec.group: Invalid value: "Example.com": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
                )],
            ),
            (
                vec![("/spec/scope", json!(""))],
                vec![s("spec.scope: Required value")],
            ),
            (
                vec![("/spec/scope", json!("Global"))],
                vec![s(
                    r#"spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced""#,
                )],
            ),
        ],
    );
}

#[test]
fn validate_names() {
    run(
        crd,
        vec![
            (
                vec![
                    ("/spec/names/plural", json!("")),
                    ("/metadata/name", json!(".example.com")),
                ],
                vec![s("spec.names.plural: Required value")],
            ),
            (
                vec![
                    ("/spec/names/singular", json!("")),
                    ("/spec/names/kind", json!("")),
                    ("/spec/names/listKind", json!("")),
                ],
                vec![
                    s("spec.names.singular: Required value"),
                    s("spec.names.kind: Required value"),
                    s("spec.names.listKind: Required value"),
                ],
            ),
            (
                vec![
                    ("/spec/names/plural", json!("Widgets")),
                    ("/metadata/name", json!("Widgets.example.com")),
                ],
                vec![format!(
                    r#"spec.names.plural: Invalid value: "Widgets": {DNS1035}"#
                )],
            ),
            (
                vec![("/spec/names/kind", json!("Wid_get"))],
                vec![format!(
                    r#"spec.names.kind: Invalid value: "Wid_get": may have mixed case, but should otherwise match: {DNS1035}"#
                )],
            ),
            (
                vec![("/spec/names/listKind", json!("Widget"))],
                vec![s(
                    r#"spec.names.listKind: Invalid value: "Widget": kind and listKind may not be the same"#,
                )],
            ),
            (
                vec![
                    ("/spec/names/shortNames", json!(["ok", "Not-OK"])),
                    ("/spec/names/categories", json!(["all", "a.b"])),
                ],
                vec![
                    format!(r#"spec.names.shortNames[1]: Invalid value: "Not-OK": {DNS1035}"#),
                    format!(r#"spec.names.categories[1]: Invalid value: "a.b": {DNS1035}"#),
                ],
            ),
            (
                vec![(
                    "/status/acceptedNames",
                    json!({"plural": "Bad", "kind": "Widget"}),
                )],
                vec![format!(
                    r#"status.acceptedNames.plural: Invalid value: "Bad": {DNS1035}"#
                )],
            ),
        ],
    );
}

#[test]
fn validate_versions() {
    run(
        crd,
        vec![
            (
                vec![("/spec/versions", json!([]))],
                vec![
                    s(
                        "spec.versions: Invalid value: []: must have exactly one version marked as storage version",
                    ),
                    s(
                        "status.storedVersions[0]: Invalid value: \"v1\": missing from spec.versions; v1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1 and removes v1 from status.storedVersions",
                    ),
                ],
            ),
            (
                vec![("/spec/versions/0/storage", json!(false))],
                vec![s(
                    r#"spec.versions: Invalid value: [{"Name":"v1","Served":true,"Storage":false,"Deprecated":false,"DeprecationWarning":null,"Schema":null,"Subresources":null,"AdditionalPrinterColumns":null,"SelectableFields":null}]: must have exactly one version marked as storage version"#,
                )],
            ),
            (
                vec![
                    ("/spec/versions/0/name", json!("V1")),
                    ("/status/storedVersions", json!(["V1"])),
                ],
                vec![
                    format!(r#"spec.versions[0].name: Invalid value: "V1": {DNS1035}"#),
                    format!(r#"spec.version: Invalid value: "V1": {DNS1035}"#),
                ],
            ),
            (
                vec![("/spec/versions/0/schema", Value::Null)],
                vec![s("spec.versions[0].schema.openAPIV3Schema: Required value")],
            ),
            (
                vec![("/spec/versions/0/deprecationWarning", json!("old"))],
                vec![s(
                    r#"spec.versions[0].deprecationWarning: Invalid value: "old": can only be set for deprecated versions"#,
                )],
            ),
            (
                vec![
                    ("/spec/versions/0/deprecated", json!(true)),
                    ("/spec/versions/0/deprecationWarning", json!("a\u{7}b")),
                ],
                vec![s(
                    "spec.versions[0].deprecationWarning: Invalid value: \"a\\ab\": must only contain printable UTF-8 characters; non-printable character found at index 1",
                )],
            ),
            (
                vec![
                    ("/spec/versions/0/deprecated", json!(true)),
                    ("/spec/versions/0/deprecationWarning", json!("")),
                ],
                vec![s(
                    r#"spec.versions[0].deprecationWarning: Invalid value: "": must not be an empty string"#,
                )],
            ),
        ],
    );
    run(
        two_versions,
        vec![
            (
                vec![
                    ("/spec/versions/1/name", json!("v1")),
                    ("/status/storedVersions", json!(["v1"])),
                    // Identical schemas: hoisted to spec.validation, nil in the versions.
                    (
                        "/spec/versions/0/schema/openAPIV3Schema/description",
                        json!("v2"),
                    ),
                ],
                vec![s(
                    r#"spec.versions: Invalid value: [{"Name":"v1","Served":true,"Storage":false,"Deprecated":false,"DeprecationWarning":null,"Schema":null,"Subresources":null,"AdditionalPrinterColumns":null,"SelectableFields":null},{"Name":"v1","Served":true,"Storage":true,"Deprecated":false,"DeprecationWarning":null,"Schema":null,"Subresources":null,"AdditionalPrinterColumns":null,"SelectableFields":null}]: must contain unique version names"#,
                )],
            ),
            (
                vec![("/spec/versions/1/schema", Value::Null)],
                vec![s("spec.versions[1].schema.openAPIV3Schema: Required value")],
            ),
        ],
    );
}

#[test]
fn validate_stored_versions() {
    run(
        crd,
        vec![
            (
                vec![("/status/storedVersions", json!([]))],
                vec![s(
                    "status.storedVersions: Invalid value: []: must have at least one stored version",
                )],
            ),
            (
                vec![("/status/storedVersions", json!(["v0"]))],
                vec![
                    s(
                        r#"status.storedVersions: Invalid value: ["v0"]: must have the storage version v1"#,
                    ),
                    s(
                        "status.storedVersions[0]: Invalid value: \"v0\": missing from spec.versions; v0 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v0 and removes v0 from status.storedVersions",
                    ),
                ],
            ),
        ],
    );
}

#[test]
fn validate_schema_root() {
    run(
        crd,
        vec![
            (
                vec![(
                    "/spec/versions/0/schema/openAPIV3Schema/nullable",
                    json!(true),
                )],
                vec![s(
                    "spec.validation.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root",
                )],
            ),
            (
                vec![
                    ("/spec/versions/0/subresources", json!({"status": {}})),
                    (
                        "/spec/versions/0/schema/openAPIV3Schema/type",
                        json!("array"),
                    ),
                ],
                vec![
                    s(
                        r#"spec.validation.openAPIV3Schema.type: Invalid value: "array": only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                    ),
                    s("spec.validation.openAPIV3Schema.items: Required value: must be specified"),
                    s(
                        r#"spec.validation.openAPIV3Schema.type: Invalid value: "array": must be object at the root"#,
                    ),
                ],
            ),
            (
                vec![
                    ("/spec/versions/0/subresources", json!({"status": {}})),
                    (
                        "/spec/versions/0/schema/openAPIV3Schema",
                        json!({"type": "object", "minProperties": 1}),
                    ),
                ],
                vec![s(
                    r#"spec.validation.openAPIV3Schema: Invalid value: {"minProperties":1,"type":"object"}: only [Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the status subresource is enabled"#,
                )],
            ),
            (
                vec![
                    ("/spec/preserveUnknownFields", json!(true)),
                    (
                        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/default",
                        json!({}),
                    ),
                ],
                vec![
                    s(
                        "spec.preserveUnknownFields: Invalid value: true: must be false in order to use defaults in the schema",
                    ),
                    s(
                        "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
                    ),
                ],
            ),
        ],
    );
    run(
        two_versions,
        vec![(
            vec![(
                "/spec/versions/1/schema/openAPIV3Schema/nullable",
                json!(true),
            )],
            vec![s(
                "spec.versions[1].schema.openAPIV3Schema.nullable: Forbidden: nullable cannot be true at the root",
            )],
        )],
    );
}

#[test]
fn validate_subresources() {
    let scale = |spec: &str, status: &str, selector: &str| json!({"scale": {"specReplicasPath": spec, "statusReplicasPath": status, "labelSelectorPath": selector}});
    run(
        crd,
        vec![
            (
                vec![(
                    "/spec/versions/0/subresources",
                    scale(".spec.size", ".status.replicas", ".status.selector"),
                )],
                vec![],
            ),
            (
                vec![("/spec/versions/0/subresources", scale("", "", ""))],
                vec![
                    s("spec.subresources.scale.specReplicasPath: Required value"),
                    s("spec.subresources.scale.statusReplicasPath: Required value"),
                ],
            ),
            (
                vec![(
                    "/spec/versions/0/subresources",
                    scale("spec.size", ".spec.replicas", "status"),
                )],
                vec![
                    s(
                        r#"spec.subresources.scale.specReplicasPath: Invalid value: "spec.size": must be a simple json path starting with ."#,
                    ),
                    s(
                        r#"spec.subresources.scale.statusReplicasPath: Invalid value: ".spec.replicas": should be a json path under .status"#,
                    ),
                    s(
                        r#"spec.subresources.scale.labelSelectorPath: Invalid value: "status": must be a simple json path starting with ."#,
                    ),
                ],
            ),
            (
                vec![(
                    "/spec/versions/0/subresources",
                    scale(".status.size", ".status.replicas", ".metadata.labels"),
                )],
                vec![
                    s(
                        r#"spec.subresources.scale.specReplicasPath: Invalid value: ".status.size": should be a json path under .spec"#,
                    ),
                    s(
                        r#"spec.subresources.scale.labelSelectorPath: Invalid value: ".metadata.labels": should be a json path under either .spec or .status"#,
                    ),
                ],
            ),
        ],
    );
    run(
        two_versions,
        vec![(
            vec![("/spec/versions/1/subresources", scale(".spec.size", "", ""))],
            vec![s(
                "spec.versions[1].subresources.scale.statusReplicasPath: Required value",
            )],
        )],
    );
}

#[test]
fn validate_printer_columns() {
    let column = |name: &str, type_: &str, format: &str, path: &str| json!([{"name": name, "type": type_, "format": format, "jsonPath": path}]);
    run(
        crd,
        vec![
            (
                vec![(
                    "/spec/versions/0/additionalPrinterColumns",
                    column("Size", "integer", "int32", ".spec.size"),
                )],
                vec![],
            ),
            (
                vec![(
                    "/spec/versions/0/additionalPrinterColumns",
                    column("", "", "", ""),
                )],
                vec![
                    s("spec.additionalPrinterColumns[0].name: Required value"),
                    s(
                        "spec.additionalPrinterColumns[0].type: Required value: must be one of boolean,date,integer,number,string",
                    ),
                    s("spec.additionalPrinterColumns[0].JSONPath: Required value"),
                ],
            ),
            (
                vec![(
                    "/spec/versions/0/additionalPrinterColumns",
                    column("Size", "int", "uint", "spec.size"),
                )],
                vec![
                    s(
                        r#"spec.additionalPrinterColumns[0].type: Invalid value: "int": must be one of boolean,date,integer,number,string"#,
                    ),
                    s(
                        r#"spec.additionalPrinterColumns[0].format: Invalid value: "uint": must be one of byte,date,date-time,double,float,int32,int64,password"#,
                    ),
                    s(
                        r#"spec.additionalPrinterColumns[0].JSONPath: Invalid value: "spec.size": must be a simple json path starting with ."#,
                    ),
                ],
            ),
        ],
    );
    run(
        two_versions,
        vec![(
            vec![(
                "/spec/versions/0/additionalPrinterColumns",
                column("Size", "integer", "", ""),
            )],
            vec![s(
                "spec.versions[0].additionalPrinterColumns[0].JSONPath: Required value",
            )],
        )],
    );
}

#[test]
fn validate_selectable_fields() {
    let fields =
        |paths: &[&str]| Value::Array(paths.iter().map(|p| json!({"jsonPath": p})).collect());
    run(
        crd,
        vec![
            (
                vec![(
                    "/spec/versions/0/selectableFields",
                    fields(&[".spec.color", ".spec.size", ".spec.labels.app"]),
                )],
                vec![],
            ),
            (
                vec![(
                    "/spec/versions/0/selectableFields",
                    fields(&[
                        "",
                        ".spec.shape",
                        ".spec[0]",
                        "spec.color",
                        ".spec",
                        ".spec.color",
                        ".spec.color",
                        ".metadata.name",
                    ]),
                )],
                vec![
                    s("spec.selectableFields[0].jsonPath: Required value"),
                    s(
                        r#"spec.selectableFields[1].jsonPath: Invalid value: ".spec.shape": is an invalid path: does not refer to a valid field"#,
                    ),
                    s(
                        r#"spec.selectableFields[2].jsonPath: Invalid value: ".spec[0]": is an invalid path: array notation is not allowed"#,
                    ),
                    s(
                        r#"spec.selectableFields[3].jsonPath: Invalid value: "spec.color": is an invalid path: expected [ or . but got: spec"#,
                    ),
                    s(
                        r#"spec.selectableFields[4].jsonPath: Invalid value: ".spec": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."#,
                    ),
                    s(r#"spec.selectableFields[6].jsonPath: Duplicate value: ".spec.color""#),
                    s(
                        r#"spec.selectableFields[7].jsonPath: Invalid value: ".metadata.name": is an invalid path: does not refer to a valid field"#,
                    ),
                ],
            ),
        ],
    );
    let nine: Vec<String> = (0..9).map(|i| format!(".spec.labels.l{i}")).collect();
    let nine: Vec<&str> = nine.iter().map(String::as_str).collect();
    run(
        crd,
        vec![(
            vec![("/spec/versions/0/selectableFields", fields(&nine))],
            vec![s(
                "spec.selectableFields: Too many: 9: must have at most 8 items",
            )],
        )],
    );
    run(
        || {
            let mut object = two_versions();
            object["spec"]["versions"][1]["schema"] =
                object["spec"]["versions"][0]["schema"].clone();
            object
        },
        vec![(
            vec![(
                "/spec/versions/1/selectableFields",
                fields(&[".spec.color"]),
            )],
            vec![s(
                "spec.versions[1].selectableFields: Invalid value: \"\": may only be set when `version.schema.openAPIV3Schema` is not included",
            )],
        )],
    );
    run(
        two_versions,
        vec![(
            vec![("/spec/versions/1/selectableFields", fields(&[".spec.nope"]))],
            vec![s(
                r#"spec.versions[1].selectableFields[0].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field"#,
            )],
        )],
    );
}

#[test]
fn validate_conversion() {
    let webhook = |config: Value, versions: Value| json!({"strategy": "Webhook", "webhook": {"clientConfig": config, "conversionReviewVersions": versions}});
    let service = json!({"name": "conv", "namespace": "ns", "port": 443});
    run(
        crd,
        vec![
            (
                vec![(
                    "/spec/conversion",
                    webhook(
                        json!({"url": "https://conv.example.com/convert"}),
                        json!(["v1"]),
                    ),
                )],
                vec![],
            ),
            (
                vec![(
                    "/spec/conversion",
                    webhook(json!({"service": service}), json!(["v1beta1", "v1"])),
                )],
                vec![],
            ),
            (
                vec![("/spec/conversion", json!({"strategy": ""}))],
                vec![s("spec.conversion.strategy: Required value")],
            ),
            (
                vec![("/spec/conversion", json!({"strategy": "Magic"}))],
                vec![s(
                    r#"spec.conversion.strategy: Unsupported value: "Magic": supported values: "None", "Webhook""#,
                )],
            ),
            (
                vec![(
                    "/spec/conversion",
                    json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"]}}),
                )],
                vec![s(
                    "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
                )],
            ),
            (
                vec![(
                    "/spec/conversion",
                    webhook(
                        json!({"url": "https://a", "service": service}),
                        json!(["v1"]),
                    ),
                )],
                vec![s(
                    "spec.conversion.webhookClientConfig: Required value: exactly one of url or service is required",
                )],
            ),
            (
                vec![(
                    "/spec/conversion",
                    webhook(json!({"url": "http://u:p@host/x?q=1#f"}), json!(["v1"])),
                )],
                vec![
                    s(
                        r#"spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#,
                    ),
                    s(
                        r#"spec.conversion.webhookClientConfig.url: Invalid value: "u:p": user information is not permitted in the URL"#,
                    ),
                    s(
                        r#"spec.conversion.webhookClientConfig.url: Invalid value: "f": fragments are not permitted in the URL"#,
                    ),
                    s(
                        r#"spec.conversion.webhookClientConfig.url: Invalid value: "q=1": query parameters are not permitted in the URL"#,
                    ),
                ],
            ),
            (
                vec![(
                    "/spec/conversion",
                    webhook(
                        json!({"service": {"port": 0, "path": "/a//B"}}),
                        json!(["v1"]),
                    ),
                )],
                vec![
                    s("spec.conversion.webhookClientConfig.service.name: Required value"),
                    s("spec.conversion.webhookClientConfig.service.namespace: Required value"),
                    s(
                        "spec.conversion.webhookClientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
                    ),
                    s(
                        r#"spec.conversion.webhookClientConfig.service.path: Invalid value: "/a//B": segment[1] may not be empty"#,
                    ),
                    s(
                        r#"spec.conversion.webhookClientConfig.service.path: Invalid value: "/a//B": segment[2]: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"#,
                    ),
                ],
            ),
            (
                vec![(
                    "/spec/conversion",
                    webhook(json!({"service": service}), json!([])),
                )],
                vec![s(
                    "spec.conversion.conversionReviewVersions: Required value",
                )],
            ),
            (
                vec![(
                    "/spec/conversion",
                    webhook(json!({"service": service}), json!(["v2", "v2", "V3"])),
                )],
                vec![
                    s(
                        r#"spec.conversion.conversionReviewVersions[1]: Invalid value: "v2": duplicate version"#,
                    ),
                    format!(
                        r#"spec.conversion.conversionReviewVersions[2]: Invalid value: "V3": {DNS1035}"#
                    ),
                    s(
                        r#"spec.conversion.conversionReviewVersions: Invalid value: ["v2","v2","V3"]: must include at least one of v1, v1beta1"#,
                    ),
                ],
            ),
            (
                vec![(
                    "/spec/conversion",
                    json!({"strategy": "None", "webhook": {"clientConfig": {"url": "https://a"}, "conversionReviewVersions": ["v1"]}}),
                )],
                vec![
                    s(
                        "spec.conversion.webhookClientConfig: Forbidden: should not be set when strategy is not set to Webhook",
                    ),
                    s(
                        "spec.conversion.conversionReviewVersions: Forbidden: should not be set when strategy is not set to Webhook",
                    ),
                ],
            ),
        ],
    );
}

#[test]
fn validate_api_approval() {
    let protected = |object: &mut Value| {
        object["spec"]["group"] = json!("widgets.k8s.io");
        object["metadata"]["name"] = json!("widgets.widgets.k8s.io");
    };
    let annotation = "metadata.annotations[api-approved.kubernetes.io]";
    let cases: Vec<(Option<&str>, Vec<String>)> = vec![
        (
            None,
            vec![format!(
                r#"{annotation}: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111"#
            )],
        ),
        (
            Some("yes"),
            vec![format!(
                r#"{annotation}: Invalid value: "yes": protected groups must have approval annotation "api-approved.kubernetes.io" with either a URL or a reason starting with "unapproved", see https://github.com/kubernetes/enhancements/pull/1111"#
            )],
        ),
        (Some("unapproved, experimental"), vec![]),
        (
            Some("https://github.com/kubernetes/kubernetes/pull/78458"),
            vec![],
        ),
    ];
    for (value, expected) in cases {
        let mut object = crd();
        protected(&mut object);
        if let Some(value) = value {
            object["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": value});
        }
        assert_eq!(
            strings(&validation::validate_create(&object)),
            expected,
            "{value:?}"
        );
    }
    // An update that keeps the (missing) approval is not rejected.
    let mut old = crd();
    protected(&mut old);
    let mut new = old.clone();
    new["spec"]["names"]["shortNames"] = json!(["wd"]);
    assert!(validation::validate_update(&new, &old).is_empty());
}

#[test]
fn validate_update_immutable_fields() {
    let mut old = crd();
    let mut established = old.clone();
    access::set_condition_at(
        &mut established,
        &super::access::Condition {
            type_: "Established".into(),
            status: "True".into(),
            reason: String::new(),
            message: String::new(),
        },
        "2026-01-01T00:00:00Z",
    );
    let mut new = crd();
    new["spec"]["scope"] = json!("Cluster");
    new["spec"]["names"]["kind"] = json!("Gadget");
    new["spec"]["names"]["listKind"] = json!("GadgetList");
    new["spec"]["names"]["plural"] = json!("gadgets");
    new["spec"]["group"] = json!("example.org");
    // Not established yet: scope and kind may change; group and plural never.
    assert_eq!(
        strings(&validation::validate_update(&new, &old)),
        vec![
            s(r#"spec.group: Invalid value: "example.org": field is immutable"#),
            s(r#"spec.names.plural: Invalid value: "gadgets": field is immutable"#),
        ]
    );
    assert_eq!(
        strings(&validation::validate_update(&new, &established)),
        vec![
            s(r#"spec.scope: Invalid value: "Cluster": field is immutable"#),
            s(r#"spec.names.kind: Invalid value: "Gadget": field is immutable"#),
            s(r#"spec.group: Invalid value: "example.org": field is immutable"#),
            s(r#"spec.names.plural: Invalid value: "gadgets": field is immutable"#),
        ]
    );
    // preserveUnknownFields may stay true only where it already was.
    old["spec"]["preserveUnknownFields"] = json!(true);
    let mut kept = old.clone();
    kept["spec"]["names"]["shortNames"] = json!(["wd"]);
    assert!(validation::validate_update(&kept, &old).is_empty());
}

#[test]
fn validate_update_review_versions_and_selectable_fields() {
    let conversion = |versions: Value| json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://c"}, "conversionReviewVersions": versions}});
    // A stored CRD without a known review version may keep it.
    let mut old = crd();
    old["spec"]["conversion"] = conversion(json!(["v9"]));
    let mut new = old.clone();
    new["spec"]["names"]["shortNames"] = json!(["wd"]);
    assert!(validation::validate_update(&new, &old).is_empty());
    // More selectable fields than allowed survive unchanged, not when changed.
    let nine: Vec<Value> = (0..9)
        .map(|i| json!({"jsonPath": format!(".spec.labels.l{i}")}))
        .collect();
    let mut old = crd();
    old["spec"]["versions"][0]["selectableFields"] = Value::Array(nine.clone());
    let mut same = old.clone();
    same["spec"]["names"]["shortNames"] = json!(["wd"]);
    assert!(validation::validate_update(&same, &old).is_empty());
    let mut changed = old.clone();
    changed["spec"]["versions"][0]["selectableFields"][8] = json!({"jsonPath": ".spec.labels.l99"});
    assert_eq!(
        strings(&validation::validate_update(&changed, &old)),
        vec![s(
            "spec.selectableFields: Too many: 9: must have at most 8 items"
        )]
    );
}

#[test]
fn status_update_validates_accepted_names_only() {
    let mut new = crd();
    new["spec"]["group"] = json!("");
    new["status"]["acceptedNames"] =
        json!({"plural": "widgets", "kind": "Widget", "listKind": "Widget"});
    let errs = CrdStrategy.validate_subresource_update(&SubresourceKind::Status, &new, &crd());
    assert_eq!(
        strings(&errs),
        vec![s(
            r#"status.acceptedNames.listKind: Invalid value: "Widget": kind and listKind may not be the same"#
        )]
    );
}
