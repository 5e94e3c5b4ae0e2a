#!/usr/bin/env python3
"""Generate crates/protobuf/src/schema.rs: the protobuf -> JSON schema table.

Reads, straight from git (bare mirrors are fine), the kubernetes/api and
kubernetes/apimachinery repositories at a release tag:

  * generated.proto of each package: message names, field numbers, wire types;
  * the Go types of the same package: JSON names and the Go shape of each
    field (pointer or not, omitempty/omitzero, `json:",inline"`), which decide
    how an unset or zero field shows in the JSON kube-apiserver writes;
  * register.go: group name and the kinds a group version serves.

Usage:
  gen_schema.py --api GITDIR --apimachinery GITDIR [--aggregator GITDIR] \
      [--apiextensions GITDIR] --ref v0.35.7 [--all] \
      [ROOT ...] > crates/protobuf/src/schema.rs

ROOT is "apiVersion/Kind" (e.g. "v1/ConfigMap", "events.k8s.io/v1/Event") or
"meta/v1/Kind" for a meta/v1 kind decoded under any apiVersion (DeleteOptions,
Status, ...). With --all every kind registered by every package is a root.
"meta.k8s.io/v1/Kind" (and v1beta1) is a meta kind under that apiVersion
(PartialObjectMetadata[List]). --roots-file reads more roots, one a line; kapi's
table is generated from tools/roots.txt. Without roots, the DEFAULT_ROOTS below
are used. Only the messages reachable
from the roots are emitted.
"""
import argparse
import re
import subprocess
import sys

DEFAULT_ROOTS = [
    "v1/ConfigMap",
    "v1/Secret",
    "v1/Namespace",
    "v1/ServiceAccount",
    "v1/Event",
    "events.k8s.io/v1/Event",
    "coordination.k8s.io/v1/Lease",
    "meta/v1/DeleteOptions",
    "meta/v1/Status",
]

# meta/v1 kinds that client-go encodes with the apiVersion of whatever group
# the request goes to (they are registered in every group version).
META_ANY_VERSION = {
    "DeleteOptions", "CreateOptions", "UpdateOptions", "PatchOptions",
    "GetOptions", "ListOptions", "Status", "WatchEvent",
}

# Messages with their own JSON form (custom MarshalJSON in Go).
SPECIAL = {
    "k8s.io.apimachinery.pkg.apis.meta.v1.Time": "Time",
    "k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime": "MicroTime",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Duration": "Duration",
    "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1": "FieldsV1",
    "k8s.io.apimachinery.pkg.util.intstr.IntOrString": "IntOrString",
    "k8s.io.apimachinery.pkg.api.resource.Quantity": "Quantity",
    "k8s.io.apimachinery.pkg.runtime.RawExtension": "RawExtension",
    # apiextensions' JSON: `raw` bytes holding any JSON value, as RawExtension's.
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSON": "RawExtension",
}
# Go types with a custom JSON form this generator does not model yet.
# apiextensions' JSON-schema unions: (kind, the schema message they hold). Their JSON is the
# schema, or a bool / a list of schemas / a list of strings (marshal.go of apiextensions v1).
SCHEMA_UNIONS = {
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool": "SchemaOrBool",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": "SchemaOrArray",
    "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray": "SchemaOrStrings",
}
SCHEMA_PROPS = "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps"

SCALARS = {"string": "Str", "bool": "Bool", "int32": "Int32", "int64": "Int64",
           "bytes": "Bytes", "double": "Double"}

APIMACHINERY_DIRS = ["pkg/apis/meta/v1", "pkg/apis/meta/v1beta1", "pkg/runtime",
                     "pkg/util/intstr", "pkg/api/resource"]


class Repo:
    def __init__(self, gitdir, ref):
        self.gitdir, self.ref = gitdir, ref
        out = subprocess.run(["git", "--git-dir", gitdir, "ls-tree", "-r", "--name-only", ref],
                             check=True, capture_output=True, text=True).stdout
        self.files = out.split("\n")

    def show(self, path):
        return subprocess.run(["git", "--git-dir", self.gitdir, "show", f"{self.ref}:{path}"],
                              check=True, capture_output=True, text=True).stdout


def strip_comments(text):
    return re.sub(r"//[^\n]*", "", text)


def parse_proto(text):
    """-> (package, {message: [(label, type, name, number, maptype)]})"""
    text = strip_comments(text)
    package = re.search(r"^package\s+([\w.]+);", text, re.M).group(1)
    messages = {}
    for m in re.finditer(r"^message\s+(\w+)\s*\{(.*?)^\}", text, re.M | re.S):
        name, body = m.group(1), m.group(2)
        if re.search(r"^\s*(message|oneof|enum)\s+\w+\s*\{", body, re.M):
            sys.exit(f"nested definitions in {package}.{name} are not supported")
        fields = []
        for line in body.split(";"):
            line = line.strip()
            if not line:
                continue
            mm = re.fullmatch(r"map<\s*(\w+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)", line)
            if mm:
                if mm.group(1) != "string":
                    sys.exit(f"{package}.{name}: map key {mm.group(1)} not supported")
                fields.append(("map", mm.group(2), mm.group(3), int(mm.group(4))))
                continue
            fm = re.fullmatch(r"(optional|repeated|required)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)", line)
            if not fm:
                sys.exit(f"{package}.{name}: cannot parse field {line!r}")
            fields.append((fm.group(1), fm.group(2), fm.group(3), int(fm.group(4))))
        messages[name] = fields
    return package, messages


STRUCT_RE = re.compile(r"^type\s+(\w+)\s+struct\s*\{(?:\}|(.*?)^\})", re.M | re.S)
TYPEDECL_RE = re.compile(r"^type\s+(\w+)\s+([^\s{][^\n]*)$", re.M)
FIELD_RE = re.compile(r"^\s*(?:(\w+)\s+)?([^\s`]+)\s+`([^`]*)`")


def parse_go(texts):
    """-> ({struct: {fieldnum: attrs}}, {typename: underlying})"""
    structs, decls = {}, {}
    for text in texts:
        for m in TYPEDECL_RE.finditer(text):
            decls[m.group(1)] = m.group(2).strip()
        for m in STRUCT_RE.finditer(text):
            fields = {}
            depth = 0
            for line in (m.group(2) or "").split("\n"):
                if line.strip().startswith("//"):
                    continue
                code = line
                if depth == 0:
                    fm = FIELD_RE.match(code)
                    if fm:
                        tag = fm.group(3)
                        pb = re.search(r'protobuf:"([^"]*)"', tag)
                        js = re.search(r'json:"([^"]*)"', tag)
                        if pb and js:
                            parts = js.group(1).split(",")
                            num = int(pb.group(1).split(",")[1])
                            fields[num] = {
                                "json": parts[0],
                                "omitempty": "omitempty" in parts[1:],
                                "omitzero": "omitzero" in parts[1:],
                                "inline": "inline" in parts[1:],
                                "gotype": fm.group(2),
                            }
                depth += code.count("{") - code.count("}")
            structs[m.group(1)] = fields
    return structs, decls


def upper_snake(name):
    s = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)
    s = re.sub(r"([A-Z])([A-Z][a-z])", r"\1_\2", s)
    return s.upper()


class Package:
    def __init__(self, repo, directory, prefix, group=None):
        self.dir = directory
        text = repo.show(f"{directory}/generated.proto")
        self.proto_package, self.messages = parse_proto(text)
        gofiles = [f for f in repo.files
                   if f.startswith(directory + "/") and f.count("/") == directory.count("/") + 1
                   and f.endswith(".go") and not f.endswith("_test.go")
                   and not f.endswith(".pb.go") and "zz_generated" not in f]
        texts = [repo.show(f) for f in gofiles]
        self.structs, self.decls = parse_go(texts)
        self.imports = {}
        for t in texts:
            for alias, path in re.findall(r'^\s*(\w+)\s+"(k8s\.io/[^"]+)"', t, re.M):
                self.imports[alias] = path
        self.version = directory.rsplit("/", 1)[1]
        self.short = prefix  # e.g. core/v1
        self.kinds = []
        self.group = group
        if "register.go" in [f.rsplit("/", 1)[1] for f in gofiles]:
            reg = strip_comments(repo.show(f"{directory}/register.go"))
            g = re.search(r'GroupName\s*=\s*"([^"]*)"', reg)
            if g:
                self.group = g.group(1)
            for block in re.findall(r"AddKnownTypes\(SchemeGroupVersion,(.*?)\)\n", reg, re.S):
                self.kinds += [k for k in re.findall(r"&(\w+)\{\}", block) if k in self.messages]

    @property
    def api_version(self):
        return self.version if not self.group else f"{self.group}/{self.version}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--api", required=True)
    ap.add_argument("--apimachinery", required=True)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--aggregator",
                    help="kubernetes/kube-aggregator git dir[@ref] (APIService)")
    ap.add_argument("--apiextensions",
                    help="kubernetes/apiextensions-apiserver git dir (CustomResourceDefinition)")
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--roots-file", help="a file of roots, one a line (# comments)")
    ap.add_argument("roots", nargs="*")
    args = ap.parse_args()

    api = Repo(args.api, args.ref)
    am = Repo(args.apimachinery, args.ref)
    packages = {}
    for d in APIMACHINERY_DIRS:
        p = Package(am, d, d.replace("pkg/apis/", "").replace("pkg/util/", "").replace("pkg/api/", "").replace("pkg/", ""))
        packages[p.proto_package] = p
    for f in api.files:
        m = re.fullmatch(r"([\w]+)/(v[\w]+)/generated\.proto", f)
        if m:
            p = Package(api, f"{m.group(1)}/{m.group(2)}", f"{m.group(1)}/{m.group(2)}")
            packages[p.proto_package] = p
    for gitdir, directory in ((args.aggregator, "pkg/apis/apiregistration/v1"),
                              (args.apiextensions, "pkg/apis/apiextensions/v1")):
        if gitdir:
            # GITDIR@REF: a repository whose tags lag the others' (kube-aggregator's mirror).
            gitdir, _, ref = gitdir.partition("@")
            repo = Repo(gitdir, ref or args.ref)
            p = Package(repo, directory, directory.replace("pkg/apis/", ""))
            packages[p.proto_package] = p
    meta = packages["k8s.io.apimachinery.pkg.apis.meta.v1"]

    roots = []  # (apiVersion or None, kind, fqname)
    if args.all:
        for p in packages.values():
            if p is meta or not p.kinds:
                continue
            for k in p.kinds:
                if k in p.structs:
                    roots.append((p.api_version, k, f"{p.proto_package}.{k}"))
                else:
                    print(f"skipping {p.api_version}/{k}: not a Go struct", file=sys.stderr)
        roots += [(None, k, f"{meta.proto_package}.{k}") for k in sorted(META_ANY_VERSION)]
    if args.roots_file:
        with open(args.roots_file) as f:
            args.roots += [line.split("#")[0].strip() for line in f if line.split("#")[0].strip()]
    for r in args.roots or ([] if args.all else DEFAULT_ROOTS):
        av, kind = r.rsplit("/", 1)
        if av == "meta/v1":
            roots.append((None, kind, f"{meta.proto_package}.{kind}"))
            continue
        found = [p for p in packages.values() if p.api_version == av and kind in p.messages]
        if not found and av.startswith("meta.k8s.io/"):
            # meta.k8s.io/v1beta1 serves meta/v1's PartialObjectMetadata as its own.
            found = [meta] if kind in meta.messages else []
        if not found:
            sys.exit(f"no message for {r}")
        roots.append((av, kind, f"{found[0].proto_package}.{kind}"))

    def pkg_of(fq):
        pk, name = fq.rsplit(".", 1)
        if pk not in packages:
            sys.exit(f"unknown proto package {pk}")
        return packages[pk], name

    def resolve(ref, current):
        return ref[1:] if ref.startswith(".") else f"{current.proto_package}.{ref}"

    def rust_name(fq):
        p, name = pkg_of(fq)
        return upper_snake(p.short.replace("/", "_")) + "_" + upper_snake(name)

    def is_wrapper(fq):
        p, name = pkg_of(fq)
        decl = p.decls.get(name, "")
        if decl.startswith("[]"):
            fields = p.messages[name]
            if len(fields) != 1 or fields[0][0] != "repeated" or fields[0][1] != "string":
                sys.exit(f"{fq}: list wrapper of {fields} not supported")
            return True
        return False

    def kind_of(typ, current, todo):
        if typ in SCALARS:
            return SCALARS[typ]
        fq = resolve(typ, current)
        if fq in SPECIAL:
            return SPECIAL[fq]
        if fq in SCHEMA_UNIONS:
            todo.append(SCHEMA_PROPS)
            return f"{SCHEMA_UNIONS[fq]}(&{rust_name(SCHEMA_PROPS)})"
        if is_wrapper(fq):
            return "StrList"
        todo.append(fq)
        return f"Msg(&{rust_name(fq)})"

    out_msgs = {}
    todo = [fq for _, _, fq in roots]
    while todo:
        fq = todo.pop()
        if fq in out_msgs:
            continue
        p, name = pkg_of(fq)
        gofields = p.structs.get(name)
        decl = p.decls.get(name, "")
        if gofields is None and re.fullmatch(r"\w+\.\w+", decl):
            # `type MatchCondition v1.MatchCondition`: the Go struct lives elsewhere
            alias, other = decl.split(".")
            path = p.imports.get(alias, "")
            for q in packages.values():
                if path in (f"k8s.io/api/{q.dir}", f"k8s.io/apimachinery/{q.dir}"):
                    gofields = q.structs.get(other)
        if gofields is None:
            sys.exit(f"no Go struct for {fq}")
        rows = []
        for label, typ, pname, num in sorted(p.messages[name], key=lambda f: f[3]):
            kind = kind_of(typ, p, todo)
            g = gofields.get(num)
            if g is None:
                sys.exit(f"{fq}: no Go field for proto field {pname} = {num}")
            ptr = g["gotype"].startswith("*")
            gotype = g["gotype"].lstrip("*")
            shape = {"map": "Map", "repeated": "Rep"}.get(label, "One")
            listy = shape != "One" or kind in ("Bytes", "StrList")
            if g["inline"]:
                if not kind.startswith("Msg(") or ptr:
                    sys.exit(f"{fq}.{pname}: inline of {typ} not supported")
                emit, json = "Inline", pname
            else:
                json = g["json"] or g["gotype"].split(".")[-1]
                if ptr:
                    emit = "Ptr" if g["omitempty"] or g["omitzero"] else "PtrNull"
                elif listy or kind in ("Str", "Bool", "Int32", "Int64", "Double"):
                    emit = "OmitEmpty" if g["omitempty"] or g["omitzero"] else "Always"
                else:  # a Go struct: omitempty does nothing, omitzero omits the zero value
                    emit = "OmitZero" if g["omitzero"] else "Always"
            rows.append(f'        f({num}, "{json}", {shape}, {kind}, {emit}),')
        out_msgs[fq] = (rust_name(fq), f"{p.short}.{name}", rows)

    w = sys.stdout.write
    w("// @generated by crates/protobuf/tools/gen_schema.py from kubernetes/api,\n")
    w(f"// apimachinery, kube-aggregator and apiextensions-apiserver {args.ref}. Do not edit by\n")
    w("// hand: rerun the generator (see schema.rs).\n")
    w("// Per message: (field number, JSON name, shape, kind, how Go's JSON shows it).\n\n")
    w("use super::{Emit::*, Kind::*, KindEntry, Message, Shape::*, f, k};\n\n")
    w("pub static KINDS: &[KindEntry] = &[\n")
    for av, kind, fq in sorted(roots, key=lambda r: (r[0] is None, r[0] or "", r[1])):
        avs = "None" if av is None else f'Some("{av}")'
        w(f'    k({avs}, "{kind}", &{rust_name(fq)}),\n')
    w("];\n")
    for fq in sorted(out_msgs, key=lambda q: out_msgs[q][0]):
        rname, label, rows = out_msgs[fq]
        w(f'\npub static {rname}: Message = Message {{\n    name: "{label}",\n    fields: &[\n')
        w("\n".join(rows) + ("\n" if rows else ""))
        w("    ],\n};\n")


if __name__ == "__main__":
    main()
