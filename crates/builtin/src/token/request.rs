//! serviceaccounts/token: creates an authentication.k8s.io/v1 TokenRequest, as upstream's
//! TokenREST (pkg/registry/core/serviceaccount/storage/token.go): the service account must
//! exist, the token may be bound to a pod, secret or node of the namespace, and the answer
//! carries the signed token and its expiration.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use kapi_apimachinery::gotime::format_rfc3339;
use kapi_apimachinery::meta::new_uid;
use kapi_apimachinery::quote;
use kapi_apimachinery::schema::{GroupKind, GroupResource};
use kapi_apimachinery::status::ApiError;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_server::audit::AuditAnnotations;
use kapi_server::object;
use kapi_server::registry::ReadVersion;
use kapi_server::resource::{CreateRequest, Creater};
use serde_json::{Map, Value, json};

use super::{ServiceAccountTokens, service_account_username};

/// The lifetime of a token whose request names none (upstream's default).
const DEFAULT_EXPIRATION_SECONDS: i64 = 3600;
/// The shortest lifetime a request may ask for: 10 minutes.
const MIN_EXPIRATION_SECONDS: i64 = 600;
/// The longest: 2^32 seconds.
const MAX_EXPIRATION_SECONDS: i64 = 1 << 32;

const KIND: &str = "TokenRequest";

/// Answers `serviceaccounts/token`.
pub struct TokenRequestCreater;

/// Unix seconds now.
pub(crate) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[async_trait::async_trait]
impl Creater for TokenRequestCreater {
    async fn create(&self, request: CreateRequest<'_>) -> Result<Value, ApiError> {
        let tokens = request
            .api
            .services()
            .get::<Arc<ServiceAccountTokens>>()
            .cloned()
            .ok_or_else(|| ApiError::internal("no service account token issuer is configured"))?;
        // The server decoded the body as a TokenRequest (apiVersion and kind filled in).
        let mut token_request = request.object.clone();
        let account = get(&request, "serviceaccounts", request.name).await?;
        fill_request(&mut token_request, &account, &tokens);
        validate(&token_request)?;
        let bound = bound_object(&request, &token_request).await?;
        let now = unix_now();
        let expiration = token_request["spec"]["expirationSeconds"]
            .as_i64()
            .unwrap_or(DEFAULT_EXPIRATION_SECONDS);
        let claims = claims(
            &account,
            &bound,
            &token_request["spec"]["audiences"],
            now,
            expiration,
        );
        let token = tokens
            .issue(&claims)
            .map_err(|err| ApiError::internal(format!("failed to generate token: {err}")))?;
        // The token's credential id, as its requests' users carry it in their extra.
        if let Some(jti) = claims["jti"].as_str() {
            AuditAnnotations::of(request.api.services()).add(
                "authentication.kubernetes.io/issued-credential-id",
                &format!("JTI={jti}"),
            );
        }
        object::set_meta(
            &mut token_request,
            "creationTimestamp",
            Value::from(format_rfc3339(now)),
        );
        token_request["status"] = json!({
            "token": token,
            "expirationTimestamp": format_rfc3339(now + expiration),
        });
        Ok(token_request)
    }
}

/// Reads a core object of the request's namespace.
async fn get(request: &CreateRequest<'_>, resource: &str, name: &str) -> Result<Value, ApiError> {
    let served = request
        .api
        .resource("", resource)
        .ok_or_else(|| ApiError::internal(format!("the resource {resource} is not served")))?;
    let group_resource = GroupResource::new("", resource);
    served
        .registry
        .get(
            &group_resource,
            request.namespace,
            name,
            &ReadVersion::MostRecent,
        )
        .await?
        .decode()
}

/// Upstream's defaults: the API audiences, an hour, the account's name and namespace; the
/// status is cleared.
fn fill_request(token_request: &mut Value, account: &Value, tokens: &ServiceAccountTokens) {
    if !token_request["spec"].is_object() {
        token_request["spec"] = json!({});
    }
    let spec = &mut token_request["spec"];
    if spec["audiences"].as_array().is_none_or(Vec::is_empty) {
        spec["audiences"] = json!(tokens.api_audiences());
    }
    if spec["expirationSeconds"].is_null() {
        spec["expirationSeconds"] = DEFAULT_EXPIRATION_SECONDS.into();
    }
    if !token_request["metadata"].is_object() {
        token_request["metadata"] = json!({});
    }
    for field in ["name", "namespace"] {
        if object::meta_str(token_request, field).is_empty() {
            let value = object::meta_str(account, field).to_string();
            object::set_meta(token_request, field, Value::from(value));
        }
    }
    if let Some(request) = token_request.as_object_mut() {
        request.remove("status");
    }
}

/// Upstream's ValidateTokenRequest: the lifetime is at least 10 minutes, at most 2^32 s.
fn validate(token_request: &Value) -> Result<(), ApiError> {
    let path = Path::root("spec").child("expirationSeconds");
    let seconds = token_request["spec"]["expirationSeconds"]
        .as_i64()
        .unwrap_or(0);
    let mut errors = FieldErrors::new();
    if seconds < MIN_EXPIRATION_SECONDS {
        errors.push(FieldError::invalid(
            &path,
            seconds,
            "may not specify a duration less than 10 minutes",
        ));
    }
    if seconds > MAX_EXPIRATION_SECONDS {
        errors.push(FieldError::invalid(
            &path,
            seconds,
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    if errors.is_empty() {
        return Ok(());
    }
    let kind = GroupKind::new("authentication.k8s.io", KIND);
    Err(ApiError::invalid(&kind, "", &errors))
}

/// What a token is bound to: the object of its `boundObjectRef` and, for a pod, its node.
#[derive(Default)]
struct Bound {
    pod: Option<Value>,
    secret: Option<Value>,
    node: Option<Value>,
}

/// Reads the object `spec.boundObjectRef` names (a Pod, Secret or Node), checking it as
/// upstream does: a pod must run as the service account, and a given uid must be the object's.
async fn bound_object(
    request: &CreateRequest<'_>,
    token_request: &Value,
) -> Result<Bound, ApiError> {
    let reference = &token_request["spec"]["boundObjectRef"];
    if !reference.is_object() {
        return Ok(Bound::default());
    }
    let api_version = reference["apiVersion"].as_str().unwrap_or_default();
    let kind = reference["kind"].as_str().unwrap_or_default();
    let name = reference["name"].as_str().unwrap_or_default();
    let mut bound = Bound::default();
    let object = match (api_version, kind) {
        ("v1", "Pod") => {
            let pod = get(request, "pods", name).await?;
            if request.name
                != pod["spec"]["serviceAccountName"]
                    .as_str()
                    .unwrap_or_default()
            {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token for serviceaccount {} to pod running with different serviceaccount name.",
                    quote(request.name)
                )));
            }
            let node = pod["spec"]["nodeName"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if !node.is_empty() {
                bound.node = node_named(request, &node).await;
            }
            bound.pod = Some(pod.clone());
            pod
        }
        ("v1", "Secret") => {
            let secret = get(request, "secrets", name).await?;
            bound.secret = Some(secret.clone());
            secret
        }
        ("v1", "Node") => {
            let node = node_named(request, name)
                .await
                .ok_or_else(|| ApiError::not_found(&GroupResource::new("", "nodes"), name))?;
            bound.node = Some(node.clone());
            node
        }
        _ => {
            return Err(ApiError::bad_request(format!(
                "cannot bind token to object of type {}",
                go_kind_string(api_version, kind)
            )));
        }
    };
    let wanted_uid = reference["uid"].as_str().unwrap_or_default();
    if !wanted_uid.is_empty() && wanted_uid != object::uid(&object) {
        return Err(ApiError::conflict(
            &GroupResource::new("", kind),
            name,
            format!(
                "the UID in the bound object reference ({wanted_uid}) does not match the UID in record. The object might have been deleted and then recreated"
            ),
        ));
    }
    Ok(bound)
}

/// A GroupVersionKind as Go's String prints it (`/v1, Kind=Pod`, `apps/v1, Kind=Deployment`).
fn go_kind_string(api_version: &str, kind: &str) -> String {
    match api_version.split_once('/') {
        Some((group, version)) => format!("{group}/{version}, Kind={kind}"),
        None => format!("/{api_version}, Kind={kind}"),
    }
}

/// The node `name`, if kapi serves nodes and it exists.
async fn node_named(request: &CreateRequest<'_>, name: &str) -> Option<Value> {
    let served = request.api.resource("", "nodes")?;
    let resource = GroupResource::new("", "nodes");
    let item = served
        .registry
        .get(&resource, "", name, &ReadVersion::MostRecent)
        .await
        .ok()?;
    item.decode().ok()
}

/// A `{name, uid}` reference to an object.
fn reference(object: &Value) -> Value {
    json!({ "name": object::name(object), "uid": object::uid(object) })
}

/// The token's claims (without `iss`, which the issuer adds), as upstream's token.Claims.
fn claims(account: &Value, bound: &Bound, audiences: &Value, now: i64, expiration: i64) -> Value {
    let namespace = object::namespace(account);
    let mut private = Map::new();
    private.insert("namespace".into(), Value::from(namespace));
    private.insert("serviceaccount".into(), reference(account));
    for (key, object) in [
        ("pod", &bound.pod),
        ("secret", &bound.secret),
        ("node", &bound.node),
    ] {
        if let Some(object) = object {
            private.insert(key.into(), reference(object));
        }
    }
    json!({
        "sub": service_account_username(namespace, object::name(account)),
        "aud": audiences,
        "iat": now,
        "nbf": now,
        "exp": now + expiration,
        "jti": new_uid(),
        "kubernetes.io": private,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_get_upstreams_defaults_and_limits() {
        let tokens = super::super::tests::tokens();
        let account = json!({"metadata": {"name": "default", "namespace": "ns", "uid": "u"}});
        let mut request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": KIND, "status": {"token": "forged"}});
        fill_request(&mut request, &account, &tokens);
        assert_eq!(request["apiVersion"], "authentication.k8s.io/v1");
        assert_eq!(request["kind"], KIND);
        assert_eq!(request["spec"]["expirationSeconds"], 3600);
        assert_eq!(
            request["spec"]["audiences"],
            json!([super::super::DEFAULT_ISSUER])
        );
        assert_eq!(
            request["metadata"],
            json!({"name": "default", "namespace": "ns"})
        );
        assert!(request.get("status").is_none());
        assert!(validate(&request).is_ok());

        for (seconds, message) in [
            (
                599,
                "spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes",
            ),
            (
                (1_i64 << 32) + 1,
                "spec.expirationSeconds: Invalid value: 4294967297: may not specify a duration larger than 2^32 seconds",
            ),
        ] {
            request["spec"]["expirationSeconds"] = json!(seconds);
            let err = validate(&request).unwrap_err();
            assert_eq!(err.code(), 422);
            assert_eq!(
                err.message(),
                format!("TokenRequest.authentication.k8s.io \"\" is invalid: {message}")
            );
        }
    }

    #[test]
    fn claims_name_the_account_and_what_the_token_is_bound_to() {
        let account = json!({"metadata": {"name": "sa", "namespace": "ns", "uid": "u1"}});
        let bound = Bound {
            pod: Some(json!({"metadata": {"name": "p", "uid": "u2"}})),
            node: Some(json!({"metadata": {"name": "n", "uid": "u3"}})),
            secret: None,
        };
        let claims = claims(&account, &bound, &json!(["api"]), 1000, 600);
        assert_eq!(claims["sub"], "system:serviceaccount:ns:sa");
        assert_eq!(
            (claims["iat"].as_i64(), claims["nbf"].as_i64()),
            (Some(1000), Some(1000))
        );
        assert_eq!(claims["exp"], 1600);
        assert_eq!(claims["aud"], json!(["api"]));
        assert_eq!(
            claims["kubernetes.io"],
            json!({
                "namespace": "ns",
                "serviceaccount": {"name": "sa", "uid": "u1"},
                "pod": {"name": "p", "uid": "u2"},
                "node": {"name": "n", "uid": "u3"},
            })
        );
        assert_eq!(
            go_kind_string("apps/v1", "Deployment"),
            "apps/v1, Kind=Deployment"
        );
        assert_eq!(go_kind_string("v1", "ConfigMap"), "/v1, Kind=ConfigMap");
    }
}
