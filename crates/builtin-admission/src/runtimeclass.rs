//! RuntimeClass (kubernetes/plugin/pkg/admission/runtimeclass): a new pod naming a
//! RuntimeClass gets its pod overhead and its scheduling constraints (node selector labels
//! and tolerations); a class that does not exist, a different overhead or a conflicting node
//! selector is refused with upstream's messages.

use async_trait::async_trait;
use kapi_apimachinery::status::ApiError;
use kapi_server::admission::{AdmissionPlugin, Attributes};
use kapi_server::endpoints::Served;
use serde_json::Value;

/// The RuntimeClass admission plugin.
pub struct RuntimeClass {
    classes: Served,
}

impl RuntimeClass {
    /// Reads classes from the served `runtimeclasses` collection.
    pub fn new(classes: Served) -> RuntimeClass {
        RuntimeClass { classes }
    }
}

/// Applies the class's overhead and scheduling to the pod, or says why it cannot.
fn apply(pod: &mut Value, class: &Value) -> Result<(), String> {
    let overhead = &class["overhead"]["podFixed"];
    if !overhead.is_null() {
        let given = &pod["spec"]["overhead"];
        if !given.is_null() && given != overhead {
            return Err(
                "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead".into(),
            );
        }
        pod["spec"]["overhead"] = overhead.clone();
    }
    let scheduling = &class["scheduling"];
    for (key, value) in scheduling["nodeSelector"].as_object().into_iter().flatten() {
        match pod["spec"]["nodeSelector"].get(key) {
            Some(existing) if existing != value => {
                return Err(format!(
                    "conflict: runtimeClass.scheduling.nodeSelector[{key}] = {}; pod.spec.nodeSelector[{key}] = {}",
                    value.as_str().unwrap_or_default(),
                    existing.as_str().unwrap_or_default()
                ));
            }
            _ => pod["spec"]["nodeSelector"][key] = value.clone(),
        }
    }
    for toleration in scheduling["tolerations"].as_array().into_iter().flatten() {
        let tolerations = &mut pod["spec"]["tolerations"];
        if !tolerations
            .as_array()
            .is_some_and(|list| list.contains(toleration))
        {
            match tolerations.as_array_mut() {
                Some(list) => list.push(toleration.clone()),
                None => *tolerations = Value::Array(vec![toleration.clone()]),
            }
        }
    }
    Ok(())
}

#[async_trait]
impl AdmissionPlugin for RuntimeClass {
    fn name(&self) -> &'static str {
        "RuntimeClass"
    }

    async fn admit(
        &self,
        attributes: &Attributes<'_>,
        object: Option<&mut Value>,
        _old: Option<&Value>,
    ) -> Result<(), ApiError> {
        let definition = attributes.definition;
        let Some(pod) = super::created(attributes, ("", "pods"), object) else {
            return Ok(());
        };
        let Some(name) = pod["spec"]["runtimeClassName"].as_str().map(str::to_string) else {
            return Ok(());
        };
        let forbidden = |message: String| {
            ApiError::forbidden(&definition.group_resource(), attributes.name, message)
        };
        let class = self
            .classes
            .cached("", &name)
            .ok_or_else(|| forbidden(format!("pod rejected: RuntimeClass {name:?} not found")))?;
        apply(pod, &class).map_err(forbidden)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classes_bring_overhead_and_scheduling() {
        let class = json!({"overhead": {"podFixed": {"cpu": "250m"}},
            "scheduling": {"nodeSelector": {"sandbox": "true"}, "tolerations": [{"key": "sandbox", "operator": "Exists"}]}});
        let mut pod = json!({"spec": {"nodeSelector": {"zone": "a"}}});
        apply(&mut pod, &class).unwrap();
        assert_eq!(pod["spec"]["overhead"], json!({"cpu": "250m"}));
        assert_eq!(
            pod["spec"]["nodeSelector"],
            json!({"zone": "a", "sandbox": "true"})
        );
        assert_eq!(
            pod["spec"]["tolerations"],
            json!([{"key": "sandbox", "operator": "Exists"}])
        );
        let mut conflicting = json!({"spec": {"nodeSelector": {"sandbox": "false"}}});
        assert_eq!(
            apply(&mut conflicting, &class).unwrap_err(),
            "conflict: runtimeClass.scheduling.nodeSelector[sandbox] = true; pod.spec.nodeSelector[sandbox] = false"
        );
        let mut other_overhead = json!({"spec": {"overhead": {"cpu": "1"}}});
        assert!(apply(&mut other_overhead, &class).is_err());
    }
}
