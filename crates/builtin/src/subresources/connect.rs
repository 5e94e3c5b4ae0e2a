//! The connect subresources (pods/log, exec, attach, portforward, proxy; nodes/proxy;
//! services/proxy). Upstream streams or proxies them to a kubelet or into the cluster
//! network; kapi runs no node agent and has no network path, so each answers what upstream
//! answers before it would dial (an invalid container, an unscheduled pod) and otherwise the
//! error upstream gives when it cannot get there, worded so the cause is plain.

use kapi_apimachinery::status::ApiError;
use kapi_server::object;
use kapi_server::resource::ConnectRequest;
use serde_json::Value;

use crate::util::str_of;

/// The error upstream answers when dialing a kubelet fails: a 500 Failure without a
/// reason (a plain Go error, not an API status).
fn no_node_agent(node: &str) -> ApiError {
    ApiError::new_generic(
        500,
        "",
        format!(
            "error dialing backend: no node agent is reachable for node {node:?}: kapi runs no kubelet"
        ),
    )
}

/// The names of a pod's containers of `field` (`containers`, `initContainers`, ...).
fn container_names<'a>(pod: &'a Value, field: &str) -> Vec<&'a str> {
    pod["spec"][field]
        .as_array()
        .map(|list| list.iter().map(|c| str_of(c, "name")).collect())
        .unwrap_or_default()
}

/// Checks the requested container as upstream's validateContainer: without one, the pod
/// must have exactly one container; a named one must be one of the pod's (init and
/// ephemeral containers included).
fn validate_container(pod: &Value, container: Option<&str>) -> Result<(), ApiError> {
    let name = object::name(pod);
    let containers = container_names(pod, "containers");
    match container {
        None if containers.len() == 1 => Ok(()),
        None if containers.is_empty() => Err(ApiError::bad_request(format!(
            "a container name must be specified for pod {name}"
        ))),
        None => {
            let mut message = format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                containers.join(" ")
            );
            let init = container_names(pod, "initContainers");
            if !init.is_empty() {
                message.push_str(&format!(
                    " or one of the init containers: [{}]",
                    init.join(" ")
                ));
            }
            Err(ApiError::bad_request(message))
        }
        Some(wanted) => {
            let known = ["containers", "initContainers", "ephemeralContainers"]
                .iter()
                .any(|field| container_names(pod, field).contains(&wanted));
            if known {
                Ok(())
            } else {
                Err(ApiError::bad_request(format!(
                    "container {wanted} is not valid for pod {name}"
                )))
            }
        }
    }
}

/// pods/log, exec, attach, portforward and proxy. The container is checked first (except
/// for portforward and proxy, which name none); a pod not scheduled yet has no kubelet to
/// ask: its log is empty, as upstream's, and the streams answer upstream's 400 `pod x does
/// not have a host assigned`; a scheduled pod's kubelet is not reachable.
pub(super) fn pod(request: &ConnectRequest<'_>, pod: &Value) -> Result<String, ApiError> {
    if !matches!(request.subresource, "portforward" | "proxy") {
        validate_container(pod, request.container)?;
    }
    match pod["spec"]["nodeName"].as_str().unwrap_or_default() {
        "" if request.subresource == "log" => Ok(String::new()),
        "" => Err(ApiError::bad_request(format!(
            "pod {} does not have a host assigned",
            object::name(pod)
        ))),
        node => Err(no_node_agent(node)),
    }
}

/// nodes/proxy: the node's kubelet.
pub(super) fn node(_request: &ConnectRequest<'_>, node: &Value) -> Result<String, ApiError> {
    Err(no_node_agent(object::name(node)))
}

/// services/proxy: one of the service's endpoints, in the cluster network (upstream's 503
/// when no endpoint can be reached).
pub(super) fn service(_request: &ConnectRequest<'_>, service: &Value) -> Result<String, ApiError> {
    Err(ApiError::service_unavailable(format!(
        "error trying to reach service: kapi has no network path to the endpoints of service {:?}",
        object::name(service)
    )))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// What a connect function answered.
    type Answer = Result<String, ApiError>;
    /// The body, or the code, reason and message of the error.
    type Expected = Result<&'static str, (u16, &'static str, &'static str)>;

    fn request<'a>(subresource: &'a str, container: Option<&'a str>) -> ConnectRequest<'a> {
        ConnectRequest {
            subresource,
            container,
        }
    }

    fn web(node: &str, containers: &[&str], init: &[&str]) -> Value {
        let list =
            |names: &[&str]| -> Vec<Value> { names.iter().map(|n| json!({"name": n})).collect() };
        json!({
            "metadata": {"name": "web"},
            "spec": {"nodeName": node, "containers": list(containers), "initContainers": list(init)},
        })
    }

    #[test]
    fn each_connect_answers_as_upstream_without_a_node_agent() {
        let one = web("", &["app"], &[]);
        let scheduled = web("n1", &["app"], &[]);
        let two = web("", &["a", "b"], &["i"]);
        let unreachable = r#"error dialing backend: no node agent is reachable for node "n1": kapi runs no kubelet"#;
        let cases: [(Answer, Expected); 9] = [
            (pod(&request("log", None), &one), Ok("")),
            (
                pod(&request("exec", None), &one),
                Err((400, "BadRequest", "pod web does not have a host assigned")),
            ),
            (
                pod(&request("log", None), &scheduled),
                Err((500, "", unreachable)),
            ),
            (
                pod(&request("proxy", None), &two),
                Err((400, "BadRequest", "pod web does not have a host assigned")),
            ),
            (
                pod(&request("log", None), &two),
                Err((
                    400,
                    "BadRequest",
                    "a container name must be specified for pod web, choose one of: [a b] or one of the init containers: [i]",
                )),
            ),
            (
                pod(&request("attach", Some("c")), &two),
                Err((400, "BadRequest", "container c is not valid for pod web")),
            ),
            (pod(&request("log", Some("i")), &two), Ok("")),
            (
                node(
                    &request("proxy", None),
                    &json!({"metadata": {"name": "n1"}}),
                ),
                Err((500, "", unreachable)),
            ),
            (
                service(
                    &request("proxy", None),
                    &json!({"metadata": {"name": "db"}}),
                ),
                Err((
                    503,
                    "ServiceUnavailable",
                    r#"error trying to reach service: kapi has no network path to the endpoints of service "db""#,
                )),
            ),
        ];
        for (answer, expected) in cases {
            let answer = answer
                .as_ref()
                .map(String::as_str)
                .map_err(|err| (err.code(), err.reason(), err.message()));
            assert_eq!(answer, expected);
        }
    }
}
