//! The strategy of built-in kinds that have no strategy of their own yet: what upstream's
//! strategies all do (pkg/registry/*/*/strategy.go). The status is cleared on create and kept
//! on updates of the main resource when the resource has a status subresource (the server's
//! write path carries it over); `metadata.generation` starts at 1 and grows when anything but
//! metadata and status changes; names are DNS subdomains, or path segment names for the kinds
//! upstream validates so (RBAC); finalizers follow the core rules every built-in type uses.

use kapi_apimachinery::validation::field::FieldErrors;
use kapi_apimachinery::validation::{name_is_dns_subdomain, validate_path_segment_name};
use kapi_server::resource::{NameValidator, Strategy};
use serde_json::Value;

use super::{CatalogEntry, has_status};
use crate::strategy::{
    reset_status, start_generation, track_generation, validate_core, validate_core_update,
};

/// Kinds whose names upstream validates as path segments rather than DNS subdomains.
const PATH_SEGMENT_NAMED: [(&str, &str); 4] = [
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
];

/// The generic strategy of one catalog entry.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GenericStrategy {
    /// Whether the resource has a status subresource, which alone writes the status.
    status: bool,
    names: NameValidator,
}

impl GenericStrategy {
    pub(crate) fn for_entry(entry: &CatalogEntry) -> GenericStrategy {
        let path_segment = PATH_SEGMENT_NAMED.contains(&(entry.group, entry.kind));
        GenericStrategy {
            status: has_status(entry),
            names: if path_segment {
                validate_path_segment_name
            } else {
                name_is_dns_subdomain
            },
        }
    }
}

impl Strategy for GenericStrategy {
    fn prepare_for_create(&self, object: &mut Value) {
        if self.status {
            reset_status(object);
        }
        start_generation(object);
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        track_generation(new, old);
    }

    fn name_validator(&self) -> NameValidator {
        self.names
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        validate_core(object, FieldErrors::new())
    }

    fn validate_update(&self, new: &Value, _old: &Value) -> FieldErrors {
        validate_core_update(self, new, FieldErrors::new())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::catalog::CATALOG;

    fn strategy(group: &str, plural: &str) -> GenericStrategy {
        let entry = CATALOG
            .iter()
            .find(|e| e.group == group && e.plural == plural)
            .expect("in the catalog");
        GenericStrategy::for_entry(entry)
    }

    #[test]
    fn create_clears_status_and_starts_the_generation() {
        let cases = [
            ("policy", "poddisruptionbudgets", Some(json!({}))),
            (
                "scheduling.k8s.io",
                "priorityclasses",
                Some(json!({"x": 1})),
            ),
        ];
        for (group, plural, want) in cases {
            let mut object = json!({"metadata": {"name": "a"}, "status": {"x": 1}});
            strategy(group, plural).prepare_for_create(&mut object);
            assert_eq!(object.get("status").cloned(), want, "{plural}");
            assert_eq!(object["metadata"]["generation"], 1, "{plural}");
        }
    }

    #[test]
    fn generation_grows_with_content_changes_only() {
        let s = strategy("policy", "poddisruptionbudgets");
        let old = json!({"metadata": {"name": "a", "generation": 3}, "spec": {"minAvailable": 1}});
        let cases = [
            (json!({"spec": {"minAvailable": 2}}), 4),
            (json!({"spec": {"minAvailable": 1}}), 3),
            (json!({"spec": {"minAvailable": 1}, "status": {"x": 1}}), 3),
            (json!({"spec": {"minAvailable": 1}, "extra": true}), 4),
        ];
        for (mut new, want) in cases {
            new["metadata"] = json!({"name": "a", "labels": {"changed": "yes"}, "generation": 3});
            s.prepare_for_update(&mut new, &old);
            assert_eq!(new["metadata"]["generation"], want, "{new}");
        }
    }

    #[test]
    fn names_as_upstream_validates_them() {
        let rbac = strategy("rbac.authorization.k8s.io", "clusterroles").name_validator();
        assert!(rbac("system:controller:x", false).is_empty());
        assert_eq!(rbac("a/b", false), [r#"may not contain '/'"#.to_string()]);
        let dns = strategy("scheduling.k8s.io", "priorityclasses").name_validator();
        assert!(!dns("system:x", false).is_empty());
        assert!(dns("high-priority", false).is_empty());
    }

    #[test]
    fn finalizers_follow_the_core_rules() {
        let s = strategy("scheduling.k8s.io", "priorityclasses");
        let object = json!({"metadata": {"name": "a", "finalizers": ["bad"]}});
        assert_eq!(s.validate(&object).len(), 1);
        assert_eq!(s.validate_update(&object, &object).len(), 2);
        let good = json!({"metadata": {"name": "a", "finalizers": ["example.com/x"]}});
        assert!(s.validate(&good).is_empty());
    }
}
