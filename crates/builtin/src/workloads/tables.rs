//! The `kubectl get` columns of the workload kinds, as upstream's printers
//! (pkg/printers/internalversion/printers.go) compute them. Wide (priority 1) cells are
//! always filled; kubectl shows them with `-o wide`.

use kapi_apimachinery::labels::from_label_selector;
use kapi_server::resource::{PrinterColumn, TableConvertor};
use serde_json::{Map, Value, json};
use std::borrow::Cow;

use crate::printers::{age_cell, age_column, column, human_duration, name_cell, name_column};
use crate::util::{Timestamp, int_of, parse_rfc3339, str_of};

const CONTAINERS_DESCRIPTION: &str = "Names of each container in the template.";
const IMAGES_DESCRIPTION: &str = "Images referenced by each container in the template.";
const READY_REPLICAS_DESCRIPTION: &str = "Number of the pod with ready state";

/// A column with an OpenAPI type other than string.
const fn typed(
    name: &'static str,
    type_: &'static str,
    description: &'static str,
    priority: i32,
) -> PrinterColumn {
    PrinterColumn {
        name: Cow::Borrowed(name),
        type_: Cow::Borrowed(type_),
        format: Cow::Borrowed(""),
        description: Cow::Borrowed(description),
        priority,
    }
}

/// The CONTAINERS, IMAGES (and SELECTOR) wide columns of controllers.
fn template_columns(selector_description: Option<&'static str>) -> Vec<PrinterColumn> {
    let mut columns = vec![
        column("Containers", CONTAINERS_DESCRIPTION, 1),
        column("Images", IMAGES_DESCRIPTION, 1),
    ];
    if let Some(description) = selector_description {
        columns.push(column("Selector", description, 1));
    }
    columns
}

/// The containers' names and images, each joined by commas (layoutContainerCells).
fn container_cells(pod_spec: &Value) -> [Value; 2] {
    let containers = pod_spec["containers"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let names: Vec<&str> = containers.iter().map(|c| str_of(c, "name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| str_of(c, "image")).collect();
    [json!(names.join(",")), json!(images.join(","))]
}

/// A metav1 LabelSelector as `labels.Selector.String()` prints it.
fn selector_string(selector: &Value) -> String {
    match from_label_selector(selector) {
        Ok(selector) => selector.to_string(),
        Err(_) => "<invalid>".to_string(),
    }
}

/// A label map as `labels.FormatLabels` prints it: sorted `k=v` pairs, or `<none>`.
fn format_labels(labels: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = labels
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or("")))
        .collect();
    if pairs.is_empty() {
        return "<none>".to_string();
    }
    pairs.sort();
    pairs.join(",")
}

/// Pods: NAME READY STATUS RESTARTS AGE IP NODE NOMINATED NODE READINESS GATES.
pub(crate) fn pods() -> TableConvertor {
    let mut columns = vec![
        name_column(0),
        column(
            "Ready",
            "The aggregate readiness state of this pod for accepting traffic.",
            0,
        ),
        column(
            "Status",
            "The aggregate status of the containers in this pod.",
            0,
        ),
        column(
            "Restarts",
            "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
            0,
        ),
        age_column(),
    ];
    columns.extend([
        column("IP", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.", 1),
        column("Node", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename", 1),
        column("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.", 1),
        column("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates", 1),
    ]);
    TableConvertor {
        order: None,
        columns,
        cells: std::sync::Arc::new(pod_cells),
    }
}

/// What printPod tallies over the container statuses.
#[derive(Default)]
struct PodTally {
    reason: String,
    ready: usize,
    total: usize,
    restarts: i64,
    last_restart: Option<Timestamp>,
}

impl PodTally {
    /// Counts a container's restarts and remembers its last termination.
    fn count_restarts(&mut self, status: &Value) {
        self.restarts += int_of(status, "restartCount");
        let finished = &status["lastState"]["terminated"]["finishedAt"];
        if let Some(at) = finished.as_str().and_then(parse_rfc3339)
            && self.last_restart.is_none_or(|last| last < at)
        {
            self.last_restart = Some(at);
        }
    }
}

/// Whether an init container is a sidecar (restartPolicy Always).
fn is_restartable(spec: &Value, name: &str) -> bool {
    spec["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| str_of(c, "name") == name && str_of(c, "restartPolicy") == "Always")
}

/// The reason an init container status gives, or `None` when it lets initialization go on.
fn init_reason(status: &Value, index: usize, count: usize, sidecar: bool) -> Option<String> {
    let state = &status["state"];
    let terminated = &state["terminated"];
    let waiting_reason = str_of(&state["waiting"], "reason");
    if terminated.is_object() && int_of(terminated, "exitCode") == 0 {
        return None;
    }
    if sidecar && status["started"].as_bool() == Some(true) {
        return None;
    }
    if terminated.is_object() {
        let reason = str_of(terminated, "reason");
        return Some(match (reason, int_of(terminated, "signal")) {
            ("", 0) => format!("Init:ExitCode:{}", int_of(terminated, "exitCode")),
            ("", signal) => format!("Init:Signal:{signal}"),
            (reason, _) => format!("Init:{reason}"),
        });
    }
    if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
        return Some(format!("Init:{waiting_reason}"));
    }
    Some(format!("Init:{index}/{count}"))
}

/// Whether a condition of `type_` has status `True`.
fn has_true_condition(status: &Value, type_: &str) -> bool {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| str_of(c, "type") == type_ && str_of(c, "status") == "True")
}

/// The READY, STATUS and RESTARTS of a pod (printPod).
fn tally_pod(pod: &Value) -> PodTally {
    let spec = &pod["spec"];
    let status = &pod["status"];
    let phase = str_of(status, "phase");
    let mut tally = PodTally {
        reason: match str_of(status, "reason") {
            "" => phase.to_string(),
            reason => reason.to_string(),
        },
        total: spec["containers"].as_array().map_or(0, Vec::len),
        ..PodTally::default()
    };
    let conditions = status["conditions"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    if conditions
        .iter()
        .any(|c| str_of(c, "type") == "PodScheduled" && str_of(c, "reason") == "SchedulingGated")
    {
        tally.reason = "SchedulingGated".to_string();
    }
    let init_specs = spec["initContainers"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    tally.total += init_specs
        .iter()
        .filter(|c| str_of(c, "restartPolicy") == "Always")
        .count();
    let mut sidecars = PodTally::default();
    let mut initializing = false;
    let init_statuses = status["initContainerStatuses"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    for (i, container) in init_statuses.iter().enumerate() {
        tally.count_restarts(container);
        let sidecar = is_restartable(spec, str_of(container, "name"));
        if sidecar {
            sidecars.count_restarts(container);
        }
        match init_reason(container, i, init_specs.len(), sidecar) {
            None => {
                if sidecar && container["ready"].as_bool() == Some(true) {
                    tally.ready += 1;
                }
            }
            Some(reason) => {
                tally.reason = reason;
                initializing = true;
                break;
            }
        }
    }
    if !initializing || has_true_condition(status, "Initialized") {
        tally.restarts = sidecars.restarts;
        tally.last_restart = sidecars.last_restart;
        tally_containers(&mut tally, status);
    }
    let deleting = pod["metadata"]["deletionTimestamp"].is_string();
    if deleting && str_of(status, "reason") == "NodeLost" {
        tally.reason = "Unknown".to_string();
    } else if deleting && !["Succeeded", "Failed"].contains(&phase) {
        tally.reason = "Terminating".to_string();
    }
    tally
}

/// The regular containers' part of printPod, last status first.
fn tally_containers(tally: &mut PodTally, status: &Value) {
    let mut has_running = false;
    let statuses = status["containerStatuses"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    for container in statuses.iter().rev() {
        tally.count_restarts(container);
        let state = &container["state"];
        let waiting = str_of(&state["waiting"], "reason");
        let terminated = &state["terminated"];
        if !waiting.is_empty() {
            tally.reason = waiting.to_string();
        } else if terminated.is_object() {
            tally.reason = match (str_of(terminated, "reason"), int_of(terminated, "signal")) {
                ("", 0) => format!("ExitCode:{}", int_of(terminated, "exitCode")),
                ("", signal) => format!("Signal:{signal}"),
                (reason, _) => reason.to_string(),
            };
        } else if container["ready"].as_bool() == Some(true) && state["running"].is_object() {
            has_running = true;
            tally.ready += 1;
        }
    }
    if tally.reason == "Completed" && has_running {
        tally.reason = if has_true_condition(status, "Ready") {
            "Running".to_string()
        } else {
            "NotReady".to_string()
        };
    }
}

/// A pod's row.
fn pod_cells(pod: &Value) -> Vec<Value> {
    let tally = tally_pod(pod);
    let restarts = match tally.last_restart {
        Some(at) if tally.restarts != 0 => format!(
            "{} ({} ago)",
            tally.restarts,
            human_duration(Timestamp::now().nanos_since(at))
        ),
        _ => tally.restarts.to_string(),
    };
    let or_none = |text: &str| {
        if text.is_empty() {
            "<none>".to_string()
        } else {
            text.to_string()
        }
    };
    let pod_ip = str_of(&pod["status"]["podIPs"][0], "ip");
    vec![
        name_cell(pod),
        json!(format!("{}/{}", tally.ready, tally.total)),
        json!(tally.reason),
        json!(restarts),
        age_cell(pod),
        json!(or_none(pod_ip)),
        json!(or_none(str_of(&pod["spec"], "nodeName"))),
        json!(or_none(str_of(&pod["status"], "nominatedNodeName"))),
        json!(readiness_gates(pod)),
    ]
}

/// `true/total` of the readiness gates, or `<none>`.
fn readiness_gates(pod: &Value) -> String {
    let gates = pod["spec"]["readinessGates"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    if gates.is_empty() {
        return "<none>".to_string();
    }
    let conditions = pod["status"]["conditions"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let satisfied = gates
        .iter()
        .filter(|gate| {
            conditions
                .iter()
                .find(|c| str_of(c, "type") == str_of(gate, "conditionType"))
                .is_some_and(|c| str_of(c, "status") == "True")
        })
        .count();
    format!("{satisfied}/{}", gates.len())
}

/// PodTemplates: NAME CONTAINERS IMAGES POD LABELS.
pub(crate) fn pod_templates() -> TableConvertor {
    TableConvertor {
        order: None,
        columns: vec![
            name_column(0),
            column("Containers", CONTAINERS_DESCRIPTION, 0),
            column("Images", IMAGES_DESCRIPTION, 0),
            column("Pod Labels", "The labels for the pod template.", 0),
        ],
        cells: std::sync::Arc::new(|object: &serde_json::Value| {
            let template = &object["template"];
            let [containers, images] = container_cells(&template["spec"]);
            let labels = template["metadata"]["labels"].as_object();
            vec![
                name_cell(object),
                containers,
                images,
                json!(format_labels(labels)),
            ]
        }),
    }
}

/// Deployments: NAME READY UP-TO-DATE AVAILABLE AGE CONTAINERS IMAGES SELECTOR.
pub(crate) fn deployments() -> TableConvertor {
    let mut columns = vec![
        name_column(0),
        column("Ready", READY_REPLICAS_DESCRIPTION, 0),
        typed(
            "Up-to-date",
            "integer",
            "Total number of non-terminating pods targeted by this deployment that have the desired template spec.",
            0,
        ),
        typed(
            "Available",
            "integer",
            "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.",
            0,
        ),
        age_column(),
    ];
    columns.extend(template_columns(Some("Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment. It must match the pod template's labels.")));
    TableConvertor {
        order: None,
        columns,
        cells: std::sync::Arc::new(|object: &serde_json::Value| {
            let (spec, status) = (&object["spec"], &object["status"]);
            let [containers, images] = container_cells(&spec["template"]["spec"]);
            vec![
                name_cell(object),
                json!(format!(
                    "{}/{}",
                    int_of(status, "readyReplicas"),
                    int_of(spec, "replicas")
                )),
                json!(int_of(status, "updatedReplicas")),
                json!(int_of(status, "availableReplicas")),
                age_cell(object),
                containers,
                images,
                json!(selector_string(&spec["selector"])),
            ]
        }),
    }
}

/// The DESIRED CURRENT READY columns of ReplicaSets and ReplicationControllers.
fn replica_columns(
    desired: &'static str,
    current: &'static str,
    ready: &'static str,
    selector: &'static str,
) -> Vec<PrinterColumn> {
    let mut columns = vec![
        name_column(0),
        typed("Desired", "integer", desired, 0),
        typed("Current", "integer", current, 0),
        typed("Ready", "integer", ready, 0),
        age_column(),
    ];
    columns.extend(template_columns(Some(selector)));
    columns
}

/// The cells of ReplicaSets and ReplicationControllers given the selector text.
fn replica_cells(object: &Value, selector: String) -> Vec<Value> {
    let (spec, status) = (&object["spec"], &object["status"]);
    let [containers, images] = container_cells(&spec["template"]["spec"]);
    vec![
        name_cell(object),
        json!(int_of(spec, "replicas")),
        json!(int_of(status, "replicas")),
        json!(int_of(status, "readyReplicas")),
        age_cell(object),
        containers,
        images,
        json!(selector),
    ]
}

/// ReplicaSets: NAME DESIRED CURRENT READY AGE CONTAINERS IMAGES SELECTOR.
pub(crate) fn replica_sets() -> TableConvertor {
    TableConvertor {
        order: None,
        columns: replica_columns(
            "Replicas is the number of desired pods. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
            "Replicas is the most recently observed number of non-terminating pods. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicaset",
            "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
            "Selector is a label query over pods that should match the replica count. Label keys and values that must match in order to be controlled by this replica set. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        ),
        cells: std::sync::Arc::new(|object: &serde_json::Value| {
            replica_cells(object, selector_string(&object["spec"]["selector"]))
        }),
    }
}

/// ReplicationControllers: as ReplicaSets, with the selector a label map.
pub(crate) fn replication_controllers() -> TableConvertor {
    TableConvertor {
        order: None,
        columns: replica_columns(
            "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
            "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
            "The number of ready replicas for this replication controller.",
            "Selector is a label query over pods that should match the Replicas count. If Selector is empty, it is defaulted to the labels present on the Pod template. Label keys and values that must match in order to be controlled by this replication controller, if empty defaulted to labels on Pod template. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        ),
        cells: std::sync::Arc::new(|object: &serde_json::Value| {
            let selector = format_labels(object["spec"]["selector"].as_object());
            replica_cells(object, selector)
        }),
    }
}

/// StatefulSets: NAME READY AGE CONTAINERS IMAGES.
pub(crate) fn stateful_sets() -> TableConvertor {
    let mut columns = vec![
        name_column(0),
        column("Ready", READY_REPLICAS_DESCRIPTION, 0),
        age_column(),
    ];
    columns.extend(template_columns(None));
    TableConvertor {
        order: None,
        columns,
        cells: std::sync::Arc::new(|object: &serde_json::Value| {
            let (spec, status) = (&object["spec"], &object["status"]);
            let [containers, images] = container_cells(&spec["template"]["spec"]);
            vec![
                name_cell(object),
                json!(format!(
                    "{}/{}",
                    int_of(status, "readyReplicas"),
                    int_of(spec, "replicas")
                )),
                age_cell(object),
                containers,
                images,
            ]
        }),
    }
}

/// DaemonSets: NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE ...
pub(crate) fn daemon_sets() -> TableConvertor {
    let mut columns = vec![
        name_column(0),
        typed(
            "Desired",
            "integer",
            "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod). More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
            0,
        ),
        typed(
            "Current",
            "integer",
            "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod. More info: https://kubernetes.io/docs/concepts/workloads/controllers/daemonset/",
            0,
        ),
        typed(
            "Ready",
            "integer",
            "numberReady is the number of nodes that should be running the daemon pod and have one or more of the daemon pod running with a Ready Condition.",
            0,
        ),
        typed(
            "Up-to-date",
            "integer",
            "The total number of nodes that are running updated daemon pod",
            0,
        ),
        typed(
            "Available",
            "integer",
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
            0,
        ),
        column(
            "Node Selector",
            "NodeSelector is a selector which must be true for the pod to fit on a node. Selector which must match a node's labels for the pod to be scheduled on that node. More info: https://kubernetes.io/docs/concepts/configuration/assign-pod-node/",
            0,
        ),
        age_column(),
    ];
    columns.extend(template_columns(Some("A label query over pods that are managed by the daemon set. Must match in order to be controlled. It must match the pod template's labels. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors")));
    TableConvertor {
        order: None,
        columns,
        cells: std::sync::Arc::new(|object: &serde_json::Value| {
            let (spec, status) = (&object["spec"], &object["status"]);
            let pod_spec = &spec["template"]["spec"];
            let [containers, images] = container_cells(pod_spec);
            vec![
                name_cell(object),
                json!(int_of(status, "desiredNumberScheduled")),
                json!(int_of(status, "currentNumberScheduled")),
                json!(int_of(status, "numberReady")),
                json!(int_of(status, "updatedNumberScheduled")),
                json!(int_of(status, "numberAvailable")),
                json!(format_labels(pod_spec["nodeSelector"].as_object())),
                age_cell(object),
                containers,
                images,
                json!(selector_string(&spec["selector"])),
            ]
        }),
    }
}

const JOB_SELECTOR_DESCRIPTION: &str = "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors";

/// Jobs: NAME STATUS COMPLETIONS DURATION AGE CONTAINERS IMAGES SELECTOR.
pub(crate) fn jobs() -> TableConvertor {
    let mut columns = vec![
        name_column(0),
        column("Status", "Status of the job.", 0),
        column("Completions", "The completion status of the job", 0),
        column("Duration", "Time required to complete the job.", 0),
        age_column(),
    ];
    columns.extend(template_columns(Some(JOB_SELECTOR_DESCRIPTION)));
    TableConvertor {
        order: None,
        columns,
        cells: std::sync::Arc::new(job_cells),
    }
}

/// A job's row.
fn job_cells(job: &Value) -> Vec<Value> {
    let (spec, status) = (&job["spec"], &job["status"]);
    let succeeded = int_of(status, "succeeded");
    let completions = match spec.get("completions").and_then(Value::as_i64) {
        Some(completions) => format!("{succeeded}/{completions}"),
        None if int_of(spec, "parallelism") > 1 => {
            format!("{succeeded}/1 of {}", int_of(spec, "parallelism"))
        }
        None => format!("{succeeded}/1"),
    };
    let start = status["startTime"].as_str().and_then(parse_rfc3339);
    let completion = status["completionTime"].as_str().and_then(parse_rfc3339);
    let duration = match (start, completion) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(Timestamp::now().nanos_since(start)),
        (Some(start), Some(end)) => human_duration(end.nanos_since(start)),
    };
    let [containers, images] = container_cells(&spec["template"]["spec"]);
    vec![
        name_cell(job),
        json!(job_status(job)),
        json!(completions),
        json!(duration),
        age_cell(job),
        containers,
        images,
        json!(selector_string(&spec["selector"])),
    ]
}

/// The STATUS of a job: its first decisive condition.
fn job_status(job: &Value) -> &'static str {
    let status = &job["status"];
    if has_true_condition(status, "Complete") {
        "Complete"
    } else if has_true_condition(status, "Failed") {
        "Failed"
    } else if job["metadata"]["deletionTimestamp"].is_string() {
        "Terminating"
    } else if has_true_condition(status, "Suspended") {
        "Suspended"
    } else if has_true_condition(status, "FailureTarget") {
        "FailureTarget"
    } else if has_true_condition(status, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

/// CronJobs: NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE ...
pub(crate) fn cron_jobs() -> TableConvertor {
    let mut columns = vec![
        name_column(0),
        column(
            "Schedule",
            "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
            0,
        ),
        column(
            "Timezone",
            "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. If not specified, this will default to the time zone of the kube-controller-manager process. The set of valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API server during CronJob validation and the controller manager during execution. If no system-wide time zone database can be found a bundled version of the database is used instead. If the time zone name becomes invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones",
            0,
        ),
        typed(
            "Suspend",
            "boolean",
            "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.",
            0,
        ),
        typed(
            "Active",
            "integer",
            "A list of pointers to currently running jobs.",
            0,
        ),
        column(
            "Last Schedule",
            "Information when was the last time the job was successfully scheduled.",
            0,
        ),
        age_column(),
    ];
    columns.extend(template_columns(Some(JOB_SELECTOR_DESCRIPTION)));
    TableConvertor {
        order: None,
        columns,
        cells: std::sync::Arc::new(|object: &serde_json::Value| {
            let (spec, status) = (&object["spec"], &object["status"]);
            let job_spec = &spec["jobTemplate"]["spec"];
            let [containers, images] = container_cells(&job_spec["template"]["spec"]);
            let last = match status["lastScheduleTime"].as_str() {
                Some(_) => crate::printers::translate_timestamp_since(&status["lastScheduleTime"]),
                None => "<none>".to_string(),
            };
            let suspend = match spec["suspend"].as_bool() {
                Some(true) => "True",
                Some(false) => "False",
                None => "<unset>",
            };
            vec![
                name_cell(object),
                json!(str_of(spec, "schedule")),
                json!(spec["timeZone"].as_str().unwrap_or("<none>")),
                json!(suspend),
                json!(status["active"].as_array().map_or(0, Vec::len)),
                json!(last),
                age_cell(object),
                containers,
                images,
                json!(selector_string(&job_spec["selector"])),
            ]
        }),
    }
}

/// ControllerRevisions: NAME CONTROLLER REVISION AGE.
pub(crate) fn controller_revisions() -> TableConvertor {
    TableConvertor {
        order: None,
        columns: vec![
            name_column(0),
            column("Controller", "Controller of the object", 0),
            typed(
                "Revision",
                "integer",
                "Revision indicates the revision of the state represented by Data.",
                0,
            ),
            age_column(),
        ],
        cells: std::sync::Arc::new(|object: &serde_json::Value| {
            vec![
                name_cell(object),
                json!(controller_name(object)),
                json!(int_of(object, "revision")),
                age_cell(object),
            ]
        }),
    }
}

/// The controller owner as `kind.group/name` in lower case, or `<none>`.
fn controller_name(object: &Value) -> String {
    let owners = object["metadata"]["ownerReferences"]
        .as_array()
        .map_or(&[][..], Vec::as_slice);
    let Some(owner) = owners
        .iter()
        .find(|o| o["controller"].as_bool() == Some(true))
    else {
        return "<none>".to_string();
    };
    let name = str_of(owner, "name");
    let kind = str_of(owner, "kind");
    if kind.is_empty() {
        return name.to_string();
    }
    let group = str_of(owner, "apiVersion")
        .rsplit_once('/')
        .map_or("", |(g, _)| g);
    let group_kind = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    format!("{}/{name}", group_kind.to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(table: &TableConvertor) -> Vec<&str> {
        table.columns.iter().map(|c| &*c.name).collect()
    }

    #[test]
    fn pod_rows() {
        let pod = json!({
            "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}], "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 0, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff"}}},
            ]},
        });
        let cells = pod_cells(&pod);
        assert_eq!(cells[1], "1/2");
        assert_eq!(cells[2], "CrashLoopBackOff");
        assert_eq!(cells[3], "2");
        assert_eq!(
            cells[5..],
            [
                json!("10.0.0.1"),
                json!("n1"),
                json!("<none>"),
                json!("<none>")
            ]
        );
        let pending = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending"}});
        assert_eq!(
            pod_cells(&pending)[1..4],
            [json!("0/1"), json!("Pending"), json!("0")]
        );
        let init = json!({
            "metadata": {"name": "p"},
            "spec": {"initContainers": [{"name": "i"}], "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [{"name": "i", "state": {"running": {}}}]},
        });
        assert_eq!(pod_cells(&init)[2], "Init:0/1");
        assert_eq!(
            names(&pods()),
            [
                "Name",
                "Ready",
                "Status",
                "Restarts",
                "Age",
                "IP",
                "Node",
                "Nominated Node",
                "Readiness Gates"
            ]
        );
    }

    #[test]
    fn controller_rows() {
        let deployment = json!({
            "metadata": {"name": "d"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "x"}},
                     "template": {"spec": {"containers": [{"name": "a", "image": "nginx"}, {"name": "b", "image": "busybox"}]}}},
            "status": {"readyReplicas": 1, "updatedReplicas": 2, "availableReplicas": 1},
        });
        let cells = (deployments().cells)(&deployment);
        assert_eq!(cells[1..4], [json!("1/3"), json!(2), json!(1)]);
        assert_eq!(
            cells[5..],
            [json!("a,b"), json!("nginx,busybox"), json!("app=x")]
        );
        assert_eq!(
            names(&deployments()),
            [
                "Name",
                "Ready",
                "Up-to-date",
                "Available",
                "Age",
                "Containers",
                "Images",
                "Selector"
            ]
        );
        let rc = json!({"metadata": {"name": "r"}, "spec": {"replicas": 2, "selector": {"b": "2", "a": "1"}}});
        assert_eq!((replication_controllers().cells)(&rc)[7], "a=1,b=2");
        let job = json!({"metadata": {"name": "j"}, "spec": {"completions": 3}, "status": {"succeeded": 1,
            "startTime": "2024-01-01T00:00:00Z", "completionTime": "2024-01-01T00:00:45Z",
            "conditions": [{"type": "Complete", "status": "True"}]}});
        assert_eq!(
            job_cells(&job)[1..4],
            [json!("Complete"), json!("1/3"), json!("45s")]
        );
        let revision = json!({"metadata": {"name": "r", "ownerReferences": [
            {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "ds", "controller": true}]}, "revision": 2});
        assert_eq!(
            (controller_revisions().cells)(&revision)[1..3],
            [json!("daemonset.apps/ds"), json!(2)]
        );
        let cron = json!({"metadata": {"name": "c"}, "spec": {"schedule": "*/5 * * * *", "suspend": false}});
        assert_eq!(
            (cron_jobs().cells)(&cron)[1..6],
            [
                json!("*/5 * * * *"),
                json!("<none>"),
                json!("False"),
                json!(0),
                json!("<none>")
            ]
        );
    }
}
