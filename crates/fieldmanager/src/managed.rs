//! `metadata.managedFields`: who manages which fields, read from and written to objects as
//! upstream's managedfields package does.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::fieldpath::{FieldsError, Set};

/// How a manager last wrote its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Who manages a set of fields: upstream's manager identifier. Apply managers are one
/// manager whatever the version they applied; update managers are one per version.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Manager {
    pub name: String,
    pub operation: Operation,
    /// The API version of an update manager ("" for apply managers).
    pub api_version: String,
    /// The subresource written through ("" for the resource itself).
    pub subresource: String,
}

impl Manager {
    /// The identity of an update by `name` at `api_version`.
    pub fn update(name: &str, api_version: &str, subresource: &str) -> Manager {
        Manager {
            name: name.to_string(),
            operation: Operation::Update,
            api_version: api_version.to_string(),
            subresource: subresource.to_string(),
        }
    }

    /// The identity of applies by `name`.
    pub fn apply(name: &str, subresource: &str) -> Manager {
        Manager {
            name: name.to_string(),
            operation: Operation::Apply,
            api_version: String::new(),
            subresource: subresource.to_string(),
        }
    }

    /// How upstream names the manager in conflict messages: `"name"`, with
    /// ` with subresource "s"` and, for updates, ` using <apiVersion>`.
    pub fn describe(&self) -> String {
        let mut out = format!("{:?}", self.name);
        if !self.subresource.is_empty() {
            out.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }
}

/// The fields one manager manages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub set: Set,
    /// The version the field paths are in.
    pub api_version: String,
    /// When the manager last changed the object (metav1.Time text), if known.
    pub time: Option<String>,
}

/// Every manager's fields.
pub type Managed = BTreeMap<Manager, Entry>;

/// `metadata.managedFields` that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManagedFieldsError {
    #[error("managedFields must be a list")]
    NotAList,
    #[error("operation must be `Apply` or `Update`")]
    Operation,
    #[error("apiVersion must not be empty")]
    ApiVersion,
    #[error("missing fieldsType in managed fields entry {0}")]
    MissingFieldsType(usize),
    #[error("invalid fieldsType {0:?} in managed fields entry {1}")]
    FieldsType(String, usize),
    #[error("error decoding set: {0}")]
    Fields(#[from] FieldsError),
}

/// The object's `metadata.managedFields`, if present and not null.
pub fn managed_fields_of(object: &Value) -> Option<&Value> {
    object
        .get("metadata")
        .and_then(|meta| meta.get("managedFields"))
        .filter(|fields| !fields.is_null())
}

/// Reads `metadata.managedFields` (absent: no managers).
pub fn decode(object: &Value) -> Result<Managed, ManagedFieldsError> {
    let Some(fields) = managed_fields_of(object) else {
        return Ok(Managed::new());
    };
    let entries = fields.as_array().ok_or(ManagedFieldsError::NotAList)?;
    let mut managed = Managed::new();
    for (index, entry) in entries.iter().enumerate() {
        let (manager, decoded) = decode_entry(index, entry)?;
        managed.insert(manager, decoded);
    }
    Ok(managed)
}

fn decode_entry(index: usize, entry: &Value) -> Result<(Manager, Entry), ManagedFieldsError> {
    let text = |key: &str| entry.get(key).and_then(Value::as_str).unwrap_or("");
    let operation = match text("operation") {
        "Apply" => Operation::Apply,
        "Update" => Operation::Update,
        _ => return Err(ManagedFieldsError::Operation),
    };
    let api_version = text("apiVersion");
    if api_version.is_empty() {
        return Err(ManagedFieldsError::ApiVersion);
    }
    match text("fieldsType") {
        "FieldsV1" => {}
        "" => return Err(ManagedFieldsError::MissingFieldsType(index)),
        other => return Err(ManagedFieldsError::FieldsType(other.to_string(), index)),
    }
    let set = match entry.get("fieldsV1").filter(|fields| !fields.is_null()) {
        Some(fields) => Set::from_fields_v1(fields)?,
        None => Set::new(),
    };
    let manager = Manager {
        name: text("manager").to_string(),
        operation,
        api_version: match operation {
            Operation::Apply => String::new(),
            Operation::Update => api_version.to_string(),
        },
        subresource: text("subresource").to_string(),
    };
    let time = Some(text("time").to_string()).filter(|time| !time.is_empty());
    let entry = Entry {
        set,
        api_version: api_version.to_string(),
        time,
    };
    Ok((manager, entry))
}

/// Whether a request's managedFields ask for a reset: an empty list, or one empty entry.
pub fn is_reset(object: &Value) -> bool {
    match managed_fields_of(object)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        Some([]) => true,
        Some([only]) => only.as_object().is_some_and(Map::is_empty),
        _ => false,
    }
}

/// The managedFields list of `managed`, ordered as upstream orders it: Apply before
/// Update, then by time, manager, apiVersion and subresource. `None` when no one manages
/// anything.
pub fn encode(managed: &Managed) -> Option<Value> {
    if managed.is_empty() {
        return None;
    }
    let mut entries: Vec<(&Manager, &Entry)> = managed.iter().collect();
    entries.sort_by(|(a, ea), (b, eb)| {
        a.operation
            .cmp(&b.operation)
            .then_with(|| ea.time.cmp(&eb.time))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| ea.api_version.cmp(&eb.api_version))
            .then_with(|| a.subresource.cmp(&b.subresource))
    });
    let list = entries
        .into_iter()
        .map(|(manager, entry)| encode_entry(manager, entry))
        .collect();
    Some(Value::Array(list))
}

fn encode_entry(manager: &Manager, entry: &Entry) -> Value {
    let mut out = json!({
        "manager": manager.name,
        "operation": manager.operation.as_str(),
        "apiVersion": entry.api_version,
        "fieldsType": "FieldsV1",
        "fieldsV1": entry.set.to_fields_v1(),
    });
    if let Some(time) = &entry.time {
        out["time"] = Value::from(time.as_str());
    }
    if !manager.subresource.is_empty() {
        out["subresource"] = Value::from(manager.subresource.as_str());
    }
    if manager.name.is_empty() {
        out.as_object_mut().map(|fields| fields.remove("manager"));
    }
    out
}

/// Writes `managed` into the object's `metadata.managedFields` (removing it when empty).
pub fn set_managed_fields(object: &mut Value, managed: &Managed) {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    match encode(managed) {
        Some(list) => metadata.insert("managedFields".to_string(), list),
        None => metadata.remove("managedFields"),
    };
}

/// Removes the object's `metadata.managedFields`.
pub fn remove_managed_fields(object: &mut Value) {
    if let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("managedFields");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_and_encode_round_trip() {
        let object = json!({"metadata": {"managedFields": [
            {"manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
             "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:data": {"f:a": {}}}},
            {"manager": "ctl", "operation": "Update", "apiVersion": "v1",
             "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1",
             "fieldsV1": {"f:status": {"f:b": {}}}, "subresource": "status"}
        ]}});
        let managed = decode(&object).expect("valid");
        assert_eq!(managed.len(), 2);
        assert!(managed.contains_key(&Manager::apply("kubectl", "")));
        assert!(managed.contains_key(&Manager::update("ctl", "v1", "status")));
        assert_eq!(encode(&managed).as_ref(), managed_fields_of(&object));
    }

    #[test]
    fn entries_are_ordered_as_upstream() {
        let entry = |time: &str| Entry {
            set: Set::from_fields_v1(&json!({"f:a": {}})).expect("valid"),
            api_version: "v1".to_string(),
            time: Some(time.to_string()),
        };
        let managed = Managed::from([
            (
                Manager::update("b", "v1", ""),
                entry("2024-01-01T00:00:00Z"),
            ),
            (
                Manager::update("a", "v1", ""),
                entry("2024-01-02T00:00:00Z"),
            ),
            (Manager::apply("z", ""), entry("2024-01-03T00:00:00Z")),
        ]);
        let encoded = encode(&managed).expect("entries");
        let names: Vec<&str> = encoded
            .as_array()
            .expect("list")
            .iter()
            .map(|entry| entry["manager"].as_str().expect("name"))
            .collect();
        assert_eq!(names, ["z", "b", "a"]);
    }

    #[test]
    fn invalid_entries() {
        let cases = [
            (json!("x"), "managedFields must be a list"),
            (
                json!([{"operation": "Patch", "apiVersion": "v1", "fieldsType": "FieldsV1"}]),
                "operation must be `Apply` or `Update`",
            ),
            (
                json!([{"operation": "Apply", "fieldsType": "FieldsV1"}]),
                "apiVersion must not be empty",
            ),
            (
                json!([{"operation": "Apply", "apiVersion": "v1"}]),
                "missing fieldsType in managed fields entry 0",
            ),
            (
                json!([{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV2"}]),
                "invalid fieldsType \"FieldsV2\" in managed fields entry 0",
            ),
            (
                json!([{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
                        "fieldsV1": {"q:x": {}}}]),
                "error decoding set: invalid path element \"q:x\"",
            ),
        ];
        for (fields, want) in cases {
            let object = json!({"metadata": {"managedFields": fields}});
            assert_eq!(decode(&object).unwrap_err().to_string(), want);
        }
    }

    #[test]
    fn resets() {
        let cases = [
            (json!({"metadata": {"managedFields": []}}), true),
            (json!({"metadata": {"managedFields": [{}]}}), true),
            (json!({"metadata": {}}), false),
            (json!({"metadata": {"managedFields": [{}, {}]}}), false),
        ];
        for (object, want) in cases {
            assert_eq!(is_reset(&object), want, "{object}");
        }
    }

    #[test]
    fn describes_managers_as_upstream() {
        assert_eq!(Manager::apply("m", "").describe(), "\"m\"");
        assert_eq!(
            Manager::update("m", "apps/v1", "status").describe(),
            "\"m\" with subresource \"status\" using apps/v1"
        );
    }
}
