//! Names of API groups, versions, kinds and resources (k8s.io/apimachinery/pkg/runtime/schema).
//!
//! The `Display` forms are upstream's `String()` forms: they appear verbatim in error messages
//! (`configmaps "x" not found`, `deployments.apps "x" not found`), so they must not change.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A resource within a group, e.g. `deployments` in `apps`. The empty group is the core group.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GroupResource {
    /// The API group; empty for the core ("legacy") group.
    pub group: String,
    /// The plural resource name, e.g. `configmaps`.
    pub resource: String,
}

impl GroupResource {
    /// Creates a group/resource pair.
    pub fn new(group: impl Into<String>, resource: impl Into<String>) -> Self {
        GroupResource {
            group: group.into(),
            resource: resource.into(),
        }
    }

    /// True when both the group and the resource are empty (upstream's `Empty()`).
    pub fn is_empty(&self) -> bool {
        self.group.is_empty() && self.resource.is_empty()
    }

    /// Adds a version.
    pub fn with_version(&self, version: impl Into<String>) -> GroupVersionResource {
        GroupVersionResource::new(self.group.clone(), version, self.resource.clone())
    }

    /// Parses `resource` or `resource.group` (upstream's `ParseGroupResource`): everything
    /// after the first dot is the group.
    pub fn parse(s: &str) -> Self {
        match s.split_once('.') {
            Some((resource, group)) => GroupResource::new(group, resource),
            None => GroupResource::new("", s),
        }
    }
}

/// `configmaps` for the core group, `deployments.apps` otherwise.
impl fmt::Display for GroupResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        dotted(f, &self.resource, &self.group)
    }
}

/// A kind within a group, e.g. `Deployment` in `apps`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GroupKind {
    /// The API group; empty for the core group.
    pub group: String,
    /// The kind, e.g. `ConfigMap`.
    pub kind: String,
}

impl GroupKind {
    /// Creates a group/kind pair.
    pub fn new(group: impl Into<String>, kind: impl Into<String>) -> Self {
        GroupKind {
            group: group.into(),
            kind: kind.into(),
        }
    }

    /// True when both the group and the kind are empty.
    pub fn is_empty(&self) -> bool {
        self.group.is_empty() && self.kind.is_empty()
    }

    /// Adds a version.
    pub fn with_version(&self, version: impl Into<String>) -> GroupVersionKind {
        GroupVersionKind::new(self.group.clone(), version, self.kind.clone())
    }
}

/// `ConfigMap` for the core group, `Deployment.apps` otherwise.
impl fmt::Display for GroupKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        dotted(f, &self.kind, &self.group)
    }
}

/// A version of a group, e.g. `apps/v1`, or `v1` for the core group.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GroupVersion {
    /// The API group; empty for the core group.
    pub group: String,
    /// The version, e.g. `v1`.
    pub version: String,
}

impl GroupVersion {
    /// Creates a group/version pair.
    pub fn new(group: impl Into<String>, version: impl Into<String>) -> Self {
        GroupVersion {
            group: group.into(),
            version: version.into(),
        }
    }

    /// True when both the group and the version are empty.
    pub fn is_empty(&self) -> bool {
        self.group.is_empty() && self.version.is_empty()
    }

    /// The `apiVersion` string of objects in this group version: `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        self.to_string()
    }

    /// Adds a kind.
    pub fn with_kind(&self, kind: impl Into<String>) -> GroupVersionKind {
        GroupVersionKind::new(self.group.clone(), self.version.clone(), kind)
    }

    /// Adds a resource.
    pub fn with_resource(&self, resource: impl Into<String>) -> GroupVersionResource {
        GroupVersionResource::new(self.group.clone(), self.version.clone(), resource)
    }

    /// Parses an `apiVersion` (upstream's `ParseGroupVersion`): `""` and `"/"` are the empty
    /// group version, `v1` is the core group, `apps/v1` a named group; more than one slash is
    /// an error.
    pub fn parse(s: &str) -> Result<Self, String> {
        if s.is_empty() || s == "/" {
            return Ok(GroupVersion::default());
        }
        match s.matches('/').count() {
            0 => Ok(GroupVersion::new("", s)),
            1 => {
                let (group, version) = s.split_once('/').unwrap_or_default();
                Ok(GroupVersion::new(group, version))
            }
            _ => Err(format!("unexpected GroupVersion string: {s}")),
        }
    }
}

/// The group and version of an `apiVersion`, without allocating: `v1` is the core group's
/// (`("", "v1")`), `apps/v1` is `("apps", "v1")`.
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// `v1` for the core group, `apps/v1` otherwise.
impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.version)
        } else {
            write!(f, "{}/{}", self.group, self.version)
        }
    }
}

/// A kind in a specific group version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GroupVersionKind {
    /// The API group; empty for the core group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind.
    pub kind: String,
}

impl GroupVersionKind {
    /// Creates a group/version/kind triple.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        GroupVersionKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// The group and version.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group.clone(), self.version.clone())
    }

    /// The group and kind.
    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(self.group.clone(), self.kind.clone())
    }

    /// The group/version/kind named by an object's `apiVersion` and `kind` (upstream's
    /// `FromAPIVersionAndKind`: an unparsable apiVersion yields only the kind).
    pub fn from_api_version_and_kind(api_version: &str, kind: &str) -> Self {
        let gv = GroupVersion::parse(api_version).unwrap_or_default();
        gv.with_kind(kind)
    }
}

/// Upstream's debugging form: `apps/v1, Kind=Deployment` (`/v1, Kind=Pod` for the core group).
impl fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// A resource in a specific group version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct GroupVersionResource {
    /// The API group; empty for the core group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The plural resource name.
    pub resource: String,
}

impl GroupVersionResource {
    /// Creates a group/version/resource triple.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        GroupVersionResource {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    /// The group and version.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group.clone(), self.version.clone())
    }

    /// The group and resource.
    pub fn group_resource(&self) -> GroupResource {
        GroupResource::new(self.group.clone(), self.resource.clone())
    }
}

/// Upstream's debugging form: `apps/v1, Resource=deployments`.
impl fmt::Display for GroupVersionResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}, Resource={}",
            self.group, self.version, self.resource
        )
    }
}

/// Writes `name` alone for the core group and `name.group` otherwise.
fn dotted(f: &mut fmt::Formatter<'_>, name: &str, group: &str) -> fmt::Result {
    if group.is_empty() {
        f.write_str(name)
    } else {
        write!(f, "{name}.{group}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_forms() {
        assert_eq!(
            GroupResource::new("", "configmaps").to_string(),
            "configmaps"
        );
        assert_eq!(
            GroupResource::new("apps", "deployments").to_string(),
            "deployments.apps"
        );
        assert_eq!(GroupKind::new("", "ConfigMap").to_string(), "ConfigMap");
        assert_eq!(
            GroupKind::new("apps", "Deployment").to_string(),
            "Deployment.apps"
        );
        assert_eq!(GroupVersion::new("", "v1").to_string(), "v1");
        assert_eq!(GroupVersion::new("apps", "v1").api_version(), "apps/v1");
        assert_eq!(
            GroupVersionKind::new("", "v1", "Pod").to_string(),
            "/v1, Kind=Pod"
        );
        assert_eq!(
            GroupVersionResource::new("apps", "v1", "deployments").to_string(),
            "apps/v1, Resource=deployments"
        );
    }

    #[test]
    fn parse_group_version() {
        assert_eq!(GroupVersion::parse(""), Ok(GroupVersion::default()));
        assert_eq!(GroupVersion::parse("/"), Ok(GroupVersion::default()));
        assert_eq!(GroupVersion::parse("v1"), Ok(GroupVersion::new("", "v1")));
        assert_eq!(
            GroupVersion::parse("apps/v1"),
            Ok(GroupVersion::new("apps", "v1"))
        );
        assert_eq!(
            GroupVersion::parse("a/b/c"),
            Err("unexpected GroupVersion string: a/b/c".to_string())
        );
        assert_eq!(
            GroupVersionKind::from_api_version_and_kind("a/b/c", "X"),
            GroupVersionKind::new("", "", "X")
        );
    }

    #[test]
    fn parse_group_resource() {
        assert_eq!(GroupResource::parse("pods"), GroupResource::new("", "pods"));
        assert_eq!(
            GroupResource::parse("deployments.apps"),
            GroupResource::new("apps", "deployments")
        );
        assert_eq!(
            GroupResource::parse("a.b.example.com"),
            GroupResource::new("b.example.com", "a")
        );
    }
}
