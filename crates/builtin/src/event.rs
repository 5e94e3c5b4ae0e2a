//! Events: core/v1 `events` and events.k8s.io/v1 `events`, two served versions of one
//! stored collection (core/v1 Event under `events`), as kube-apiserver serves them
//! (kubernetes/pkg/registry/core/event, pkg/apis/core/validation/events.go,
//! pkg/apis/events/v1's conversion).

use std::sync::Arc;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{is_dns1123_subdomain, is_qualified_name};
use kapi_server::resource::{
    Converter, GarbageCollectionPolicy, Name, NameValidator, PrinterColumn, Strategy,
    TableConvertor,
};
use serde_json::{Map, Value};

use crate::kinds::KindStrategies;
use crate::printers::{NAME_DESCRIPTION, column, translate_timestamp_since};
use crate::util::{
    go_json_string, immutable_rendered, int_of, is_zero_time, normalize_time, str_at, str_of,
    validate_core_metadata_finalizers, validate_immutable,
};

/// The longest `reportingInstance`, `action` and `reason` of new-style events.
const REPORTING_INSTANCE_LENGTH_LIMIT: usize = 128;
const ACTION_LENGTH_LIMIT: usize = 128;
const REASON_LENGTH_LIMIT: usize = 128;
/// The longest `message` (events.k8s.io's `note`) of new-style events.
const NOTE_LENGTH_LIMIT: usize = 1024;

/// The fields of an ObjectReference, in the internal type's order.
const REFERENCE_FIELDS: [(&str, &str); 7] = [
    ("kind", "Kind"),
    ("namespace", "Namespace"),
    ("name", "Name"),
    ("uid", "UID"),
    ("apiVersion", "APIVersion"),
    ("resourceVersion", "ResourceVersion"),
    ("fieldPath", "FieldPath"),
];

/// The core/v1 field selectors of events.
const CORE_FIELDS: [&str; 11] = [
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
];

/// The events.k8s.io/v1 field selectors of events.
const EVENTS_FIELDS: [&str; 11] = [
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reason",
    "reportingController",
    "source",
    "type",
];

/// The strategy and printer columns of events: core/v1 (`strict` false) or events.k8s.io/v1
/// (`strict`, which validates as the new API requires). Both versions share core/v1's stored
/// collection; events.k8s.io/v1 is served through [`EventsV1Converter`].
pub(crate) fn strategies(strict: bool) -> KindStrategies {
    KindStrategies {
        strategy: Arc::new(EventStrategy { strict }),
        table: Some(table()),
    }
}

/// The printer columns of events (the same for both versions, as upstream's shared storage
/// prints them).
fn table() -> TableConvertor {
    fn wide(column: PrinterColumn) -> PrinterColumn {
        PrinterColumn {
            priority: 1,
            ..column
        }
    }
    TableConvertor {
        order: None,
        columns: vec![
            column(
                "Last Seen",
                "The time at which the most recent occurrence of this event was recorded.",
                0,
            ),
            column(
                "Type",
                "Type of this event (Normal, Warning), new types could be added in the future",
                0,
            ),
            column(
                "Reason",
                "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
                0,
            ),
            column("Object", "The object that this event is about.", 0),
            wide(column(
                "Subobject",
                "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.",
                0,
            )),
            wide(column(
                "Source",
                "The component reporting this event. Should be a short machine understandable string.",
                0,
            )),
            column(
                "Message",
                "A human-readable description of the status of this operation.",
                0,
            ),
            wide(column(
                "First Seen",
                "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
                0,
            )),
            wide(column(
                "Count",
                "The number of times this event has occurred.",
                0,
            )),
            PrinterColumn {
                name: "Name".into(),
                type_: "string".into(),
                format: "name".into(),
                description: NAME_DESCRIPTION.into(),
                priority: 1,
            },
        ],
        cells: std::sync::Arc::new(cells),
    }
}

/// LAST SEEN, TYPE, REASON, OBJECT, SUBOBJECT, SOURCE, MESSAGE, FIRST SEEN, COUNT, NAME, as
/// upstream's printEvent (wide). Accepts either served version.
fn cells(object: &Value) -> Vec<Value> {
    let converted;
    let event = if object.get("regarding").is_some()
        || str_of(object, "apiVersion").starts_with("events.k8s.io/")
    {
        converted = to_core(object);
        &converted
    } else {
        object
    };
    let null = Value::Null;
    let field = |key: &str| event.get(key).unwrap_or(&null);
    let mut first_seen = translate_timestamp_since(field("firstTimestamp"));
    if is_zero_time(field("firstTimestamp")) {
        first_seen = translate_timestamp_since(field("eventTime"));
    }
    let mut last_seen = translate_timestamp_since(field("lastTimestamp"));
    if is_zero_time(field("lastTimestamp")) {
        last_seen = first_seen.clone();
    }
    let mut count = int_of(event, "count");
    match event.get("series").filter(|s| !s.is_null()) {
        Some(series) => {
            last_seen = translate_timestamp_since(series.get("lastObservedTime").unwrap_or(&null));
            count = int_of(series, "count");
        }
        None if count == 0 => count = 1,
        None => {}
    }
    let kind = str_at(event, &["involvedObject", "kind"]).to_lowercase();
    let name = str_at(event, &["involvedObject", "name"]);
    let target = if name.is_empty() {
        kind
    } else {
        format!("{kind}/{name}")
    };
    vec![
        Value::from(last_seen),
        Value::from(str_of(event, "type")),
        Value::from(str_of(event, "reason")),
        Value::from(target),
        Value::from(str_at(event, &["involvedObject", "fieldPath"])),
        Value::from(format_source(event)),
        Value::from(str_of(event, "message").trim()),
        Value::from(first_seen),
        Value::from(count),
        Value::from(str_at(event, &["metadata", "name"])),
    ]
}

/// The SOURCE cell: component (or reportingController), then host (or reportingInstance)
/// after a comma when there is one.
fn format_source(event: &Value) -> String {
    let first_non_empty = |a: &[&str], b: &str| {
        let value = str_at(event, a);
        if value.is_empty() {
            str_of(event, b).to_string()
        } else {
            value.to_string()
        }
    };
    let component = first_non_empty(&["source", "component"], "reportingComponent");
    let instance = first_non_empty(&["source", "host"], "reportingInstance");
    if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    }
}

/// The strategy of events; `strict` for events.k8s.io/v1, whose writes get the new-style
/// event validation on top of the legacy one.
pub struct EventStrategy {
    strict: bool,
}

impl Strategy for EventStrategy {
    /// Events take no part in garbage collection, as upstream's.
    fn garbage_collection_policy(&self) -> GarbageCollectionPolicy {
        GarbageCollectionPolicy::Unsupported
    }

    fn prepare_for_create(&self, object: &mut Value) {
        normalize_core(object);
    }

    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        normalize_core(new);
    }

    /// core/v1 events only get the generic name rule (a path segment); events.k8s.io/v1's
    /// strict validation requires a DNS subdomain.
    fn name_validator(&self) -> NameValidator {
        if self.strict {
            kapi_apimachinery::validation::name_is_dns_subdomain
        } else {
            kapi_apimachinery::validation::validate_path_segment_name
        }
    }

    fn validate(&self, object: &Value) -> FieldErrors {
        let mut errs = legacy_validate(object, self.strict);
        if !self.strict {
            return errs;
        }
        errs.extend(validate_core_metadata_finalizers(object));
        errs.extend(validate_series(object));
        if is_zero_time(&object["eventTime"]) {
            errs.push(FieldError::required(&Path::root("eventTime"), ""));
        }
        let event_type = str_of(object, "type");
        if event_type != "Normal" && event_type != "Warning" {
            errs.push(FieldError::invalid(
                &Path::root("type"),
                "",
                format!("has invalid value: {event_type}"),
            ));
        }
        for key in ["firstTimestamp", "lastTimestamp"] {
            if !is_zero_time(&object[key]) {
                errs.push(FieldError::invalid(
                    &Path::root(key),
                    "",
                    "needs to be unset",
                ));
            }
        }
        if int_of(object, "count") != 0 {
            errs.push(FieldError::invalid(
                &Path::root("count"),
                "",
                "needs to be unset",
            ));
        }
        if !str_at(object, &["source", "component"]).is_empty()
            || !str_at(object, &["source", "host"]).is_empty()
        {
            errs.push(FieldError::invalid(
                &Path::root("source"),
                "",
                "needs to be unset",
            ));
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> FieldErrors {
        let mut errs = legacy_validate(new, self.strict);
        if !self.strict {
            return errs;
        }
        errs.extend(validate_core_metadata_finalizers(new));
        if series_value(new) != series_value(old) {
            errs.extend(validate_series(new));
        }
        let reference = |event: &Value, key: &str| render_reference(event.get(key));
        if reference(new, "involvedObject") != reference(old, "involvedObject") {
            errs.push(immutable_rendered(
                &Path::root("involvedObject"),
                reference(new, "involvedObject"),
            ));
        }
        let string = |event: &Value, key: &str| Value::from(str_of(event, key));
        errs.extend(validate_immutable(
            &string(new, "reason"),
            &string(old, "reason"),
            &Path::root("reason"),
        ));
        errs.extend(validate_immutable(
            &string(new, "message"),
            &string(old, "message"),
            &Path::root("message"),
        ));
        if render_source(new) != render_source(old) {
            errs.push(immutable_rendered(
                &Path::root("source"),
                render_source(new),
            ));
        }
        for key in ["firstTimestamp", "lastTimestamp"] {
            if render_time(new, key, false) != render_time(old, key, false) {
                errs.push(immutable_rendered(
                    &Path::root(key),
                    render_time(new, key, false),
                ));
            }
        }
        let count = |event: &Value| Value::from(int_of(event, "count"));
        errs.extend(validate_immutable(
            &count(new),
            &count(old),
            &Path::root("count"),
        ));
        // Upstream checks `reason` twice.
        errs.extend(validate_immutable(
            &string(new, "reason"),
            &string(old, "reason"),
            &Path::root("reason"),
        ));
        errs.extend(validate_immutable(
            &string(new, "type"),
            &string(old, "type"),
            &Path::root("type"),
        ));
        if render_time(new, "eventTime", true) != render_time(old, "eventTime", true) {
            errs.push(immutable_rendered(
                &Path::root("eventTime"),
                render_time(new, "eventTime", true),
            ));
        }
        errs.extend(validate_immutable(
            &string(new, "action"),
            &string(old, "action"),
            &Path::root("action"),
        ));
        if reference(new, "related") != reference(old, "related") {
            errs.push(immutable_rendered(
                &Path::root("related"),
                reference(new, "related"),
            ));
        }
        errs.extend(validate_immutable(
            &string(new, "reportingComponent"),
            &string(old, "reportingComponent"),
            &Path::root("reportingController"),
        ));
        errs.extend(validate_immutable(
            &string(new, "reportingInstance"),
            &string(old, "reportingInstance"),
            &Path::root("reportingInstance"),
        ));
        errs
    }

    fn allow_create_on_update(&self) -> bool {
        true
    }

    /// Both versions' field names: the stored collection has one set of selectable fields
    /// and each version accepts its own names ([`Strategy::supports_field`]).
    fn selectable_fields(&self, object: &Value) -> Vec<(Name, String)> {
        let reference = |key: &str| str_at(object, &["involvedObject", key]).to_string();
        let mut source = str_at(object, &["source", "component"]);
        if source.is_empty() {
            source = str_of(object, "reportingComponent");
        }
        let mut fields = Vec::with_capacity(CORE_FIELDS.len() + 8);
        for (core, events) in CORE_FIELDS.iter().zip(EVENTS_FIELDS).take(7) {
            let value = reference(&core["involvedObject.".len()..]);
            fields.push((Name::Borrowed(*core), value.clone()));
            fields.push((Name::Borrowed(events), value));
        }
        let reporting = str_of(object, "reportingComponent").to_string();
        fields.push((
            Name::Borrowed("reason"),
            str_of(object, "reason").to_string(),
        ));
        fields.push((Name::Borrowed("reportingComponent"), reporting.clone()));
        fields.push((Name::Borrowed("reportingController"), reporting));
        fields.push((Name::Borrowed("source"), source.to_string()));
        fields.push((Name::Borrowed("type"), str_of(object, "type").to_string()));
        fields
    }

    fn supports_field(&self, field: &str) -> bool {
        if self.strict {
            EVENTS_FIELDS.contains(&field)
        } else {
            CORE_FIELDS.contains(&field)
        }
    }

    fn selectable_fields_read(&self) -> Option<&[Name]> {
        Some(&[
            Name::Borrowed("involvedObject"),
            Name::Borrowed("source"),
            Name::Borrowed("reportingComponent"),
            Name::Borrowed("reason"),
            Name::Borrowed("type"),
        ])
    }
}

/// Upstream's legacyValidateEvent. `reportingController` is named `reportingComponent` in
/// core/v1 errors, as its JSON field is.
fn legacy_validate(event: &Value, strict: bool) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let reporting_path = Path::root(if strict {
        "reportingController"
    } else {
        "reportingComponent"
    });
    let namespace = str_at(event, &["metadata", "namespace"]);
    let involved_namespace = str_at(event, &["involvedObject", "namespace"]);
    let namespace_path = Path::root("involvedObject").child("namespace");
    let mismatch = || {
        FieldError::invalid(
            &namespace_path,
            involved_namespace,
            "does not match event.namespace",
        )
    };
    if is_zero_time(&event["eventTime"]) {
        let matches = if involved_namespace.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved_namespace
        };
        if !matches {
            errs.push(mismatch());
        }
    } else {
        if involved_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
            errs.push(mismatch());
        }
        let controller = str_of(event, "reportingComponent");
        if controller.is_empty() {
            errs.push(FieldError::required(&reporting_path, ""));
        }
        for msg in is_qualified_name(controller) {
            errs.push(FieldError::invalid(&reporting_path, controller, msg));
        }
        let limited = [
            ("reportingInstance", REPORTING_INSTANCE_LENGTH_LIMIT, true),
            ("action", ACTION_LENGTH_LIMIT, true),
            ("reason", REASON_LENGTH_LIMIT, true),
            ("message", NOTE_LENGTH_LIMIT, false),
        ];
        for (key, limit, required) in limited {
            let value = str_of(event, key);
            if required && value.is_empty() {
                errs.push(FieldError::required(&Path::root(key), ""));
            }
            if value.len() > limit {
                errs.push(FieldError::invalid(
                    &Path::root(key),
                    "",
                    format!("can have at most {limit} characters"),
                ));
            }
        }
    }
    for msg in is_dns1123_subdomain(namespace) {
        errs.push(FieldError::invalid(
            &Path::root("namespace"),
            namespace,
            msg,
        ));
    }
    errs
}

/// The series of a new-style event must have a count of at least 2 and a last observed
/// time.
fn validate_series(event: &Value) -> FieldErrors {
    let mut errs = FieldErrors::new();
    let Some(series) = event.get("series").filter(|s| s.is_object()) else {
        return errs;
    };
    if int_of(series, "count") < 2 {
        errs.push(FieldError::invalid(
            &Path::root("series.count"),
            "",
            "should be at least 2",
        ));
    }
    if is_zero_time(series.get("lastObservedTime").unwrap_or(&Value::Null)) {
        errs.push(FieldError::required(
            &Path::root("series.lastObservedTime"),
            "",
        ));
    }
    errs
}

/// The series for comparisons: `null` when unset.
fn series_value(event: &Value) -> Value {
    event.get("series").cloned().unwrap_or(Value::Null)
}

/// An ObjectReference as upstream prints the internal type (Go field names, every field),
/// or `null`.
fn render_reference(reference: Option<&Value>) -> String {
    let Some(reference) = reference.filter(|r| r.is_object()) else {
        return "null".to_string();
    };
    let fields: Vec<String> = REFERENCE_FIELDS
        .iter()
        .map(|(key, go)| format!("\"{go}\":{}", go_json_string(str_of(reference, key))))
        .collect();
    format!("{{{}}}", fields.join(","))
}

/// An EventSource as upstream prints the internal type.
fn render_source(event: &Value) -> String {
    format!(
        "{{\"Component\":{},\"Host\":{}}}",
        go_json_string(str_at(event, &["source", "component"])),
        go_json_string(str_at(event, &["source", "host"]))
    )
}

/// A time field as its JSON: the normalized text, or `null`.
fn render_time(event: &Value, key: &str, micro: bool) -> String {
    let mut holder = serde_json::json!({ "t": event.get(key).cloned().unwrap_or(Value::Null) });
    normalize_time(&mut holder, "t", micro);
    match &holder["t"] {
        Value::String(text) => go_json_string(text),
        other => other.to_string(),
    }
}

/// An ObjectReference as a typed one writes it: known fields, empty ones omitted.
fn normalize_reference(reference: &Value) -> Value {
    let mut out = Map::new();
    for (key, _) in REFERENCE_FIELDS {
        let value = str_of(reference, key);
        if !value.is_empty() {
            out.insert(key.to_string(), Value::from(value));
        }
    }
    Value::Object(out)
}

/// An EventSource as a typed one writes it.
fn normalize_source(source: &Value) -> Value {
    let mut out = Map::new();
    for key in ["component", "host"] {
        let value = str_of(source, key);
        if !value.is_empty() {
            out.insert(key.to_string(), Value::from(value));
        }
    }
    Value::Object(out)
}

/// A core/v1 Event as the API writes it back: every non-omitempty field present (`null`
/// times, empty references, empty reporting strings), empty optional ones dropped, times in
/// their metav1 forms.
fn normalize_core(event: &mut Value) {
    let Some(fields) = event.as_object_mut() else {
        return;
    };
    let null = Value::Null;
    let reference = normalize_reference(fields.get("involvedObject").unwrap_or(&null));
    fields.insert("involvedObject".into(), reference);
    match fields.get("related") {
        Some(related) if related.is_object() => {
            let related = normalize_reference(related);
            fields.insert("related".into(), related);
        }
        _ => {
            fields.remove("related");
        }
    }
    let source = normalize_source(fields.get("source").unwrap_or(&null));
    fields.insert("source".into(), source);
    for key in ["reason", "message", "type", "action"] {
        if fields.get(key).is_none_or(|v| v.is_null() || v == "") {
            fields.remove(key);
        }
    }
    if fields.get("count").is_none_or(|v| v.is_null() || v == 0) {
        fields.remove("count");
    }
    for key in ["reportingComponent", "reportingInstance"] {
        if !fields.get(key).is_some_and(Value::is_string) {
            fields.insert(key.into(), Value::from(""));
        }
    }
    match fields.get_mut("series") {
        Some(series) if series.is_object() => {
            normalize_time(series, "lastObservedTime", true);
            if let Some(series) = series.as_object_mut()
                && series.get("count").is_none_or(|v| v.is_null() || v == 0)
            {
                series.remove("count");
            }
        }
        _ => {
            fields.remove("series");
        }
    }
    normalize_time(event, "firstTimestamp", false);
    normalize_time(event, "lastTimestamp", false);
    normalize_time(event, "eventTime", true);
}

/// The fields renamed between events.k8s.io/v1 (first) and core/v1 (second).
const RENAMED: [(&str, &str); 9] = [
    ("regarding", "involvedObject"),
    ("related", "related"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("reportingInstance", "reportingInstance"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// The fields with the same name in both versions.
const SAME: [&str; 5] = ["eventTime", "series", "action", "reason", "type"];

/// An events.k8s.io/v1 Event as a core/v1 one (normalized).
fn to_core(event: &Value) -> Value {
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::from("v1"));
    out.insert("kind".into(), Value::from("Event"));
    if let Some(metadata) = event.get("metadata") {
        out.insert("metadata".into(), metadata.clone());
    }
    for (from, to) in RENAMED {
        if let Some(value) = event.get(from) {
            out.insert(to.into(), value.clone());
        }
    }
    for key in SAME {
        if let Some(value) = event.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    let mut out = Value::Object(out);
    normalize_core(&mut out);
    out
}

/// A core/v1 Event as an events.k8s.io/v1 one, with the fields a typed events.k8s.io/v1
/// Event always writes.
fn from_core(event: &Value) -> Value {
    let mut core = event.clone();
    normalize_core(&mut core);
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::from("events.k8s.io/v1"));
    out.insert("kind".into(), Value::from("Event"));
    if let Some(metadata) = core.get("metadata") {
        out.insert("metadata".into(), metadata.clone());
    }
    for (to, from) in RENAMED {
        if let Some(value) = core.get(from) {
            out.insert(to.into(), value.clone());
        }
    }
    for key in SAME {
        if let Some(value) = core.get(key) {
            out.insert(key.into(), value.clone());
        }
    }
    // events.k8s.io/v1 writes these even when empty, and omits empty reporting strings.
    for key in ["reportingController", "reportingInstance"] {
        if out.get(key).is_some_and(|v| v == "") {
            out.remove(key);
        }
    }
    if let Some(Value::Object(series)) = out.get_mut("series") {
        series.entry("count").or_insert(Value::from(0));
        series.entry("lastObservedTime").or_insert(Value::Null);
    }
    Value::Object(out)
}

/// Converts events.k8s.io/v1 Events to and from the stored core/v1 form.
pub struct EventsV1Converter;

impl Converter for EventsV1Converter {
    fn stored_form(&self, object: Value) -> Result<Value, kapi_apimachinery::status::ApiError> {
        if !object.is_object() {
            return Err(kapi_apimachinery::status::ApiError::bad_request(
                "an Event must be a JSON object",
            ));
        }
        Ok(to_core(&object))
    }

    fn served_form(&self, object: Value) -> Result<Value, kapi_apimachinery::status::ApiError> {
        Ok(from_core(&object))
    }
}

#[cfg(test)]
mod tests;
