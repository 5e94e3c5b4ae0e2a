//! apiregistration.k8s.io/v1 APIService, served as plain storage (kubernetes/
//! kube-aggregator/pkg/apis/apiregistration/validation, pkg/registry/apiservice).

use std::sync::Arc;

use base64::Engine;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{
    is_dns1035_label, is_dns1123_subdomain, is_valid_path_segment_name,
};
use kapi_server::resource::{NameValidator, Strategy, TableConvertor};
use serde_json::{Value, json};

use super::common::{age, col, default_field, invalid_each, items, table, text};
use crate::kinds::KindStrategies;
use crate::printers::{age_cell, name_cell};
use crate::strategy::{any_name, reset_status, validate_core, validate_core_update};
use crate::util::{str_at, str_of};

/// The strategy of APIServices.
pub(super) fn strategies(kind: &str) -> Option<KindStrategies> {
    (kind == "APIService").then(|| KindStrategies {
        strategy: Arc::new(ApiServiceStrategy),
        table: Some(api_service_table()),
    })
}

/// apiServerStrategy (kube-aggregator/pkg/registry/apiservice/strategy.go).
struct ApiServiceStrategy;

impl Strategy for ApiServiceStrategy {
    fn default(&self, service: &mut Value) {
        api_service_defaults(service);
    }

    fn prepare_for_create(&self, service: &mut Value) {
        reset_status(service);
        api_service_defaults(service);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        api_service_defaults(new);
    }

    fn name_validator(&self) -> NameValidator {
        any_name
    }

    fn validate(&self, service: &Value) -> FieldErrors {
        validate_core(service, validate_api_service(service))
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

/// SetDefaults_ServiceReference: services listen on 443.
fn api_service_defaults(service: &mut Value) {
    if let Some(reference) = service
        .pointer_mut("/spec/service")
        .and_then(Value::as_object_mut)
    {
        default_field(reference, "port", json!(443));
    }
}

fn api_service_table() -> TableConvertor {
    table(
        vec![
            col(
                "Service",
                "The reference to the service that hosts this API endpoint.",
            ),
            col("Available", "Whether this service is available."),
            age(),
        ],
        api_service_cells,
    )
}

/// ValidateAPIService: the name is `version.group`, group and version are DNS names,
/// priorities are in range, a service reference is complete; local services carry no TLS
/// settings.
fn validate_api_service(service: &Value) -> FieldErrors {
    let spec = &service["spec"];
    let path = Path::root("spec");
    let mut errs = FieldErrors::new();
    let group = str_of(spec, "group");
    let version = str_of(spec, "version");
    let name = str_at(service, &["metadata", "name"]);
    let required = format!("{version}.{group}");
    let name_problems = match is_valid_path_segment_name(name) {
        problems if !problems.is_empty() => problems,
        _ if name != required => vec![format!(
            "must be `spec.version+\".\"+spec.group`: {}",
            kapi_apimachinery::quote(&required)
        )],
        _ => Vec::new(),
    };
    errs.extend(invalid_each(
        &Path::root("metadata").child("name"),
        name,
        name_problems,
    ));
    if group.is_empty() && version != "v1" {
        errs.push(FieldError::required(
            &path.child("group"),
            "only v1 may have an empty group and it better be legacy kube",
        ));
    }
    if !group.is_empty() {
        errs.extend(invalid_each(
            &path.child("group"),
            group,
            is_dns1123_subdomain(group),
        ));
    }
    errs.extend(invalid_each(
        &path.child("version"),
        version,
        is_dns1035_label(version),
    ));
    let group_priority = spec["groupPriorityMinimum"].as_i64().unwrap_or(0);
    if !(1..=20000).contains(&group_priority) {
        errs.push(FieldError::invalid(
            &path.child("groupPriorityMinimum"),
            group_priority,
            "must be positive and less than 20000",
        ));
    }
    let version_priority = spec["versionPriority"].as_i64().unwrap_or(0);
    if !(1..=1000).contains(&version_priority) {
        errs.push(FieldError::invalid(
            &path.child("versionPriority"),
            version_priority,
            "must be positive and less than 1000",
        ));
    }
    let ca_bundle = str_of(spec, "caBundle");
    let insecure = spec["insecureSkipTLSVerify"].as_bool() == Some(true);
    let reference = &spec["service"];
    if reference.is_null() {
        if !ca_bundle.is_empty() {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(ca_bundle)
                .map_or(0, |decoded| decoded.len());
            errs.push(FieldError::invalid(
                &path.child("caBundle"),
                format!("{bytes} bytes"),
                "local APIServices may not have a caBundle",
            ));
        }
        if insecure {
            errs.push(FieldError::invalid(
                &path.child("insecureSkipTLSVerify"),
                true,
                "local APIServices may not have insecureSkipTLSVerify",
            ));
        }
        return errs;
    }
    let service_path = path.child("service");
    for key in ["namespace", "name"] {
        super::common::require_str(reference, key, &service_path, &mut errs);
    }
    let port = reference["port"].as_i64().unwrap_or(443);
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            &service_path.child("port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    if insecure && !ca_bundle.is_empty() {
        errs.push(FieldError::invalid(
            &path.child("insecureSkipTLSVerify"),
            true,
            "may not be true if caBundle is present",
        ));
    }
    errs
}

/// NAME, SERVICE (`namespace/name` or `Local`), AVAILABLE (the Available condition, with its
/// reason when not True), AGE.
fn api_service_cells(service: &Value) -> Vec<Value> {
    let reference = &service["spec"]["service"];
    let shown = if reference.is_object() {
        format!(
            "{}/{}",
            str_of(reference, "namespace"),
            str_of(reference, "name")
        )
    } else {
        "Local".to_string()
    };
    let available = items(service, "/status/conditions")
        .iter()
        .find(|c| str_of(c, "type") == "Available")
        .map_or("Unknown".to_string(), |c| {
            match (str_of(c, "status"), str_of(c, "reason")) {
                ("True", _) | (_, "") => str_of(c, "status").to_string(),
                (status, reason) => format!("{status} ({reason})"),
            }
        });
    vec![
        name_cell(service),
        text(shown),
        text(available),
        age_cell(service),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::{causes, expect};

    #[test]
    fn api_service_rules() {
        let strategy = strategies("APIService").unwrap().strategy;
        let mut service = json!({"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {"group": "metrics.k8s.io", "version": "v1beta1",
            "groupPriorityMinimum": 100, "versionPriority": 100, "service": {"namespace": "kube-system", "name": "metrics-server"}},
            "status": {"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]}});
        strategy.prepare_for_create(&mut service);
        assert_eq!(service["spec"]["service"]["port"], 443);
        assert_eq!(service["status"], json!({}));
        assert!(strategy.validate(&service).is_empty());
        service["status"] = json!({"conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]});
        assert_eq!(
            api_service_cells(&service)[1..3],
            [
                json!("kube-system/metrics-server"),
                json!("False (MissingEndpoints)")
            ]
        );
        let local = json!({"metadata": {"name": "v1.apps"}, "spec": {"group": "apps", "version": "v2", "groupPriorityMinimum": 0, "versionPriority": 15}});
        assert_eq!(
            causes(&strategy.validate(&local)),
            expect(&[
                (
                    "metadata.name",
                    "FieldValueInvalid",
                    r#"Invalid value: "v1.apps": must be `spec.version+"."+spec.group`: "v2.apps""#
                ),
                (
                    "spec.groupPriorityMinimum",
                    "FieldValueInvalid",
                    "Invalid value: 0: must be positive and less than 20000"
                ),
            ])
        );
        assert_eq!(
            api_service_cells(&local)[1..3],
            [json!("Local"), json!("Unknown")]
        );
        let bundled = json!({"metadata": {"name": "v1.apps"}, "spec": {"group": "apps", "version": "v1",
            "groupPriorityMinimum": 1, "versionPriority": 1, "caBundle": "aGVsbG8="}});
        assert_eq!(
            causes(&strategy.validate(&bundled)),
            expect(&[(
                "spec.caBundle",
                "FieldValueInvalid",
                r#"Invalid value: "5 bytes": local APIServices may not have a caBundle"#
            )])
        );
    }
}
