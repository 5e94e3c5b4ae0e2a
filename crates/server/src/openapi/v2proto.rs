//! The protobuf form of the OpenAPI v2 document (`application/com.github.proto-openapi.spec.v2@v1.0+protobuf`):
//! the swagger JSON encoded as gnostic's `openapi.v2.Document` message, which kubectl
//! asks for to validate manifests on the client (e.g. the items of a `kind: List`).
//!
//! Only the parts kube-apiserver's documents use are encoded: info, paths with their
//! operations, parameters and responses, definitions, shared parameters and security.
//! Values gnostic keeps as `Any` (vendor extensions, defaults, enums) carry their YAML text;
//! JSON text is YAML.

use serde_json::{Map, Value};

/// The media type clients ask for the protobuf v2 document with.
pub const MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The Content-Type it is served with (`@` is no token character; this is upstream's form,
/// which clients also accept).
pub const CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// A protobuf message being written.
#[derive(Default)]
struct Message(Vec<u8>);

impl Message {
    fn varint(&mut self, mut value: u64) {
        while value >= 0x80 {
            self.0.push((value as u8) | 0x80);
            value >>= 7;
        }
        self.0.push(value as u8);
    }

    fn tag(&mut self, field: u32, wire_type: u32) {
        self.varint(u64::from(field << 3 | wire_type));
    }

    fn bytes(&mut self, field: u32, bytes: &[u8]) {
        self.tag(field, 2);
        self.varint(bytes.len() as u64);
        self.0.extend_from_slice(bytes);
    }

    fn string(&mut self, field: u32, value: Option<&Value>) {
        if let Some(text) = value.and_then(Value::as_str).filter(|t| !t.is_empty()) {
            self.bytes(field, text.as_bytes());
        }
    }

    fn strings(&mut self, field: u32, value: Option<&Value>) {
        for text in value.and_then(Value::as_array).into_iter().flatten() {
            if let Some(text) = text.as_str() {
                self.bytes(field, text.as_bytes());
            }
        }
    }

    fn boolean(&mut self, field: u32, value: Option<&Value>) {
        if value.and_then(Value::as_bool) == Some(true) {
            self.tag(field, 0);
            self.varint(1);
        }
    }

    fn int64(&mut self, field: u32, value: Option<&Value>) {
        if let Some(n) = value.and_then(Value::as_i64).filter(|n| *n != 0) {
            self.tag(field, 0);
            self.varint(n as u64);
        }
    }

    fn double(&mut self, field: u32, value: Option<&Value>) {
        if let Some(n) = value.and_then(Value::as_f64) {
            self.tag(field, 1);
            self.0.extend_from_slice(&n.to_le_bytes());
        }
    }

    fn message(&mut self, field: u32, message: Message) {
        self.bytes(field, &message.0);
    }

    /// gnostic's `Any`: the value's YAML text (field 2).
    fn any(&mut self, field: u32, value: Option<&Value>) {
        if let Some(value) = value {
            let mut any = Message::default();
            any.bytes(
                2,
                serde_json::to_string(value).unwrap_or_default().as_bytes(),
            );
            self.message(field, any);
        }
    }

    /// `repeated NamedAny vendor_extension`: the `x-` members of `object`.
    fn extensions(&mut self, field: u32, object: &Map<String, Value>) {
        for (name, value) in object.iter().filter(|(k, _)| k.starts_with("x-")) {
            let mut named = Message::default();
            named.bytes(1, name.as_bytes());
            named.any(2, Some(value));
            self.message(field, named);
        }
    }

    /// A `repeated Named<T>` entry: `name` (1) and the message `value` (2).
    fn named(&mut self, field: u32, name: &str, value: Message) {
        let mut named = Message::default();
        named.bytes(1, name.as_bytes());
        named.message(2, value);
        self.message(field, named);
    }
}

fn object(value: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    value
        .as_object()
        .unwrap_or_else(|| EMPTY.get_or_init(Map::new))
}

/// Encodes a swagger 2.0 document as gnostic's `openapi.v2.Document`.
pub fn encode(doc: &Value) -> Vec<u8> {
    let mut out = Message::default();
    out.string(1, doc.get("swagger"));
    let mut info = Message::default();
    info.string(1, doc.pointer("/info/title"));
    info.string(2, doc.pointer("/info/version"));
    out.message(2, info);
    let mut paths = Message::default();
    for (path, item) in object(&doc["paths"]) {
        paths.named(2, path, path_item(item));
    }
    out.message(8, paths);
    let mut definitions = Message::default();
    for (name, definition) in object(&doc["definitions"]) {
        definitions.named(1, name, schema(definition));
    }
    out.message(9, definitions);
    let mut parameters = Message::default();
    for (name, param) in object(&doc["parameters"]) {
        parameters.named(1, name, parameter(param));
    }
    out.message(10, parameters);
    for requirement in doc["security"].as_array().into_iter().flatten() {
        let mut message = Message::default();
        for (name, scopes) in object(requirement) {
            let mut array = Message::default();
            array.strings(1, Some(scopes));
            message.named(1, name, array);
        }
        out.message(12, message);
    }
    let mut security = Message::default();
    for (name, scheme) in object(&doc["securityDefinitions"]) {
        let mut api_key = Message::default();
        for (field, key) in [(1, "type"), (2, "name"), (3, "in"), (4, "description")] {
            api_key.string(field, scheme.get(key));
        }
        let mut item = Message::default();
        item.message(2, api_key);
        security.named(1, name, item);
    }
    out.message(13, security);
    out.0
}

fn path_item(item: &Value) -> Message {
    let mut out = Message::default();
    let methods = [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ];
    for (field, method) in methods {
        if let Some(op) = item.get(method) {
            out.message(field, operation(op));
        }
    }
    for param in item["parameters"].as_array().into_iter().flatten() {
        out.message(9, parameters_item(param));
    }
    out.extensions(10, object(item));
    out
}

fn operation(op: &Value) -> Message {
    let mut out = Message::default();
    out.strings(1, op.get("tags"));
    out.string(2, op.get("summary"));
    out.string(3, op.get("description"));
    out.string(5, op.get("operationId"));
    out.strings(6, op.get("produces"));
    out.strings(7, op.get("consumes"));
    for param in op["parameters"].as_array().into_iter().flatten() {
        out.message(8, parameters_item(param));
    }
    let mut responses = Message::default();
    for (code, response) in object(&op["responses"]) {
        let mut value = Message::default();
        let mut message = Message::default();
        message.string(1, response.get("description"));
        if let Some(body) = response.get("schema") {
            let mut item = Message::default();
            item.message(1, schema(body));
            message.message(2, item);
        }
        value.message(1, message);
        responses.named(1, code, value);
    }
    out.message(9, responses);
    out.strings(10, op.get("schemes"));
    out.boolean(11, op.get("deprecated"));
    out.extensions(13, object(op));
    out
}

/// `ParametersItem`: a `$ref` to a shared parameter, or the parameter itself.
fn parameters_item(param: &Value) -> Message {
    let mut out = Message::default();
    match param.get("$ref") {
        Some(reference) => {
            let mut json_reference = Message::default();
            json_reference.string(1, Some(reference));
            out.message(2, json_reference);
        }
        None => out.message(1, parameter(param)),
    }
    out
}

/// `Parameter`: a body parameter, or a query, path or header one.
fn parameter(param: &Value) -> Message {
    let mut out = Message::default();
    let at = param["in"].as_str().unwrap_or_default();
    if at == "body" {
        let mut body = Message::default();
        body.string(1, param.get("description"));
        body.string(2, param.get("name"));
        body.string(3, param.get("in"));
        body.boolean(4, param.get("required"));
        if let Some(body_schema) = param.get("schema") {
            body.message(5, schema(body_schema));
        }
        body.extensions(6, object(param));
        out.message(1, body);
        return out;
    }
    // Header, path and query sub-schemas number their fields alike, except that query
    // parameters have `allowEmptyValue` (5) before `type`.
    let (oneof, shift) = match at {
        "header" => (1, 0),
        "path" => (4, 0),
        _ => (3, 1),
    };
    let mut sub = Message::default();
    sub.boolean(1, param.get("required"));
    sub.string(2, param.get("in"));
    sub.string(3, param.get("description"));
    sub.string(4, param.get("name"));
    sub.string(5 + shift, param.get("type"));
    sub.string(6 + shift, param.get("format"));
    sub.boolean(19 + shift, param.get("uniqueItems"));
    sub.extensions(22 + shift, object(param));
    let mut non_body = Message::default();
    non_body.message(oneof, sub);
    out.message(2, non_body);
    out
}

/// gnostic's `Schema`.
fn schema(value: &Value) -> Message {
    let mut out = Message::default();
    let fields = object(value);
    out.string(1, fields.get("$ref"));
    out.string(2, fields.get("format"));
    out.string(3, fields.get("title"));
    out.string(4, fields.get("description"));
    out.any(5, fields.get("default"));
    out.double(7, fields.get("maximum"));
    out.double(9, fields.get("minimum"));
    out.int64(11, fields.get("maxLength"));
    out.int64(12, fields.get("minLength"));
    out.string(13, fields.get("pattern"));
    out.int64(14, fields.get("maxItems"));
    out.int64(15, fields.get("minItems"));
    out.boolean(16, fields.get("uniqueItems"));
    out.strings(19, fields.get("required"));
    for choice in fields
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.any(20, Some(choice));
    }
    match fields.get("additionalProperties") {
        Some(Value::Bool(allowed)) => {
            let mut item = Message::default();
            item.tag(2, 0);
            item.varint(u64::from(*allowed));
            out.message(21, item);
        }
        Some(inner @ Value::Object(_)) => {
            let mut item = Message::default();
            item.message(1, schema(inner));
            out.message(21, item);
        }
        _ => {}
    }
    if let Some(ty) = fields.get("type") {
        let mut item = Message::default();
        match ty {
            Value::Array(_) => item.strings(1, Some(ty)),
            single => item.string(1, Some(single)),
        }
        out.message(22, item);
    }
    if let Some(items) = fields.get("items") {
        let mut item = Message::default();
        item.message(1, schema(items));
        out.message(23, item);
    }
    for part in fields
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        out.message(24, schema(part));
    }
    if let Some(properties) = fields.get("properties") {
        let mut message = Message::default();
        for (name, property) in object(properties) {
            message.named(1, name, schema(property));
        }
        out.message(25, message);
    }
    out.boolean(27, fields.get("readOnly"));
    out.extensions(31, fields);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn varints_and_fields_use_the_wire_format() {
        let mut message = Message::default();
        message.varint(300);
        assert_eq!(message.0, [0xac, 0x02]);
        let mut message = Message::default();
        message.string(1, Some(&json!("2.0")));
        message.boolean(4, Some(&json!(true)));
        message.boolean(5, Some(&json!(false)));
        assert_eq!(message.0, [0x0a, 3, b'2', b'.', b'0', 0x20, 1]);
    }

    #[test]
    fn schemas_carry_types_properties_and_extensions() {
        let encoded = schema(&json!({
            "type": "object",
            "required": ["a"],
            "properties": {"a": {"type": "string"}},
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "Pod", "version": "v1"}]
        }));
        let mut want = Message::default();
        want.strings(19, Some(&json!(["a"])));
        let mut ty = Message::default();
        ty.string(1, Some(&json!("object")));
        want.message(22, ty);
        let mut props = Message::default();
        let mut a = Message::default();
        let mut a_ty = Message::default();
        a_ty.string(1, Some(&json!("string")));
        a.message(22, a_ty);
        props.named(1, "a", a);
        want.message(25, props);
        let mut named = Message::default();
        named.bytes(1, b"x-kubernetes-group-version-kind");
        let mut any = Message::default();
        any.bytes(2, br#"[{"group":"","kind":"Pod","version":"v1"}]"#);
        named.message(2, any);
        want.message(31, named);
        assert_eq!(encoded.0, want.0);
    }

    #[test]
    fn query_and_path_parameters_number_their_fields() {
        let query = parameter(
            &json!({"in": "query", "name": "pretty", "type": "string", "uniqueItems": true}),
        );
        let mut sub = Message::default();
        sub.string(2, Some(&json!("query")));
        sub.string(4, Some(&json!("pretty")));
        sub.string(6, Some(&json!("string")));
        sub.boolean(20, Some(&json!(true)));
        let mut non_body = Message::default();
        non_body.message(3, sub);
        let mut want = Message::default();
        want.message(2, non_body);
        assert_eq!(query.0, want.0);
    }
}
