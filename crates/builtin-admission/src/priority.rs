//! Priority (kubernetes/plugin/pkg/admission/priority): a new pod's `priority` and
//! `preemptionPolicy` come from its PriorityClass, or from the global default class when it
//! names none (then its name is set too), or are 0 and PreemptLowerPriority without one. A
//! pod naming a class that does not exist, or stating a priority or preemption policy other
//! than its class's, is refused with upstream's messages; an updated pod keeps what it was
//! given. Only one PriorityClass may be the global default.

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes, Operation};
use kapi_server::endpoints::Served;
use serde_json::{Value, json};

/// The preemption policy of classes and pods that state none.
const DEFAULT_PREEMPTION: &str = "PreemptLowerPriority";

/// The Priority admission plugin.
pub struct Priority {
    classes: Served,
}

impl Priority {
    /// Resolves classes from the served `priorityclasses` collection.
    pub fn new(classes: Served) -> Priority {
        Priority { classes }
    }

    /// The class named `name`, from the cache.
    fn class(&self, name: &str) -> Option<Value> {
        self.classes.cached("", name)
    }

    /// The global default class: the one with `globalDefault`, the lowest value if several.
    fn default_class(&self) -> Option<Value> {
        self.classes
            .cached_list(None)
            .into_iter()
            .filter(|class| class["globalDefault"] == true)
            .min_by_key(|class| class["value"].as_i64().unwrap_or(0))
    }
}

/// A class's value and preemption policy.
fn of_class(class: &Value) -> (i64, String) {
    let policy = class["preemptionPolicy"]
        .as_str()
        .unwrap_or(DEFAULT_PREEMPTION);
    (class["value"].as_i64().unwrap_or(0), policy.to_string())
}

#[async_trait]
impl AdmissionPlugin for Priority {
    fn name(&self) -> &'static str {
        "Priority"
    }

    async fn admit(
        &self,
        attributes: &Attributes<'_>,
        mut object: Option<&mut Value>,
        old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let definition = attributes.definition;
        if let (Some(pod), Some(old)) = (
            super::updated(attributes, ("", "pods"), object.as_deref_mut()),
            old,
        ) {
            keep_priority(pod, old);
            return Ok(());
        }
        let Some(pod) = super::created(attributes, ("", "pods"), object) else {
            return Ok(());
        };
        let forbidden = |message: String| {
            ApiError::forbidden(&definition.group_resource(), attributes.name, message)
        };
        let name = pod["spec"]["priorityClassName"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let (priority, policy) = if name.is_empty() {
            match self.default_class() {
                Some(class) => {
                    pod["spec"]["priorityClassName"] = class["metadata"]["name"].clone();
                    of_class(&class)
                }
                None => (0, DEFAULT_PREEMPTION.to_string()),
            }
        } else {
            let class = self
                .class(&name)
                .ok_or_else(|| forbidden(format!("no PriorityClass with name {name} was found")))?;
            of_class(&class)
        };
        if let Some(given) = pod["spec"]["priority"]
            .as_i64()
            .filter(|given| *given != priority)
        {
            return Err(forbidden(format!(
                "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {priority} from the given PriorityClass name"
            )));
        }
        if let Some(given) = pod["spec"]["preemptionPolicy"]
            .as_str()
            .filter(|given| *given != policy)
        {
            return Err(forbidden(format!(
                "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
            )));
        }
        pod["spec"]["priority"] = json!(priority);
        pod["spec"]["preemptionPolicy"] = json!(policy);
        Ok(())
    }

    /// A PriorityClass may become the global default only while no other class is.
    async fn validate(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let definition = attributes.definition;
        let is_class = definition.group_version.group == "scheduling.k8s.io"
            && definition.plural == "priorityclasses"
            && attributes.subresource.is_empty()
            && matches!(attributes.operation, Operation::Create | Operation::Update);
        let Some(class) = object.filter(|_| is_class) else {
            return Ok(());
        };
        if class["globalDefault"] != true {
            return Ok(());
        }
        let Some(default) = self.default_class() else {
            return Ok(());
        };
        let default = default["metadata"]["name"].as_str().unwrap_or_default();
        if attributes.operation == Operation::Create || default != attributes.name {
            return Err(ApiError::forbidden(
                &definition.group_resource(),
                attributes.name,
                format!(
                    "PriorityClass {default} is already marked as default. Only one default can exist"
                ),
            ));
        }
        Ok(())
    }
}

/// An updated pod keeps the priority and preemption policy it was given at creation.
fn keep_priority(pod: &mut Value, old: &Value) {
    for field in ["priority", "preemptionPolicy"] {
        let given = &old["spec"][field];
        if !given.is_null() {
            pod["spec"][field] = given.clone();
        }
    }
}
