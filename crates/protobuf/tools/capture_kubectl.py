#!/usr/bin/env python3
"""Records the protobuf request bodies kubectl sends, for test fixtures.

A throwaway HTTP server on 127.0.0.1 that answers kubectl's discovery
minimally, saves every POST/PUT body to OUTDIR/<n>-<resource>.pb, and echoes a
small JSON object back. Usage:

  capture_kubectl.py OUTDIR -- kubectl create configmap x --from-literal=a=b

It runs the command with --server pointing at itself, then stops.
"""
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

CORE = {
    "configmaps": ("ConfigMap", True), "secrets": ("Secret", True),
    "namespaces": ("Namespace", False), "serviceaccounts": ("ServiceAccount", True),
    "events": ("Event", True),
}
GROUPS = {"coordination.k8s.io/v1": {"leases": ("Lease", True)},
          "events.k8s.io/v1": {"events": ("Event", True)}}


def resources(gv, table):
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": [
        {"name": n, "singularName": k.lower(), "namespaced": ns, "kind": k,
         "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}
        for n, (k, ns) in table.items()]}


class Handler(BaseHTTPRequestHandler):
    counter = 0

    def log_message(self, fmt, *args):
        sys.stderr.write("capture: " + fmt % args + "\n")

    def reply(self, obj, code=200):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/api":
            return self.reply({"kind": "APIVersions", "versions": ["v1"],
                               "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]})
        if path == "/apis":
            return self.reply({"kind": "APIGroupList", "apiVersion": "v1", "groups": [
                {"name": gv.split("/")[0], "versions": [{"groupVersion": gv, "version": "v1"}],
                 "preferredVersion": {"groupVersion": gv, "version": "v1"}} for gv in GROUPS]})
        if path == "/api/v1":
            return self.reply(resources("v1", CORE))
        for gv, table in GROUPS.items():
            if path == f"/apis/{gv}":
                return self.reply(resources(gv, table))
        self.reply({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}, 404)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        Handler.counter += 1
        resource = self.path.split("?")[0].rstrip("/").rsplit("/", 1)[-1]
        name = f"{Handler.counter}-{resource}.pb"
        with open(os.path.join(OUTDIR, name), "wb") as f:
            f.write(body)
        sys.stderr.write(f"capture: {self.command} {self.path} {self.headers.get('Content-Type')} -> {name}\n")
        kind = CORE.get(resource, ("Unknown", True))[0]
        self.reply({"kind": kind, "apiVersion": "v1", "metadata": {"name": "x", "namespace": "default"}}, 201)

    do_PUT = do_POST


if __name__ == "__main__":
    OUTDIR = sys.argv[1]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    os.makedirs(OUTDIR, exist_ok=True)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    env = dict(os.environ, KUBECONFIG="/dev/null", HOME=os.path.join(OUTDIR, ".home"))
    rc = subprocess.run(cmd + ["--server", url], env=env, timeout=60).returncode
    server.shutdown()
    sys.exit(rc)
