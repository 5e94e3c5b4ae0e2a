//! The bootstrap policy: the ClusterRoles, ClusterRoleBindings, Roles and RoleBindings
//! kube-apiserver 1.35 creates at start (its bootstrappolicy package), as JSON objects. Every
//! object carries the `kubernetes.io/bootstrapping: rbac-defaults` label and the
//! `rbac.authorization.kubernetes.io/autoupdate: "true"` annotation; rule lists are sorted,
//! as upstream's rule builder sorts them.

use serde_json::{Map, Value, json};

use super::controller_policy;

pub(super) const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];
const READ_WRITE: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const EVENTS: &[&str] = &["create", "patch", "update"];

pub(super) const CORE: &str = "";
pub(super) const APPS: &str = "apps";
pub(super) const BATCH: &str = "batch";
pub(super) const AUTOSCALING: &str = "autoscaling";
pub(super) const EXTENSIONS: &str = "extensions";
pub(super) const POLICY: &str = "policy";
pub(super) const NETWORKING: &str = "networking.k8s.io";
pub(super) const DISCOVERY: &str = "discovery.k8s.io";
pub(super) const STORAGE: &str = "storage.k8s.io";
pub(super) const RESOURCE: &str = "resource.k8s.io";
const COORDINATION: &str = "coordination.k8s.io";
pub(super) const CERTIFICATES: &str = "certificates.k8s.io";
const AUTHENTICATION: &str = "authentication.k8s.io";
pub(super) const AUTHORIZATION: &str = "authorization.k8s.io";
pub(super) const RBAC: &str = "rbac.authorization.k8s.io";
const EVENTS_GROUP: &str = "events.k8s.io";

/// The label marking a role aggregated into `admin`, `edit` or `view`.
fn aggregate_to(role: &str) -> String {
    format!("rbac.authorization.k8s.io/aggregate-to-{role}")
}

fn sorted(values: &[&str]) -> Vec<String> {
    let mut values: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    values.sort();
    values.dedup();
    values
}

/// A rule on resources of `groups`.
pub(super) fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Value {
    json!({"verbs": sorted(verbs), "apiGroups": sorted(groups), "resources": sorted(resources)})
}

/// A rule on the named objects of a resource.
pub(super) fn named(verbs: &[&str], group: &str, resources: &[&str], names: &[&str]) -> Value {
    let mut rule = rule(verbs, &[group], resources);
    rule["resourceNames"] = json!(sorted(names));
    rule
}

/// A rule on non-resource URLs.
fn urls(verbs: &[&str], paths: &[&str]) -> Value {
    json!({"verbs": sorted(verbs), "nonResourceURLs": sorted(paths)})
}

/// The events rule every component has.
pub(super) fn events() -> Value {
    rule(EVENTS, &[CORE, EVENTS_GROUP], &["events"])
}

/// Bootstrap metadata, with extra `labels`.
fn meta(name: &str, namespace: Option<&str>, labels: &[(String, &str)]) -> Value {
    let mut all = Map::new();
    all.insert("kubernetes.io/bootstrapping".into(), json!("rbac-defaults"));
    for (key, value) in labels {
        all.insert(key.clone(), json!(value));
    }
    let mut meta = json!({
        "name": name,
        "labels": all,
        "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
    });
    if let Some(namespace) = namespace {
        meta["namespace"] = json!(namespace);
    }
    meta
}

pub(super) fn cluster_role(name: &str, rules: Vec<Value>) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": meta(name, None, &[]),
        "rules": rules,
    })
}

/// A ClusterRole aggregated into `into` (`admin`, `edit` or `view`).
fn aggregated_into(name: &str, into: &str, rules: Vec<Value>) -> Value {
    let mut role = cluster_role(name, rules);
    role["metadata"] = meta(name, None, &[(aggregate_to(into), "true")]);
    role
}

/// A ClusterRole whose rules are those of the roles labelled aggregate-to-`from`.
fn aggregating(name: &str, from: &str, labels: &[(String, &str)]) -> Value {
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": meta(name, None, labels),
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {aggregate_to(from): "true"}}]},
        "rules": [],
    })
}

/// A subject: `Group:x`, `User:x` or `ServiceAccount:namespace:name`.
fn subject(spec: &str) -> Value {
    match spec.split(':').collect::<Vec<_>>().as_slice() {
        ["ServiceAccount", namespace, name] => {
            json!({"kind": "ServiceAccount", "name": name, "namespace": namespace})
        }
        [kind, rest @ ..] => {
            json!({"apiGroup": RBAC, "kind": kind, "name": rest.join(":")})
        }
        [] => Value::Null,
    }
}

pub(super) fn binding(
    kind: &str,
    name: &str,
    namespace: Option<&str>,
    role_kind: &str,
    role: &str,
    subjects: &[&str],
) -> Value {
    let mut binding = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta(name, namespace, &[]),
        "roleRef": {"apiGroup": RBAC, "kind": role_kind, "name": role},
    });
    if !subjects.is_empty() {
        binding["subjects"] = subjects.iter().map(|s| subject(s)).collect();
    }
    binding
}

/// The bootstrap ClusterRoles.
pub fn cluster_roles() -> Vec<Value> {
    let mut roles = vec![
        cluster_role(
            "cluster-admin",
            vec![rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        cluster_role(
            "system:discovery",
            vec![urls(
                &["get"],
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
            )],
        ),
        cluster_role(
            "system:monitoring",
            vec![urls(
                &["get"],
                &[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                ],
            )],
        ),
        cluster_role(
            "system:basic-user",
            vec![
                rule(
                    &["create"],
                    &[AUTHORIZATION],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                rule(&["create"], &[AUTHENTICATION], &["selfsubjectreviews"]),
            ],
        ),
        cluster_role(
            "system:public-info-viewer",
            vec![urls(
                &["get"],
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
        ),
        aggregating("admin", "admin", &[]),
        aggregating("edit", "edit", &[(aggregate_to("admin"), "true")]),
        aggregating("view", "view", &[(aggregate_to("edit"), "true")]),
        aggregated_into(
            "system:aggregate-to-admin",
            "admin",
            vec![
                rule(
                    &["create"],
                    &[AUTHORIZATION],
                    &["localsubjectaccessreviews"],
                ),
                rule(READ_WRITE, &[RBAC], &["rolebindings", "roles"]),
            ],
        ),
        aggregated_into("system:aggregate-to-edit", "edit", edit_rules()),
        aggregated_into("system:aggregate-to-view", "view", view_rules()),
        cluster_role(
            "system:heapster",
            vec![
                rule(READ, &[CORE], &["events", "namespaces", "nodes", "pods"]),
                rule(READ, &[EXTENSIONS], &["deployments"]),
            ],
        ),
        cluster_role("system:node", node_rules()),
        cluster_role(
            "system:node-problem-detector",
            vec![
                rule(&["get"], &[CORE], &["nodes"]),
                rule(&["patch"], &[CORE], &["nodes/status"]),
                events(),
            ],
        ),
        cluster_role(
            "system:kubelet-api-admin",
            vec![
                rule(&["get", "list", "proxy", "watch"], &[CORE], &["nodes"]),
                rule(
                    &["*"],
                    &[CORE],
                    &["nodes/log", "nodes/metrics", "nodes/proxy", "nodes/stats"],
                ),
            ],
        ),
        cluster_role(
            "system:node-bootstrapper",
            vec![rule(
                &["create", "get", "list", "watch"],
                &[CERTIFICATES],
                &["certificatesigningrequests"],
            )],
        ),
        cluster_role(
            "system:auth-delegator",
            vec![
                rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
                rule(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
            ],
        ),
        cluster_role(
            "system:kube-aggregator",
            vec![rule(READ, &[CORE], &["endpoints", "services"])],
        ),
        cluster_role("system:kube-controller-manager", controller_manager_rules()),
        cluster_role(
            "system:kube-dns",
            vec![
                rule(&["list", "watch"], &[CORE], &["endpoints", "services"]),
                rule(&["list", "watch"], &[DISCOVERY], &["endpointslices"]),
            ],
        ),
        cluster_role(
            "system:persistent-volume-provisioner",
            vec![
                rule(
                    &["create", "delete", "get", "list", "watch"],
                    &[CORE],
                    &["persistentvolumes"],
                ),
                rule(
                    &["get", "list", "update", "watch"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                rule(READ, &[STORAGE], &["storageclasses"]),
                rule(&["watch"], &[CORE], &["events"]),
                events(),
            ],
        ),
        cluster_role(
            "system:volume-scheduler",
            vec![
                rule(
                    &["get", "list", "patch", "update", "watch"],
                    &[CORE],
                    &["persistentvolumeclaims"],
                ),
                rule(
                    &["get", "list", "update", "watch"],
                    &[CORE],
                    &["persistentvolumes"],
                ),
                rule(READ, &[STORAGE], &["storageclasses"]),
            ],
        ),
        cluster_role("system:kube-scheduler", scheduler_rules()),
        cluster_role(
            "system:node-proxier",
            vec![
                rule(&["list", "watch"], &[CORE], &["endpoints", "services"]),
                rule(READ, &[CORE], &["nodes"]),
                events(),
                rule(&["list", "watch"], &[DISCOVERY], &["endpointslices"]),
            ],
        ),
        cluster_role(
            "system:service-account-issuer-discovery",
            vec![urls(
                &["get"],
                &[
                    "/.well-known/openid-configuration",
                    "/.well-known/openid-configuration/",
                    "/openid/v1/jwks",
                    "/openid/v1/jwks/",
                ],
            )],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            vec![rule(
                &["create"],
                &[CERTIFICATES],
                &["certificatesigningrequests/nodeclient"],
            )],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            vec![rule(
                &["create"],
                &[CERTIFICATES],
                &["certificatesigningrequests/selfnodeclient"],
            )],
        ),
    ];
    for (name, signer) in [
        (
            "kube-apiserver-client-approver",
            "kubernetes.io/kube-apiserver-client",
        ),
        (
            "kube-apiserver-client-kubelet-approver",
            "kubernetes.io/kube-apiserver-client-kubelet",
        ),
        ("kubelet-serving-approver", "kubernetes.io/kubelet-serving"),
        ("legacy-unknown-approver", "kubernetes.io/legacy-unknown"),
    ] {
        roles.push(cluster_role(
            &format!("system:certificates.k8s.io:{name}"),
            vec![named(&["approve"], CERTIFICATES, &["signers"], &[signer])],
        ));
    }
    roles.extend(controller_policy::cluster_roles());
    roles
}

/// What `edit` adds to `view`.
fn edit_rules() -> Vec<Value> {
    vec![
        rule(
            READ,
            &[CORE],
            &[
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
                "secrets",
                "services/proxy",
            ],
        ),
        rule(&["impersonate"], &[CORE], &["serviceaccounts"]),
        rule(
            WRITE,
            &[CORE],
            &[
                "pods",
                "pods/attach",
                "pods/exec",
                "pods/portforward",
                "pods/proxy",
            ],
        ),
        rule(&["create"], &[CORE], &["pods/eviction"]),
        rule(
            WRITE,
            &[CORE],
            &[
                "configmaps",
                "events",
                "persistentvolumeclaims",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "secrets",
                "serviceaccounts",
                "services",
                "services/proxy",
            ],
        ),
        rule(&["create"], &[CORE], &["serviceaccounts/token"]),
        rule(
            WRITE,
            &[APPS],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "replicasets",
                "replicasets/scale",
                "statefulsets",
                "statefulsets/scale",
            ],
        ),
        rule(WRITE, &[AUTOSCALING], &["horizontalpodautoscalers"]),
        rule(WRITE, &[BATCH], &["cronjobs", "jobs"]),
        rule(
            WRITE,
            &[EXTENSIONS],
            &[
                "daemonsets",
                "deployments",
                "deployments/rollback",
                "deployments/scale",
                "ingresses",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicationcontrollers/scale",
            ],
        ),
        rule(WRITE, &[POLICY], &["poddisruptionbudgets"]),
        rule(WRITE, &[NETWORKING], &["ingresses", "networkpolicies"]),
        rule(
            WRITE,
            &[RESOURCE],
            &["resourceclaims", "resourceclaimtemplates"],
        ),
    ]
}

/// What `view` grants.
fn view_rules() -> Vec<Value> {
    vec![
        rule(
            READ,
            &[CORE],
            &[
                "configmaps",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
            ],
        ),
        rule(
            READ,
            &[CORE],
            &[
                "bindings",
                "events",
                "limitranges",
                "namespaces/status",
                "pods/log",
                "pods/status",
                "replicationcontrollers/status",
                "resourcequotas",
                "resourcequotas/status",
            ],
        ),
        rule(READ, &[CORE], &["namespaces"]),
        rule(READ, &[DISCOVERY], &["endpointslices"]),
        rule(
            READ,
            &[APPS],
            &[
                "controllerrevisions",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
            ],
        ),
        rule(
            READ,
            &[AUTOSCALING],
            &[
                "horizontalpodautoscalers",
                "horizontalpodautoscalers/status",
            ],
        ),
        rule(
            READ,
            &[BATCH],
            &["cronjobs", "cronjobs/status", "jobs", "jobs/status"],
        ),
        rule(
            READ,
            &[EXTENSIONS],
            &[
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "ingresses",
                "ingresses/status",
                "networkpolicies",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "replicationcontrollers/scale",
            ],
        ),
        rule(
            READ,
            &[POLICY],
            &["poddisruptionbudgets", "poddisruptionbudgets/status"],
        ),
        rule(
            READ,
            &[NETWORKING],
            &["ingresses", "ingresses/status", "networkpolicies"],
        ),
        rule(
            READ,
            &[RESOURCE],
            &[
                "resourceclaims",
                "resourceclaims/status",
                "resourceclaimtemplates",
            ],
        ),
    ]
}

/// `system:node`: what a kubelet needs (the Node authorizer narrows it to its own objects).
pub(super) fn node_rules() -> Vec<Value> {
    vec![
        rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        rule(
            &["create"],
            &[AUTHORIZATION],
            &["localsubjectaccessreviews", "subjectaccessreviews"],
        ),
        rule(READ, &[CORE], &["services"]),
        rule(&["create", "get", "list", "watch"], &[CORE], &["nodes"]),
        rule(&["patch", "update"], &[CORE], &["nodes/status"]),
        rule(&["patch", "update"], &[CORE], &["nodes"]),
        events(),
        rule(READ, &[CORE], &["pods"]),
        rule(&["create", "delete"], &[CORE], &["pods"]),
        rule(&["patch", "update"], &[CORE], &["pods/status"]),
        rule(&["create"], &[CORE], &["pods/eviction"]),
        rule(&["get"], &[CORE], &["configmaps", "secrets"]),
        rule(
            &["get"],
            &[CORE],
            &["persistentvolumeclaims", "persistentvolumes"],
        ),
        rule(
            &["update", "patch"],
            &[CORE],
            &["persistentvolumeclaims/status"],
        ),
        rule(&["get"], &[CORE], &["endpoints"]),
        rule(
            &["create", "get", "list", "watch"],
            &[CERTIFICATES],
            &["certificatesigningrequests"],
        ),
        rule(
            &["delete", "get", "patch", "update", "create"],
            &[COORDINATION],
            &["leases"],
        ),
        rule(&["get"], &[STORAGE], &["volumeattachments"]),
        rule(&["create"], &[CORE], &["serviceaccounts/token"]),
        rule(READ, &[STORAGE], &["csidrivers"]),
        rule(READ_WRITE, &[STORAGE], &["csinodes"]),
        rule(READ, &["node.k8s.io"], &["runtimeclasses"]),
        rule(&["get"], &[RESOURCE], &["resourceclaims"]),
        rule(
            &["deletecollection", "get", "list", "watch"],
            &[RESOURCE],
            &["resourceslices"],
        ),
    ]
}

/// `system:kube-controller-manager`: the controller manager's own identity.
fn controller_manager_rules() -> Vec<Value> {
    vec![
        events(),
        rule(&["create"], &[COORDINATION], &["leases"]),
        named(
            &["get", "update"],
            COORDINATION,
            &["leases"],
            &["kube-controller-manager"],
        ),
        rule(&["create"], &[CORE], &["secrets", "serviceaccounts"]),
        rule(&["delete"], &[CORE], &["secrets"]),
        rule(
            &["get"],
            &[CORE],
            &["configmaps", "namespaces", "secrets", "serviceaccounts"],
        ),
        rule(&["update"], &[CORE], &["secrets", "serviceaccounts"]),
        rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        rule(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
        rule(&["list", "watch"], &["*"], &["*"]),
        rule(&["create"], &[CORE], &["serviceaccounts/token"]),
    ]
}

/// `system:kube-scheduler`.
fn scheduler_rules() -> Vec<Value> {
    vec![
        events(),
        rule(&["create"], &[COORDINATION], &["leases"]),
        named(
            &["get", "update"],
            COORDINATION,
            &["leases"],
            &["kube-scheduler"],
        ),
        rule(READ, &[CORE], &["nodes"]),
        rule(&["delete", "get", "list", "watch"], &[CORE], &["pods"]),
        rule(&["create"], &[CORE], &["bindings", "pods/binding"]),
        rule(&["patch", "update"], &[CORE], &["pods/status"]),
        rule(READ, &[CORE], &["replicationcontrollers", "services"]),
        rule(READ, &[APPS, EXTENSIONS], &["replicasets"]),
        rule(READ, &[APPS], &["statefulsets"]),
        rule(READ, &[POLICY], &["poddisruptionbudgets"]),
        rule(
            READ,
            &[CORE],
            &["persistentvolumeclaims", "persistentvolumes"],
        ),
        rule(&["create"], &[AUTHENTICATION], &["tokenreviews"]),
        rule(&["create"], &[AUTHORIZATION], &["subjectaccessreviews"]),
        rule(READ, &[STORAGE], &["csinodes"]),
        rule(READ, &[CORE], &["namespaces"]),
        rule(READ, &[STORAGE], &["csidrivers", "csistoragecapacities"]),
    ]
}

/// The bootstrap ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Value> {
    let crb = |name: &str, subjects: &[&str]| {
        binding(
            "ClusterRoleBinding",
            name,
            None,
            "ClusterRole",
            name,
            subjects,
        )
    };
    let mut bindings = vec![
        crb("cluster-admin", &["Group:system:masters"]),
        crb("system:monitoring", &["Group:system:monitoring"]),
        crb("system:discovery", &["Group:system:authenticated"]),
        crb("system:basic-user", &["Group:system:authenticated"]),
        crb(
            "system:public-info-viewer",
            &["Group:system:authenticated", "Group:system:unauthenticated"],
        ),
        crb("system:node-proxier", &["User:system:kube-proxy"]),
        crb(
            "system:kube-controller-manager",
            &["User:system:kube-controller-manager"],
        ),
        crb("system:kube-dns", &["ServiceAccount:kube-system:kube-dns"]),
        crb("system:kube-scheduler", &["User:system:kube-scheduler"]),
        crb("system:volume-scheduler", &["User:system:kube-scheduler"]),
        crb("system:node", &[]),
        crb(
            "system:service-account-issuer-discovery",
            &["Group:system:serviceaccounts"],
        ),
    ];
    bindings.extend(controller_policy::cluster_role_bindings());
    bindings
}

/// The bootstrap Roles of kube-system and kube-public.
pub fn roles() -> Vec<Value> {
    let role = |namespace: &str, name: &str, rules: Vec<Value>| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": meta(name, Some(namespace), &[]),
            "rules": rules,
        })
    };
    let leader_locking = |component: &str| {
        vec![
            rule(&["watch"], &[CORE], &["configmaps"]),
            named(&["get", "update"], CORE, &["configmaps"], &[component]),
        ]
    };
    vec![
        role(
            "kube-system",
            "extension-apiserver-authentication-reader",
            vec![named(
                READ,
                CORE,
                &["configmaps"],
                &["extension-apiserver-authentication"],
            )],
        ),
        role(
            "kube-system",
            "system::leader-locking-kube-controller-manager",
            leader_locking("kube-controller-manager"),
        ),
        role(
            "kube-system",
            "system::leader-locking-kube-scheduler",
            leader_locking("kube-scheduler"),
        ),
        role(
            "kube-system",
            "system:controller:bootstrap-signer",
            vec![rule(READ, &[CORE], &["secrets"])],
        ),
        role(
            "kube-system",
            "system:controller:cloud-provider",
            vec![rule(
                &["create", "get", "list", "watch"],
                &[CORE],
                &["configmaps"],
            )],
        ),
        role(
            "kube-system",
            "system:controller:token-cleaner",
            vec![
                rule(&["delete", "get", "list", "watch"], &[CORE], &["secrets"]),
                events(),
            ],
        ),
        role(
            "kube-public",
            "system:controller:bootstrap-signer",
            vec![
                rule(READ, &[CORE], &["configmaps"]),
                named(&["update"], CORE, &["configmaps"], &["cluster-info"]),
                events(),
            ],
        ),
    ]
}

/// The bootstrap RoleBindings of kube-system and kube-public.
pub fn role_bindings() -> Vec<Value> {
    let rb = |namespace: &str, name: &str, role: &str, subjects: &[&str]| {
        binding("RoleBinding", name, Some(namespace), "Role", role, subjects)
    };
    vec![
        rb(
            "kube-system",
            "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
            &[
                "User:system:kube-controller-manager",
                "User:system:kube-scheduler",
            ],
        ),
        rb(
            "kube-system",
            "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-controller-manager",
            &[
                "User:system:kube-controller-manager",
                "ServiceAccount:kube-system:kube-controller-manager",
            ],
        ),
        rb(
            "kube-system",
            "system::leader-locking-kube-scheduler",
            "system::leader-locking-kube-scheduler",
            &[
                "User:system:kube-scheduler",
                "ServiceAccount:kube-system:kube-scheduler",
            ],
        ),
        rb(
            "kube-system",
            "system:controller:bootstrap-signer",
            "system:controller:bootstrap-signer",
            &["ServiceAccount:kube-system:bootstrap-signer"],
        ),
        rb(
            "kube-system",
            "system:controller:cloud-provider",
            "system:controller:cloud-provider",
            &["ServiceAccount:kube-system:cloud-provider"],
        ),
        rb(
            "kube-system",
            "system:controller:token-cleaner",
            "system:controller:token-cleaner",
            &["ServiceAccount:kube-system:token-cleaner"],
        ),
        rb(
            "kube-public",
            "system:controller:bootstrap-signer",
            "system:controller:bootstrap-signer",
            &["ServiceAccount:kube-system:bootstrap-signer"],
        ),
    ]
}
