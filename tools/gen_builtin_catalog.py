#!/usr/bin/env python3
"""Generates kapi's catalog of the built-in resources of Kubernetes 1.35 and the discovery
documents kube-apiserver 1.35 serves for them.

Facts come from two places:

* kube-apiserver 1.35's OpenAPI v2 document (`/openapi/v2`, saved as swagger-1.35.json): which
  group-versions and resources exist, their kinds, scopes, verbs, subresources with their verbs
  and response kinds. It is served with every API enabled, so it is filtered to what the default
  `--runtime-config` serves: the GA group-versions (pkg/controlplane/instance.go
  stableAPIGroupVersionsEnabledByDefault; 1.35 enables no beta API by default), plus
  apiregistration.k8s.io/v1 (the aggregator's). apiextensions.k8s.io belongs to the CRD server
  (kapi-apiextensions): it is in the discovery fixtures, not in the built-in catalog.
* the tables below, which the OpenAPI document does not carry: short names and categories
  (each REST storage's ShortNames()/Categories()), the etcd key prefixes that differ from the
  plural (pkg/registry/**/storage/storage.go, test/integration/etcd/data.go), the storage
  versions that differ from the served version, and the resources that are computed, not
  stored (reviews, bindings, componentstatuses).

It writes:

* crates/builtin/src/catalog/generated.rs: the static table kapi builds its definitions from;
* crates/kapi/tests/e2e/fixtures/discovery.json: the aggregated (`/api`, `/apis`) and legacy
  (`/apis`, `/api/v1`, `/apis/<group>/<version>`) discovery documents kube-apiserver serves;
* crates/kapi/tests/e2e/fixtures/api-resources.txt: what `kubectl api-resources` prints.

Usage: tools/gen_builtin_catalog.py [swagger.json]   (run from the repository root)
"""

import base64
import hashlib
import json
import re
import sys

DEFAULT_INPUT = "/work/upstream/swagger-1.35.json"
GENERATED_RS = "crates/builtin/src/catalog/generated.rs"
DISCOVERY_FIXTURE = "crates/kapi/tests/e2e/fixtures/discovery.json"
API_RESOURCES_FIXTURE = "crates/kapi/tests/e2e/fixtures/api-resources.txt"

# Groups served by another server of the chain: in the discovery fixtures (kube-apiserver's
# discovery lists them), not in the built-in catalog (kapi-apiextensions serves the CRD server's).
OTHER_SERVERS = {"apiextensions.k8s.io"}

SHORT_NAMES = {
    ("apiextensions.k8s.io", "customresourcedefinitions"): ["crd", "crds"],
    ("", "componentstatuses"): ["cs"],
    ("", "configmaps"): ["cm"],
    ("", "endpoints"): ["ep"],
    ("", "events"): ["ev"],
    ("", "limitranges"): ["limits"],
    ("", "namespaces"): ["ns"],
    ("", "nodes"): ["no"],
    ("", "persistentvolumeclaims"): ["pvc"],
    ("", "persistentvolumes"): ["pv"],
    ("", "pods"): ["po"],
    ("", "replicationcontrollers"): ["rc"],
    ("", "resourcequotas"): ["quota"],
    ("", "serviceaccounts"): ["sa"],
    ("", "services"): ["svc"],
    ("apps", "daemonsets"): ["ds"],
    ("apps", "deployments"): ["deploy"],
    ("apps", "replicasets"): ["rs"],
    ("apps", "statefulsets"): ["sts"],
    ("autoscaling", "horizontalpodautoscalers"): ["hpa"],
    ("batch", "cronjobs"): ["cj"],
    ("certificates.k8s.io", "certificatesigningrequests"): ["csr"],
    ("events.k8s.io", "events"): ["ev"],
    ("networking.k8s.io", "ingresses"): ["ing"],
    ("networking.k8s.io", "ipaddresses"): ["ip"],
    ("networking.k8s.io", "networkpolicies"): ["netpol"],
    ("policy", "poddisruptionbudgets"): ["pdb"],
    ("scheduling.k8s.io", "priorityclasses"): ["pc"],
    ("storage.k8s.io", "storageclasses"): ["sc"],
    ("storage.k8s.io", "volumeattributesclasses"): ["vac"],
}

CATEGORIES = {
    ("", "pods"): ["all"],
    ("", "replicationcontrollers"): ["all"],
    ("", "services"): ["all"],
    ("apps", "daemonsets"): ["all"],
    ("apps", "deployments"): ["all"],
    ("apps", "replicasets"): ["all"],
    ("apps", "statefulsets"): ["all"],
    ("autoscaling", "horizontalpodautoscalers"): ["all"],
    ("batch", "cronjobs"): ["all"],
    ("batch", "jobs"): ["all"],
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): ["api-extensions"],
    ("admissionregistration.k8s.io", "validatingadmissionpolicies"): ["api-extensions"],
    ("admissionregistration.k8s.io", "validatingadmissionpolicybindings"): ["api-extensions"],
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): ["api-extensions"],
    ("apiregistration.k8s.io", "apiservices"): ["api-extensions"],
    ("apiextensions.k8s.io", "customresourcedefinitions"): ["api-extensions"],
}

# etcd key prefixes that are not the plural.
KEY_PREFIXES = {
    ("", "nodes"): "minions",
    ("", "services"): "services/specs",
    ("", "endpoints"): "services/endpoints",
    ("", "replicationcontrollers"): "controllers",
    ("networking.k8s.io", "ingresses"): "ingress",
    ("apiregistration.k8s.io", "apiservices"): "apiregistration.k8s.io/apiservices",
    ("apiextensions.k8s.io", "customresourcedefinitions"): "apiextensions.k8s.io/customresourcedefinitions",
}

# Resources served in several group-versions and stored in one: (group, resource) -> stored
# (group, version).
STORAGE_VERSIONS = {
    ("events.k8s.io", "events"): ("", "v1"),
    ("", "events"): ("", "v1"),
    ("autoscaling", "horizontalpodautoscalers"): ("autoscaling", "v2"),
}

# Resources that are computed per request and never stored: they have no key prefix and
# discovery publishes no storage version hash for them.
NOT_STORED = {
    ("", "bindings"),
    ("", "componentstatuses"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
}

# APIService priorities of the served group-versions (kube-apiserver's apiVersionPriorities):
# (group priority, version priority). apiregistration.k8s.io is always listed first.
PRIORITIES = {
    ("", "v1"): (18000, 1),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("autoscaling", "v1"): (17500, 15),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("resource.k8s.io", "v1"): (16200, 21),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
    ("apiregistration.k8s.io", "v1"): (20001, 0),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
}

# How an OpenAPI operation's x-kubernetes-action lists in discovery.
ACTION_VERBS = {
    "get": "get",
    "list": "list",
    "post": "create",
    "put": "update",
    "patch": "patch",
    "delete": "delete",
    "deletecollection": "deletecollection",
}

# How a connect operation's HTTP method lists in discovery (HEAD and OPTIONS do not).
CONNECT_VERBS = {
    "get": "get",
    "post": "create",
    "put": "update",
    "patch": "patch",
    "delete": "delete",
}

PATH = re.compile(r"^/(?:api|apis/(?P<group>[^/]+))/(?P<version>v[0-9a-z]+)/(?P<rest>.*)$")


def served_group_version(group, version):
    """The default --runtime-config of kube-apiserver 1.35: GA versions only."""
    return re.fullmatch(r"v\d+", version) is not None


def split_path(rest):
    """(resource, subresource or None, namespaced, watch) of a path below a group-version."""
    parts = rest.split("/")
    watch = parts[0] == "watch"
    if watch:
        parts = parts[1:]
    namespaced = len(parts) >= 3 and parts[0] == "namespaces" and parts[1] == "{namespace}"
    if namespaced:
        parts = parts[2:]
    if not parts or not parts[0]:
        return None
    subresource = parts[2] if len(parts) >= 3 and parts[1] == "{name}" else None
    return parts[0], subresource, namespaced, watch


def collect(swagger):
    """The served resources by (group, version, plural)."""
    resources = {}
    for path, item in swagger["paths"].items():
        match = PATH.match(path)
        if not match:
            continue
        group, version = match.group("group") or "", match.group("version")
        if not served_group_version(group, version):
            continue
        split = split_path(match.group("rest"))
        if split is None:
            continue
        plural, subresource, namespaced, watch = split
        entry = resources.setdefault(
            (group, version, plural),
            {"kind": None, "namespaced": False, "verbs": set(), "subresources": {}},
        )
        for method, op in item.items():
            if not isinstance(op, dict):
                continue
            action = op.get("x-kubernetes-action")
            gvk = op.get("x-kubernetes-group-version-kind")
            if subresource is not None:
                sub = entry["subresources"].setdefault(subresource, {"verbs": set(), "gvk": gvk})
                verb = CONNECT_VERBS.get(method) if action == "connect" else ACTION_VERBS.get(action)
                if verb:
                    sub["verbs"].add(verb)
                continue
            if watch or action in ("watch", "watchlist"):
                entry["verbs"].add("watch")
                continue
            if gvk and entry["kind"] is None:
                entry["kind"] = gvk["kind"]
            if action in ACTION_VERBS:
                entry["verbs"].add(ACTION_VERBS[action])
            entry["namespaced"] |= namespaced
    return resources


def storage_of(group, version, plural, kind):
    """(key prefix, stored group, stored version) of a resource."""
    if (group, plural) in NOT_STORED:
        return "", group, version
    stored_group, stored_version = STORAGE_VERSIONS.get((group, plural), (group, version))
    return KEY_PREFIXES.get((group, plural), plural), stored_group, stored_version


def storage_version_hash(group, version, kind):
    digest = hashlib.sha256(f"{group}/{version}/{kind}".encode()).digest()
    return base64.b64encode(digest[:8]).decode()


def build_entries(resources):
    """One record per served group-version-resource, sorted by group, version and plural."""
    entries = []
    for (group, version, plural), r in sorted(resources.items()):
        kind = r["kind"]
        key_prefix, stored_group, stored_version = storage_of(group, version, plural, kind)
        subresources = []
        for name, sub in sorted(r["subresources"].items()):
            gvk = sub["gvk"] or {"group": group, "version": version, "kind": kind}
            subresources.append(
                {
                    "name": name,
                    "verbs": sorted(sub["verbs"]),
                    "group": gvk["group"],
                    "version": gvk["version"],
                    "kind": gvk["kind"],
                }
            )
        entries.append(
            {
                "group": group,
                "version": version,
                "plural": plural,
                "singular": kind.lower(),
                "kind": kind,
                "list_kind": kind + "List",
                "namespaced": r["namespaced"],
                "verbs": sorted(r["verbs"]),
                "short_names": SHORT_NAMES.get((group, plural), []),
                "categories": CATEGORIES.get((group, plural), []),
                "subresources": subresources,
                "key_prefix": key_prefix,
                "storage_group": stored_group,
                "storage_version": stored_version,
            }
        )
    return entries


def rust_strs(values):
    return "&[" + ", ".join(json.dumps(v) for v in values) + "]"


def render_rust(entries):
    out = [
        "// @generated by tools/gen_builtin_catalog.py from kube-apiserver 1.35's OpenAPI v2",
        "// document and the upstream facts tabled in that tool. Do not edit: change the tool and",
        "// run `python3 tools/gen_builtin_catalog.py` from the repository root.",
        "",
        "//! The built-in resources kube-apiserver 1.35 serves with its default `--runtime-config`.",
        "",
        "use super::{CatalogEntry, CatalogSubresource};",
        "",
        "/// Every served group-version-resource, sorted by group, version and plural.",
        "#[rustfmt::skip]",
        "pub(crate) static CATALOG: &[CatalogEntry] = &[",
    ]
    for e in entries:
        subs = ", ".join(
            "CatalogSubresource { name: %s, verbs: %s }"
            % (json.dumps(s["name"]), rust_strs(s["verbs"]))
            for s in e["subresources"]
        )
        out.append("    CatalogEntry {")
        for field in ("group", "version", "plural", "singular", "kind", "list_kind"):
            out.append(f"        {field}: {json.dumps(e[field])},")
        out.append(f"        namespaced: {'true' if e['namespaced'] else 'false'},")
        out.append(f"        verbs: {rust_strs(e['verbs'])},")
        out.append(f"        short_names: {rust_strs(e['short_names'])},")
        out.append(f"        categories: {rust_strs(e['categories'])},")
        out.append(f"        subresources: &[{subs}],")
        out.append(f"        key_prefix: {json.dumps(e['key_prefix'])},")
        out.append(f"        storage_group: {json.dumps(e['storage_group'])},")
        out.append(f"        storage_version: {json.dumps(e['storage_version'])},")
        out.append("    },")
    out.append("];")
    return "\n".join(out) + "\n"


def version_order(group, versions):
    """Preferred first: higher version priority first."""
    return sorted(versions, key=lambda v: -PRIORITIES[(group, v)][1])


def group_order(groups):
    """apiregistration.k8s.io first, then by group priority (descending) and name."""
    def key(group):
        top = max(PRIORITIES[(group, v)][0] for v in groups[group])
        return (-top, group)
    return sorted((g for g in groups if g), key=key)


def subresource_kind(entry, sub):
    """The (group, version, kind) a subresource lists: empty group and version when they are
    the resource's own."""
    same = sub["group"] == entry["group"] and sub["version"] == entry["version"]
    if same:
        return "", "", sub["kind"]
    return sub["group"], sub["version"], sub["kind"]


def aggregated_resource(e):
    doc = {
        "resource": e["plural"],
        "responseKind": {"group": "", "version": "", "kind": e["kind"]},
        "scope": "Namespaced" if e["namespaced"] else "Cluster",
        "singularResource": e["singular"],
        "verbs": e["verbs"],
    }
    if e["short_names"]:
        doc["shortNames"] = e["short_names"]
    if e["categories"]:
        doc["categories"] = e["categories"]
    subs = []
    for s in e["subresources"]:
        group, version, kind = subresource_kind(e, s)
        subs.append(
            {
                "subresource": s["name"],
                "responseKind": {"group": group, "version": version, "kind": kind},
                "verbs": s["verbs"],
            }
        )
    if subs:
        doc["subresources"] = subs
    return doc


def aggregated(groups, names):
    items = []
    for group in names:
        versions = []
        for version in version_order(group, groups[group]):
            resources = sorted(groups[group][version], key=lambda e: e["plural"])
            versions.append(
                {
                    "version": version,
                    "resources": [aggregated_resource(e) for e in resources],
                    "freshness": "Current",
                }
            )
        # The core group's name is empty, which metadata omits.
        metadata = {"name": group} if group else {}
        metadata["creationTimestamp"] = None
        items.append({"metadata": metadata, "versions": versions})
    return {
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    }


def legacy_resources(e):
    out = []
    main = {
        "name": e["plural"],
        "singularName": e["singular"],
        "namespaced": e["namespaced"],
        "kind": e["kind"],
        "verbs": e["verbs"],
    }
    if e["short_names"]:
        main["shortNames"] = e["short_names"]
    if e["categories"]:
        main["categories"] = e["categories"]
    if e["key_prefix"]:
        main["storageVersionHash"] = storage_version_hash(
            e["storage_group"], e["storage_version"], e["kind"]
        )
    out.append(main)
    for s in e["subresources"]:
        group, version, kind = subresource_kind(e, s)
        sub = {
            "name": f"{e['plural']}/{s['name']}",
            "singularName": "",
            "namespaced": e["namespaced"],
        }
        if group or version:
            sub["group"] = group
            sub["version"] = version
        sub["kind"] = kind
        sub["verbs"] = s["verbs"]
        out.append(sub)
    return out


def gv_string(group, version):
    return f"{group}/{version}" if group else version


def legacy(groups, names):
    documents = {}
    for group in [""] + names:
        for version in groups[group]:
            resources = [r for e in groups[group][version] for r in legacy_resources(e)]
            resources.sort(key=lambda r: r["name"])
            doc = {"kind": "APIResourceList"}
            if group:
                doc["apiVersion"] = "v1"
            doc["groupVersion"] = gv_string(group, version)
            doc["resources"] = resources
            path = f"/apis/{group}/{version}" if group else "/api/v1"
            documents[path] = doc
    group_list = {"kind": "APIGroupList", "apiVersion": "v1", "groups": []}
    for group in names:
        versions = [
            {"groupVersion": gv_string(group, v), "version": v}
            for v in version_order(group, groups[group])
        ]
        group_list["groups"].append(
            {"name": group, "versions": versions, "preferredVersion": versions[0]}
        )
    return documents, group_list


def api_resources(groups, names):
    """`kubectl api-resources`: the preferred version of every group, without subresources,
    sorted by group then name, printed by a tabwriter with padding 3."""
    rows = []
    for group in [""] + names:
        preferred = version_order(group, groups[group])[0]
        for e in groups[group][preferred]:
            rows.append(
                (
                    group,
                    e["plural"],
                    ",".join(e["short_names"]),
                    gv_string(group, preferred),
                    "true" if e["namespaced"] else "false",
                    e["kind"],
                )
            )
    rows.sort(key=lambda r: (r[0], r[1]))
    table = [("NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND")] + [r[1:] for r in rows]
    widths = [max(len(row[i]) for row in table) + 3 for i in range(4)]
    lines = []
    for row in table:
        cells = [row[i].ljust(widths[i]) for i in range(4)] + [row[4]]
        lines.append("".join(cells))
    return "\n".join(lines) + "\n"


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_INPUT
    with open(source) as f:
        swagger = json.load(f)
    entries = build_entries(collect(swagger))
    groups = {}
    for e in entries:
        groups.setdefault(e["group"], {}).setdefault(e["version"], []).append(e)
    names = group_order(groups)
    documents, group_list = legacy(groups, names)
    fixture = {
        "/api": aggregated(groups, [""]),
        "/apis": aggregated(groups, names),
        "groups": group_list,
        "resources": documents,
    }
    with open(GENERATED_RS, "w") as f:
        f.write(render_rust([e for e in entries if e["group"] not in OTHER_SERVERS]))
    with open(DISCOVERY_FIXTURE, "w") as f:
        json.dump(fixture, f, indent=1)
        f.write("\n")
    with open(API_RESOURCES_FIXTURE, "w") as f:
        f.write(api_resources(groups, names))
    print(f"{len(entries)} resources in {len(groups)} groups")


if __name__ == "__main__":
    main()
