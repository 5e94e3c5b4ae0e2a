use serde_json::json;
use std::borrow::Cow;

use super::*;

const DEPLOYMENT: ScalePaths = ScalePaths {
    spec_replicas: Cow::Borrowed("/spec/replicas"),
    status_replicas: Cow::Borrowed("/status/replicas"),
    selector: ScaleSelector::LabelSelector(Cow::Borrowed("/spec/selector")),
};

const CONTROLLER: ScalePaths = ScalePaths {
    spec_replicas: Cow::Borrowed("/spec/replicas"),
    status_replicas: Cow::Borrowed("/status/replicas"),
    selector: ScaleSelector::Map(Cow::Borrowed("/spec/selector")),
};

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "7",
            "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"x": "y"},
        },
        "spec": {
            "replicas": 2,
            "selector": {
                "matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}],
            },
        },
        "status": {"replicas": 1},
    })
}

#[test]
fn scale_shows_replicas_and_the_selector_string() {
    let cases = [
        (
            deployment(),
            DEPLOYMENT,
            json!({"replicas": 2}),
            json!({"replicas": 1, "selector": "app=web,tier in (a,b)"}),
        ),
        (
            json!({"metadata": {"name": "rc"}, "spec": {"replicas": 0, "selector": {"b": "2", "a": "1"}}}),
            CONTROLLER,
            json!({}),
            json!({"replicas": 0, "selector": "a=1,b=2"}),
        ),
        (
            json!({"metadata": {"name": "c"}, "spec": {"n": 3}, "status": {"s": "k=v"}}),
            ScalePaths {
                spec_replicas: "/spec/n".into(),
                status_replicas: "/status/n".into(),
                selector: ScaleSelector::String("/status/s".into()),
            },
            json!({"replicas": 3}),
            json!({"replicas": 0, "selector": "k=v"}),
        ),
    ];
    for (object, paths, spec, status) in cases {
        let scale = scale_of(&object, &paths);
        assert_eq!(scale["apiVersion"], "autoscaling/v1");
        assert_eq!(scale["kind"], "Scale");
        assert_eq!(scale["spec"], spec, "{object}");
        assert_eq!(scale["status"], status, "{object}");
    }
    let scale = scale_of(&deployment(), &DEPLOYMENT);
    assert_eq!(
        scale["metadata"],
        json!({
            "name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "7",
            "creationTimestamp": "2026-01-01T00:00:00Z",
        })
    );
}

#[test]
fn applying_a_scale_changes_only_the_replicas_and_keeps_its_precondition() {
    let resource = GroupResource::new("apps", "deployments");
    let scale =
        json!({"metadata": {"name": "web", "resourceVersion": "6"}, "spec": {"replicas": 5}});
    let updated = apply_scale(&deployment(), &scale, &DEPLOYMENT, &resource).unwrap();
    let mut expected = deployment();
    expected["spec"]["replicas"] = json!(5);
    expected["metadata"]["resourceVersion"] = json!("6");
    assert_eq!(updated, expected);

    let created = apply_scale(&json!({"metadata": {}}), &scale, &DEPLOYMENT, &resource).unwrap();
    assert_eq!(created["spec"]["replicas"], 5);

    let other = json!({"metadata": {"uid": "u2"}, "spec": {"replicas": 1}});
    let err = apply_scale(&deployment(), &other, &DEPLOYMENT, &resource).unwrap_err();
    assert_eq!(err.code(), 409);
    assert_eq!(
        err.message(),
        r#"Operation cannot be fulfilled on deployments.apps "web": Precondition failed: UID in precondition: u2, UID in object meta: u1"#
    );
}

#[test]
fn negative_replicas_are_invalid() {
    assert!(validate_scale(&json!({"spec": {"replicas": 0}})).is_ok());
    let err = validate_scale(&json!({"metadata": {"name": "web"}, "spec": {"replicas": -1}}))
        .unwrap_err();
    assert_eq!(err.code(), 422);
    assert_eq!(
        err.message(),
        r#"Scale.autoscaling "web" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0"#
    );
}

/// A create hook that answers with its request's body.
struct Echo;

#[async_trait::async_trait]
impl Creater for Echo {
    async fn create(&self, request: CreateRequest<'_>) -> Result<Value, ApiError> {
        Ok(request.object)
    }
}

fn info(method: &str, path: &str) -> RequestInfo {
    kapi_apimachinery::request_info::RequestInfoFactory::default()
        .resolve(method, path, None)
        .unwrap()
}

#[test]
fn special_requests_are_recognized_from_the_subresource_kind() {
    use crate::discovery::tests::def;
    use crate::resource::{CreateHandler, Verbs};

    let connect: ConnectFn = |_, _| Err(ApiError::bad_request("no agent"));
    let subresources = vec![
        Subresource {
            name: "scale",
            kind: SubresourceKind::Scale(DEPLOYMENT),
            verbs: Verbs::GET_UPDATE_PATCH,
            response_kind: None,
        },
        Subresource {
            name: "eviction",
            kind: SubresourceKind::Create(CreateHandler(Arc::new(Echo))),
            verbs: Verbs::CREATE,
            response_kind: None,
        },
        Subresource {
            name: "proxy",
            kind: SubresourceKind::Connect(connect),
            verbs: Verbs::GET,
            response_kind: None,
        },
        Subresource {
            name: "status",
            kind: SubresourceKind::Status,
            verbs: Verbs::GET_UPDATE_PATCH,
            response_kind: None,
        },
    ];
    let pods = def(
        "",
        "v1",
        "Pod",
        "pods",
        true,
        &[],
        &[],
        Verbs::ALL,
        subresources,
    );
    let path = "/api/v1/namespaces/ns/pods/p";
    let special = |method: &str, sub: &str| {
        let info = info(method, &format!("{path}/{sub}"));
        Special::of(&pods, pods.subresource(&info.subresource), &info)
    };
    assert!(matches!(special("GET", "scale"), Some(Special::Scale(_))));
    let eviction = special("POST", "eviction").unwrap();
    assert!(matches!(
        eviction,
        Special::Create {
            on_object: true,
            ..
        }
    ));
    assert!(eviction.takes_named_create());
    let proxy = special("GET", "proxy/some/path").unwrap();
    assert!(matches!(proxy, Special::Connect(_)));
    assert!(proxy.takes_named_create());
    assert!(special("PUT", "status").is_none());
    // A stored resource's own creates are not special.
    let create = info("POST", "/api/v1/namespaces/ns/pods");
    assert!(Special::of(&pods, None, &create).is_none());
}

#[test]
fn scales_print_as_upstream_prints_them() {
    assert_eq!(
        age(
            Some("1970-01-01T00:00:00Z"),
            Timestamp {
                seconds: 3 * 3600 + 20 * 60,
                nanos: 0
            }
        ),
        "3h20m"
    );
    assert_eq!(age(None, Timestamp::now()), "<unknown>");

    let table = scale_table();
    let names: Vec<&str> = table.columns.iter().map(|c| &*c.name).collect();
    assert_eq!(names, ["Name", "Desired", "Available", "Age"]);
    let scale = scale_of(&deployment(), &DEPLOYMENT);
    let cells = (table.cells)(&scale);
    assert_eq!(cells[..3], [json!("web"), json!(2), json!(1)]);
    assert!(
        cells[3]
            .as_str()
            .is_some_and(|age| age.ends_with('d') || age.ends_with('y'))
    );
}
