//! ValidatingAdmissionPolicy end to end: a table of policies, each bound to the ConfigMaps
//! labelled with its name, applied with kubectl, then writes that each policy accepts,
//! refuses (with upstream's message, reason and code) or warns about.

use crate::common;

use std::time::{Duration, Instant};

use common::{Backend, TestServer, fails, ok_stdin, stderr};
use serde_json::{Value, json};

/// One policy of the table, and its binding.
struct Case {
    name: &'static str,
    /// The policy's spec besides matchConstraints.
    spec: Value,
    /// The binding's spec besides policyName and matchResources.
    binding: Value,
}

fn case(name: &'static str, spec: Value, binding: Value) -> Case {
    Case {
        name,
        spec,
        binding,
    }
}

fn deny() -> Value {
    json!({"validationActions": ["Deny"]})
}

fn validation(expression: &str, message: &str) -> Value {
    json!({"validations": [{"expression": expression, "message": message}]})
}

fn with(mut base: Value, extra: Value) -> Value {
    for (key, value) in extra.as_object().into_iter().flatten() {
        base[key] = value.clone();
    }
    base
}

/// The policies (16), each selecting ConfigMaps labelled `case: <name>`.
fn cases() -> Vec<Case> {
    let params = json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}});
    vec![
        case(
            "required-label",
            validation(
                "has(object.metadata.labels) && 'team' in object.metadata.labels",
                "team label required",
            ),
            deny(),
        ),
        case(
            "max-keys",
            with(
                params.clone(),
                json!({"validations": [{"expression": "size(object.data) <= int(params.data.max)",
                "messageExpression": "'too many keys: ' + string(size(object.data))"}]}),
            ),
            with(
                deny(),
                json!({"paramRef": {"name": "limits", "namespace": "vap", "parameterNotFoundAction": "Deny"}}),
            ),
        ),
        case(
            "variables",
            json!({"variables": [{"name": "n", "expression": "size(object.data)"}, {"name": "twice", "expression": "variables.n * 2"}],
                "validations": [{"expression": "variables.twice < 5", "message": "at most 2 keys"}]}),
            deny(),
        ),
        case(
            "warn-only",
            json!({"validations": [
                {"expression": "object.metadata.name != 'warned'", "message": "name warned is discouraged"},
                {"expression": "size(object.metadata.name) < 6", "message": "names are short"},
            ]}),
            json!({"validationActions": ["Warn"]}),
        ),
        case(
            "audit-only",
            validation("object.metadata.name != 'audited'", "audited"),
            json!({"validationActions": ["Audit"]}),
        ),
        case(
            "forbidden-reason",
            json!({"validations": [{"expression": "object.metadata.name != 'secret-ish'", "message": "no secrets here", "reason": "Forbidden"}]}),
            deny(),
        ),
        case(
            "default-message",
            json!({"validations": [{"expression": "object.data.v == 'ok'"}]}),
            deny(),
        ),
        case(
            "match-conditions",
            with(
                validation("false", "always refused unless skipped"),
                json!({"matchConditions": [{"name": "not-skipped",
                "expression": "!has(object.metadata.annotations) || !('skip' in object.metadata.annotations)"}]}),
            ),
            deny(),
        ),
        case(
            "transition",
            validation(
                "request.operation != 'UPDATE' || int(object.data.v) >= int(oldObject.data.v)",
                "v may only grow",
            ),
            deny(),
        ),
        case(
            "namespace-object",
            validation(
                "namespaceObject.metadata.labels.env == 'test'",
                "only in test namespaces",
            ),
            deny(),
        ),
        case(
            "no-dry-run",
            validation("!request.dryRun", "no dry runs"),
            deny(),
        ),
        case(
            "fail-on-error",
            validation("object.data.missing == 'x'", "unused"),
            deny(),
        ),
        case(
            "ignore-on-error",
            with(
                validation("object.data.missing == 'x'", "unused"),
                json!({"failurePolicy": "Ignore"}),
            ),
            deny(),
        ),
        case(
            "param-missing-deny",
            with(params.clone(), validation("true", "unused")),
            with(
                deny(),
                json!({"paramRef": {"name": "absent", "namespace": "vap", "parameterNotFoundAction": "Deny"}}),
            ),
        ),
        case(
            "param-missing-allow",
            with(params, validation("false", "unused")),
            with(
                deny(),
                json!({"paramRef": {"name": "absent", "namespace": "vap", "parameterNotFoundAction": "Allow"}}),
            ),
        ),
        case(
            "deny-and-audit",
            json!({"validations": [{"expression": "object.metadata.name.startsWith('ok')", "messageExpression": "'name ' + object.metadata.name + ' must start with ok'"}]}),
            json!({"validationActions": ["Deny", "Audit"]}),
        ),
    ]
}

/// The policy and binding objects of a case.
fn manifests(case: &Case) -> Vec<Value> {
    let mut spec = case.spec.clone();
    spec["matchConstraints"] = json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
        "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]});
    let mut binding = case.binding.clone();
    binding["policyName"] = json!(case.name);
    binding["matchResources"] = json!({"objectSelector": {"matchLabels": {"case": case.name}}});
    vec![
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": case.name}, "spec": spec}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": case.name}, "spec": binding}),
    ]
}

/// A ConfigMap of `case` in namespace vap.
fn configmap(case: &str, name: &str, data: Value, labels: Value, annotations: Value) -> String {
    let mut labels = labels;
    labels["case"] = json!(case);
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "vap", "labels": labels, "annotations": annotations},
        "data": data})
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validating_admission_policies_decide_as_upstream() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    server.kubectl_ok(&["create", "namespace", "vap"]).await;
    server
        .kubectl_ok(&["label", "namespace", "vap", "env=test"])
        .await;
    server.kubectl_ok(&["create", "namespace", "prod"]).await;
    server
        .kubectl_ok(&["label", "namespace", "prod", "env=prod"])
        .await;
    server
        .kubectl_ok(&[
            "create",
            "configmap",
            "limits",
            "-n",
            "vap",
            "--from-literal=max=2",
        ])
        .await;
    let cases = cases();
    for case in &cases {
        for manifest in manifests(case) {
            ok_stdin(&server, &["create", "-f", "-"], &manifest.to_string()).await;
        }
    }
    // Policies are read from their watch caches: wait until the last one acts.
    let deadline = Instant::now() + Duration::from_secs(10);
    for i in 0.. {
        let probe = configmap(
            "deny-and-audit",
            &format!("probe-{i}"),
            json!({}),
            json!({}),
            json!({}),
        );
        if server
            .kubectl_stdin(&["create", "-f", "-"], Some(&probe))
            .await
            .status
            .success()
        {
            assert!(Instant::now() < deadline, "the policies were never applied");
            continue;
        }
        break;
    }
    let empty = || json!({});
    let accepted =
        |case: &'static str, name: &'static str, data: Value, labels: Value, annotations: Value| {
            configmap(case, name, data, labels, annotations)
        };
    // Accepted writes.
    for manifest in [
        accepted(
            "required-label",
            "a1",
            empty(),
            json!({"team": "x"}),
            empty(),
        ),
        accepted(
            "max-keys",
            "a2",
            json!({"a": "1", "b": "2"}),
            empty(),
            empty(),
        ),
        accepted(
            "variables",
            "a3",
            json!({"a": "1", "b": "2"}),
            empty(),
            empty(),
        ),
        accepted("audit-only", "audited", empty(), empty(), empty()),
        accepted(
            "default-message",
            "a4",
            json!({"v": "ok"}),
            empty(),
            empty(),
        ),
        accepted(
            "match-conditions",
            "a5",
            empty(),
            empty(),
            json!({"skip": "yes"}),
        ),
        accepted("transition", "grow", json!({"v": "1"}), empty(), empty()),
        accepted("namespace-object", "a6", empty(), empty(), empty()),
        accepted("ignore-on-error", "a7", empty(), empty(), empty()),
        accepted("param-missing-allow", "a8", empty(), empty(), empty()),
        accepted("deny-and-audit", "ok-name", empty(), empty(), empty()),
    ] {
        ok_stdin(&server, &["create", "-f", "-"], &manifest).await;
    }
    let warned = server
        .kubectl_stdin(
            &["create", "-f", "-"],
            Some(&configmap("warn-only", "warned", empty(), empty(), empty())),
        )
        .await;
    assert!(warned.status.success(), "{}", stderr(&warned));
    // One warning per failed validation.
    for message in ["name warned is discouraged", "names are short"] {
        assert!(
            stderr(&warned).contains(&format!("Validation failed for ValidatingAdmissionPolicy 'warn-only' with binding 'warn-only': {message}")),
            "{}",
            stderr(&warned)
        );
    }
    // Refused writes: the policy, the binding and the message, as kubectl prints them.
    let refused = |case: &str, message: &str| {
        format!(
            "ValidatingAdmissionPolicy '{case}' with binding '{case}' denied request: {message}"
        )
    };
    for (manifest, want) in [
        (
            configmap("required-label", "r1", empty(), empty(), empty()),
            refused("required-label", "team label required"),
        ),
        (
            configmap(
                "max-keys",
                "r2",
                json!({"a": "1", "b": "2", "c": "3"}),
                empty(),
                empty(),
            ),
            refused("max-keys", "too many keys: 3"),
        ),
        (
            configmap(
                "variables",
                "r3",
                json!({"a": "1", "b": "2", "c": "3"}),
                empty(),
                empty(),
            ),
            refused("variables", "at most 2 keys"),
        ),
        (
            configmap(
                "default-message",
                "r4",
                json!({"v": "no"}),
                empty(),
                empty(),
            ),
            refused(
                "default-message",
                "failed expression: object.data.v == 'ok'",
            ),
        ),
        (
            configmap("match-conditions", "r5", empty(), empty(), empty()),
            refused("match-conditions", "always refused unless skipped"),
        ),
        (
            configmap("fail-on-error", "r6", json!({"v": "1"}), empty(), empty()),
            refused(
                "fail-on-error",
                "expression 'object.data.missing == 'x'' resulted in error",
            ),
        ),
        (
            configmap("param-missing-deny", "r7", empty(), empty(), empty()),
            refused(
                "param-missing-deny",
                "failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction",
            ),
        ),
        (
            configmap("deny-and-audit", "bad-name", empty(), empty(), empty()),
            refused("deny-and-audit", "name bad-name must start with ok"),
        ),
    ] {
        let err = fails(&server, &["create", "-f", "-"], Some(&manifest)).await;
        assert!(err.contains(&want), "want {want:?} in {err}");
    }
    // The reason decides the code: Invalid (422) by default, Forbidden (403) when asked for.
    let forbidden = configmap("forbidden-reason", "secret-ish", empty(), empty(), empty());
    let err = fails(&server, &["create", "-f", "-", "-v=6"], Some(&forbidden)).await;
    assert!(err.contains("403 Forbidden"), "{err}");
    let err = fails(
        &server,
        &["create", "-f", "-", "-v=6"],
        Some(&configmap(
            "required-label",
            "r8",
            empty(),
            empty(),
            empty(),
        )),
    )
    .await;
    assert!(err.contains("422 Unprocessable Entity"), "{err}");
    // A transition rule on update, a dry run, and a namespace without the label.
    ok_stdin(
        &server,
        &["create", "-f", "-"],
        &configmap("no-dry-run", "dry", empty(), empty(), empty()),
    )
    .await;
    let err = fails(
        &server,
        &["create", "--dry-run=server", "-f", "-"],
        Some(&configmap("no-dry-run", "dry2", empty(), empty(), empty())),
    )
    .await;
    assert!(err.contains(&refused("no-dry-run", "no dry runs")), "{err}");
    let shrink = configmap("transition", "grow", json!({"v": "0"}), empty(), empty());
    let err = fails(&server, &["apply", "-f", "-"], Some(&shrink)).await;
    assert!(
        err.contains(&refused("transition", "v may only grow")),
        "{err}"
    );
    let elsewhere = configmap("namespace-object", "p1", empty(), empty(), empty())
        .replace("\"vap\"", "\"prod\"");
    let err = fails(&server, &["create", "-f", "-"], Some(&elsewhere)).await;
    assert!(
        err.contains(&refused("namespace-object", "only in test namespaces")),
        "{err}"
    );
}

/// A policy's status once the status controller has checked its current generation.
async fn checked_status(server: &TestServer, name: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let policy = common::get_json(server, &["validatingadmissionpolicy", name]).await;
        if policy["status"]["observedGeneration"] == policy["metadata"]["generation"] {
            return policy["status"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "{name} was not type-checked: {policy:#}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn type_checking_is_reported_in_the_status() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let policies = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: misspelt}
spec:
  paramKind: {apiVersion: v1, kind: ConfigMap}
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments, replicasets]}
  validations:
  - expression: "object.spec.replicaz > 1"
    messageExpression: "'wants ' + params.dataa.max + ', got ' + string(object.spec.replicas)"
  - expression: "object.spec.template.spec.containers.all(c, c.image != '' && has(c.imagePolicy))"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: clean}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replicas <= 5 && object.metadata.labels.all(k, k != '')"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: wildcard}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: ["*"], apiVersions: ["*"], operations: [CREATE], resources: ["*"]}
  validations:
  - expression: "object.anything == 1"
"#;
    ok_stdin(&server, &["apply", "-f", "-"], policies).await;
    let status = checked_status(&server, "misspelt").await;
    let at = |source: &str, column: usize, field: &str| {
        format!(
            "ERROR: <input>:1:{column}: undefined field '{field}'\n | {source}\n | {}^\n",
            ".".repeat(column - 1)
        )
    };
    let both = |error: &str| {
        format!("apps/v1, Kind=Deployment: {error}\napps/v1, Kind=ReplicaSet: {error}")
    };
    let message = "'wants ' + params.dataa.max + ', got ' + string(object.spec.replicas)";
    let all = "object.spec.template.spec.containers.all(c, c.image != '' && has(c.imagePolicy))";
    assert_eq!(
        status["typeChecking"]["expressionWarnings"],
        json!([
            {"fieldRef": "spec.validations[0].expression",
             "warning": both(&at("object.spec.replicaz > 1", 12, "replicaz"))},
            {"fieldRef": "spec.validations[0].messageExpression",
             "warning": both(&at(message, 18, "dataa"))},
            {"fieldRef": "spec.validations[1].expression",
             "warning": both(&at(all, 67, "imagePolicy"))},
        ])
    );
    assert_eq!(
        checked_status(&server, "clean").await["typeChecking"],
        json!({})
    );
    assert_eq!(
        checked_status(&server, "wildcard").await["typeChecking"],
        json!({})
    );

    // A new generation is checked again.
    let fixed = r#"[{"op": "replace", "path": "/spec/validations", "value": [{"expression": "object.spec.replicas > 1"}]}]"#;
    server
        .kubectl_ok(&[
            "patch",
            "validatingadmissionpolicy",
            "misspelt",
            "--type=json",
            "-p",
            fixed,
        ])
        .await;
    let status = checked_status(&server, "misspelt").await;
    assert_eq!(status["observedGeneration"], 2);
    assert_eq!(status["typeChecking"], json!({}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policies_ask_the_authorizer() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    let setup = r#"
apiVersion: v1
kind: Namespace
metadata: {name: guarded}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: writer, namespace: guarded}
rules:
- {apiGroups: [""], resources: [configmaps], verbs: [create]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-writes, namespace: guarded}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: writer}
subjects: [{kind: User, name: bob}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: secret-readers-only}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [configmaps]}
  validations:
  - expression: "authorizer.requestResource.check('create').allowed()"
  - expression: "authorizer.path('/healthz').check('get').allowed()"
  - expression: >-
      authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('list').allowed()
    messageExpression: >-
      'may not list secrets: ' + authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('list').reason()
  - expression: "!authorizer.serviceAccount('guarded', 'robot').group('').resource('pods').check('delete').allowed()"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: secret-readers-only}
spec:
  policyName: secret-readers-only
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: guarded}}
"#;
    ok_stdin(&server, &["apply", "-f", "-"], setup).await;
    // The policy reaches admission through its watch cache.
    let deadline = Instant::now() + Duration::from_secs(10);
    let refusal = loop {
        let output = server
            .kubectl(&["create", "configmap", "c", "-n", "guarded", "--as=bob"])
            .await;
        if !output.status.success() {
            break stderr(&output);
        }
        server
            .kubectl_ok(&["delete", "configmap", "c", "-n", "guarded"])
            .await;
        assert!(Instant::now() < deadline, "the policy never refused bob");
    };
    assert!(
        refusal.contains(
            "ValidatingAdmissionPolicy 'secret-readers-only' with binding 'secret-readers-only' denied request: may not list secrets: "
        ),
        "{refusal}"
    );
    // The admin may list secrets (system:masters), so the policy lets it through.
    server
        .kubectl_ok(&["create", "configmap", "admins", "-n", "guarded"])
        .await;
}

/// `matchPolicy: Equivalent` (the default): a policy whose rules name a CRD's v1 judges a
/// create made in v2 with the object converted to v1, `request.kind` naming v1 and
/// `request.requestKind` v2; an `Exact` policy for v1 leaves v2 alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn equivalent_policies_see_the_version_they_matched() {
    let server = TestServer::start(Backend::Embedded, &[]).await;
    common::install_gadgets(&server).await;
    let policy = |name: &str, match_policy: &str, message: &str| {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "matchConstraints": {"matchPolicy": match_policy, "resourceRules": [{
                    "apiGroups": ["example.com"], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["gadgets"]}]},
                "validations": [{"expression": "false", "messageExpression": message}],
            },
        })
    };
    let binding = |name: &str| {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]},
        })
    };
    let seen = "'seen kind=' + request.kind.version + ' requestKind=' + request.requestKind.version + ' resource=' + request.resource.version + ' object=' + object.apiVersion";
    // a-exact sorts first, so its refusal would be the one reported; it is created first,
    // so once the other policy acts, it has been seen too.
    let items = [
        policy("a-exact", "Exact", "'exact'"),
        binding("a-exact"),
        policy("equivalent", "Equivalent", seen),
        binding("equivalent"),
    ];
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    ok_stdin(&server, &["apply", "-f", "-"], &list.to_string()).await;
    // The policies reach admission through their watch caches.
    let deadline = Instant::now() + Duration::from_secs(10);
    let refusal = loop {
        let output = server
            .kubectl_stdin(&["create", "-f", "-"], Some(&common::gadget("v2", "g")))
            .await;
        if !output.status.success() {
            break stderr(&output);
        }
        server
            .kubectl_ok(&["delete", "gadgets.v2.example.com", "g"])
            .await;
        assert!(Instant::now() < deadline, "the policy never refused");
    };
    assert!(
        refusal.contains(
            "ValidatingAdmissionPolicy 'equivalent' with binding 'equivalent' denied request: seen kind=v1 requestKind=v2 resource=v1 object=example.com/v1"
        ),
        "{refusal}"
    );
    let refusal = fails(
        &server,
        &["create", "-f", "-"],
        Some(&common::gadget("v1", "g")),
    )
    .await;
    assert!(
        refusal.contains(
            "ValidatingAdmissionPolicy 'a-exact' with binding 'a-exact' denied request: exact"
        ),
        "{refusal}"
    );
}
