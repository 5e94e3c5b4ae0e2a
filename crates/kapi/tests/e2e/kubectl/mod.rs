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

mod creates;
mod deletion;
mod kinds;
mod watch;
mod writes;

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

on_both_backends!(
    system_namespaces,
    api_resources_and_versions,
    get_list_formats_and_errors,
    list_chunking,
);
