//! Local APIServices: the APIService kube-apiserver keeps for each group version a server of
//! its own chain serves (no `spec.service`: requests are not proxied), named
//! `<version>.<group>`, with the group version's discovery priority.

use std::collections::BTreeMap;
use std::sync::Arc;

use kapi_server::resource::{ApiServicePriority, ResourceDefinition};
use serde_json::{Map, Value, json};

/// The aggregator's own group: it serves APIServices itself and keeps no APIService for it.
pub const GROUP: &str = "apiregistration.k8s.io";

/// The label of the APIServices the aggregator manages, with how it keeps each.
pub const AUTOMANAGED_LABEL: &str = "kube-aggregator.kubernetes.io/automanaged";

/// How a managed APIService is kept (the value of [`AUTOMANAGED_LABEL`]; upstream's
/// manageOnStart and manageContinuously).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Managed {
    /// Brought to what the aggregator wants when it starts, then left alone (the built-in
    /// group versions).
    OnStart,
    /// Kept as the aggregator wants it for as long as it runs (the versions of CRDs).
    Continuously,
}

impl Managed {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Managed::OnStart => "onstart",
            Managed::Continuously => "true",
        }
    }

    /// How the APIService `object` is managed, if it is.
    pub(crate) fn of(object: &Value) -> Option<Managed> {
        match object["metadata"]["labels"][AUTOMANAGED_LABEL].as_str() {
            Some("onstart") => Some(Managed::OnStart),
            Some("true") => Some(Managed::Continuously),
            _ => None,
        }
    }
}

/// A local APIService the aggregator wants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct LocalApiService {
    pub group: String,
    pub version: String,
    pub priority: ApiServicePriority,
    pub managed: Managed,
}

impl LocalApiService {
    /// Its name: `<version>.<group>` (`v1.` for the core group).
    pub(crate) fn name(&self) -> String {
        format!("{}.{}", self.version, self.group)
    }

    /// Its spec, as a v1 APIServiceSpec writes it (an empty group is omitted).
    pub(crate) fn spec(&self) -> Value {
        let mut spec = Map::new();
        if !self.group.is_empty() {
            spec.insert("group".into(), json!(self.group));
        }
        spec.insert("version".into(), json!(self.version));
        spec.insert("groupPriorityMinimum".into(), json!(self.priority.group));
        spec.insert("versionPriority".into(), json!(self.priority.version));
        Value::Object(spec)
    }

    /// The APIService to create.
    pub(crate) fn object(&self) -> Value {
        json!({
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {
                "name": self.name(),
                "labels": {AUTOMANAGED_LABEL: self.managed.label()},
            },
            "spec": self.spec(),
        })
    }
}

/// The wanted APIServices by name.
pub(crate) type Wanted = BTreeMap<String, LocalApiService>;

/// The local APIServices of the chain's built-in group versions, kept on start: every group
/// version of `definitions` but the aggregator's own and those served dynamically (CRDs',
/// kept by [`of_crds`]), each with its definitions' priority. As upstream, a group version
/// with no priority of its own (the default a CRD's would get) has none.
pub(crate) fn built_in(definitions: &[Arc<ResourceDefinition>]) -> Wanted {
    definitions
        .iter()
        .filter(|def| !def.capabilities.dynamic && def.group_version.group != GROUP)
        .filter(|def| def.priority != ApiServicePriority::DEFAULT)
        .map(|def| LocalApiService {
            group: def.group_version.group.clone(),
            version: def.group_version.version.clone(),
            priority: def.priority,
            managed: Managed::OnStart,
        })
        .map(|service| (service.name(), service))
        .collect()
}

/// The local APIServices of the served versions of `crds`, kept for as long as they are
/// served, with the priority kube-apiserver gives CRDs (upstream's crdregistration
/// controller).
pub(crate) fn of_crds(crds: &[Value]) -> Wanted {
    let mut wanted = Wanted::new();
    for crd in crds {
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let versions = crd["spec"]["versions"].as_array().into_iter().flatten();
        for version in versions.filter(|v| v["served"] == true) {
            let service = LocalApiService {
                group: group.to_string(),
                version: version["name"].as_str().unwrap_or_default().to_string(),
                priority: ApiServicePriority::DEFAULT,
                managed: Managed::Continuously,
            };
            wanted.insert(service.name(), service);
        }
    }
    wanted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crd_versions_that_are_served_get_an_api_service() {
        let crds = [json!({"spec": {"group": "stable.example.com", "versions": [
            {"name": "v1", "served": true}, {"name": "v2", "served": false}]}})];
        let wanted = of_crds(&crds);
        assert_eq!(wanted.keys().collect::<Vec<_>>(), ["v1.stable.example.com"]);
        assert_eq!(
            wanted["v1.stable.example.com"].object(),
            json!({"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": "v1.stable.example.com",
                    "labels": {AUTOMANAGED_LABEL: "true"}},
                "spec": {"group": "stable.example.com", "version": "v1",
                    "groupPriorityMinimum": 1000, "versionPriority": 100}})
        );
    }

    #[test]
    fn the_core_group_is_named_with_a_trailing_dot_and_no_group() {
        let core = LocalApiService {
            group: String::new(),
            version: "v1".into(),
            priority: ApiServicePriority {
                group: 18000,
                version: 1,
            },
            managed: Managed::OnStart,
        };
        assert_eq!(core.name(), "v1.");
        assert_eq!(
            core.spec(),
            json!({"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1})
        );
        assert_eq!(Managed::of(&core.object()), Some(Managed::OnStart));
    }
}
