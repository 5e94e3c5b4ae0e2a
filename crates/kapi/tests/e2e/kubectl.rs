//! The real kubectl against kapi, on the embedded store and on etcd: the everyday verbs on
//! namespaces, configmaps, secrets, serviceaccounts, events and leases.
//!
//! Every case starts its own server (and, on the etcd backend, its own etcd) and asserts on
//! what kubectl prints and on its exit code, as a user of kube-apiserver 1.35 would see them.
//! Nothing waits for a fixed time: whatever happens in the background (watches, deletions
//! finishing) is polled for with a deadline.

use crate::common;

use std::process::{Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine as _;
use common::{Backend, KUBECTL, TestServer, ok_stdin, stderr, stdout};
use serde_json::Value;
use tokio::io::AsyncReadExt;

/// How long anything asynchronous may take before a test gives up.
const DEADLINE: Duration = Duration::from_secs(30);

/// The message of upstream's RFC 1123 subdomain name validation.
const DNS1123_SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case \
     alphanumeric characters, '-' or '.', and must start and end with an alphanumeric \
     character (e.g. 'example.com', regex used for validation is \
     '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

/// Runs kubectl and fails the test unless it exits with code 1; returns its stderr.
async fn fails(server: &TestServer, args: &[&str], input: Option<&str>) -> String {
    let output = server.kubectl_stdin(args, input).await;
    assert_eq!(
        output.status.code(),
        Some(1),
        "kubectl {args:?} should exit with 1; stdout: {}; stderr: {}",
        stdout(&output),
        stderr(&output)
    );
    stderr(&output)
}

/// Creates objects from a manifest with `kubectl create -f -`; returns its stdout.
async fn create(server: &TestServer, manifest: &str) -> String {
    ok_stdin(server, &["create", "-f", "-"], manifest).await
}

/// `kubectl get <args> -o json`, parsed.
async fn get_json(server: &TestServer, args: &[&str]) -> Value {
    let mut args = [&["get"], args].concat();
    args.extend(["-o", "json"]);
    let out = server.kubectl_ok(&args).await;
    serde_json::from_str(&out).unwrap_or_else(|err| panic!("kubectl {args:?}: {err}: {out}"))
}

/// Runs kubectl with extra environment variables.
async fn kubectl_env(server: &TestServer, args: &[&str], env: &[(&str, &str)]) -> Output {
    tokio::process::Command::new(KUBECTL)
        .arg("--kubeconfig")
        .arg(&server.kubeconfig)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .expect("run kubectl")
}

/// The column names of a header line: columns are separated by at least two spaces (a
/// column name may contain one, as `LAST SEEN`).
fn columns(line: &str) -> Vec<String> {
    line.split("  ")
        .map(str::trim)
        .filter(|cell| !cell.is_empty())
        .map(str::to_string)
        .collect()
}

/// A table kubectl printed: each row cut at the header's column starts, so empty cells stay.
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn parse(out: &str) -> Table {
        let mut lines = out.lines();
        let head: Vec<char> = lines.next().unwrap_or_default().chars().collect();
        let mut starts = Vec::new();
        for (i, c) in head.iter().enumerate() {
            let after_gap = i == 0 || (i >= 2 && head[i - 1] == ' ' && head[i - 2] == ' ');
            if *c != ' ' && after_gap {
                starts.push(i);
            }
        }
        let cut = |line: &[char]| -> Vec<String> {
            (0..starts.len())
                .map(|k| {
                    let from = starts[k].min(line.len());
                    let to = if k + 1 < starts.len() {
                        starts[k + 1].min(line.len())
                    } else {
                        line.len()
                    };
                    line[from..to].iter().collect::<String>().trim().to_string()
                })
                .collect()
        };
        Table {
            header: cut(&head),
            rows: lines
                .filter(|line| !line.trim().is_empty())
                .map(|line| cut(&line.chars().collect::<Vec<_>>()))
                .collect(),
        }
    }

    /// The row whose first cell is `name`.
    fn row(&self, name: &str) -> &[String] {
        self.rows
            .iter()
            .find(|row| row[0] == name)
            .unwrap_or_else(|| panic!("no row {name} in {:?}", self.rows))
    }

    /// The cell of column `column` in the row `name`.
    fn cell(&self, name: &str, column: &str) -> &str {
        let index = self
            .header
            .iter()
            .position(|c| c == column)
            .unwrap_or_else(|| panic!("no column {column} in {:?}", self.header));
        &self.row(name)[index]
    }

    /// The first cells of all rows.
    fn names(&self) -> Vec<&str> {
        self.rows.iter().map(|row| row[0].as_str()).collect()
    }
}

/// Asserts that a table's header has exactly these column names.
fn assert_header(out: &str, expected: &[&str]) {
    let header = columns(out.lines().next().unwrap_or_default());
    assert_eq!(header, expected, "header of:\n{out}");
}

/// A kubectl running in the background (e.g. `get -w`) whose output is collected as it
/// arrives; killed when dropped.
struct Background {
    child: tokio::process::Child,
    out: Arc<Mutex<Vec<u8>>>,
    err: Arc<Mutex<Vec<u8>>>,
    args: Vec<String>,
}

impl Background {
    fn start(server: &TestServer, args: &[&str]) -> Background {
        let mut child = tokio::process::Command::new(KUBECTL)
            .arg("--kubeconfig")
            .arg(&server.kubeconfig)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("run kubectl");
        let out = Arc::new(Mutex::new(Vec::new()));
        let err = Arc::new(Mutex::new(Vec::new()));
        fn collect(
            mut from: impl tokio::io::AsyncRead + Unpin + Send + 'static,
            into: Arc<Mutex<Vec<u8>>>,
        ) {
            tokio::spawn(async move {
                let mut buffer = [0u8; 8192];
                while let Ok(n) = from.read(&mut buffer).await {
                    if n == 0 {
                        break;
                    }
                    into.lock().unwrap().extend_from_slice(&buffer[..n]);
                }
            });
        }
        collect(child.stdout.take().expect("stdout"), out.clone());
        collect(child.stderr.take().expect("stderr"), err.clone());
        Background {
            child,
            out,
            err,
            args: args.iter().map(|arg| arg.to_string()).collect(),
        }
    }

    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.lock().unwrap()).into_owned()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.err.lock().unwrap()).into_owned()
    }

    /// Waits until `done` holds for (stdout, stderr); returns stdout then.
    async fn wait_for(&self, what: &str, done: impl Fn(&str, &str) -> bool) -> String {
        let deadline = Instant::now() + DEADLINE;
        loop {
            let (out, err) = (self.stdout(), self.stderr());
            if done(&out, &err) {
                return out;
            }
            assert!(
                Instant::now() < deadline,
                "kubectl {:?}: no {what} within {DEADLINE:?}; stdout:\n{out}\nstderr:\n{err}",
                self.args
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until stdout has a line whose whitespace-separated cells start with `cells`.
    async fn wait_for_line(&self, cells: &[&str]) -> String {
        self.wait_for(&format!("line {cells:?}"), |out, _| {
            line_index(out, cells).is_some()
        })
        .await
    }

    /// For a kubectl started with `-v=6`: waits until its watch request has been answered;
    /// no change made after that can be missed.
    async fn watching(&self) {
        self.wait_for("the watch request", |_, err| err.contains("watch=true"))
            .await;
    }

    /// Waits for the process to exit by itself; returns its exit code.
    async fn exit_code(&mut self) -> Option<i32> {
        let status = tokio::time::timeout(DEADLINE, self.child.wait())
            .await
            .unwrap_or_else(|_| {
                panic!(
                    "kubectl {:?} did not exit; stdout:\n{}\nstderr:\n{}",
                    self.args,
                    self.stdout(),
                    self.stderr()
                )
            })
            .expect("kubectl exit status");
        status.code()
    }
}

/// kubectl wait prints "condition met" when it saw the deletion happen, nothing when it
/// found the object gone while (re)listing: either is a success.
fn assert_condition_met(wait: &Background, object: &str) {
    let out = wait.stdout();
    assert!(
        out.is_empty() || out == format!("{object} condition met\n"),
        "{out}"
    );
}

/// The index of the first line whose whitespace-separated cells start with `cells`.
fn line_index(out: &str, cells: &[&str]) -> Option<usize> {
    out.lines().position(|line| {
        let words: Vec<&str> = line.split_whitespace().collect();
        words.len() >= cells.len() && words[..cells.len()] == *cells
    })
}

/// The objects kubectl printed with `-o json` one after the other (as `get -w` does).
fn json_stream(out: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(out)
        .into_iter::<Value>()
        .map_while(Result::ok)
        .collect()
}

fn configmap(name: &str, data: &[(&str, &str)]) -> String {
    let data: serde_json::Map<String, Value> = data
        .iter()
        .map(|(k, v)| (k.to_string(), Value::from(*v)))
        .collect();
    serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": data,
    })
    .to_string()
}

/// A JSON stream of the objects, as `kubectl create -f` reads it.
fn documents(objects: &[Value]) -> String {
    let documents: Vec<String> = objects.iter().map(Value::to_string).collect();
    documents.join("\n")
}

fn namespace(name: &str) -> String {
    serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        .to_string()
}

// ---------------------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------------------

/// A fresh server lists exactly the four system namespaces.
async fn system_namespaces(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let names = server.kubectl_ok(&["get", "ns", "-o", "name"]).await;
    let mut names: Vec<&str> = names.lines().collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "namespace/default",
            "namespace/kube-node-lease",
            "namespace/kube-public",
            "namespace/kube-system"
        ]
    );
    let out = server.kubectl_ok(&["get", "ns"]).await;
    assert_header(&out, &["NAME", "STATUS", "AGE"]);
    assert_eq!(Table::parse(&out).cell("default", "STATUS"), "Active");
    let out = server.kubectl_ok(&["get", "ns", "-o", "wide"]).await;
    assert_header(&out, &["NAME", "STATUS", "AGE"]);
    server.stop().await;
}

/// `kubectl api-resources` and `kubectl api-versions` show these resources as
/// kube-apiserver does.
async fn api_resources_and_versions(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let out = server.kubectl_ok(&["api-resources"]).await;
    let table = Table::parse(&out);
    assert_eq!(
        table.header,
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    );
    let expected = [
        ["configmaps", "cm", "v1", "true", "ConfigMap"],
        ["events", "ev", "v1", "true", "Event"],
        ["namespaces", "ns", "v1", "false", "Namespace"],
        ["secrets", "", "v1", "true", "Secret"],
        ["serviceaccounts", "sa", "v1", "true", "ServiceAccount"],
        ["leases", "", "coordination.k8s.io/v1", "true", "Lease"],
        ["events", "ev", "events.k8s.io/v1", "true", "Event"],
    ];
    let mut positions = Vec::new();
    for row in expected {
        let position = table
            .rows
            .iter()
            .position(|r| r == &row)
            .unwrap_or_else(|| panic!("no row {row:?} in:\n{out}"));
        positions.push(position);
    }
    // kubectl sorts by group, keeping discovery's order inside a group: kube-apiserver
    // lists the core resources alphabetically.
    assert!(positions.is_sorted(), "order of rows in:\n{out}");

    let out = server.kubectl_ok(&["api-resources", "-o", "wide"]).await;
    let table = Table::parse(&out);
    assert_eq!(
        table.header,
        [
            "NAME",
            "SHORTNAMES",
            "APIVERSION",
            "NAMESPACED",
            "KIND",
            "VERBS",
            "CATEGORIES"
        ]
    );
    let all = "create,delete,deletecollection,get,list,patch,update,watch";
    assert_eq!(table.cell("configmaps", "VERBS"), all);
    assert_eq!(table.cell("secrets", "VERBS"), all);
    assert_eq!(table.cell("serviceaccounts", "VERBS"), all);
    assert_eq!(table.cell("leases", "VERBS"), all);
    assert_eq!(
        table.cell("namespaces", "VERBS"),
        "create,delete,get,list,patch,update,watch"
    );

    let out = server
        .kubectl_ok(&["api-resources", "--namespaced=false", "-o", "name"])
        .await;
    assert!(out.lines().any(|l| l == "namespaces"), "{out}");
    for namespaced in ["configmaps", "secrets", "serviceaccounts", "events"] {
        assert!(!out.lines().any(|l| l == namespaced), "{out}");
    }
    let out = server
        .kubectl_ok(&[
            "api-resources",
            "--api-group=coordination.k8s.io",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(out, "leases.coordination.k8s.io\n");
    let out = server
        .kubectl_ok(&["api-resources", "--api-group=events.k8s.io"])
        .await;
    let table = Table::parse(&out);
    assert_eq!(
        table.rows,
        [["events", "ev", "events.k8s.io/v1", "true", "Event"]]
    );

    let out = server.kubectl_ok(&["api-versions"]).await;
    let versions: Vec<&str> = out.lines().collect();
    for version in ["coordination.k8s.io/v1", "events.k8s.io/v1", "v1"] {
        assert!(
            versions.contains(&version),
            "{version} missing from:\n{out}"
        );
    }
    assert!(versions.is_sorted(), "{out}");
    server.stop().await;
}

/// get and list in every output format, with label and field selectors, and the common
/// errors: NotFound, AlreadyExists, Invalid.
async fn get_list_formats_and_errors(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let out = create(
        &server,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: alpha\n  labels:\n    app: demo\n\
         data:\n  k1: v1\n  k2: v2\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: beta\ndata:\n  k1: other\n",
    )
    .await;
    assert_eq!(out, "configmap/alpha created\nconfigmap/beta created\n");

    // Default table and -o wide.
    let out = server.kubectl_ok(&["get", "configmaps"]).await;
    assert_header(&out, &["NAME", "DATA", "AGE"]);
    let table = Table::parse(&out);
    assert_eq!(table.names(), ["alpha", "beta"]);
    assert_eq!(table.cell("alpha", "DATA"), "2");
    assert_eq!(table.cell("beta", "DATA"), "1");
    assert!(table.cell("alpha", "AGE").ends_with('s'), "{out}");
    let out = server.kubectl_ok(&["get", "cm", "-o", "wide"]).await;
    assert_header(&out, &["NAME", "DATA", "AGE"]);
    let out = server.kubectl_ok(&["get", "cm", "alpha"]).await;
    assert_eq!(Table::parse(&out).names(), ["alpha"]);
    let out = server.kubectl_ok(&["get", "cm", "-A"]).await;
    assert_header(&out, &["NAMESPACE", "NAME", "DATA", "AGE"]);
    assert_eq!(Table::parse(&out).cell("default", "NAME"), "alpha");
    let out = server.kubectl_ok(&["get", "cm", "--show-labels"]).await;
    assert_header(&out, &["NAME", "DATA", "AGE", "LABELS"]);
    let table = Table::parse(&out);
    assert_eq!(table.cell("alpha", "LABELS"), "app=demo");
    assert_eq!(table.cell("beta", "LABELS"), "<none>");
    let out = server.kubectl_ok(&["get", "cm", "-L", "app"]).await;
    assert_header(&out, &["NAME", "DATA", "AGE", "APP"]);
    assert_eq!(Table::parse(&out).cell("alpha", "APP"), "demo");

    // -o json, -o yaml, -o name, jsonpath, custom-columns.
    let object = get_json(&server, &["cm", "alpha"]).await;
    assert_eq!(object["apiVersion"], "v1");
    assert_eq!(object["kind"], "ConfigMap");
    assert_eq!(object["metadata"]["name"], "alpha");
    assert_eq!(object["metadata"]["namespace"], "default");
    assert_eq!(object["metadata"]["labels"]["app"], "demo");
    assert_eq!(object["data"], serde_json::json!({"k1": "v1", "k2": "v2"}));
    let uid = object["metadata"]["uid"].as_str().expect("uid");
    assert_eq!(uid.len(), 36, "{object}");
    let rv = object["metadata"]["resourceVersion"].as_str().expect("rv");
    assert!(rv.parse::<u64>().is_ok(), "{object}");
    let created = object["metadata"]["creationTimestamp"]
        .as_str()
        .expect("creationTimestamp");
    assert!(created.len() == 20 && created.ends_with('Z'), "{created}");
    let list = get_json(&server, &["cm"]).await;
    assert_eq!(list["kind"], "List");
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha", "beta"]);
    let out = server
        .kubectl_ok(&["get", "cm", "alpha", "-o", "yaml"])
        .await;
    assert!(
        out.starts_with("apiVersion: v1\ndata:\n  k1: v1\n  k2: v2\nkind: ConfigMap\nmetadata:\n"),
        "{out}"
    );
    assert!(
        out.contains("\n  name: alpha\n  namespace: default\n"),
        "{out}"
    );
    assert!(
        out.contains(&format!("\n  resourceVersion: \"{rv}\"\n")),
        "{out}"
    );
    let out = server.kubectl_ok(&["get", "cm", "-o", "yaml"]).await;
    assert!(
        out.starts_with("apiVersion: v1\nitems:\n- apiVersion: v1\n"),
        "{out}"
    );
    assert!(
        out.ends_with("kind: List\nmetadata:\n  resourceVersion: \"\"\n"),
        "{out}"
    );
    let out = server.kubectl_ok(&["get", "cm", "-o", "name"]).await;
    assert_eq!(out, "configmap/alpha\nconfigmap/beta\n");
    let out = server
        .kubectl_ok(&["get", "cm", "-o", "jsonpath={.items[*].metadata.name}"])
        .await;
    assert_eq!(out, "alpha beta");
    let out = server
        .kubectl_ok(&[
            "get",
            "cm",
            "-o",
            "custom-columns=NAME:.metadata.name,K1:.data.k1",
        ])
        .await;
    assert_eq!(
        columns(out.lines().nth(2).unwrap_or_default()),
        ["beta", "other"]
    );

    // Label selectors.
    let get_names = |args: Vec<&'static str>| {
        let server = &server;
        async move {
            let mut args = args;
            args.extend(["-o", "name"]);
            server.kubectl_ok(&args).await
        }
    };
    assert_eq!(
        get_names(vec!["get", "cm", "-l", "app=demo"]).await,
        "configmap/alpha\n"
    );
    assert_eq!(
        get_names(vec!["get", "cm", "-l", "app in (demo,x)"]).await,
        "configmap/alpha\n"
    );
    assert_eq!(
        get_names(vec!["get", "cm", "-l", "!app"]).await,
        "configmap/beta\n"
    );
    assert_eq!(
        get_names(vec!["get", "cm", "-l", "app!=demo"]).await,
        "configmap/beta\n"
    );
    let output = server.kubectl(&["get", "cm", "-l", "app=nothing"]).await;
    assert!(output.status.success());
    assert_eq!(stdout(&output), "");
    assert_eq!(
        stderr(&output),
        "No resources found in default namespace.\n"
    );

    // Field selectors.
    assert_eq!(
        get_names(vec!["get", "cm", "--field-selector", "metadata.name=beta"]).await,
        "configmap/beta\n"
    );
    assert_eq!(
        get_names(vec!["get", "cm", "--field-selector", "metadata.name!=beta"]).await,
        "configmap/alpha\n"
    );
    assert_eq!(
        get_names(vec![
            "get",
            "cm",
            "-A",
            "--field-selector",
            "metadata.namespace=default,metadata.name=alpha"
        ])
        .await,
        "configmap/alpha\n"
    );
    let err = fails(
        &server,
        &["get", "cm", "--field-selector", "data.k1=v1"],
        None,
    )
    .await;
    assert_eq!(
        err,
        "Error from server (BadRequest): Unable to find \"/v1, Resource=configmaps\" that match \
         label selector \"\", field selector \"data.k1=v1\": field label not supported: data.k1\n"
    );

    // An empty namespace.
    let output = server.kubectl(&["get", "cm", "-n", "kube-public"]).await;
    assert!(output.status.success());
    assert_eq!(
        stderr(&output),
        "No resources found in kube-public namespace.\n"
    );

    // NotFound, AlreadyExists, Invalid.
    let err = fails(&server, &["get", "cm", "missing"], None).await;
    assert_eq!(
        err,
        "Error from server (NotFound): configmaps \"missing\" not found\n"
    );
    // kubectl looks the namespace up when an object is not found, and reports it missing.
    let err = fails(&server, &["get", "cm", "missing", "-n", "nowhere"], None).await;
    assert_eq!(
        err,
        "Error from server (NotFound): namespaces \"nowhere\" not found\n"
    );
    let err = fails(
        &server,
        &["create", "-f", "-"],
        Some(&configmap("alpha", &[])),
    )
    .await;
    assert_eq!(
        err,
        "Error from server (AlreadyExists): error when creating \"STDIN\": configmaps \"alpha\" \
         already exists\n"
    );
    let err = fails(
        &server,
        &["create", "-f", "-"],
        Some(&configmap("Bad_Name", &[("a", "b")])),
    )
    .await;
    assert_eq!(
        err,
        format!(
            "The ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": \
             {DNS1123_SUBDOMAIN}\n"
        )
    );
    let err = fails(
        &server,
        &["create", "-f", "-"],
        Some(&configmap("keys", &[("bad key!", "b")])),
    )
    .await;
    assert!(
        err.starts_with(
            "The ConfigMap \"keys\" is invalid: data[bad key!]: Invalid value: \"bad key!\": a \
             valid config key must consist of alphanumeric characters, '-', '_' or '.'"
        ),
        "{err}"
    );
    let err = fails(
        &server,
        &["create", "-f", "-", "-n", "nowhere"],
        Some(&configmap("lost", &[])),
    )
    .await;
    assert_eq!(
        err,
        "Error from server (NotFound): error when creating \"STDIN\": namespaces \"nowhere\" not \
         found\n"
    );
    server.stop().await;
}

/// `--chunk-size` pages the list with limit and continue, and kubectl prints every item.
async fn list_chunking(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let items: Vec<Value> = (0..7)
        .map(|i| {
            serde_json::json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": format!("chunk-{i}"),
                    "labels": {"parity": if i % 2 == 0 { "even" } else { "odd" }},
                },
            })
        })
        .collect();
    let out = create(&server, &documents(&items)).await;
    assert_eq!(out.lines().count(), 7, "{out}");

    let output = server
        .kubectl(&["get", "cm", "--chunk-size=3", "-v=6"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    let requests: Vec<String> = stderr(&output)
        .lines()
        .filter(|line| line.contains("GET https://") && line.contains("/configmaps?"))
        .map(str::to_string)
        .collect();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    assert!(
        requests
            .iter()
            .all(|r| r.contains("limit=3") && r.contains(" 200 OK")),
        "{requests:#?}"
    );
    assert!(!requests[0].contains("continue="), "{requests:#?}");
    assert!(
        requests[1..].iter().all(|r| r.contains("continue=")),
        "{requests:#?}"
    );
    let out = stdout(&output);
    assert_header(&out, &["NAME", "DATA", "AGE"]);
    let expected: Vec<String> = (0..7).map(|i| format!("chunk-{i}")).collect();
    assert_eq!(Table::parse(&out).names(), expected);

    let list = get_json(&server, &["cm", "--chunk-size=2"]).await;
    assert_eq!(list["items"].as_array().expect("items").len(), 7);
    let out = server
        .kubectl_ok(&[
            "get",
            "cm",
            "--chunk-size=1",
            "-l",
            "parity=even",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(
        out,
        "configmap/chunk-0\nconfigmap/chunk-2\nconfigmap/chunk-4\nconfigmap/chunk-6\n"
    );
    let output = server
        .kubectl(&["get", "cm", "--chunk-size=0", "-o", "name", "-v=6"])
        .await;
    assert_eq!(stdout(&output).lines().count(), 7);
    let requests = stderr(&output)
        .lines()
        .filter(|line| line.contains("GET https://") && line.contains("/configmaps"))
        .count();
    assert_eq!(requests, 1, "{}", stderr(&output));
    server.stop().await;
}

/// `kubectl apply`: create, unchanged, change and re-apply (three-way: keys removed from
/// the manifest go, changes made by others stay), server dry run and diff.
async fn apply_create_change_reapply(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let first = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels:\n    \
                 app: demo\ndata:\n  a: \"1\"\n  b: \"2\"\n";
    let out = ok_stdin(&server, &["apply", "-f", "-"], first).await;
    assert_eq!(out, "configmap/settings created\n");
    let object = get_json(&server, &["cm", "settings"]).await;
    let applied: Value = serde_json::from_str(
        object["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .as_str()
            .expect("last-applied annotation"),
    )
    .expect("last-applied is JSON");
    assert_eq!(applied["data"], serde_json::json!({"a": "1", "b": "2"}));
    let out = ok_stdin(&server, &["apply", "-f", "-"], first).await;
    assert_eq!(out, "configmap/settings unchanged\n");

    // Someone else labels it; the next apply keeps that label.
    server
        .kubectl_ok(&["label", "cm", "settings", "owner=ops"])
        .await;
    let second = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  labels:\n    \
                  app: demo\ndata:\n  a: \"changed\"\n  c: \"3\"\n";
    let output = server
        .kubectl_stdin(&["diff", "-f", "-"], Some(second))
        .await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let diff = stdout(&output);
    assert!(diff.contains("\n-  a: \"1\"\n"), "{diff}");
    assert!(diff.contains("\n+  a: changed\n"), "{diff}");
    let out = ok_stdin(&server, &["apply", "-f", "-", "--dry-run=server"], second).await;
    assert_eq!(out, "configmap/settings configured (server dry run)\n");
    let object = get_json(&server, &["cm", "settings"]).await;
    assert_eq!(object["data"], serde_json::json!({"a": "1", "b": "2"}));

    let out = ok_stdin(&server, &["apply", "-f", "-"], second).await;
    assert_eq!(out, "configmap/settings configured\n");
    let object = get_json(&server, &["cm", "settings"]).await;
    assert_eq!(
        object["data"],
        serde_json::json!({"a": "changed", "c": "3"})
    );
    assert_eq!(
        object["metadata"]["labels"],
        serde_json::json!({"app": "demo", "owner": "ops"})
    );
    let output = server
        .kubectl_stdin(&["diff", "-f", "-"], Some(second))
        .await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    let out = ok_stdin(&server, &["apply", "-f", "-"], second).await;
    assert_eq!(out, "configmap/settings unchanged\n");

    // apply of an invalid manifest fails as create does.
    let err = fails(
        &server,
        &["apply", "-f", "-"],
        Some(&configmap("Bad_Name", &[])),
    )
    .await;
    assert!(
        err.contains("The ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value"),
        "{err}"
    );
    server.stop().await;
}

/// Updates without a resourceVersion are unconditional for these resources (upstream's
/// AllowUnconditionalUpdate): a PUT without one, a patch that removes it, and the apply
/// that follows applying an exported object (its last-applied configuration has the
/// resourceVersion, so the next apply's patch removes it).
async fn unconditional_updates(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    create(&server, &configmap("free", &[("a", "1")])).await;

    // Exported with -o yaml (resourceVersion, uid, creationTimestamp) and applied.
    let exported = server
        .kubectl_ok(&["get", "cm", "free", "-o", "yaml"])
        .await;
    let exported = exported.replace("a: \"1\"", "a: \"2\"");
    let output = server
        .kubectl_stdin(&["apply", "-f", "-"], Some(&exported))
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "configmap/free configured\n");
    assert!(
        stderr(&output).contains("missing the kubectl.kubernetes.io/last-applied-configuration"),
        "{}",
        stderr(&output)
    );
    // A clean manifest applied next: the patch sets resourceVersion to null.
    let out = ok_stdin(
        &server,
        &["apply", "-f", "-"],
        &configmap("free", &[("a", "3")]),
    )
    .await;
    assert_eq!(out, "configmap/free configured\n");
    let object = get_json(&server, &["cm", "free"]).await;
    assert_eq!(object["data"], serde_json::json!({"a": "3"}));

    let out = server
        .kubectl_ok(&[
            "patch",
            "cm",
            "free",
            "--type=merge",
            "-p",
            r#"{"metadata":{"resourceVersion":null},"data":{"a":"4"}}"#,
        ])
        .await;
    assert_eq!(out, "configmap/free patched\n");

    // A PUT without resourceVersion.
    let out = ok_stdin(
        &server,
        &[
            "replace",
            "--raw",
            "/api/v1/namespaces/default/configmaps/free",
            "-f",
            "-",
        ],
        &configmap("free", &[("a", "5")]),
    )
    .await;
    let object: Value = serde_json::from_str(&out).expect("PUT answers the object");
    assert_eq!(object["data"], serde_json::json!({"a": "5"}));
    server.stop().await;
}

/// `kubectl patch` with each patch type, `kubectl edit`, and patch errors.
async fn patch_types_and_edit(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    create(&server, &configmap("p", &[("a", "1"), ("b", "2")])).await;
    let out = server
        .kubectl_ok(&["patch", "cm", "p", "-p", r#"{"data":{"c":"3"}}"#])
        .await;
    assert_eq!(out, "configmap/p patched\n");
    let object = get_json(&server, &["cm", "p"]).await;
    assert_eq!(
        object["data"],
        serde_json::json!({"a": "1", "b": "2", "c": "3"})
    );

    let out = server
        .kubectl_ok(&[
            "patch",
            "cm",
            "p",
            "--type=strategic",
            "-p",
            r#"{"data":{"a":null},"metadata":{"labels":{"patched":"strategic"}}}"#,
        ])
        .await;
    assert_eq!(out, "configmap/p patched\n");
    let out = server
        .kubectl_ok(&[
            "patch",
            "cm",
            "p",
            "--type=merge",
            "-p",
            r#"{"data":{"b":"two"},"metadata":{"labels":{"merged":"yes"}}}"#,
        ])
        .await;
    assert_eq!(out, "configmap/p patched\n");
    let out = server
        .kubectl_ok(&[
            "patch",
            "cm",
            "p",
            "--type=json",
            "-p",
            r#"[{"op":"replace","path":"/data/c","value":"three"},{"op":"add","path":"/data/d","value":"4"},{"op":"remove","path":"/metadata/labels/merged"}]"#,
        ])
        .await;
    assert_eq!(out, "configmap/p patched\n");
    let object = get_json(&server, &["cm", "p"]).await;
    assert_eq!(
        object["data"],
        serde_json::json!({"b": "two", "c": "three", "d": "4"})
    );
    assert_eq!(
        object["metadata"]["labels"],
        serde_json::json!({"patched": "strategic"})
    );

    // A patch that changes nothing.
    let out = server
        .kubectl_ok(&[
            "patch",
            "cm",
            "p",
            "--type=merge",
            "-p",
            r#"{"data":{"d":"4"}}"#,
        ])
        .await;
    assert_eq!(out, "configmap/p patched (no change)\n");

    // kubectl edit: the editor changes the object, kubectl sends a strategic merge patch.
    let output = kubectl_env(
        &server,
        &["edit", "cm", "p"],
        &[("KUBE_EDITOR", "sed -i -e s/three/edited/")],
    )
    .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "configmap/p edited\n");
    let object = get_json(&server, &["cm", "p"]).await;
    assert_eq!(object["data"]["c"], "edited");
    let output = kubectl_env(&server, &["edit", "cm", "p"], &[("KUBE_EDITOR", "true")]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "Edit cancelled, no changes made.\n");

    // Errors.
    let err = fails(
        &server,
        &["patch", "cm", "missing", "-p", r#"{"data":{"a":"1"}}"#],
        None,
    )
    .await;
    assert_eq!(
        err,
        "Error from server (NotFound): configmaps \"missing\" not found\n"
    );
    let err = fails(
        &server,
        &[
            "patch",
            "cm",
            "p",
            "--type=json",
            "-p",
            r#"[{"op":"test","path":"/data/b","value":"wrong"}]"#,
        ],
        None,
    )
    .await;
    assert!(err.starts_with("The request is invalid"), "{err}");
    let err = fails(
        &server,
        &[
            "patch",
            "cm",
            "p",
            "--type=merge",
            "-p",
            r#"{"metadata":{"labels":{"bad":"-x-"}}}"#,
        ],
        None,
    )
    .await;
    assert!(
        err.starts_with(
            "The ConfigMap \"p\" is invalid: metadata.labels: Invalid value: \"-x-\": a valid \
             label must be an empty string or consist of alphanumeric characters"
        ),
        "{err}"
    );
    let err = fails(
        &server,
        &[
            "patch",
            "cm",
            "p",
            "--type=merge",
            "-p",
            r#"{"metadata":{"name":"q"}}"#,
        ],
        None,
    )
    .await;
    assert_eq!(
        err,
        "Error from server (BadRequest): the name of the object (q) does not match the name on \
         the URL (p)\n"
    );
    // An immutable configmap refuses data changes.
    create(
        &server,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"frozen"},"immutable":true,"data":{"a":"1"}}"#,
    )
    .await;
    let err = fails(
        &server,
        &["patch", "cm", "frozen", "-p", r#"{"data":{"a":"2"}}"#],
        None,
    )
    .await;
    assert_eq!(
        err,
        "The ConfigMap \"frozen\" is invalid: data: Forbidden: field is immutable when \
         `immutable` is set\n"
    );
    server.stop().await;
}

/// `kubectl replace`: with the current resourceVersion, with a stale one (Conflict), of a
/// missing object (NotFound), `--force`, and server dry run.
async fn replace_and_conflict(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    create(&server, &configmap("r", &[("a", "1")])).await;
    let stale = server.kubectl_ok(&["get", "cm", "r", "-o", "yaml"]).await;
    let uid = get_json(&server, &["cm", "r"]).await["metadata"]["uid"].clone();

    let out = ok_stdin(
        &server,
        &["replace", "-f", "-"],
        &stale.replace("a: \"1\"", "a: \"2\""),
    )
    .await;
    assert_eq!(out, "configmap/r replaced\n");
    assert_eq!(get_json(&server, &["cm", "r"]).await["data"]["a"], "2");

    let err = fails(
        &server,
        &["replace", "-f", "-"],
        Some(&stale.replace("a: \"1\"", "a: \"3\"")),
    )
    .await;
    assert_eq!(
        err,
        "Error from server (Conflict): error when replacing \"STDIN\": Operation cannot be \
         fulfilled on configmaps \"r\": the object has been modified; please apply your changes \
         to the latest version and try again\n"
    );
    assert_eq!(get_json(&server, &["cm", "r"]).await["data"]["a"], "2");

    let out = ok_stdin(
        &server,
        &["replace", "-f", "-", "--dry-run=server"],
        &configmap("r", &[("a", "dry")]),
    )
    .await;
    assert_eq!(out, "configmap/r replaced (server dry run)\n");
    assert_eq!(get_json(&server, &["cm", "r"]).await["data"]["a"], "2");

    let err = fails(
        &server,
        &["replace", "-f", "-"],
        Some(&configmap("ghost", &[("a", "1")])),
    )
    .await;
    assert_eq!(
        err,
        "Error from server (NotFound): error when replacing \"STDIN\": configmaps \"ghost\" not \
         found\n"
    );

    // --force deletes and creates again: a new uid.
    let out = ok_stdin(
        &server,
        &["replace", "--force", "-f", "-"],
        &stale.replace("a: \"1\"", "a: \"forced\""),
    )
    .await;
    assert_eq!(out, "configmap \"r\" deleted\nconfigmap/r replaced\n");
    let object = get_json(&server, &["cm", "r"]).await;
    assert_eq!(object["data"]["a"], "forced");
    assert_ne!(object["metadata"]["uid"], uid);
    server.stop().await;
}

/// `kubectl label` and `kubectl annotate` on namespaced and cluster-scoped objects, and
/// selecting by the labels set.
async fn label_and_annotate(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    create(&server, &configmap("x", &[])).await;

    let out = server.kubectl_ok(&["label", "cm", "x", "tier=web"]).await;
    assert_eq!(out, "configmap/x labeled\n");
    let err = fails(&server, &["label", "cm", "x", "tier=db"], None).await;
    assert_eq!(
        err,
        "error: 'tier' already has a value (web), and --overwrite is false\n"
    );
    let out = server
        .kubectl_ok(&["label", "cm", "x", "tier=db", "--overwrite"])
        .await;
    assert_eq!(out, "configmap/x labeled\n");
    let out = server
        .kubectl_ok(&["get", "cm", "-l", "tier=db", "-o", "name"])
        .await;
    assert_eq!(out, "configmap/x\n");
    let out = server.kubectl_ok(&["label", "cm", "x", "tier-"]).await;
    assert_eq!(out, "configmap/x unlabeled\n");
    let object = get_json(&server, &["cm", "x"]).await;
    assert!(
        object["metadata"]
            .get("labels")
            .is_none_or(|l| l.get("tier").is_none()),
        "{object}"
    );

    let out = server
        .kubectl_ok(&["annotate", "cm", "x", "note=hello world"])
        .await;
    assert_eq!(out, "configmap/x annotated\n");
    let out = server
        .kubectl_ok(&[
            "get",
            "cm",
            "x",
            "-o",
            "jsonpath={.metadata.annotations.note}",
        ])
        .await;
    assert_eq!(out, "hello world");
    let err = fails(&server, &["annotate", "cm", "x", "note=again"], None).await;
    assert_eq!(
        err,
        "error: --overwrite is false but found the following declared annotation(s): 'note' \
         already has a value (hello world)\n"
    );
    server
        .kubectl_ok(&["annotate", "cm", "x", "note=again", "--overwrite"])
        .await;
    let out = server.kubectl_ok(&["annotate", "cm", "x", "note-"]).await;
    assert_eq!(out, "configmap/x annotated\n");

    // Cluster-scoped: namespaces.
    let out = server
        .kubectl_ok(&["label", "ns", "default", "team=core"])
        .await;
    assert_eq!(out, "namespace/default labeled\n");
    let out = server
        .kubectl_ok(&["get", "ns", "-l", "team=core", "-o", "name"])
        .await;
    assert_eq!(out, "namespace/default\n");
    let out = server.kubectl_ok(&["get", "ns", "-L", "team"]).await;
    assert_header(&out, &["NAME", "STATUS", "AGE", "TEAM"]);
    assert_eq!(Table::parse(&out).cell("default", "TEAM"), "core");
    // The name label is set by the server and kept.
    let out = server
        .kubectl_ok(&[
            "get",
            "ns",
            "-l",
            "kubernetes.io/metadata.name=kube-system",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(out, "namespace/kube-system\n");
    let out = server
        .kubectl_ok(&["annotate", "ns", "kube-public", "owner=me"])
        .await;
    assert_eq!(out, "namespace/kube-public annotated\n");

    // Many at once with a selector, and a dry run.
    create(&server, &configmap("y", &[])).await;
    let out = server
        .kubectl_ok(&["label", "cm", "--all", "batch=1"])
        .await;
    assert_eq!(out, "configmap/x labeled\nconfigmap/y labeled\n");
    let out = server
        .kubectl_ok(&["label", "cm", "-l", "batch=1", "second=2"])
        .await;
    assert_eq!(out, "configmap/x labeled\nconfigmap/y labeled\n");
    let out = server
        .kubectl_ok(&["label", "cm", "x", "dry=run", "--dry-run=server"])
        .await;
    assert_eq!(out, "configmap/x labeled (server dry run)\n");
    let out = server
        .kubectl_ok(&["get", "cm", "-l", "dry", "-o", "name"])
        .await;
    assert_eq!(out, "");
    server.stop().await;
}

/// Secrets: stringData folds into base64 data, the TYPE/DATA columns, type validation and
/// selection by type, immutability.
async fn secrets(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let out = create(
        &server,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  user: admin\n\
         data:\n  password: c2VjcmV0\n",
    )
    .await;
    assert_eq!(out, "secret/creds created\n");
    let out = server
        .kubectl_ok(&["get", "secret", "creds", "-o", "jsonpath={.data.user}"])
        .await;
    assert_eq!(out, "YWRtaW4=");
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(out)
        .expect("base64");
    assert_eq!(decoded, b"admin");
    let object = get_json(&server, &["secret", "creds"]).await;
    assert_eq!(object["type"], "Opaque");
    assert!(object.get("stringData").is_none(), "{object}");
    assert_eq!(
        object["data"],
        serde_json::json!({"password": "c2VjcmV0", "user": "YWRtaW4="})
    );

    let tls_missing = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-tls\ntype: kubernetes.io/tls\n\
                       data: {}\n";
    let err = fails(&server, &["create", "-f", "-"], Some(tls_missing)).await;
    assert_eq!(
        err,
        "The Secret \"web-tls\" is invalid: \n* data[tls.crt]: Required value\n* \
         data[tls.key]: Required value\n"
    );
    create(
        &server,
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: web-tls\ntype: kubernetes.io/tls\n\
         stringData:\n  tls.crt: cert\n  tls.key: key\n",
    )
    .await;

    let out = server.kubectl_ok(&["get", "secrets"]).await;
    assert_header(&out, &["NAME", "TYPE", "DATA", "AGE"]);
    let table = Table::parse(&out);
    assert_eq!(table.names(), ["creds", "web-tls"]);
    assert_eq!(table.row("creds")[1..3], ["Opaque", "2"]);
    assert_eq!(table.row("web-tls")[1..3], ["kubernetes.io/tls", "2"]);
    let out = server.kubectl_ok(&["get", "secrets", "-o", "wide"]).await;
    assert_header(&out, &["NAME", "TYPE", "DATA", "AGE"]);
    let out = server
        .kubectl_ok(&[
            "get",
            "secrets",
            "--field-selector",
            "type=kubernetes.io/tls",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(out, "secret/web-tls\n");

    // The type cannot change; an immutable secret's data cannot either.
    let err = fails(
        &server,
        &[
            "patch",
            "secret",
            "creds",
            "--type=merge",
            "-p",
            r#"{"type":"example.com/other"}"#,
        ],
        None,
    )
    .await;
    assert_eq!(
        err,
        "The Secret \"creds\" is invalid: type: Invalid value: \"example.com/other\": field is \
         immutable\n"
    );
    create(
        &server,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"sealed"},"immutable":true,"stringData":{"k":"v"}}"#,
    )
    .await;
    let err = fails(
        &server,
        &[
            "patch",
            "secret",
            "sealed",
            "-p",
            r#"{"stringData":{"k":"w"}}"#,
        ],
        None,
    )
    .await;
    assert_eq!(
        err,
        "The Secret \"sealed\" is invalid: data: Forbidden: field is immutable when `immutable` \
         is set\n"
    );

    // apply with stringData, then a changed value.
    let manifest = |value: &str| {
        format!(
            "apiVersion: v1\nkind: Secret\nmetadata:\n  name: applied\nstringData:\n  token: \
             {value}\n"
        )
    };
    let out = ok_stdin(&server, &["apply", "-f", "-"], &manifest("one")).await;
    assert_eq!(out, "secret/applied created\n");
    let out = ok_stdin(&server, &["apply", "-f", "-"], &manifest("two")).await;
    assert_eq!(out, "secret/applied configured\n");
    let out = server
        .kubectl_ok(&["get", "secret", "applied", "-o", "jsonpath={.data.token}"])
        .await;
    assert_eq!(out, "dHdv");
    server.stop().await;
}

/// ServiceAccounts: the SECRETS column, and strategic vs merge patch of the secrets list
/// (merged by name vs replaced).
async fn serviceaccounts(backend: Backend) {
    // Without the controller that gives each namespace its `default` account, the list holds
    // only this test's accounts.
    let server = TestServer::start(backend, &["--controllers=-serviceaccount-controller"]).await;
    let out = create(
        &server,
        r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"},"secrets":[{"name":"a"}]}"#,
    )
    .await;
    assert_eq!(out, "serviceaccount/robot created\n");
    create(
        &server,
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: plain\n",
    )
    .await;
    let out = server.kubectl_ok(&["get", "sa"]).await;
    assert_header(&out, &["NAME", "SECRETS", "AGE"]);
    let table = Table::parse(&out);
    assert_eq!(table.names(), ["plain", "robot"]);
    assert_eq!(table.cell("robot", "SECRETS"), "1");
    assert_eq!(table.cell("plain", "SECRETS"), "0");
    let out = server
        .kubectl_ok(&["get", "serviceaccounts", "-o", "wide"])
        .await;
    assert_header(&out, &["NAME", "SECRETS", "AGE"]);

    let secret_names = |object: &Value| -> Vec<String> {
        let mut names: Vec<String> = object["secrets"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|s| s["name"].as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    };
    server
        .kubectl_ok(&[
            "patch",
            "sa",
            "robot",
            "-p",
            r#"{"secrets":[{"name":"b"}]}"#,
        ])
        .await;
    let object = get_json(&server, &["sa", "robot"]).await;
    assert_eq!(secret_names(&object), ["a", "b"]);
    server
        .kubectl_ok(&[
            "patch",
            "sa",
            "robot",
            "--type=merge",
            "-p",
            r#"{"secrets":[{"name":"c"}],"automountServiceAccountToken":false}"#,
        ])
        .await;
    let object = get_json(&server, &["sa", "robot"]).await;
    assert_eq!(secret_names(&object), ["c"]);
    assert_eq!(object["automountServiceAccountToken"], false);

    let err = fails(
        &server,
        &["create", "-f", "-"],
        Some(r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"Robot"}}"#),
    )
    .await;
    assert_eq!(
        err,
        format!(
            "The ServiceAccount \"Robot\" is invalid: metadata.name: Invalid value: \"Robot\": \
             {DNS1123_SUBDOMAIN}\n"
        )
    );
    let out = server.kubectl_ok(&["delete", "sa", "robot"]).await;
    assert_eq!(out, "serviceaccount \"robot\" deleted\n");
    server.stop().await;
}

/// Core v1 and events.k8s.io/v1 events: one store seen through both groups, the events
/// table, and field selectors.
async fn events(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let core = "apiVersion: v1\nkind: Event\nmetadata:\n  name: cm-changed\ninvolvedObject:\n  \
                apiVersion: v1\n  kind: ConfigMap\n  name: target\n  namespace: default\n\
                reason: Testing\nmessage: hello there\ntype: Normal\ncount: 3\n\
                firstTimestamp: \"2024-01-01T00:00:00Z\"\nlastTimestamp: \"2024-01-01T00:05:00Z\"\n\
                source:\n  component: tester\n";
    let out = create(&server, core).await;
    assert_eq!(out, "event/cm-changed created\n");
    let new = r#"{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"note"},
        "eventTime":"2024-01-01T00:00:00.000000Z","reportingController":"example.com/ctl",
        "reportingInstance":"ctl-1","action":"Reconcile","reason":"Failed",
        "regarding":{"apiVersion":"v1","kind":"ConfigMap","name":"other","namespace":"default"},
        "note":"it went wrong","type":"Warning"}"#;
    let out = create(&server, new).await;
    assert_eq!(out, "event.events.k8s.io/note created\n");

    let out = server.kubectl_ok(&["get", "events"]).await;
    assert_header(&out, &["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]);
    let table = Table::parse(&out);
    let row = |reason: &str| -> Vec<String> {
        table
            .rows
            .iter()
            .find(|row| row[2] == reason)
            .unwrap_or_else(|| panic!("no event {reason} in:\n{out}"))
            .clone()
    };
    assert_eq!(
        row("Testing")[1..],
        ["Normal", "Testing", "configmap/target", "hello there"]
    );
    assert_eq!(
        row("Failed")[1..],
        ["Warning", "Failed", "configmap/other", "it went wrong"]
    );
    let out = server.kubectl_ok(&["get", "ev", "-o", "wide"]).await;
    assert_header(
        &out,
        &[
            "LAST SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "SUBOBJECT",
            "SOURCE",
            "MESSAGE",
            "FIRST SEEN",
            "COUNT",
            "NAME",
        ],
    );
    let table = Table::parse(&out);
    let by_name = |name: &str| -> Vec<String> {
        table
            .rows
            .iter()
            .find(|row| row.last().map(String::as_str) == Some(name))
            .unwrap_or_else(|| panic!("no event {name} in:\n{out}"))
            .clone()
    };
    assert_eq!(by_name("cm-changed")[5], "tester");
    assert_eq!(by_name("cm-changed")[8], "3");
    assert_eq!(by_name("note")[5], "example.com/ctl, ctl-1");
    assert_eq!(by_name("note")[8], "1");
    let out = server.kubectl_ok(&["get", "events.events.k8s.io"]).await;
    assert_header(&out, &["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]);
    assert_eq!(Table::parse(&out).rows.len(), 2, "{out}");

    // The same objects through both groups.
    let as_new = get_json(&server, &["events.v1.events.k8s.io", "cm-changed"]).await;
    assert_eq!(as_new["apiVersion"], "events.k8s.io/v1");
    assert_eq!(as_new["note"], "hello there");
    assert_eq!(as_new["regarding"]["name"], "target");
    assert_eq!(as_new["deprecatedCount"], 3);
    let as_core = get_json(&server, &["events", "note"]).await;
    assert_eq!(as_core["apiVersion"], "v1");
    assert_eq!(as_core["message"], "it went wrong");
    assert_eq!(as_core["involvedObject"]["name"], "other");
    assert_eq!(as_core["reportingComponent"], "example.com/ctl");

    // Field selectors of core events.
    let select = |selector: &'static str| {
        let server = &server;
        async move {
            server
                .kubectl_ok(&["get", "events", "--field-selector", selector, "-o", "name"])
                .await
        }
    };
    assert_eq!(select("type=Warning").await, "event/note\n");
    assert_eq!(select("reason=Testing").await, "event/cm-changed\n");
    assert_eq!(select("involvedObject.name=other").await, "event/note\n");
    assert_eq!(
        select("involvedObject.kind=ConfigMap,source=tester").await,
        "event/cm-changed\n"
    );

    // Validation: an events.k8s.io event needs an eventTime.
    let err = fails(
        &server,
        &["create", "-f", "-"],
        Some(
            &new.replace("\"eventTime\":\"2024-01-01T00:00:00.000000Z\",", "")
                .replace("{\"name\":\"note\"}", "{\"name\":\"untimed\"}"),
        ),
    )
    .await;
    assert_eq!(
        err,
        "The Event \"untimed\" is invalid: eventTime: Required value\n"
    );
    server.stop().await;
}

/// Leases: the HOLDER column, renewals keep MicroTime precision, apply, validation.
async fn leases(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let manifest = "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: node-1\n  \
                    namespace: kube-node-lease\nspec:\n  holderIdentity: node-1\n  \
                    leaseDurationSeconds: 40\n  renewTime: \"2024-01-01T00:00:00.123456Z\"\n";
    let out = create(&server, manifest).await;
    assert_eq!(out, "lease.coordination.k8s.io/node-1 created\n");
    let out = server
        .kubectl_ok(&["get", "leases", "-n", "kube-node-lease"])
        .await;
    assert_header(&out, &["NAME", "HOLDER", "AGE"]);
    assert_eq!(Table::parse(&out).cell("node-1", "HOLDER"), "node-1");
    let out = server
        .kubectl_ok(&["get", "lease", "-n", "kube-node-lease", "-o", "wide"])
        .await;
    assert_header(&out, &["NAME", "HOLDER", "AGE"]);
    let out = server
        .kubectl_ok(&["get", "leases.coordination.k8s.io", "-A"])
        .await;
    assert_header(&out, &["NAMESPACE", "NAME", "HOLDER", "AGE"]);
    let output = server.kubectl(&["get", "leases"]).await;
    assert!(output.status.success());
    assert_eq!(
        stderr(&output),
        "No resources found in default namespace.\n"
    );

    // A renewal.
    let out = server
        .kubectl_ok(&[
            "patch",
            "lease",
            "node-1",
            "-n",
            "kube-node-lease",
            "--type=merge",
            "-p",
            r#"{"spec":{"renewTime":"2024-01-01T00:00:10.654321Z"}}"#,
        ])
        .await;
    assert_eq!(out, "lease.coordination.k8s.io/node-1 patched\n");
    let out = server
        .kubectl_ok(&[
            "get",
            "lease",
            "node-1",
            "-n",
            "kube-node-lease",
            "-o",
            "jsonpath={.spec.renewTime} {.spec.leaseDurationSeconds}",
        ])
        .await;
    assert_eq!(out, "2024-01-01T00:00:10.654321Z 40");

    // apply: create, change the holder, re-apply.
    let applied = |holder: &str| {
        format!(
            "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: leader\nspec:\n  \
             holderIdentity: {holder}\n  leaseDurationSeconds: 15\n"
        )
    };
    let out = ok_stdin(&server, &["apply", "-f", "-"], &applied("a")).await;
    assert_eq!(out, "lease.coordination.k8s.io/leader created\n");
    let out = ok_stdin(&server, &["apply", "-f", "-"], &applied("b")).await;
    assert_eq!(out, "lease.coordination.k8s.io/leader configured\n");
    let out = server.kubectl_ok(&["get", "lease"]).await;
    assert_eq!(Table::parse(&out).cell("leader", "HOLDER"), "b");

    let err = fails(
        &server,
        &["create", "-f", "-"],
        Some(
            r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"bad"},"spec":{"leaseDurationSeconds":0}}"#,
        ),
    )
    .await;
    assert_eq!(
        err,
        "The Lease \"bad\" is invalid: spec.leaseDurationSeconds: Invalid value: 0: must be \
         greater than 0\n"
    );
    server.stop().await;
}

/// Deleting a namespace with content: it turns Terminating, its content stays, new content
/// is forbidden; finalizing it (the namespace controller's last step) deletes it, which
/// `kubectl wait --for=delete` sees. System namespaces cannot be deleted.
async fn namespace_with_content_terminates(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let out = create(&server, &namespace("team")).await;
    assert_eq!(out, "namespace/team created\n");
    ok_stdin(
        &server,
        &["create", "-n", "team", "-f", "-"],
        &configmap("settings", &[("a", "1")]),
    )
    .await;
    let out = server.kubectl_ok(&["get", "ns", "team"]).await;
    assert_header(&out, &["NAME", "STATUS", "AGE"]);
    assert_eq!(Table::parse(&out).cell("team", "STATUS"), "Active");

    let out = server
        .kubectl_ok(&["delete", "ns", "team", "--wait=false"])
        .await;
    assert_eq!(out, "namespace \"team\" deleted\n");
    let out = server.kubectl_ok(&["get", "ns", "team"]).await;
    assert_eq!(Table::parse(&out).cell("team", "STATUS"), "Terminating");
    let object = get_json(&server, &["ns", "team"]).await;
    assert_eq!(object["status"]["phase"], "Terminating");
    assert!(
        object["metadata"]["deletionTimestamp"].is_string(),
        "{object}"
    );
    assert_eq!(
        object["spec"]["finalizers"],
        serde_json::json!(["kubernetes"])
    );

    // The content stays and can change; nothing new can be created.
    let out = server
        .kubectl_ok(&["get", "cm", "-n", "team", "-o", "name"])
        .await;
    assert_eq!(out, "configmap/settings\n");
    let out = server
        .kubectl_ok(&["label", "cm", "settings", "-n", "team", "still=here"])
        .await;
    assert_eq!(out, "configmap/settings labeled\n");
    let err = fails(
        &server,
        &["create", "-n", "team", "-f", "-"],
        Some(&configmap("late", &[])),
    )
    .await;
    assert_eq!(
        err,
        "Error from server (Forbidden): error when creating \"STDIN\": configmaps \"late\" is \
         forbidden: unable to create new content in namespace team because it is being \
         terminated\n"
    );
    // Deleting it again changes nothing.
    let out = server
        .kubectl_ok(&["delete", "ns", "team", "--wait=false"])
        .await;
    assert_eq!(out, "namespace \"team\" deleted\n");

    // The namespace controller's last step: empty spec.finalizers through /finalize.
    let mut wait = Background::start(
        &server,
        &[
            "wait",
            "--for=delete",
            "namespace/team",
            "--timeout=60s",
            "-v=6",
        ],
    );
    wait.watching().await;
    let mut finalized = get_json(&server, &["ns", "team"]).await;
    finalized["spec"]["finalizers"] = serde_json::json!([]);
    ok_stdin(
        &server,
        &[
            "replace",
            "--raw",
            "/api/v1/namespaces/team/finalize",
            "-f",
            "-",
        ],
        &finalized.to_string(),
    )
    .await;
    assert_eq!(wait.exit_code().await, Some(0), "{}", wait.stderr());
    assert_condition_met(&wait, "namespace/team");
    let err = fails(&server, &["get", "ns", "team"], None).await;
    assert_eq!(
        err,
        "Error from server (NotFound): namespaces \"team\" not found\n"
    );

    for system in ["default", "kube-system", "kube-public"] {
        let err = fails(&server, &["delete", "ns", system], None).await;
        assert_eq!(
            err,
            format!(
                "Error from server (Forbidden): namespaces \"{system}\" is forbidden: this \
                 namespace may not be deleted\n"
            )
        );
    }
    server.stop().await;
}

/// `kubectl delete` by name, by selector, --all, of a missing object, with finalizers,
/// and `kubectl wait --for=delete`.
async fn delete_and_wait(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let objects: Vec<Value> = ["a", "b", "c", "d"]
        .iter()
        .map(|name| {
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "labels": {"group": if *name < "c" { "one" } else { "two" }}}})
        })
        .collect();
    create(&server, &documents(&objects)).await;

    let out = server.kubectl_ok(&["delete", "cm", "a"]).await;
    assert_eq!(out, "configmap \"a\" deleted\n");
    let err = fails(&server, &["delete", "cm", "a"], None).await;
    assert_eq!(
        err,
        "Error from server (NotFound): configmaps \"a\" not found\n"
    );
    let output = server
        .kubectl(&["delete", "cm", "a", "--ignore-not-found"])
        .await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output), "");
    let out = server
        .kubectl_ok(&["delete", "cm", "b", "--dry-run=server"])
        .await;
    assert_eq!(out, "configmap \"b\" deleted (server dry run)\n");
    server.kubectl_ok(&["get", "cm", "b"]).await;
    let out = server
        .kubectl_ok(&["delete", "cm", "-l", "group=one"])
        .await;
    assert_eq!(out, "configmap \"b\" deleted\n");

    // wait --for=delete while another kubectl deletes.
    let mut wait = Background::start(
        &server,
        &["wait", "--for=delete", "cm/c", "--timeout=60s", "-v=6"],
    );
    wait.watching().await;
    server.kubectl_ok(&["delete", "cm", "c"]).await;
    assert_eq!(wait.exit_code().await, Some(0), "{}", wait.stderr());
    assert_condition_met(&wait, "configmap/c");

    // A finalizer holds the object, marked for deletion, until it is removed.
    create(
        &server,
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"held","finalizers":["example.com/hold"]}}"#,
    )
    .await;
    let out = server
        .kubectl_ok(&["delete", "cm", "held", "--wait=false"])
        .await;
    assert_eq!(out, "configmap \"held\" deleted\n");
    let object = get_json(&server, &["cm", "held"]).await;
    assert!(
        object["metadata"]["deletionTimestamp"].is_string(),
        "{object}"
    );
    let output = server
        .kubectl(&["wait", "--for=delete", "cm/held", "--timeout=1s"])
        .await;
    assert_eq!(output.status.code(), Some(1));
    // client-go may log a reflector warning first when its one-second watch is cancelled.
    let said = stderr(&output);
    assert!(
        said.ends_with("error: timed out waiting for the condition on configmaps/held\n"),
        "{said}"
    );
    // Marking an object with a generation deleted bumps it, as upstream's markAsDeleting.
    server
        .kubectl_ok(&["create", "deployment", "held", "--image=nginx"])
        .await;
    let finalizer = r#"{"metadata":{"finalizers":["example.com/hold"]}}"#;
    server
        .kubectl_ok(&["patch", "deployment", "held", "-p", finalizer])
        .await;
    server
        .kubectl_ok(&["delete", "deployment", "held", "--wait=false"])
        .await;
    let object = get_json(&server, &["deployment", "held"]).await;
    assert_eq!(object["metadata"]["generation"], 2, "{object}");

    let mut wait = Background::start(
        &server,
        &["wait", "--for=delete", "cm/held", "--timeout=60s", "-v=6"],
    );
    wait.watching().await;
    server
        .kubectl_ok(&[
            "patch",
            "cm",
            "held",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ])
        .await;
    assert_eq!(wait.exit_code().await, Some(0), "{}", wait.stderr());
    assert_condition_met(&wait, "configmap/held");
    let err = fails(&server, &["get", "cm", "held"], None).await;
    assert_eq!(
        err,
        "Error from server (NotFound): configmaps \"held\" not found\n"
    );

    // --all, and by file.
    create(&server, &configmap("e", &[])).await;
    let out = server.kubectl_ok(&["delete", "cm", "--all"]).await;
    assert_eq!(out, "configmap \"d\" deleted\nconfigmap \"e\" deleted\n");
    let output = server.kubectl(&["get", "cm"]).await;
    assert_eq!(
        stderr(&output),
        "No resources found in default namespace.\n"
    );
    let manifest = configmap("f", &[]);
    create(&server, &manifest).await;
    let out = ok_stdin(&server, &["delete", "-f", "-"], &manifest).await;
    assert_eq!(out, "configmap \"f\" deleted\n");
    server.stop().await;
}

/// `--dry-run=server` on every write verb: the answer looks like the real one, nothing is
/// stored.
async fn dry_run_server(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let out = ok_stdin(
        &server,
        &["create", "-f", "-", "--dry-run=server"],
        &configmap("dry", &[("a", "1")]),
    )
    .await;
    assert_eq!(out, "configmap/dry created (server dry run)\n");
    let err = fails(&server, &["get", "cm", "dry"], None).await;
    assert_eq!(
        err,
        "Error from server (NotFound): configmaps \"dry\" not found\n"
    );
    let out = ok_stdin(
        &server,
        &["create", "-f", "-", "--dry-run=server", "-o", "json"],
        &configmap("dry", &[("a", "1")]),
    )
    .await;
    let object: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(object["metadata"]["name"], "dry");
    assert!(object["metadata"]["uid"].is_string(), "{object}");
    assert!(
        object["metadata"]["creationTimestamp"].is_string(),
        "{object}"
    );

    let out = ok_stdin(
        &server,
        &["create", "-f", "-", "--dry-run=server"],
        &namespace("dry-ns"),
    )
    .await;
    assert_eq!(out, "namespace/dry-ns created (server dry run)\n");
    fails(&server, &["get", "ns", "dry-ns"], None).await;

    create(&server, &configmap("real", &[("a", "1")])).await;
    let err = fails(
        &server,
        &["create", "-f", "-", "--dry-run=server"],
        Some(&configmap("real", &[])),
    )
    .await;
    assert!(err.contains("configmaps \"real\" already exists"), "{err}");
    let err = fails(
        &server,
        &["create", "-f", "-", "--dry-run=server"],
        Some(&configmap("Bad_Name", &[])),
    )
    .await;
    assert!(
        err.starts_with("The ConfigMap \"Bad_Name\" is invalid"),
        "{err}"
    );

    let out = ok_stdin(
        &server,
        &["apply", "-f", "-", "--dry-run=server"],
        &configmap("real", &[("a", "2")]),
    )
    .await;
    assert_eq!(out, "configmap/real configured (server dry run)\n");
    let out = server
        .kubectl_ok(&[
            "patch",
            "cm",
            "real",
            "--dry-run=server",
            "-o",
            "jsonpath={.data.a}",
            "-p",
            r#"{"data":{"a":"3"}}"#,
        ])
        .await;
    assert_eq!(out, "3");
    let out = server
        .kubectl_ok(&["delete", "cm", "real", "--dry-run=server"])
        .await;
    assert_eq!(out, "configmap \"real\" deleted (server dry run)\n");
    // Admission runs on dry runs too: system namespaces refuse deletion.
    let err = fails(
        &server,
        &["delete", "ns", "default", "--dry-run=server"],
        None,
    )
    .await;
    assert_eq!(
        err,
        "Error from server (Forbidden): namespaces \"default\" is forbidden: this namespace may \
         not be deleted\n"
    );
    let object = get_json(&server, &["cm", "real"]).await;
    assert_eq!(object["data"], serde_json::json!({"a": "1"}));
    assert!(object["metadata"]["annotations"].is_null(), "{object}");
    server.stop().await;
}

/// `kubectl get -w --output-watch-events` prints the list as ADDED, then each change.
async fn watch_table(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    create(&server, &configmap("first", &[("a", "1")])).await;
    let watch = Background::start(&server, &["get", "cm", "-w", "--output-watch-events"]);
    watch.wait_for_line(&["ADDED", "first", "1"]).await;
    let out = watch.stdout();
    assert_header(&out, &["EVENT", "NAME", "DATA", "AGE"]);

    create(&server, &configmap("second", &[("a", "1"), ("b", "2")])).await;
    watch.wait_for_line(&["ADDED", "second", "2"]).await;
    server
        .kubectl_ok(&["patch", "cm", "second", "-p", r#"{"data":{"c":"3"}}"#])
        .await;
    watch.wait_for_line(&["MODIFIED", "second", "3"]).await;
    server.kubectl_ok(&["delete", "cm", "second"]).await;
    let out = watch.wait_for_line(&["DELETED", "second", "3"]).await;
    let added = line_index(&out, &["ADDED", "second"]).unwrap();
    let modified = line_index(&out, &["MODIFIED", "second"]).unwrap();
    let deleted = line_index(&out, &["DELETED", "second"]).unwrap();
    assert!(added < modified && modified < deleted, "{out}");
    // Nothing else happened to "first", in another namespace, or twice.
    assert_eq!(
        out.lines().filter(|l| l.contains("first")).count(),
        1,
        "{out}"
    );
    assert_eq!(out.lines().count(), 5, "{out}");

    // Other namespaces are not watched; -A watches them all.
    let all = Background::start(&server, &["get", "cm", "-A", "-w", "--output-watch-events"]);
    all.wait_for_line(&["ADDED", "default", "first"]).await;
    ok_stdin(
        &server,
        &["create", "-n", "kube-public", "-f", "-"],
        &configmap("public", &[]),
    )
    .await;
    all.wait_for_line(&["ADDED", "kube-public", "public"]).await;
    create(&server, &configmap("third", &[])).await;
    watch.wait_for_line(&["ADDED", "third"]).await;
    all.wait_for_line(&["ADDED", "default", "third"]).await;
    assert!(!watch.stdout().contains("public"), "{}", watch.stdout());
    server.stop().await;
}

/// `kubectl get NAME -w -o json`: one object's events as JSON, with increasing
/// resourceVersions; other objects' changes do not appear.
async fn watch_one_object_json(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    create(&server, &configmap("watched", &[("a", "1")])).await;
    let watch = Background::start(
        &server,
        &[
            "get",
            "cm",
            "watched",
            "-w",
            "-o",
            "json",
            "--output-watch-events",
        ],
    );
    watch
        .wait_for("the initial event", |out, _| json_stream(out).len() == 1)
        .await;
    create(&server, &configmap("bystander", &[])).await;
    server
        .kubectl_ok(&["label", "cm", "watched", "changed=yes"])
        .await;
    server.kubectl_ok(&["delete", "cm", "bystander"]).await;
    server.kubectl_ok(&["delete", "cm", "watched"]).await;
    let out = watch
        .wait_for("three events", |out, _| json_stream(out).len() >= 3)
        .await;
    let events = json_stream(&out);
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(types, ["ADDED", "MODIFIED", "DELETED"], "{out}");
    for event in &events {
        assert_eq!(event["object"]["kind"], "ConfigMap", "{event}");
        assert_eq!(event["object"]["metadata"]["name"], "watched", "{event}");
    }
    assert_eq!(events[1]["object"]["metadata"]["labels"]["changed"], "yes");
    let versions: Vec<u64> = events
        .iter()
        .map(|e| {
            e["object"]["metadata"]["resourceVersion"]
                .as_str()
                .and_then(|v| v.parse().ok())
                .expect("resourceVersion")
        })
        .collect();
    assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
    server.stop().await;
}

/// `kubectl get -w --watch-only` on the other resources: a new namespace is ADDED, its
/// deletion a MODIFIED (Terminating), its finalization a DELETED; leases, secrets,
/// serviceaccounts and events likewise.
async fn watch_only_other_resources(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let watch = |resource: &str| {
        Background::start(
            &server,
            &[
                "get",
                resource,
                "-w",
                "--watch-only",
                "--output-watch-events",
                "-v=6",
            ],
        )
    };
    let namespaces = watch("namespaces");
    let leases = watch("leases");
    let secrets = watch("secrets");
    let serviceaccounts = watch("serviceaccounts");
    let events = watch("events");
    // --watch-only prints nothing before the first change: wait until each watch request
    // has been answered.
    for watch in [&namespaces, &leases, &secrets, &serviceaccounts, &events] {
        watch.watching().await;
    }

    create(&server, &namespace("fleeting")).await;
    namespaces
        .wait_for_line(&["ADDED", "fleeting", "Active"])
        .await;
    server
        .kubectl_ok(&["delete", "ns", "fleeting", "--wait=false"])
        .await;
    namespaces
        .wait_for_line(&["MODIFIED", "fleeting", "Terminating"])
        .await;
    let mut finalized = get_json(&server, &["ns", "fleeting"]).await;
    finalized["spec"]["finalizers"] = serde_json::json!([]);
    ok_stdin(
        &server,
        &[
            "replace",
            "--raw",
            "/api/v1/namespaces/fleeting/finalize",
            "-f",
            "-",
        ],
        &finalized.to_string(),
    )
    .await;
    namespaces
        .wait_for_line(&["DELETED", "fleeting", "Terminating"])
        .await;
    let out = namespaces.stdout();
    assert_header(&out, &["EVENT", "NAME", "STATUS", "AGE"]);
    assert!(
        !out.contains("default"),
        "--watch-only printed the list:\n{out}"
    );

    create(
        &server,
        r#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"lock"},"spec":{"holderIdentity":"me"}}"#,
    )
    .await;
    leases.wait_for_line(&["ADDED", "lock", "me"]).await;
    server
        .kubectl_ok(&[
            "patch",
            "lease",
            "lock",
            "--type=merge",
            "-p",
            r#"{"spec":{"holderIdentity":"you"}}"#,
        ])
        .await;
    leases.wait_for_line(&["MODIFIED", "lock", "you"]).await;

    create(
        &server,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"k":"v"}}"#,
    )
    .await;
    secrets.wait_for_line(&["ADDED", "s", "Opaque", "1"]).await;
    create(
        &server,
        r#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"}}"#,
    )
    .await;
    serviceaccounts
        .wait_for_line(&["ADDED", "robot", "0"])
        .await;
    server.kubectl_ok(&["delete", "sa", "robot"]).await;
    serviceaccounts
        .wait_for_line(&["DELETED", "robot", "0"])
        .await;

    create(
        &server,
        "apiVersion: v1\nkind: Event\nmetadata:\n  name: seen\ninvolvedObject:\n  kind: Lease\n  \
         name: lock\n  namespace: default\nreason: Watched\nmessage: watch me\ntype: Normal\n",
    )
    .await;
    let out = events
        .wait_for("the event", |out, _| out.contains("Watched"))
        .await;
    assert!(
        out.lines()
            .any(|l| l.starts_with("ADDED") && l.contains("lease/lock") && l.ends_with("watch me")),
        "{out}"
    );
    server.stop().await;
}

/// A `kind: List` manifest: created, applied and deleted item by item, validated by kubectl
/// on the client against the protobuf `/openapi/v2` document.
async fn list_manifests(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let list = |value: &str| {
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}, "data": {"v": value}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "two"}, "stringData": {"v": value}},
        ]})
        .to_string()
    };
    let out = ok_stdin(&server, &["create", "-f", "-"], &list("1")).await;
    assert_eq!(out, "configmap/one created\nsecret/two created\n");
    let out = ok_stdin(&server, &["apply", "-f", "-"], &list("2")).await;
    assert_eq!(out, "configmap/one configured\nsecret/two configured\n");
    let out = server
        .kubectl_ok(&["get", "cm", "one", "-o", "jsonpath={.data.v}"])
        .await;
    assert_eq!(out, "2");
    let out = ok_stdin(&server, &["delete", "-f", "-"], &list("2")).await;
    assert_eq!(out, "configmap \"one\" deleted\nsecret \"two\" deleted\n");
    server.stop().await;
}

/// The typed-client commands (`kubectl create namespace|configmap|secret|serviceaccount`)
/// send protobuf bodies.
async fn typed_client_creates(backend: Backend) {
    let server = TestServer::start(backend, common::NO_ROOT_CA).await;
    let out = server.kubectl_ok(&["create", "namespace", "team"]).await;
    assert_eq!(out, "namespace/team created\n");
    let out = server
        .kubectl_ok(&[
            "create",
            "configmap",
            "settings",
            "-n",
            "team",
            "--from-literal=a=1",
            "--from-literal=b=2",
        ])
        .await;
    assert_eq!(out, "configmap/settings created\n");
    let object = get_json(&server, &["cm", "settings", "-n", "team"]).await;
    assert_eq!(object["data"], serde_json::json!({"a": "1", "b": "2"}));
    let out = server
        .kubectl_ok(&[
            "create",
            "secret",
            "generic",
            "creds",
            "-n",
            "team",
            "--from-literal=user=admin",
        ])
        .await;
    assert_eq!(out, "secret/creds created\n");
    let out = server
        .kubectl_ok(&[
            "get",
            "secret",
            "creds",
            "-n",
            "team",
            "-o",
            "jsonpath={.type} {.data.user}",
        ])
        .await;
    assert_eq!(out, "Opaque YWRtaW4=");
    let out = server
        .kubectl_ok(&["create", "serviceaccount", "robot", "-n", "team"])
        .await;
    assert_eq!(out, "serviceaccount/robot created\n");
    let out = server
        .kubectl_ok(&[
            "create",
            "configmap",
            "dry",
            "--from-literal=a=1",
            "--dry-run=server",
        ])
        .await;
    assert_eq!(out, "configmap/dry created (server dry run)\n");

    let err = fails(&server, &["create", "namespace", "team"], None).await;
    assert_eq!(
        err,
        "Error from server (AlreadyExists): namespaces \"team\" already exists\n"
    );
    let err = fails(
        &server,
        &["create", "configmap", "Bad_Name", "--from-literal=a=1"],
        None,
    )
    .await;
    assert_eq!(
        err,
        format!(
            "error: failed to create configmap: ConfigMap \"Bad_Name\" is invalid: \
             metadata.name: Invalid value: \"Bad_Name\": {DNS1123_SUBDOMAIN}\n"
        )
    );
    server.stop().await;
}

on_both_backends!(
    system_namespaces,
    api_resources_and_versions,
    get_list_formats_and_errors,
    list_chunking,
    apply_create_change_reapply,
    unconditional_updates,
    patch_types_and_edit,
    replace_and_conflict,
    label_and_annotate,
    secrets,
    serviceaccounts,
    events,
    leases,
    namespace_with_content_terminates,
    delete_and_wait,
    dry_run_server,
    watch_table,
    watch_one_object_json,
    watch_only_other_resources,
    list_manifests,
    typed_client_creates,
);
