//! Content negotiation: which representation a response takes (from `Accept`) and how a
//! request body is decoded (from `Content-Type`), as kube-apiserver negotiates them.
//!
//! kapi serves JSON, YAML and, for kinds with a protobuf message (the built-in ones),
//! Kubernetes protobuf; the `as=Table` (JSON and YAML only, as upstream) and
//! `as=PartialObjectMetadata[List]` (protobuf too, also for custom resources) transformations
//! of meta.k8s.io; and aggregated discovery. Media ranges are tried by quality, then by
//! specificity, then in order (goautoneg's ParseAccept).

use kapi_apimachinery::status::ApiError;
use serde_json::Value;

use super::{ProtobufError, SchemaProvider};

/// The media types kube-apiserver's serializers offer, for 406 messages (upstream lists
/// protobuf even where the resource's kind has none, as for custom resources).
const SERVED: [&str; 3] = ["application/json", "application/yaml", PROTOBUF];
/// The media types of request bodies kapi decodes, for 415 messages.
const ACCEPTED_BODIES: [&str; 3] = ["application/json", "application/yaml", PROTOBUF];

/// What a response to a resource request looks like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    Json,
    Yaml,
    /// Kubernetes protobuf (`application/vnd.kubernetes.protobuf`).
    Protobuf,
    /// meta.k8s.io Table (v1 or v1beta1), as JSON.
    Table {
        v1beta1: bool,
    },
    /// meta.k8s.io PartialObjectMetadata(List) (v1 or v1beta1), as JSON or protobuf.
    PartialMetadata {
        v1beta1: bool,
        protobuf: bool,
    },
}

impl Output {
    /// Whether the output is protobuf.
    pub fn is_protobuf(self) -> bool {
        matches!(
            self,
            Output::Protobuf | Output::PartialMetadata { protobuf: true, .. }
        )
    }
}

/// One media range of an Accept header.
struct MediaRange<'a> {
    essence: &'a str,
    quality: f32,
    params: Vec<(&'a str, &'a str)>,
}

impl<'a> MediaRange<'a> {
    fn param(&self, name: &str) -> Option<&'a str> {
        self.params
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| *value)
    }

    /// How specific the range is: 2 for `type/subtype`, 1 for `type/*`, 0 for `*/*`.
    fn specificity(&self) -> u8 {
        match self.essence.split_once('/') {
            Some(("*", _)) => 0,
            Some((_, "*")) => 1,
            _ => 2,
        }
    }
}

/// The media ranges of an Accept header, best first: by quality, then specificity, then in
/// the header's order.
fn media_ranges(accept: &str) -> Vec<MediaRange<'_>> {
    let mut ranges: Vec<MediaRange<'_>> = accept
        .split(',')
        .filter_map(|range| {
            let mut parts = range.split(';').map(str::trim);
            let essence = parts.next().filter(|e| !e.is_empty())?;
            let essence = if essence == "*" { "*/*" } else { essence };
            let mut quality = 1.0;
            let params = parts
                .filter_map(|param| {
                    let (key, value) = param.split_once('=')?;
                    let (key, value) = (key.trim(), value.trim().trim_matches('"'));
                    if key == "q" {
                        quality = value.parse().unwrap_or(0.0);
                        return None;
                    }
                    Some((key, value))
                })
                .collect();
            Some(MediaRange {
                essence,
                quality,
                params,
            })
        })
        .collect();
    ranges.sort_by(|a, b| {
        b.quality
            .total_cmp(&a.quality)
            .then(b.specificity().cmp(&a.specificity()))
    });
    ranges
}

/// What a resource handler answers with: one object or a list, named by the Go type
/// kube-apiserver's handler holds (`*core.Pod`, `*unstructured.UnstructuredList`), which its
/// 406 for a PartialObjectMetadata of the other shape names.
#[derive(Clone, Copy, Debug)]
pub enum Shape<'a> {
    Object(&'a str),
    List(&'a str),
}

impl Shape<'_> {
    fn is_list(self) -> bool {
        matches!(self, Shape::List(_))
    }
}

/// Chooses the output for a resource request from its Accept header. `shape` says whether the
/// response is a list (PartialObjectMetadataList) or one object (PartialObjectMetadata);
/// `protobuf` whether the resource's kind has a protobuf message.
pub fn negotiate(
    accept: Option<&str>,
    shape: Shape<'_>,
    protobuf: bool,
) -> Result<Output, ApiError> {
    negotiate_before_read(accept, shape, protobuf)?
}

/// [`negotiate`] in two steps, as upstream refuses: the outer error before anything is read
/// (no representation the endpoint has), the inner one — a PartialObjectMetadata of the
/// wrong shape — only once the object or list was read, so that a read's own error (a 404)
/// comes first.
pub fn negotiate_before_read(
    accept: Option<&str>,
    shape: Shape<'_>,
    protobuf: bool,
) -> Result<Result<Output, ApiError>, ApiError> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Ok(Ok(Output::Json));
    };
    let ranges = media_ranges(accept);
    for range in &ranges {
        if let Some(output) = output_for(range, shape, protobuf) {
            return Ok(output);
        }
    }
    if ranges.iter().any(|range| served_type(range.essence)) {
        // A representation kapi has, with parameters it does not serve (the handler's 406).
        return Err(ApiError::not_acceptable(SERVED));
    }
    Err(router_not_acceptable(shape.is_list()))
}

/// Whether a media range names one of kube-apiserver's representations.
fn served_type(essence: &str) -> bool {
    matches!(
        essence,
        "application/json" | "application/*" | "*/*" | "application/yaml" | PROTOBUF
    )
}

/// The 406 go-restful answers before any handler when no media range names a representation
/// the route produces.
fn router_not_acceptable(list: bool) -> ApiError {
    let mut available = SERVED.join(", ");
    if list {
        available.push_str(", application/json;stream=watch, ");
        available.push_str(PROTOBUF);
        available.push_str(";stream=watch");
    }
    let message = format!("406: Not Acceptable\n\nAvailable representations: {available}");
    super::router_error(406, "NotAcceptable", message)
}

/// The output `range` asks for, if the endpoint has it. Like upstream, a PartialObjectMetadata
/// range is taken whatever the response's shape, and the wrong shape is a 406.
fn output_for(
    range: &MediaRange<'_>,
    shape: Shape<'_>,
    protobuf: bool,
) -> Option<Result<Output, ApiError>> {
    // Wildcards match the serializers in upstream's order: JSON first.
    let (yaml, proto) = match range.essence {
        "application/json" | "application/*" | "*/*" => (false, false),
        "application/yaml" => (true, false),
        PROTOBUF => (false, true),
        _ => return None,
    };
    let Some(as_kind) = range.param("as") else {
        return match (yaml, proto) {
            (true, _) => Some(Ok(Output::Yaml)),
            (_, true) if protobuf => Some(Ok(Output::Protobuf)),
            (_, true) => None,
            _ => Some(Ok(Output::Json)),
        };
    };
    if range.param("g") != Some("meta.k8s.io") {
        return None;
    }
    let v1beta1 = match range.param("v") {
        Some("v1") => false,
        Some("v1beta1") => true,
        _ => return None,
    };
    let partial = Output::PartialMetadata {
        v1beta1,
        protobuf: proto,
    };
    let wrong_shape = |message: String| ApiError::new_generic(406, "NotAcceptable", message);
    match (as_kind, shape) {
        ("Table", _) if !proto => Some(Ok(Output::Table { v1beta1 })),
        ("PartialObjectMetadata", Shape::Object(_)) => Some(Ok(partial)),
        ("PartialObjectMetadataList", Shape::List(_)) => Some(Ok(partial)),
        ("PartialObjectMetadata", Shape::List(go_type)) => Some(Err(wrong_shape(format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({go_type})"
        )))),
        ("PartialObjectMetadataList", Shape::Object(go_type)) => Some(Err(wrong_shape(format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({go_type})"
        )))),
        _ => None,
    }
}

/// The aggregated discovery version a discovery request accepts, if any, and whether in
/// protobuf.
pub fn aggregated_discovery(accept: Option<&str>) -> Option<(&'static str, bool)> {
    for range in media_ranges(accept?) {
        let protobuf = range.essence == PROTOBUF;
        if range.param("g") == Some("apidiscovery.k8s.io")
            && range.param("as") == Some("APIGroupDiscoveryList")
            && (protobuf || range.essence == "application/json")
        {
            match range.param("v") {
                Some("v2") => return Some(("v2", protobuf)),
                Some("v2beta1") => return Some(("v2beta1", protobuf)),
                _ => {}
            }
        }
        if served_type(range.essence) && range.param("as").is_none() {
            return None;
        }
    }
    None
}

/// Whether a discovery document (APIVersions, APIGroupList, APIGroup, APIResourceList) is
/// asked for in protobuf: the best media range kapi serves is protobuf.
pub fn discovery_in_protobuf(accept: Option<&str>) -> bool {
    let Some(accept) = accept else { return false };
    media_ranges(accept)
        .iter()
        .find(|range| served_type(range.essence) && range.param("as").is_none())
        .is_some_and(|range| range.essence == PROTOBUF)
}

/// The format of a request body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyFormat {
    Json,
    Yaml,
    /// Kubernetes' protobuf envelope, which client-go's typed clients send for built-in
    /// types (kubectl create namespace|configmap|...).
    Protobuf,
}

/// The media type of Kubernetes protobuf bodies.
pub const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";

/// Decodes an object body (create, update) as JSON, YAML or, through `schemas`, protobuf per
/// its Content-Type.
pub fn decode_body(
    schemas: Option<&dyn SchemaProvider>,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Value, ApiError> {
    let format = match content_type.map(essence) {
        None | Some("application/json") => BodyFormat::Json,
        Some("application/yaml") => BodyFormat::Yaml,
        Some(PROTOBUF) => BodyFormat::Protobuf,
        Some(_) => return Err(ApiError::unsupported_media_type(ACCEPTED_BODIES)),
    };
    decode(schemas, format, body)
}

/// Decodes a body in `format` into a JSON value.
pub fn decode(
    schemas: Option<&dyn SchemaProvider>,
    format: BodyFormat,
    body: &[u8],
) -> Result<Value, ApiError> {
    let decoded = match format {
        BodyFormat::Json => match std::str::from_utf8(body) {
            Ok(text) => serde_json::from_str(text).map_err(|err| err.to_string()),
            // Go's decoder takes invalid UTF-8 in strings as U+FFFD; so does kapi.
            Err(_) => {
                serde_json::from_str(&String::from_utf8_lossy(body)).map_err(|err| err.to_string())
            }
        },
        BodyFormat::Yaml => serde_yaml_ng::from_slice(body).map_err(|err| err.to_string()),
        BodyFormat::Protobuf => return decode_protobuf(schemas, body),
    };
    match decoded {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(ApiError::bad_request(
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
        )),
        Err(err) => Err(ApiError::bad_request(err)),
    }
}

/// The 400 of a JSON body that does not parse, as upstream's transformDecodeError words it:
/// Go's syntax error and a summary of the body. `None` when Go would parse it.
pub fn malformed_json(kind: &str, body: &[u8]) -> Option<ApiError> {
    let syntax = kapi_apimachinery::gojson::check_valid(body).err()?;
    Some(ApiError::bad_request(format!(
        "the object provided is unrecognized (must be of type {kind}): couldn't get version/kind; json parse error: {syntax} ({})",
        summarize(body)
    )))
}

/// Upstream's summarizeData: the first 30 bytes, as text for an object and as hex otherwise.
fn summarize(body: &[u8]) -> String {
    const MAX: usize = 30;
    let (head, more) = match body.len() > MAX {
        true => (&body[..MAX], " ..."),
        false => (body, ""),
    };
    match body.first() {
        None => "<empty>".to_string(),
        Some(b'{') => format!("{}{more}", String::from_utf8_lossy(head)),
        Some(_) => format!(
            "{}{more}",
            head.iter().map(|b| format!("{b:02x}")).collect::<String>()
        ),
    }
}

/// Decodes a protobuf body with the server's schemas: malformed bodies are 400, kinds they
/// cannot decode 415.
fn decode_protobuf(schemas: Option<&dyn SchemaProvider>, body: &[u8]) -> Result<Value, ApiError> {
    let decoded = match schemas {
        Some(schemas) => schemas.decode_protobuf(body),
        None => Err(ProtobufError::Unsupported),
    };
    decoded.map_err(|err| match err {
        ProtobufError::Unsupported => {
            ApiError::unsupported_media_type(["application/json", "application/yaml"])
        }
        ProtobufError::Malformed(message) => ApiError::bad_request(message),
    })
}

/// The media type without parameters, lowercased.
pub fn essence(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or_default().trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OBJECT: Shape = Shape::Object("*core.Pod");
    const LIST: Shape = Shape::List("*core.PodList");

    #[test]
    fn kubectl_get_accept_is_table() {
        let accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(
            negotiate(Some(accept), LIST, true).unwrap(),
            Output::Table { v1beta1: false }
        );
    }

    #[test]
    fn protobuf_only_for_kinds_that_have_it() {
        let proto = "application/vnd.kubernetes.protobuf";
        assert_eq!(
            negotiate(Some(proto), OBJECT, true).unwrap(),
            Output::Protobuf
        );
        let err = negotiate(Some(proto), OBJECT, false).unwrap_err();
        assert_eq!(err.code(), 406);
        assert_eq!(
            err.status().message,
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        let both = "application/vnd.kubernetes.protobuf,application/json";
        assert_eq!(negotiate(Some(both), OBJECT, false).unwrap(), Output::Json);
        assert_eq!(
            negotiate(Some(both), OBJECT, true).unwrap(),
            Output::Protobuf
        );
        // client-go's protobuf clients.
        let client_go = "application/vnd.kubernetes.protobuf, */*";
        assert_eq!(
            negotiate(Some(client_go), LIST, false).unwrap(),
            Output::Json
        );
    }

    #[test]
    fn quality_then_specificity_then_order() {
        let accept = "application/vnd.kubernetes.protobuf;q=0.5,application/json";
        assert_eq!(negotiate(Some(accept), OBJECT, true).unwrap(), Output::Json);
        let accept = "*/*,application/vnd.kubernetes.protobuf";
        assert_eq!(
            negotiate(Some(accept), OBJECT, true).unwrap(),
            Output::Protobuf
        );
        let accept = "application/yaml;q=0.9,application/json;q=0.9,text/html";
        assert_eq!(negotiate(Some(accept), OBJECT, true).unwrap(), Output::Yaml);
        let err = negotiate(Some("text/html"), LIST, true).unwrap_err();
        assert!(
            err.status().message.ends_with(
                "application/vnd.kubernetes.protobuf, application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
            ),
            "{}",
            err.status().message
        );
    }

    #[test]
    fn tables_are_never_protobuf() {
        let accept =
            "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json";
        assert_eq!(negotiate(Some(accept), LIST, true).unwrap(), Output::Json);
    }

    #[test]
    fn partial_metadata_matches_list_or_object() {
        let list = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert!(negotiate(Some(list), LIST, false).is_ok());
        // The wrong shape is upstream's 406, not a reason to try the next range.
        let then_json = format!("{list},application/json");
        let err = negotiate(Some(&then_json), OBJECT, false).unwrap_err();
        assert_eq!((err.code(), err.reason()), (406, "NotAcceptable"));
        assert_eq!(
            err.status().message,
            "you requested PartialObjectMetadataList, but the requested object is not a list (*core.Pod)"
        );
        let object = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
        let err = negotiate(Some(object), LIST, false).unwrap_err();
        assert_eq!(
            err.status().message,
            "you requested PartialObjectMetadata, but the requested object is a list (*core.PodList)"
        );
        // Another meta version is not a transformation kapi has: the next range serves.
        let v2 = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2,application/json";
        assert_eq!(negotiate(Some(v2), LIST, false).unwrap(), Output::Json);
        let proto =
            "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
        assert_eq!(
            negotiate(Some(proto), LIST, false).unwrap(),
            Output::PartialMetadata {
                v1beta1: false,
                protobuf: true
            }
        );
    }

    #[test]
    fn aggregated_discovery_v2() {
        let accept =
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert_eq!(aggregated_discovery(Some(accept)), Some(("v2", false)));
        assert_eq!(aggregated_discovery(Some("application/json")), None);
        let proto = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert_eq!(aggregated_discovery(Some(proto)), Some(("v2", true)));
        assert!(discovery_in_protobuf(Some(
            "application/vnd.kubernetes.protobuf, */*"
        )));
        assert!(!discovery_in_protobuf(Some(accept)));
    }
}

/// Property tests of the request body decoders (JSON, YAML, protobuf): hostile bytes get a
/// 400 or 415, never a panic, and an object's JSON or YAML text decodes to the object.
/// `PROPTEST_CASES=100000 cargo test -p kapi-server --lib negotiation::properties` for a
/// long run.
#[cfg(test)]
mod properties {
    use proptest::prelude::*;
    use serde_json::Value;

    use super::decode_body;

    const CONTENT_TYPES: [&str; 4] = [
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
        "application/yaml; charset=utf-8",
    ];

    /// JSON values without floats (whose YAML text is not Go's either way), 3 deep.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "\\PC{0,8}".prop_map(Value::from),
            prop::sample::select(vec!["yes", "no", "~", "null", "1e3", "0x1F", "- a", ": b"])
                .prop_map(Value::from),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map("\\PC{0,6}", inner, 0..4)
                    .prop_map(|map| Value::Object(map.into_iter().collect())),
            ]
        })
    }

    fn object() -> impl Strategy<Value = Value> {
        prop::collection::btree_map("\\PC{0,6}", value(), 0..5)
            .prop_map(|map| Value::Object(map.into_iter().collect()))
    }

    proptest! {
        #[test]
        fn hostile_bodies_are_refused_not_panicked(
            body in prop::collection::vec(any::<u8>(), 0..256),
            content_type in prop::sample::select(CONTENT_TYPES.to_vec()),
        ) {
            if let Err(err) = decode_body(None, Some(content_type), &body) {
                prop_assert!(matches!(err.code(), 400 | 415), "{}", err.code());
            }
        }

        #[test]
        fn object_text_decodes_to_the_object(object in object()) {
            let json = serde_json::to_vec(&object).unwrap();
            prop_assert_eq!(decode_body(None, Some("application/json"), &json).unwrap(), object.clone());
            let yaml = serde_yaml_ng::to_string(&object).unwrap();
            prop_assert_eq!(decode_body(None, Some("application/yaml"), yaml.as_bytes()).unwrap(), object);
        }
    }
}
