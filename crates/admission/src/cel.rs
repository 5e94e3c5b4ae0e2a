//! CEL for admission (webhook matchConditions, ValidatingAdmissionPolicy): expressions
//! compiled once, evaluated with the admission variables (`object`, `oldObject`, `request`,
//! `params`, `namespaceObject`, `variables`, `authorizer`) and the Kubernetes CEL libraries
//! (kube-cel, and kapi's [`crate::authz`]).

use std::collections::{BTreeMap, HashMap};

use cel::objects::Key;
use cel::{Context, Program, Value};
use kapi_schema::{KindSchema, SchemaRef};
use kube_cel::values::json_to_cel;
use serde_json::{Value as Json, json};

use kapi_server::admission::{Attributes, Operation};

/// A compiled expression and its source.
pub struct Expression {
    program: Program,
    pub source: String,
}

thread_local! {
    /// The Kubernetes CEL functions, registered once per thread: every evaluation runs in an
    /// inner scope of this context with its own variables.
    static FUNCTIONS: Context<'static> = {
        let mut context = Context::default();
        kube_cel::register_all(&mut context);
        crate::authz::register(&mut context);
        context
    };
}

impl Expression {
    /// Compiles `source`; the error says why it does not compile.
    pub fn compile(source: &str) -> Result<Expression, String> {
        let program = Program::compile(source).map_err(|err| err.to_string())?;
        Ok(Expression {
            program,
            source: source.to_string(),
        })
    }

    /// The expression's value in `activation`.
    pub fn evaluate(&self, activation: &Activation) -> Result<Value, String> {
        FUNCTIONS.with(|functions| {
            let mut context = functions.new_inner_scope();
            for (name, value) in &activation.variables {
                context.add_variable_from_value(name.as_str(), value.clone());
            }
            self.program
                .execute(&context)
                .map_err(|err| go_message(&err))
        })
    }

    /// The expression's value, which must be a bool.
    pub fn evaluate_bool(&self, activation: &Activation) -> Result<bool, String> {
        match self.evaluate(activation)? {
            Value::Bool(value) => Ok(value),
            other => Err(format!(
                "expression returned {} instead of a bool",
                type_name(&other)
            )),
        }
    }
}

/// A runtime error as cel-go words the common ones (`no such key: spec`, `division by
/// zero`); the others keep cel-rust's text with cel-go's lowercase start.
fn go_message(err: &cel::ExecutionError) -> String {
    use cel::ExecutionError as E;
    let unsigned =
        |a: &Value, b: &Value| matches!((a, b), (Value::UInt(_), _) | (_, Value::UInt(_)));
    match err {
        E::NoSuchKey(key) => format!("no such key: {key}"),
        E::NoSuchOverload => "no such overload".into(),
        E::DivisionByZero(_) => "division by zero".into(),
        E::RemainderByZero(_) => "modulus by zero".into(),
        E::Overflow(_, a, b) if unsigned(a, b) => "unsigned integer overflow".into(),
        E::Overflow(..) => "integer overflow".into(),
        E::FunctionError { message, .. } => message.clone(),
        other => {
            let text = other.to_string();
            let mut chars = text.chars();
            match chars.next() {
                Some(first) => first.to_lowercase().chain(chars).collect(),
                None => text,
            }
        }
    }
}

/// The CEL type name of a value, for errors.
pub fn type_name(value: &Value) -> &'static str {
    match value {
        Value::String(_) => "string",
        Value::Int(_) => "int",
        Value::UInt(_) => "uint",
        Value::Float(_) => "double",
        Value::Bool(_) => "bool",
        Value::List(_) => "list",
        Value::Map(_) => "map",
        Value::Null => "null",
        _ => "a value",
    }
}

/// The variables of one evaluation, converted to CEL once.
pub struct Activation {
    variables: Vec<(String, Value)>,
}

/// What an activation is made of.
#[derive(Default)]
pub struct Inputs {
    pub object: Option<Json>,
    pub old_object: Option<Json>,
    pub request: Json,
    pub params: Option<Json>,
    pub namespace_object: Option<Json>,
    /// The `authorizer` variable (see [`crate::authz`]).
    pub authorizer: Option<Value>,
    /// The schemas of `object`/`oldObject` and of `params`, when known: their property
    /// names are then escaped as upstream escapes them (see [`to_cel`]).
    pub object_schema: Option<KindSchema>,
    pub params_schema: Option<KindSchema>,
}

/// A JSON value as CEL sees it. The properties of objects whose schema declares them get
/// upstream's escaped names (`x-prop` is `x__dash__prop`; `namespace` is both `namespace`
/// and `__namespace__`); map keys, and everything without a schema, stay as they are, so
/// `object.metadata.labels['app.kubernetes.io/name']` reads the label.
pub fn to_cel(value: &Json, schema: Option<SchemaRef<'_>>) -> Value {
    match value {
        Json::Array(items) => {
            let element = schema.and_then(|s| s.items());
            Value::List(std::sync::Arc::new(
                items.iter().map(|item| to_cel(item, element)).collect(),
            ))
        }
        Json::Object(object) => {
            let declared = schema.filter(|s| s.properties().next().is_some());
            let mut map: HashMap<Key, Value> = HashMap::with_capacity(object.len());
            for (key, item) in object {
                let child = match declared {
                    Some(s) => s.property(key),
                    None => schema.and_then(|s| s.additional_properties()),
                };
                let converted = to_cel(item, child);
                if declared.is_some() && child.is_some() {
                    let escaped = kapi_server::cel_fields::escape(key);
                    if kapi_server::cel_fields::is_reserved(key) {
                        map.insert(Key::from(key.as_str()), converted.clone());
                    }
                    map.insert(Key::from(escaped), converted);
                } else {
                    map.insert(Key::from(key.as_str()), converted);
                }
            }
            Value::from(map)
        }
        other => json_to_cel(other),
    }
}

impl Activation {
    pub fn new(inputs: &Inputs) -> Activation {
        let or_null = |value: &Option<Json>, schema: &Option<KindSchema>| {
            value.as_ref().map_or(Value::Null, |value| {
                to_cel(value, schema.as_ref().map(KindSchema::schema))
            })
        };
        let object_schema = &inputs.object_schema;
        Activation {
            variables: vec![
                ("object".into(), or_null(&inputs.object, object_schema)),
                (
                    "oldObject".into(),
                    or_null(&inputs.old_object, object_schema),
                ),
                ("request".into(), to_cel(&inputs.request, None)),
                (
                    "params".into(),
                    or_null(&inputs.params, &inputs.params_schema),
                ),
                (
                    "namespaceObject".into(),
                    or_null(&inputs.namespace_object, &None),
                ),
                (
                    "variables".into(),
                    Value::from(HashMap::<String, Value>::new()),
                ),
                (
                    "authorizer".into(),
                    inputs.authorizer.clone().unwrap_or(Value::Null),
                ),
            ],
        }
    }

    /// Binds `variables.<name>` (policy variables, in order: later ones may use earlier ones).
    pub fn set_variables(&mut self, variables: &BTreeMap<String, Value>) {
        let map: HashMap<String, Value> = variables
            .iter()
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect();
        if let Some(slot) = self
            .variables
            .iter_mut()
            .find(|(name, _)| name == "variables")
        {
            slot.1 = Value::from(map);
        }
    }
}

/// The `authorizer` variable of a request: checks as the requesting user, and
/// `requestResource` is the resource written.
pub fn authorizer_variable(
    authorizer: &std::sync::Arc<dyn kapi_server::authz::Authorizer>,
    attributes: &Attributes<'_>,
) -> Value {
    let definition = attributes.definition;
    crate::authz::variable(
        authorizer.clone(),
        attributes.user,
        [
            &definition.group_version.group,
            &definition.plural,
            attributes.subresource,
            attributes.namespace,
            attributes.name,
        ],
    )
}

/// The `request` variable (and AdmissionReview's request body minus the objects): kind,
/// resource, subResource, name, namespace, operation, userInfo, dryRun, options.
pub fn request_json(attributes: &Attributes<'_>, kind: &Json, uid: &str) -> Json {
    let definition = attributes.definition;
    let gv = &definition.group_version;
    let resource = json!({"group": gv.group, "version": gv.version, "resource": definition.plural});
    let user = attributes.user;
    let mut user_info = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        user_info["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        user_info["extra"] = json!(user.extra);
    }
    let mut request = json!({
        "uid": uid,
        "kind": kind,
        "resource": resource,
        "requestKind": kind,
        "requestResource": resource,
        "name": attributes.name,
        "namespace": attributes.namespace,
        "operation": attributes.operation.as_str(),
        "userInfo": user_info,
        "dryRun": attributes.dry_run,
        "options": options(attributes.operation, attributes.options),
    });
    if !attributes.subresource.is_empty() {
        request["subResource"] = json!(attributes.subresource);
        request["requestSubResource"] = json!(attributes.subresource);
    }
    request
}

/// The options object of the request's operation: its kind, then the fields of `given`
/// that kind has (a patch's options become a create's or an update's, as upstream's patch
/// handler converts them).
fn options(operation: Operation, given: &Json) -> Json {
    let (kind, fields): (&str, &[&str]) = match operation {
        Operation::Create | Operation::Update => {
            let kind = match operation {
                Operation::Create => "CreateOptions",
                _ => "UpdateOptions",
            };
            (kind, &["dryRun", "fieldManager", "fieldValidation"])
        }
        Operation::Delete => (
            "DeleteOptions",
            &[
                "gracePeriodSeconds",
                "preconditions",
                "orphanDependents",
                "propagationPolicy",
                "dryRun",
                "ignoreStoreReadErrorWithClusterBreakingPotential",
            ],
        ),
        Operation::Connect => return Json::Null,
    };
    let mut options = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    for field in fields {
        if let Some(value) = given.get(*field).filter(|v| !v.is_null()) {
            options[*field] = value.clone();
        }
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evaluate(expression: &str, inputs: &Inputs) -> Value {
        Expression::compile(expression)
            .unwrap()
            .evaluate(&Activation::new(inputs))
            .unwrap()
    }

    #[test]
    fn runtime_errors_read_as_cel_go_words_them() {
        let inputs = Inputs {
            object: Some(json!({"metadata": {"name": "c"}})),
            ..Inputs::default()
        };
        let error = |expression: &str| {
            Expression::compile(expression)
                .unwrap()
                .evaluate(&Activation::new(&inputs))
                .unwrap_err()
        };
        assert_eq!(error("object.spec.foo == 1"), "no such key: spec");
        assert_eq!(error("1 / 0 == 1"), "division by zero");
    }

    #[test]
    fn objects_read_as_upstream_escapes_them() {
        let object = json!({"metadata": {"name": "c", "namespace": "ns",
            "labels": {"app.kubernetes.io/name": "web"}}, "data": {"namespace": "x", "a-b": "y"}});
        let typed = Inputs {
            object: Some(object.clone()),
            object_schema: kapi_api::kind_schema("", "v1", "ConfigMap"),
            ..Inputs::default()
        };
        let untyped = Inputs {
            object: Some(object),
            ..Inputs::default()
        };
        for inputs in [&typed, &untyped] {
            for expression in [
                "object.metadata.namespace == 'ns'",
                "object.metadata.labels['app.kubernetes.io/name'] == 'web'",
                "object.data['a-b'] == 'y' && object.data.size() == 2",
            ] {
                assert_eq!(
                    evaluate(expression, inputs),
                    Value::Bool(true),
                    "{expression}"
                );
            }
        }
        assert_eq!(
            evaluate("object.metadata.__namespace__ == 'ns'", &typed),
            Value::Bool(true)
        );
    }
}
