//! The `authorizer` CEL variable of ValidatingAdmissionPolicies and webhook
//! matchConditions (upstream's Kubernetes authz library): it asks the server's authorizer
//! whether the requesting user (or a service account) may do something.
//!
//! ```text
//! authorizer.group('apps').resource('deployments').namespace('ns').name('x').check('delete').allowed()
//! authorizer.path('/healthz').check('get').allowed()
//! authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').reason()
//! authorizer.requestResource.check('approve').allowed()
//! ```
//!
//! `authorizer` is a map holding `requestResource` (the request's own resource) and the
//! checker itself; the checks and decisions are opaque values. A check runs the authorizer
//! in place, on the evaluating thread (CEL evaluation is synchronous).

use std::collections::HashMap;
use std::sync::Arc;

use cel::extractors::This;
use cel::objects::{Key, Opaque};
use cel::{Context, ExecutionError, ResolveResult, Value};
use kapi_server::UserInfo;
use kapi_server::authz::{Attributes, Authorizer, Decision};

/// The map key under which `authorizer` carries its checker.
const CHECKER_KEY: &str = "__kapi.authorizer";

/// What a check is about so far.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    /// `authorizer` itself (or a service account's).
    Root,
    Path(String),
    /// A group (`resource` empty) or a resource in it.
    Resource {
        group: String,
        resource: String,
        subresource: String,
        namespace: String,
        name: String,
    },
}

/// An authorizer, path check, group check or resource check.
#[derive(Clone)]
struct Check {
    authorizer: Arc<dyn Authorizer>,
    user: Arc<UserInfo>,
    target: Target,
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Check")
            .field("user", &self.user.name)
            .field("target", &self.target)
            .finish()
    }
}

impl PartialEq for Check {
    fn eq(&self, other: &Self) -> bool {
        self.user == other.user && self.target == other.target
    }
}

impl Eq for Check {}

impl Opaque for Check {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Authorizer"
    }
}

/// The answer of a check.
#[derive(Clone, Debug, PartialEq, Eq)]
struct AuthzDecision {
    allowed: bool,
    reason: String,
    error: Option<String>,
}

impl Opaque for AuthzDecision {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.authorization.Decision"
    }
}

/// The `authorizer` variable for a request by `user` on the resource `request_resource`
/// (group, resource, subresource, namespace, name).
pub fn variable(
    authorizer: Arc<dyn Authorizer>,
    user: &UserInfo,
    request_resource: [&str; 5],
) -> Value {
    let [group, resource, subresource, namespace, name] = request_resource.map(str::to_string);
    let user = Arc::new(user.clone());
    let check = |target| {
        Value::Opaque(Arc::new(Check {
            authorizer: authorizer.clone(),
            user: user.clone(),
            target,
        }))
    };
    let mut map: HashMap<Key, Value> = HashMap::new();
    map.insert(
        Key::from("requestResource"),
        check(Target::Resource {
            group,
            resource,
            subresource,
            namespace,
            name,
        }),
    );
    map.insert(Key::from(CHECKER_KEY), check(Target::Root));
    Value::from(map)
}

/// Registers the library's functions.
pub fn register(context: &mut Context) {
    context.add_function("path", path);
    context.add_function("group", group);
    context.add_function("serviceAccount", service_account);
    context.add_function("resource", resource);
    context.add_function("subresource", subresource);
    context.add_function("namespace", namespace);
    context.add_function("name", name);
    context.add_function("check", check);
    context.add_function("allowed", allowed);
    context.add_function("reason", reason);
    context.add_function("errored", errored);
    context.add_function("error", error);
}

fn wrong(function: &str) -> ExecutionError {
    ExecutionError::function_error(function, "no such overload")
}

/// The check `value` is (or the checker of the `authorizer` map).
fn check_of<'a>(value: &'a Value, function: &str) -> Result<&'a Check, ExecutionError> {
    let opaque = match value {
        Value::Opaque(opaque) => opaque,
        Value::Map(map) => match map.map.get(&Key::from(CHECKER_KEY)) {
            Some(Value::Opaque(opaque)) => opaque,
            _ => return Err(wrong(function)),
        },
        _ => return Err(wrong(function)),
    };
    opaque
        .downcast_ref::<Check>()
        .ok_or_else(|| wrong(function))
}

fn with_target(check: &Check, target: Target) -> ResolveResult {
    Ok(Value::Opaque(Arc::new(Check {
        target,
        ..check.clone()
    })))
}

fn root<'a>(value: &'a Value, function: &str) -> Result<&'a Check, ExecutionError> {
    let check = check_of(value, function)?;
    match check.target {
        Target::Root => Ok(check),
        _ => Err(wrong(function)),
    }
}

fn path(This(this): This<Value>, path: Arc<String>) -> ResolveResult {
    with_target(root(&this, "path")?, Target::Path(path.to_string()))
}

fn group(This(this): This<Value>, group: Arc<String>) -> ResolveResult {
    let target = Target::Resource {
        group: group.to_string(),
        resource: String::new(),
        subresource: String::new(),
        namespace: String::new(),
        name: String::new(),
    };
    with_target(root(&this, "group")?, target)
}

fn service_account(
    This(this): This<Value>,
    namespace: Arc<String>,
    name: Arc<String>,
) -> ResolveResult {
    let check = root(&this, "serviceAccount")?;
    let user = UserInfo {
        name: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
        ],
        ..UserInfo::default()
    };
    Ok(Value::Opaque(Arc::new(Check {
        user: Arc::new(user),
        ..check.clone()
    })))
}

/// A resource check with one more of its fields set.
fn refine(this: &Value, function: &str, set: impl FnOnce(&mut [&mut String; 4])) -> ResolveResult {
    let check = check_of(this, function)?;
    let Target::Resource {
        group,
        mut resource,
        mut subresource,
        mut namespace,
        mut name,
    } = check.target.clone()
    else {
        return Err(wrong(function));
    };
    let is_group = resource.is_empty();
    if (function == "resource") != is_group {
        return Err(wrong(function));
    }
    set(&mut [&mut resource, &mut subresource, &mut namespace, &mut name]);
    let target = Target::Resource {
        group,
        resource,
        subresource,
        namespace,
        name,
    };
    with_target(check, target)
}

fn resource(This(this): This<Value>, value: Arc<String>) -> ResolveResult {
    refine(&this, "resource", |f| *f[0] = value.to_string())
}

fn subresource(This(this): This<Value>, value: Arc<String>) -> ResolveResult {
    refine(&this, "subresource", |f| *f[1] = value.to_string())
}

fn namespace(This(this): This<Value>, value: Arc<String>) -> ResolveResult {
    refine(&this, "namespace", |f| *f[2] = value.to_string())
}

fn name(This(this): This<Value>, value: Arc<String>) -> ResolveResult {
    refine(&this, "name", |f| *f[3] = value.to_string())
}

fn check(This(this): This<Value>, verb: Arc<String>) -> ResolveResult {
    let check = check_of(&this, "check")?;
    let (path, group, resource, subresource, namespace, name, resource_request) =
        match &check.target {
            Target::Path(path) => (path.as_str(), "", "", "", "", "", false),
            Target::Resource {
                group,
                resource,
                subresource,
                namespace,
                name,
            } if !resource.is_empty() => (
                "",
                group.as_str(),
                resource.as_str(),
                subresource.as_str(),
                namespace.as_str(),
                name.as_str(),
                true,
            ),
            _ => return Err(wrong("check")),
        };
    let attributes = Attributes {
        user: &check.user,
        verb: &verb,
        namespace,
        api_group: group,
        api_version: "*",
        resource,
        subresource,
        name,
        resource_request,
        path,
        field_selector: "",
        label_selector: "",
    };
    let decision = authorize(check.authorizer.as_ref(), &attributes);
    Ok(Value::Opaque(Arc::new(decision)))
}

/// Runs the authorizer in place: CEL evaluation is synchronous, within an admission
/// plugin's task on the server's multi-threaded runtime.
fn authorize(authorizer: &dyn Authorizer, attributes: &Attributes<'_>) -> AuthzDecision {
    let decided = match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(|| handle.block_on(authorizer.authorize(attributes)))
                .map_err(|err| err.0)
        }
        _ => Err("the authorizer cannot run on this thread".to_string()),
    };
    match decided {
        Ok(Decision::Allow(reason)) => AuthzDecision {
            allowed: true,
            reason,
            error: None,
        },
        Ok(Decision::Deny(reason) | Decision::NoOpinion(reason)) => AuthzDecision {
            allowed: false,
            reason,
            error: None,
        },
        Err(error) => AuthzDecision {
            allowed: false,
            reason: String::new(),
            error: Some(error),
        },
    }
}

fn decision_of<'a>(value: &'a Value, function: &str) -> Result<&'a AuthzDecision, ExecutionError> {
    match value {
        Value::Opaque(opaque) => opaque.downcast_ref().ok_or_else(|| wrong(function)),
        _ => Err(wrong(function)),
    }
}

fn allowed(This(this): This<Value>) -> ResolveResult {
    Ok(Value::Bool(decision_of(&this, "allowed")?.allowed))
}

fn reason(This(this): This<Value>) -> ResolveResult {
    Ok(Value::String(Arc::new(
        decision_of(&this, "reason")?.reason.clone(),
    )))
}

fn errored(This(this): This<Value>) -> ResolveResult {
    Ok(Value::Bool(decision_of(&this, "errored")?.error.is_some()))
}

fn error(This(this): This<Value>) -> ResolveResult {
    let error = decision_of(&this, "error")?.error.clone();
    Ok(Value::String(Arc::new(error.unwrap_or_default())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use async_trait::async_trait;
    use kapi_server::authz::{AuthorizationError, RulesInfo};

    /// Allows exactly what it is told to, and says what it was asked.
    struct Only(&'static str);

    #[async_trait]
    impl Authorizer for Only {
        async fn authorize(&self, a: &Attributes<'_>) -> Result<Decision, AuthorizationError> {
            let asked = format!(
                "{} {} {}/{}/{} {}/{} {}",
                a.user.name,
                a.verb,
                a.api_group,
                a.resource,
                a.subresource,
                a.namespace,
                a.name,
                a.path
            );
            Ok(if asked == self.0 {
                Decision::Allow("yes".into())
            } else {
                Decision::NoOpinion(asked)
            })
        }

        async fn rules_for(&self, _: &UserInfo, _: &str) -> RulesInfo {
            RulesInfo::unknown("test")
        }
    }

    fn evaluate(expression: &str, allowed: &'static str) -> Value {
        let mut context = Context::default();
        register(&mut context);
        let user = UserInfo {
            name: "bob".into(),
            ..UserInfo::default()
        };
        let variable = variable(
            Arc::new(Only(allowed)),
            &user,
            ["apps", "deployments", "", "ns", "d"],
        );
        context.add_variable_from_value("authorizer", variable);
        cel::Program::compile(expression)
            .unwrap()
            .execute(&context)
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn checks_ask_the_authorizer() {
        let pods = "authorizer.group('').resource('pods').subresource('log').namespace('ns').name('p').check('get')";
        assert_eq!(
            evaluate(&format!("{pods}.allowed()"), "bob get /pods/log ns/p "),
            Value::Bool(true)
        );
        assert_eq!(
            evaluate(&format!("{pods}.reason()"), "x"),
            Value::String(Arc::new("bob get /pods/log ns/p ".into()))
        );
        assert_eq!(
            evaluate(&format!("{pods}.errored()"), "x"),
            Value::Bool(false)
        );
        assert_eq!(
            evaluate(
                "authorizer.requestResource.check('update').allowed()",
                "bob update apps/deployments/ ns/d "
            ),
            Value::Bool(true)
        );
        assert_eq!(
            evaluate(
                "authorizer.path('/healthz').check('get').allowed()",
                "bob get // / /healthz"
            ),
            Value::Bool(true)
        );
        assert_eq!(
            evaluate(
                "authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').allowed()",
                "system:serviceaccount:ns:sa list /pods/ / "
            ),
            Value::Bool(true)
        );
    }
}
