#!/usr/bin/env python3
"""Extracts the Kubernetes OpenAPI extensions of kube-apiserver's OpenAPI v2 document.

kapi-schema takes the structure and descriptions of the built-in types from k8s-openapi's
`JsonSchema` implementations, which do not carry upstream's `x-kubernetes-*` extensions
(list and map types, strategic merge patch metadata, group-version-kinds, ...). This tool
reads the OpenAPI v2 document of a kube-apiserver (`/openapi/v2`, e.g. saved as
swagger-1.35.json) and writes only those facts, as compact JSON, to
crates/api/src/extensions.json:

    {
      "definitions": {
        "<definition name>": {
          "x": {<definition-level extensions>},
          "p": {"<property>": {<property-level extensions>}, ...},
          "r": ["<required property>", ...],   # upstream's order (k8s-openapi's differs)
          "listOf": "<item definition name>"    # XList kinds (k8s-openapi lacks them)
        }
      }
    }

Property-level extensions of array items and map values (`items` / `additionalProperties`)
are recorded under the property with the keys "items" and "additionalProperties".
No descriptions or other text are copied.

It also writes crates/api/src/roots.rs: the k8s-openapi type of every definition that
is not an XList kind, so that every definition upstream serves is generated.

Both feed crates/api/src/generate.rs, which makes crates/api/src/definitions.json, the
file the server reads: after running this tool, write that anew with
`KAPI_WRITE_DEFINITIONS=1 cargo test -p kapi-api definitions_json`.

Usage: tools/gen_openapi_extensions.py [swagger.json] [output.json] [roots.rs]
"""

import json
import sys

EXTENSIONS = (
    "x-kubernetes-group-version-kind",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-patch-strategy",
    "x-kubernetes-patch-merge-key",
    "x-kubernetes-unions",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-preserve-unknown-fields",
)

DEFAULT_INPUT = "/work/upstream/swagger-1.35.json"
DEFAULT_OUTPUT = "crates/api/src/extensions.json"
DEFAULT_ROOTS = "crates/api/src/roots.rs"


def extensions_of(schema):
    """The extensions of one schema node, or None when it has none."""
    found = {k: schema[k] for k in EXTENSIONS if k in schema}
    return found or None


def property_facts(schema):
    """The extensions of a property, including those of its items and map values."""
    facts = extensions_of(schema) or {}
    for nested in ("items", "additionalProperties"):
        inner = schema.get(nested)
        if isinstance(inner, dict):
            inner_facts = property_facts(inner)
            if inner_facts:
                facts[nested] = inner_facts
    return facts or None


def list_item(definition):
    """The item definition of an XList kind: a `kind` ending in List with `items` refs."""
    gvks = definition.get("x-kubernetes-group-version-kind", [])
    if len(gvks) != 1 or not gvks[0]["kind"].endswith("List"):
        return None
    items = definition.get("properties", {}).get("items", {})
    ref = items.get("items", {}).get("$ref", "")
    prefix = "#/definitions/"
    return ref[len(prefix):] if ref.startswith(prefix) else None


# Defaults of list-map key fields. Upstream's OpenAPI v3 documents declare them (`default`);
# the v2 document this tool reads does not, so they are listed here. Server-side apply matches
# a list-map element that leaves such a key out by the default, as structured-merge-diff does.
KEY_DEFAULTS = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
}


def definition_facts(definition, name=None):
    """The facts kept for one definition (every definition has an entry, so that a
    definition without `r` is known to have no required properties)."""
    facts = {}
    own = extensions_of(definition)
    if own:
        facts["x"] = own
    props = {}
    for prop_name, prop in sorted(definition.get("properties", {}).items()):
        found = property_facts(prop)
        default = KEY_DEFAULTS.get((name, prop_name))
        if default is not None:
            found = dict(found or {}, default=default)
        if found:
            props[prop_name] = found
    if props:
        facts["p"] = props
    if definition.get("required"):
        facts["r"] = definition["required"]
    item = list_item(definition)
    if item:
        facts["listOf"] = item
    return facts


def rust_path(name):
    """k8s-openapi's path of the type of a definition: `io.k8s.api.core.v1.Pod` is
    `k8s_openapi::api::core::v1::Pod`."""
    parts = name.removeprefix("io.k8s.").split(".")
    modules = [p.replace("-", "_") for p in parts[:-1]]
    path = "::".join(["k8s_openapi", *modules, parts[-1]])
    # WatchEvent is generic over its object; its schema does not depend on it.
    return path + "<()>" if name.endswith("meta.v1.WatchEvent") else path


def write_roots(definitions, facts, target):
    """Writes the `roots!` invocation listing the k8s-openapi type of every definition."""
    names = [n for n in sorted(definitions) if "listOf" not in facts.get(n, {})]
    lines = [
        "// Generated by tools/gen_openapi_extensions.py: the k8s-openapi type of every",
        "// built-in definition except the XList kinds (built from their item kinds).",
        "roots! {",
        *(f"    {rust_path(n)}," for n in names),
        "}",
    ]
    with open(target, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def main():
    source = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_INPUT
    target = sys.argv[2] if len(sys.argv) > 2 else DEFAULT_OUTPUT
    with open(source, encoding="utf-8") as f:
        definitions = json.load(f)["definitions"]
    out = {}
    for name in sorted(definitions):
        out[name] = definition_facts(definitions[name], name)
    with open(target, "w", encoding="utf-8") as f:
        json.dump({"definitions": out}, f, separators=(",", ":"), sort_keys=True)
        f.write("\n")
    print(f"{len(out)} definitions written to {target}")
    roots = sys.argv[3] if len(sys.argv) > 3 else DEFAULT_ROOTS
    write_roots(definitions, out, roots)


if __name__ == "__main__":
    main()
