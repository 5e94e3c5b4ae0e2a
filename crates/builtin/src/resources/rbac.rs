//! rbac.authorization.k8s.io/v1 Role, ClusterRole, RoleBinding and ClusterRoleBinding
//! (kubernetes/pkg/apis/rbac/v1/defaults.go, pkg/apis/rbac/validation,
//! pkg/registry/rbac/*/strategy.go). RBAC objects have path segment names.

use std::sync::Arc;

use kapi_apimachinery::validation::field::{ErrorType, FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    is_dns1123_subdomain, is_valid_path_segment_name, validate_label_selector,
    validate_path_segment_name,
};
use kapi_server::resource::{NameValidator, Strategy, TableConvertor};
use serde_json::{Value, json};

use super::common::{
    col, created_at, created_at_column, default_field, each_item, invalid_each, items, object_at,
    table, text, wide,
};
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, age_column, name_cell};
use crate::strategy::{validate_core, validate_core_update};
use crate::util::{str_of, strings_of};

/// The RBAC API group, the only one roles are referred to in.
const GROUP: &str = "rbac.authorization.k8s.io";

/// The strategies of the RBAC kinds.
pub(super) fn strategies(kind: &str) -> Option<KindStrategies> {
    let (strategy, table): (Arc<dyn Strategy>, _) = match kind {
        "Role" => (Arc::new(RoleStrategy), role_table()),
        "ClusterRole" => (Arc::new(ClusterRoleStrategy), role_table()),
        "RoleBinding" => (
            Arc::new(BindingStrategy { namespaced: true }),
            binding_table(false),
        ),
        "ClusterRoleBinding" => (
            Arc::new(BindingStrategy { namespaced: false }),
            binding_table(true),
        ),
        _ => return None,
    };
    Some(KindStrategies {
        strategy,
        table: Some(table),
    })
}

/// Roles: the `strategy` of pkg/registry/rbac/role/strategy.go.
struct RoleStrategy;

impl Strategy for RoleStrategy {
    fn name_validator(&self) -> NameValidator {
        validate_path_segment_name
    }

    fn validate(&self, role: &Value) -> FieldErrors {
        validate_core(role, validate_rules(role, true))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }
}

/// ClusterRoles: the `strategy` of pkg/registry/rbac/clusterrole/strategy.go.
struct ClusterRoleStrategy;

impl Strategy for ClusterRoleStrategy {
    fn name_validator(&self) -> NameValidator {
        validate_path_segment_name
    }

    fn validate(&self, role: &Value) -> FieldErrors {
        validate_core(role, validate_cluster_role(role))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }
}

/// RoleBindings and ClusterRoleBindings: the `strategy` of
/// pkg/registry/rbac/{rolebinding,clusterrolebinding}/strategy.go, which differ in the scope
/// of what they bind.
struct BindingStrategy {
    /// A RoleBinding rather than a ClusterRoleBinding.
    namespaced: bool,
}

impl Strategy for BindingStrategy {
    fn default(&self, binding: &mut Value) {
        binding_defaults(binding);
    }

    fn prepare_for_create(&self, binding: &mut Value) {
        binding_defaults(binding);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        binding_defaults(new);
    }

    fn name_validator(&self) -> NameValidator {
        validate_path_segment_name
    }

    fn validate(&self, binding: &Value) -> FieldErrors {
        validate_core(binding, validate_binding(binding, self.namespaced))
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        validate_core_update(self, new, validate_binding_update(new, old))
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }
}

/// ValidatePolicyRule for each rule: verbs, and either resources with API groups or
/// non-resource URLs (cluster roles only).
fn validate_rules(role: &Value, namespaced: bool) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for (i, rule) in items(role, "/rules").iter().enumerate() {
        let path = Path::root("rules").index(i);
        if strings_of(rule, "verbs").is_empty() {
            errs.push(FieldError::required(
                &path.child("verbs"),
                "verbs must contain at least one value",
            ));
        }
        let urls = strings_of(rule, "nonResourceURLs");
        if !urls.is_empty() {
            let invalid = |detail: &str| {
                FieldError::invalid(&path.child("nonResourceURLs"), json!(urls), detail)
            };
            if namespaced {
                errs.push(invalid(
                    "namespaced rules cannot apply to non-resource URLs",
                ));
            }
            let resourceful = ["apiGroups", "resources", "resourceNames"]
                .iter()
                .any(|key| !strings_of(rule, key).is_empty());
            if resourceful {
                errs.push(invalid(
                    "rules cannot apply to both regular resources and non-resource URLs",
                ));
            }
            continue;
        }
        if rule["apiGroups"].as_array().is_none_or(Vec::is_empty) {
            errs.push(FieldError::required(
                &path.child("apiGroups"),
                "resource rules must supply at least one api group",
            ));
        }
        if strings_of(rule, "resources").is_empty() {
            errs.push(FieldError::required(
                &path.child("resources"),
                "resource rules must supply at least one resource",
            ));
        }
    }
    errs
}

/// ValidateClusterRole: the rules, and aggregated roles with selectors and no rules.
fn validate_cluster_role(role: &Value) -> FieldErrors {
    let mut errs = validate_rules(role, false);
    let aggregation = &role["aggregationRule"];
    if aggregation.is_null() {
        return errs;
    }
    let path = Path::root("aggregationRule").child("clusterRoleSelectors");
    let selectors = items(role, "/aggregationRule/clusterRoleSelectors");
    if selectors.is_empty() {
        errs.push(FieldError::required(
            &path,
            "at least one clusterRoleSelector required if aggregationRule is non-nil",
        ));
    }
    for (i, selector) in selectors.iter().enumerate() {
        errs.extend(validate_label_selector(selector, &path.index(i)));
    }
    errs
}

/// SetDefaults_RoleBinding/ClusterRoleBinding and SetDefaults_Subject: the role is an RBAC
/// one; users and groups are RBAC subjects.
fn binding_defaults(binding: &mut Value) {
    default_field(object_at(binding, "/roleRef"), "apiGroup", json!(GROUP));
    if let Some(fields) = binding.as_object_mut() {
        each_item(fields, "subjects", |subject| {
            let kind = str_of(subject, "kind");
            if matches!(kind, "User" | "Group") {
                default_field(crate::util::fields_mut(subject), "apiGroup", json!(GROUP));
            }
        });
    }
}

/// ValidateRoleBinding / ValidateClusterRoleBinding: the role reference and the subjects.
fn validate_binding(binding: &Value, namespaced: bool) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let role_ref = &binding["roleRef"];
    let path = Path::root("roleRef");
    let group = str_of(role_ref, "apiGroup");
    if group != GROUP {
        errs.push(FieldError::not_supported(
            &path.child("apiGroup"),
            group,
            [GROUP],
        ));
    }
    let kind = str_of(role_ref, "kind");
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errs.push(FieldError::not_supported(&path.child("kind"), kind, kinds));
    }
    let name = str_of(role_ref, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else {
        errs.extend(invalid_each(
            &path.child("name"),
            name,
            is_valid_path_segment_name(name),
        ));
    }
    for (i, subject) in items(binding, "/subjects").iter().enumerate() {
        errs.extend(validate_subject(
            subject,
            namespaced,
            &Path::root("subjects").index(i),
        ));
    }
    errs
}

/// ValidateRoleBindingSubject.
fn validate_subject(subject: &Value, namespaced: bool, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let name = str_of(subject, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    }
    let group = str_of(subject, "apiGroup");
    match str_of(subject, "kind") {
        "ServiceAccount" => {
            if !name.is_empty() {
                errs.extend(invalid_each(
                    &path.child("name"),
                    name,
                    is_dns1123_subdomain(name),
                ));
            }
            if !group.is_empty() {
                errs.push(FieldError::not_supported(
                    &path.child("apiGroup"),
                    group,
                    [""],
                ));
            }
            if !namespaced && str_of(subject, "namespace").is_empty() {
                errs.push(FieldError::required(&path.child("namespace"), ""));
            }
        }
        "User" | "Group" => {
            if group != GROUP {
                errs.push(FieldError::not_supported(
                    &path.child("apiGroup"),
                    group,
                    [GROUP],
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            &path.child("kind"),
            other,
            ["ServiceAccount", "User", "Group"],
        )),
    }
    errs
}

/// ValidateRoleBindingUpdate: the role reference cannot change.
fn validate_binding_update(new: &Value, old: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let reference = |binding: &Value| {
        let role_ref = &binding["roleRef"];
        (
            str_of(role_ref, "apiGroup").to_string(),
            str_of(role_ref, "kind").to_string(),
            str_of(role_ref, "name").to_string(),
        )
    };
    let (group, kind, name) = reference(new);
    if (group.clone(), kind.clone(), name.clone()) != reference(old) {
        errs.push(FieldError {
            error_type: ErrorType::Invalid,
            field: "roleRef".to_string(),
            // The internal RoleRef's JSON (Go field names).
            bad_value: Some(json!({"APIGroup": group, "Kind": kind, "Name": name}).to_string()),
            detail: "cannot change roleRef".to_string(),
        });
    }
    errs
}

fn role_table() -> TableConvertor {
    TableConvertor {
        order: None,
        columns: vec![crate::printers::name_column(0), created_at_column()],
        cells: std::sync::Arc::new(|role: &serde_json::Value| {
            vec![name_cell(role), created_at(role)]
        }),
    }
}

/// The printer of role bindings (`cluster` for ClusterRoleBindings, whose wide columns
/// upstream describes in their own words).
fn binding_table(cluster: bool) -> TableConvertor {
    let (users, groups, accounts) = if cluster {
        (
            "Users in the clusterRoleBinding",
            "Groups in the clusterRoleBinding",
            "ServiceAccounts in the clusterRoleBinding",
        )
    } else {
        (
            "Users in the roleBinding",
            "Groups in the roleBinding",
            "ServiceAccounts in the roleBinding",
        )
    };
    table(
        vec![
            col(
                "Role",
                "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This field is immutable.",
            ),
            age_column(),
            wide("Users", users),
            wide("Groups", groups),
            wide("ServiceAccounts", accounts),
        ],
        binding_cells,
    )
}

/// NAME, ROLE (`Kind/name`), AGE, USERS, GROUPS, SERVICEACCOUNTS (`namespace/name`).
fn binding_cells(binding: &Value) -> Vec<Value> {
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut accounts = Vec::new();
    for subject in items(binding, "/subjects") {
        let name = str_of(subject, "name").to_string();
        match str_of(subject, "kind") {
            "User" => users.push(name),
            "Group" => groups.push(name),
            "ServiceAccount" => accounts.push(format!("{}/{name}", str_of(subject, "namespace"))),
            _ => {}
        }
    }
    let role = &binding["roleRef"];
    vec![
        name_cell(binding),
        text(format!("{}/{}", str_of(role, "kind"), str_of(role, "name"))),
        age_cell(binding),
        text(users.join(", ")),
        text(groups.join(", ")),
        text(accounts.join(", ")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{Cases, causes, expect};

    fn strategy(kind: &str) -> Arc<dyn Strategy> {
        strategies(kind).unwrap().strategy
    }

    #[test]
    fn role_rules_validation() {
        let cases: Cases = vec![
            (
                json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]),
                vec![],
            ),
            (
                json!([{"resources": ["pods"]}]),
                vec![
                    (
                        "rules[0].verbs",
                        "FieldValueRequired",
                        "Required value: verbs must contain at least one value",
                    ),
                    (
                        "rules[0].apiGroups",
                        "FieldValueRequired",
                        "Required value: resource rules must supply at least one api group",
                    ),
                ],
            ),
            (
                json!([{"verbs": ["get"], "nonResourceURLs": ["/healthz"], "resources": ["pods"]}]),
                vec![
                    (
                        "rules[0].nonResourceURLs",
                        "FieldValueInvalid",
                        r#"Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs"#,
                    ),
                    (
                        "rules[0].nonResourceURLs",
                        "FieldValueInvalid",
                        r#"Invalid value: ["/healthz"]: rules cannot apply to both regular resources and non-resource URLs"#,
                    ),
                ],
            ),
        ];
        let role = strategy("Role");
        for (list, want) in cases {
            let object = json!({"metadata": {"name": "r", "namespace": "n"}, "rules": list});
            assert_eq!(causes(&role.validate(&object)), expect(&want), "{list}");
        }
        let cluster = strategy("ClusterRole");
        assert!(
            cluster
                .validate(&json!({"rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]}))
                .is_empty()
        );
        assert_eq!(
            causes(&cluster.validate(&json!({"aggregationRule": {}, "rules": [{"verbs": ["get"], "nonResourceURLs": ["/x"]}]}))),
            expect(&[
                ("aggregationRule.clusterRoleSelectors", "FieldValueRequired", "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil"),
            ])
        );
        assert!((role.name_validator())("system:controller:a", false).is_empty());
        assert!(!(role.name_validator())("a/b", false).is_empty());
        assert!(role.allow_create_on_update());
    }

    #[test]
    fn binding_defaults_validation_and_update() {
        let binding_strategy = strategy("RoleBinding");
        let mut binding = json!({"metadata": {"name": "b", "namespace": "n"}, "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "ServiceAccount", "name": "default", "namespace": "n"}]});
        binding_strategy.prepare_for_create(&mut binding);
        assert_eq!(binding["roleRef"]["apiGroup"], GROUP);
        assert_eq!(binding["subjects"][0]["apiGroup"], GROUP);
        assert!(binding["subjects"][1].get("apiGroup").is_none());
        assert!(binding_strategy.validate(&binding).is_empty());
        let cells = binding_cells(&binding);
        assert_eq!(cells[1], "Role/r");
        assert_eq!(cells[3..], [json!("alice"), json!(""), json!("n/default")]);
        let mut changed = binding.clone();
        changed["roleRef"]["name"] = json!("other");
        assert_eq!(
            causes(&binding_strategy.validate_update(&changed, &binding)),
            expect(&[(
                "roleRef",
                "FieldValueInvalid",
                r#"Invalid value: {"APIGroup":"rbac.authorization.k8s.io","Kind":"Role","Name":"other"}: cannot change roleRef"#
            )])
        );
        let cluster = strategy("ClusterRoleBinding");
        let bad = json!({"roleRef": {"apiGroup": "example.com", "kind": "Role"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa"}, {"kind": "Robot", "name": "r2"}]});
        assert_eq!(
            causes(&cluster.validate(&bad)),
            expect(&[
                (
                    "roleRef.apiGroup",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io""#
                ),
                (
                    "roleRef.kind",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Role": supported values: "ClusterRole""#
                ),
                ("roleRef.name", "FieldValueRequired", "Required value"),
                (
                    "subjects[0].namespace",
                    "FieldValueRequired",
                    "Required value"
                ),
                (
                    "subjects[1].kind",
                    "FieldValueNotSupported",
                    r#"Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group""#
                ),
            ])
        );
    }
}
