use super::*;

#[test]
fn validate_schema_keywords() {
    let at = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/color";
    let root = "spec.validation.openAPIV3Schema";
    let color = format!("{root}.properties[spec].properties[color]");
    let cases: Vec<(Value, Vec<String>)> = vec![
        (json!({"type": "string", "format": "email"}), vec![]),
        (
            json!({"type": "text"}),
            vec![format!(
                r#"{color}.type: Unsupported value: "text": supported values: "array", "boolean", "integer", "number", "object", "string""#
            )],
        ),
        (
            json!({"type": "null"}),
            vec![
                format!(
                    r#"{color}.type: Unsupported value: "null": supported values: "array", "boolean", "integer", "number", "object", "string""#
                ),
                format!(
                    "{color}.type: Forbidden: type cannot be set to null, use nullable as an alternative"
                ),
            ],
        ),
        (
            json!({"type": "string", "id": "x", "$ref": "#/definitions/a", "additionalItems": false}),
            vec![
                format!("{color}.id: Forbidden: id is not supported"),
                format!("{color}.additionalItems: Forbidden: additionalItems is not supported"),
                format!("{color}.$ref: Forbidden: $ref is not supported"),
            ],
        ),
        (
            json!({"type": "array", "uniqueItems": true, "items": {"type": "string"}}),
            vec![format!(
                "{color}.uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"
            )],
        ),
        (
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}),
            vec![format!(
                "{color}.additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"
            )],
        ),
        (
            json!({"type": "object", "x-kubernetes-preserve-unknown-fields": false}),
            vec![format!(
                "{color}.x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"
            )],
        ),
        (
            json!({"type": "string", "x-kubernetes-map-type": "loose"}),
            vec![
                format!(
                    r#"{color}.type: Invalid value: "string": must be object if x-kubernetes-map-type is specified"#
                ),
                format!(
                    r#"{color}.x-kubernetes-map-type: Unsupported value: "loose": supported values: "atomic", "granular""#
                ),
            ],
        ),
        (
            json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"}),
            vec![format!(
                r#"{color}.x-kubernetes-list-type: Unsupported value: "bag": supported values: "atomic", "set", "map""#
            )],
        ),
        (
            json!({"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "set"}),
            vec![format!(
                "{color}.items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"
            )],
        ),
        (
            json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-map-keys": ["name"]}),
            vec![format!(
                "{color}.x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"
            )],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port", "name"],
                   "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "object", "nullable": true}}}}),
            vec![
                format!(
                    r#"{color}.items.properties[port].type: Invalid value: "object": must be a scalar type if parent array's x-kubernetes-list-type is map"#
                ),
                format!(
                    r#"{color}.x-kubernetes-list-map-keys: Invalid value: ["name","port","name"]: must not contain duplicate entries"#
                ),
                format!(
                    "{color}.items.properties[port].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"
                ),
                format!(
                    "{color}.items.properties[port].nullable: Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable"
                ),
            ],
        ),
        (
            json!({"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "string"}}),
            vec![
                format!(
                    "{color}.x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"
                ),
                format!(
                    r#"{color}.items.type: Invalid value: "string": must be object if parent array's x-kubernetes-list-type is map"#
                ),
            ],
        ),
        (
            json!({"type": "string", "x-kubernetes-validations": [
                {"rule": " "},
                {"rule": "self != ''", "message": " "},
                {"rule": "self != ''", "message": "a\nb"},
                {"rule": "self !=\n''"},
                {"rule": "self != ''", "messageExpression": " ", "reason": "FieldValueBad"},
                {"rule": "self != ''", "fieldPath": ".nope"}]}),
            vec![
                format!(
                    "{color}.x-kubernetes-validations[0].rule: Required value: rule is not specified"
                ),
                format!(
                    r#"{color}.x-kubernetes-validations[1].message: Invalid value: " ": must be non-empty if specified"#
                ),
                format!(
                    r#"{color}.x-kubernetes-validations[2].message: Invalid value: "a\nb": must not contain line breaks"#
                ),
                format!(
                    "{color}.x-kubernetes-validations[3].message: Required value: message must be specified if rule contains line breaks"
                ),
                format!(
                    "{color}.x-kubernetes-validations[4].messageExpression: Required value: messageExpression must be non-empty if specified"
                ),
                format!(
                    r#"{color}.x-kubernetes-validations[4].reason: Unsupported value: "FieldValueBad": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired""#
                ),
                format!(
                    r#"{color}.x-kubernetes-validations[5].fieldPath: Invalid value: ".nope": must be a valid path"#
                ),
            ],
        ),
        (
            json!({"type": "object", "properties": {"a b": {"type": "string"}},
                   "x-kubernetes-validations": [{"rule": "true", "fieldPath": ".a"}, {"rule": "true", "fieldPath": "['a b']"}]}),
            vec![format!(
                r#"{color}.x-kubernetes-validations[0].fieldPath: Invalid value: ".a": must be a valid path"#
            )],
        ),
    ];
    for (schema, expected) in cases {
        let mut object = crd();
        set(&mut object, at, schema.clone());
        assert_eq!(
            strings(&validation::validate_create(&object)),
            expected,
            "{schema}"
        );
    }
}

#[test]
fn validate_schema_defaults_placement() {
    let mut object = crd();
    set(
        &mut object,
        "/spec/versions/0/schema/openAPIV3Schema/properties/metadata",
        json!({"type": "object", "default": {}, "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string", "default": "x"}}}}),
    );
    set(
        &mut object,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/default",
        json!(3),
    );
    assert_eq!(
        strings(&validation::validate_create(&object)),
        vec![
            s(
                "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
            ),
            s(
                "spec.validation.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata"
            ),
            s(
                "spec.validation.openAPIV3Schema.properties[metadata].properties[labels].additionalProperties.default: Forbidden: must not be set inside additionalProperties applying to object metadata"
            ),
        ]
    );
}

#[test]
fn validate_update_keeps_stored_leniency() {
    let color = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/color";
    let tags = json!({"type": "array", "x-kubernetes-list-type": "set",
                      "items": {"type": "object", "nullable": true}});
    let mut old = crd();
    set(&mut old, color, json!({"type": "text"}));
    set(
        &mut old,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/tags",
        tags,
    );
    let mut new = old.clone();
    new["spec"]["names"]["shortNames"] = json!(["wd"]);
    assert_eq!(
        strings(&validation::validate_create(&new)).len(),
        3,
        "a new CRD gets every rule"
    );
    assert!(validation::validate_update(&new, &old).is_empty());

    // A stored CRD without a schema in some version needs one only where it is served.
    let mut old = two_versions();
    old["spec"]["versions"][0]["schema"] = Value::Null;
    old["spec"]["versions"][0]["served"] = json!(false);
    let mut new = old.clone();
    assert_eq!(
        strings(&validation::validate_update(&new, &old)),
        Vec::<String>::new()
    );
    new["spec"]["versions"][1]["schema"] = Value::Null;
    assert_eq!(
        strings(&validation::validate_update(&new, &old)),
        vec![s(
            "spec.versions[1].schema.openAPIV3Schema: Required value: because otherwise all fields are pruned"
        ),]
    );
}

#[test]
fn normalize_writes_schemas_as_typed() {
    let mut object = crd();
    set(
        &mut object,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size",
        json!({"type": "integer", "nullable": false, "description": "", "maximum": 0, "default": null,
               "x-kubernetes-preserve-unknown-fields": false,
               "x-kubernetes-validations": [{"rule": "self >= 0", "message": "", "reason": null, "optionalOldSelf": false}]}),
    );
    set(
        &mut object,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/required",
        json!([]),
    );
    defaults::normalize(&mut object);
    let spec = &object["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert!(spec.get("required").is_none());
    assert_eq!(
        spec["properties"]["size"],
        json!({"type": "integer", "maximum": 0, "x-kubernetes-preserve-unknown-fields": false,
               "x-kubernetes-validations": [{"rule": "self >= 0", "optionalOldSelf": false}]})
    );
}

#[test]
fn validate_remaining_rules() {
    run(
        crd,
        vec![
            (
                vec![
                    ("/spec/versions/0/deprecated", json!(true)),
                    (
                        "/spec/versions/0/deprecationWarning",
                        json!("x".repeat(257)),
                    ),
                ],
                vec![format!(
                    r#"spec.versions[0].deprecationWarning: Invalid value: "{}": must be <= 256 characters long"#,
                    "x".repeat(257)
                )],
            ),
            (
                vec![
                    ("/spec/preserveUnknownFields", json!(true)),
                    (
                        "/spec/conversion",
                        json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://c"}, "conversionReviewVersions": ["v1"]}}),
                    ),
                ],
                vec![
                    s(
                        r#"spec.conversion.strategy: Invalid value: "Webhook": must be None if spec.preserveUnknownFields is true"#,
                    ),
                    s(
                        "spec.preserveUnknownFields: Invalid value: true: cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
                    ),
                ],
            ),
        ],
    );
    // Identical selectable fields are validated at the top level, where they need a
    // top-level (identical) schema.
    run(
        two_versions,
        vec![(
            vec![
                (
                    "/spec/versions/0/selectableFields",
                    json!([{"jsonPath": ".spec.color"}]),
                ),
                (
                    "/spec/versions/1/selectableFields",
                    json!([{"jsonPath": ".spec.color"}]),
                ),
            ],
            vec![s(
                r#"spec.selectableFields: Invalid value: "": may only be set when validations.schema is included"#,
            )],
        )],
    );
}

#[test]
fn validate_schema_structural_and_rules() {
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec";
    let mut object = crd();
    set(&mut object, &format!("{spec}/properties/shape"), json!({}));
    set(
        &mut object,
        &format!("{spec}/x-kubernetes-validations"),
        json!([{"rule": "self.size >="}]),
    );
    // The structural error hides the rules, which compile only on a structural schema.
    assert_eq!(
        strings(&validation::validate_create(&object)),
        vec![s(
            "spec.validation.openAPIV3Schema.properties[spec].properties[shape].type: Required value: must not be empty for specified object fields"
        )]
    );
    set(
        &mut object,
        &format!("{spec}/properties/shape"),
        json!({"type": "string"}),
    );
    let errs = strings(&validation::validate_create(&object));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].starts_with(
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: "
        ),
        "{errs:?}"
    );
    set(
        &mut object,
        &format!("{spec}/x-kubernetes-validations"),
        json!([{"rule": "self.size >= 0"}]),
    );
    assert!(validation::validate_create(&object).is_empty());
}

#[test]
fn rules_are_held_to_the_cost_limits() {
    let labels = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/labels";
    let rule_at = "spec.validation.openAPIV3Schema.properties[spec].properties[labels].x-kubernetes-validations[0].rule";
    let mut object = crd();
    set(
        &mut object,
        &format!("{labels}/x-kubernetes-validations"),
        json!([{"rule": "self.all(k, self.all(j, self[k].contains(self[j])))"}]),
    );
    let errs = strings(&validation::validate_create(&object));
    assert_eq!(errs.len(), 3, "{errs:?}");
    assert!(
        errs[0].starts_with(&format!(
            "{rule_at}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x"
        )),
        "{errs:?}"
    );
    // An update that leaves the schema as it was is only held to the total.
    let mut changed = object.clone();
    set(&mut changed, "/spec/names/shortNames", json!(["wd"]));
    let errs = strings(&validation::validate_update(&changed, &object));
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs[0].starts_with(&format!("{rule_at}: Forbidden: contributed")));
    // Bounds make it affordable.
    set(&mut object, &format!("{labels}/maxProperties"), json!(20));
    set(
        &mut object,
        &format!("{labels}/additionalProperties/maxLength"),
        json!(63),
    );
    assert!(validation::validate_create(&object).is_empty());
}

#[test]
fn defaults_must_be_valid_values_of_their_schema() {
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties";
    let at = "spec.validation.openAPIV3Schema.properties[spec].properties";
    let with = |properties: Value| {
        let mut object = crd();
        set(&mut object, spec, properties);
        strings(&validation::validate_create(&object))
    };
    let properties = |value: Value, object: Value, size: Value| {
        json!({
            "value": {"type": "string", "default": value,
                "x-kubernetes-validations": [{"rule": "self.startsWith('kube')"}]},
            "object": {"type": "object", "default": object,
                "properties": {"field1": {"type": "integer"}, "field2": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.field1 < self.field2"}]},
            "size": {"type": "integer", "maximum": 10, "default": size},
        })
    };
    assert_eq!(
        with(properties(
            json!("kube-everything"),
            json!({"field1": 1, "field2": 2}),
            json!(3)
        )),
        Vec::<String>::new()
    );
    assert_eq!(
        with(properties(
            json!("nope"),
            json!({"field1": 2, "field2": 1, "extra": true}),
            json!(30)
        )),
        vec![
            s(&format!(
                "{at}[object].default: Invalid value: {{\"extra\":true,\"field1\":2,\"field2\":1}}: must not have unknown fields"
            )),
            s(&format!(
                "{at}[object].default: Invalid value: \"object\": failed rule: self.field1 < self.field2"
            )),
            // kube-openapi names the value validated (the default itself) "".
            s(&format!(
                "{at}[size].default: Invalid value: 30:  in body should be less than or equal to 10"
            )),
            s(&format!(
                "{at}[value].default: Invalid value: \"string\": failed rule: self.startsWith('kube')"
            )),
        ]
    );
}

#[test]
fn an_established_crd_keeps_a_loadable_ca_bundle() {
    use base64::Engine;
    let encode = |text: &str| base64::engine::general_purpose::STANDARD.encode(text);
    let with_bundle = |bundle: &str| {
        let mut object = crd();
        object["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://hook.example.com/convert", "caBundle": encode(bundle)},
            "conversionReviewVersions": ["v1"]}});
        object
    };
    let invalid = with_bundle("no");
    // Creates may carry any bundle (the CRD is not Established yet).
    assert!(validation::validate_create(&invalid).is_empty());
    let mut established = with_bundle("");
    established["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
    assert_eq!(
        strings(&validation::validate_update(&invalid, &established)),
        vec![s(
            "spec.conversion.webhookClientConfig.caBundle: Invalid value: \"bm8=\": unable to load root certificates: unable to parse bytes as PEM block"
        )]
    );
    // A bundle that was invalid already may stay so.
    let mut established_invalid = invalid.clone();
    established_invalid["status"] = established["status"].clone();
    assert!(validation::validate_update(&invalid, &established_invalid).is_empty());
}

#[test]
fn rules_select_only_declared_fields() {
    let spec = "/spec/versions/0/schema/openAPIV3Schema/properties/spec";
    let mut object = crd();
    set(
        &mut object,
        &format!("{spec}/x-kubernetes-validations"),
        json!([{"rule": "self.sise >= 0"}, {"rule": "self.size == "},
            {"rule": "self.size >= 0", "optionalOldSelf": true},
            {"rule": "self.size >= 0", "messageExpression": "'size ' + self.zz"}]),
    );
    // Every rule's errors, in order, each with the rule as upstream prints it (Go's
    // encoding/json escapes `>`).
    let rule = |rule: &str, rest: &str| {
        let rule = rule.replace('>', r"\u003e");
        format!(
            r#"{{"Rule":"{rule}","Message":"","MessageExpression":"{rest}","Reason":null,"FieldPath":"","OptionalOldSelf":null}}"#
        )
    };
    let at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    let errors = strings(&validation::validate_create(&object));
    assert_eq!(errors.len(), 4, "{errors:#?}");
    assert_eq!(
        errors[0],
        format!(
            "{at}[0].rule: Invalid value: {}: compilation failed: ERROR: <input>:1:5: undefined field 'sise'\n | self.sise >= 0\n | ....^",
            rule("self.sise >= 0", "")
        )
    );
    assert!(
        errors[1].starts_with(&format!(
            "{at}[1].rule: Invalid value: {}: compilation failed: ",
            rule("self.size == ", "")
        )),
        "{}",
        errors[1]
    );
    assert_eq!(
        errors[2],
        format!(
            "{at}[2].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
        )
    );
    assert_eq!(
        errors[3],
        format!(
            "{at}[3].messageExpression: Invalid value: {}: messageExpression compilation failed: ERROR: <input>:1:15: undefined field 'zz'\n | 'size ' + self.zz\n | ..............^",
            rule("self.size >= 0", "'size ' + self.zz")
        )
    );
}
