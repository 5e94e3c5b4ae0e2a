//! CEL for admission (webhook matchConditions, ValidatingAdmissionPolicy): expressions
//! compiled once, evaluated with the admission variables (`object`, `oldObject`, `request`,
//! `params`, `namespaceObject`, `variables`) and the Kubernetes CEL libraries (kube-cel).

use std::collections::{BTreeMap, HashMap};

use cel::{Context, Program, Value};
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
                .map_err(|err| err.to_string())
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
}

impl Activation {
    pub fn new(inputs: &Inputs) -> Activation {
        let or_null = |value: &Option<Json>| value.as_ref().map_or(Value::Null, json_to_cel);
        Activation {
            variables: vec![
                ("object".into(), or_null(&inputs.object)),
                ("oldObject".into(), or_null(&inputs.old_object)),
                ("request".into(), json_to_cel(&inputs.request)),
                ("params".into(), or_null(&inputs.params)),
                ("namespaceObject".into(), or_null(&inputs.namespace_object)),
                (
                    "variables".into(),
                    Value::from(HashMap::<String, Value>::new()),
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
        "options": options(attributes.operation),
    });
    if !attributes.subresource.is_empty() {
        request["subResource"] = json!(attributes.subresource);
        request["requestSubResource"] = json!(attributes.subresource);
    }
    request
}

/// The options object of the request's operation.
fn options(operation: Operation) -> Json {
    let kind = match operation {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
        Operation::Connect => return Json::Null,
    };
    json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"})
}
