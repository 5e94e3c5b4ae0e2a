//! Property-based tests of the decoders that read client input straight off a request:
//! label and field selectors (`labelSelector=`, `fieldSelector=`), RequestInfo resolution
//! (method, path and query of every request) and Go's JSON syntax check (`gojson`).
//!
//! Every one of these sees hostile input before authentication or validation, so each
//! property first asserts that no input panics the server, and then a real property of the
//! result: a parsed selector prints to a canonical form that parses back to the same
//! selector and matches the same labels as a model of the semantics; a path built from
//! known parts resolves to those parts, also when percent-encoded; a query string built by
//! percent-encoding decodes back to its pairs; `check_valid` accepts what serde_json accepts
//! and reports truncation as Go does.
//!
//! Each property runs proptest's default of 256 cases (a few seconds in CI). For a long run:
//! `PROPTEST_CASES=100000 cargo test -p kapi-apimachinery --test properties`.

use std::collections::BTreeMap;

use kapi_apimachinery::fields::{self, escape_value, unescape_value};
use kapi_apimachinery::gojson::{check_valid, unmarshal_map_error};
use kapi_apimachinery::goyaml;
use kapi_apimachinery::labels::{self, Operator, Requirement};
use kapi_apimachinery::request_info::{RequestInfoFactory, parse_query};
use proptest::prelude::*;
use serde_json::Value;

// ---------------------------------------------------------------------------------------
// Shared strategies
// ---------------------------------------------------------------------------------------

/// Strings glued together from `pieces` (up to `max` of them): input that reaches deep into
/// a grammar far more often than uniformly random strings do.
fn soup(pieces: &'static [&'static str], max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(pieces), 0..max).prop_map(|p| p.concat())
}

/// Hostile input for a grammar: arbitrary unicode, or a soup of its alphabet.
fn hostile(pieces: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![any::<String>(), soup(pieces, 24)]
}

/// Any JSON value, nested at most 4 deep with at most 6 members per level.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from), // NaN and infinities become null
        "\\PC{0,8}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map("\\PC{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

// ---------------------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------------------

const LABEL_ALPHABET: &[&str] = &[
    "a",
    "b",
    "x.y/z",
    "k8s.io/app",
    "in",
    "notin",
    "=",
    "==",
    "!=",
    "!",
    "(",
    ")",
    ",",
    " ",
    "\t",
    "\n",
    "<",
    ">",
    "1",
    "-1",
    "_",
    ".",
    "/",
    "é",
    "日本",
    "\0",
    "\\",
    "\"",
    "'",
    "~",
];

/// A valid label key: an optional DNS-subdomain prefix and a name of up to 12 characters.
fn label_key() -> impl Strategy<Value = String> {
    "([a-z]{1,4}(\\.[a-z]{1,4}){0,2}/)?[a-zA-Z0-9]([-a-zA-Z0-9_.]{0,10}[a-zA-Z0-9])?"
}

/// A valid label value (possibly empty).
fn label_value() -> impl Strategy<Value = String> {
    "([A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?)?"
}

/// A valid requirement; the values of `in`/`notin` are distinct but in any order (the
/// printed form sorts them).
fn label_requirement() -> impl Strategy<Value = Requirement> {
    let op = prop::sample::select(vec![
        Operator::Equals,
        Operator::DoubleEquals,
        Operator::NotEquals,
        Operator::In,
        Operator::NotIn,
        Operator::Exists,
        Operator::DoesNotExist,
        Operator::GreaterThan,
        Operator::LessThan,
    ]);
    let values = prop::collection::btree_set(label_value(), 1..4)
        .prop_flat_map(|set| Just(set.into_iter().collect::<Vec<_>>()).prop_shuffle());
    (label_key(), op, label_value(), values, any::<u32>()).prop_map(
        |(key, op, one, set, number)| {
            let values = match op {
                Operator::Exists | Operator::DoesNotExist => Vec::new(),
                Operator::In | Operator::NotIn => set,
                Operator::GreaterThan | Operator::LessThan => vec![number.to_string()],
                _ => vec![one],
            };
            Requirement::new(&key, op, values).expect("generated requirement is valid")
        },
    )
}

/// What a requirement means, written from the documented semantics, independently of
/// `Requirement::matches`.
fn model_matches(r: &Requirement, labels: &BTreeMap<String, String>) -> bool {
    let value = labels.get(r.key()).map(String::as_str);
    let listed = |v: &str| r.values().iter().any(|x| x == v);
    // Both sides of `>`/`<` as integers; anything else fails the requirement.
    let numbers = || {
        Some((
            value?.parse::<i64>().ok()?,
            r.values()[0].parse::<i64>().ok()?,
        ))
    };
    match r.operator() {
        Operator::Equals | Operator::DoubleEquals | Operator::In => value.is_some_and(listed),
        Operator::NotEquals | Operator::NotIn => !value.is_some_and(listed),
        Operator::Exists => value.is_some(),
        Operator::DoesNotExist => value.is_none(),
        Operator::GreaterThan => numbers().is_some_and(|(v, bound)| v > bound),
        Operator::LessThan => numbers().is_some_and(|(v, bound)| v < bound),
    }
}

/// The requirement the parser yields for `r`: its values sorted.
fn parsed_form(r: &Requirement) -> Requirement {
    let mut values = r.values().to_vec();
    values.sort();
    Requirement::new(r.key(), r.operator(), values).unwrap()
}

/// Labels drawn from the keys the requirements use (so they match sometimes), plus others.
fn labels_for(reqs: &[Requirement]) -> impl Strategy<Value = BTreeMap<String, String>> + use<> {
    let mut keys: Vec<String> = reqs.iter().map(|r| r.key().to_string()).collect();
    keys.push("other".into());
    let value = prop_oneof![
        label_value(),
        any::<u32>().prop_map(|n| n.to_string()),
        prop::sample::select(
            reqs.iter()
                .flat_map(|r| r.values().to_vec())
                .chain([String::new()])
                .collect::<Vec<_>>()
        ),
    ];
    prop::collection::btree_map(prop::sample::select(keys), value, 0..6)
}

/// A valid selector's requirements with a set of labels to match against.
fn selector_and_labels() -> impl Strategy<Value = (Vec<Requirement>, BTreeMap<String, String>)> {
    prop::collection::vec(label_requirement(), 0..5)
        .prop_flat_map(|reqs| (Just(reqs.clone()), labels_for(&reqs)))
}

/// Selector-shaped text: requirements of valid and broken keys, operators and values,
/// joined by valid and broken separators, so that many parse and many almost do.
fn label_like() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        8 => label_key(),
        1 => prop::sample::select(&["!", "in", "notin", "a b", "", "é", "-a", "a/b/c"][..])
            .prop_map(String::from),
    ];
    let op = prop::sample::select(
        &[
            "", "=", "==", "!=", " in ", " notin ", ">", "<", "!", " ", "==",
        ][..],
    );
    let value = prop_oneof![
        4 => label_value(),
        1 => prop::sample::select(
            &["(a,b)", "(b, a)", "()", "(,a)", "(a b)", "(a", "1", "-1", ")", "a=b"][..]
        )
            .prop_map(String::from),
    ];
    let requirement = (prop::bool::weighted(0.15), key, op, value)
        .prop_map(|(not, k, op, v)| format!("{}{k}{op}{v}", if not { "!" } else { "" }));
    let separator = prop::sample::select(&[",", ",", ",", ", ", ",,", " "][..]);
    prop::collection::vec((requirement, separator), 0..4).prop_map(|parts| {
        let mut out = String::new();
        for (i, (r, sep)) in parts.iter().enumerate() {
            if i > 0 {
                out.push_str(sep);
            }
            out.push_str(r);
        }
        out
    })
}

proptest! {
    /// Hostile `labelSelector`s never panic, and whatever parses has a canonical form that
    /// parses back to the same selector and prints the same again (a selector the server
    /// accepted and echoes back, e.g. in a watch cache key, must mean the same).
    #[test]
    fn label_selector_canonical_form_reparses(
        s in prop_oneof![hostile(LABEL_ALPHABET), label_like()],
    ) {
        if let Ok(selector) = labels::Selector::parse(&s) {
            let printed = selector.to_string();
            let again = labels::Selector::parse(&printed);
            prop_assert_eq!(again.as_ref(), Ok(&selector), "canonical form {:?}", printed);
            prop_assert_eq!(again.unwrap().to_string(), printed);
        }
    }

    /// A selector built from valid requirements prints to text that parses back to those
    /// requirements (values sorted) and prints the same again, and parsed or not it
    /// matches labels as the semantics say.
    #[test]
    fn label_selector_round_trips_and_matches((reqs, labels) in selector_and_labels()) {
        let selector = labels::Selector::from_requirements(reqs.clone());
        let printed = selector.to_string();
        let parsed = labels::Selector::parse(&printed);
        let want = labels::Selector::from_requirements(reqs.iter().map(parsed_form).collect());
        prop_assert_eq!(parsed.as_ref(), Ok(&want), "printed {:?}", printed);
        prop_assert_eq!(parsed.as_ref().unwrap().to_string(), printed);
        let want = reqs.iter().all(|r| model_matches(r, &labels));
        prop_assert_eq!(selector.matches(&labels), want);
        prop_assert_eq!(parsed.unwrap().matches(&labels), want);
    }
}

// ---------------------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------------------

const FIELD_ALPHABET: &[&str] = &[
    "metadata.name",
    "spec.x",
    "a",
    "=",
    "==",
    "!=",
    "!",
    ",",
    "\\",
    "\\,",
    "\\=",
    "\\\\",
    " ",
    "é",
    "日本",
    "\0",
    "%",
    "in",
];

/// A field requirement's parts: a dotted field name, an operator, any value.
fn field_term() -> impl Strategy<Value = (String, &'static str, String)> {
    (
        "[a-z]{1,6}(\\.[a-zA-Z]{1,6}){0,2}",
        prop::sample::select(&["=", "==", "!="][..]),
        prop_oneof!["\\PC{0,8}", soup(&["a", ",", "=", "\\", "!", " ", "é"], 6)],
    )
}

/// The requirements in an order-independent form.
fn sorted_terms(selector: &fields::Selector) -> Vec<(String, Operator, String)> {
    let mut terms: Vec<_> = selector
        .requirements()
        .iter()
        .map(|r| (r.field.clone(), r.operator, r.value.clone()))
        .collect();
    terms.sort_by(|a, b| (&a.0, a.1.as_str(), &a.2).cmp(&(&b.0, b.1.as_str(), &b.2)));
    terms
}

proptest! {
    /// Hostile `fieldSelector`s never panic, and whatever parses prints to a form that
    /// parses to the same terms (upstream sorts terms by their raw text, so only the set of
    /// terms is compared) and that is a fixed point of parse-then-print.
    #[test]
    fn field_selector_canonical_form_reparses(s in hostile(FIELD_ALPHABET)) {
        if let Ok(selector) = fields::Selector::parse(&s) {
            let printed = selector.to_string();
            let again = fields::Selector::parse(&printed);
            prop_assert!(again.is_ok(), "canonical form {:?}: {:?}", printed, again);
            let again = again.unwrap();
            prop_assert_eq!(sorted_terms(&again), sorted_terms(&selector));
            let printed_again = again.to_string();
            prop_assert_eq!(fields::Selector::parse(&printed_again), Ok(again));
        }
    }

    /// A selector written from terms, values escaped, parses to exactly those terms (`==`
    /// as `=`), and matches objects as `field=value` / `field!=value` say (a missing field
    /// is `""`).
    #[test]
    fn field_selector_from_terms_parses_and_matches(
        terms in prop::collection::vec(field_term(), 0..5),
        present in prop::collection::vec(any::<bool>(), 5),
    ) {
        let text: Vec<String> = terms
            .iter()
            .map(|(f, op, v)| format!("{f}{op}{}", escape_value(v)))
            .collect();
        let selector = fields::Selector::parse(&text.join(","));
        prop_assert!(selector.is_ok(), "{:?}: {:?}", text, selector);
        let selector = selector.unwrap();
        let op = |op: &str| if op == "!=" { Operator::NotEquals } else { Operator::Equals };
        let mut want: Vec<_> =
            terms.iter().map(|(f, o, v)| (f.clone(), op(o), v.clone())).collect();
        want.sort_by(|a, b| (&a.0, a.1.as_str(), &a.2).cmp(&(&b.0, b.1.as_str(), &b.2)));
        prop_assert_eq!(sorted_terms(&selector), want);

        // The object has the value of every other term's field (the first wins on repeats).
        let mut object: BTreeMap<&str, &str> = BTreeMap::new();
        for ((f, _, v), here) in terms.iter().zip(&present) {
            if *here {
                object.entry(f).or_insert(v);
            }
        }
        let get = |f: &str| object.get(f).map(|v| v.to_string());
        let expected = terms.iter().all(|(f, o, v)| {
            let actual = get(f).unwrap_or_default();
            (actual == *v) == (*o != "!=")
        });
        prop_assert_eq!(selector.matches(get), expected);
    }

    /// Escaping a value and unescaping it gives it back, for any value.
    #[test]
    fn field_value_escape_round_trips(v in any::<String>()) {
        prop_assert_eq!(unescape_value(&escape_value(&v)), Ok(v));
    }
}

// ---------------------------------------------------------------------------------------
// RequestInfo
// ---------------------------------------------------------------------------------------

const PATH_ALPHABET: &[&str] = &[
    "/",
    "api",
    "apis",
    "v1",
    "apps",
    "namespaces",
    "ns",
    "pods",
    "watch",
    "proxy",
    "status",
    "finalize",
    "x",
    "%",
    "%2F",
    "%zz",
    "%4",
    "é",
    ".",
    "..",
    "//",
    "?",
    "+",
];

const QUERY_ALPHABET: &[&str] = &[
    "&",
    "=",
    ";",
    "+",
    "%",
    "%3D",
    "%zz",
    "watch",
    "true",
    "0",
    "fieldSelector",
    "labelSelector",
    "metadata.name",
    "metadata.name%3Dfoo",
    "limit",
    "timeoutSeconds",
    "1",
    "x",
    "!",
    ",",
    "in",
    "(",
    ")",
];

/// Path-shaped text: `/`-separated words of the path grammar and odd segments.
fn path_like() -> impl Strategy<Value = String> {
    let word = prop::sample::select(
        &[
            "api",
            "apis",
            "v1",
            "apps",
            "namespaces",
            "ns",
            "pods",
            "watch",
            "proxy",
            "status",
            "finalize",
            "x",
            "",
            ".",
            "..",
            "%2F",
            "%zz",
            "é",
            "a%20b",
        ][..],
    );
    (prop::collection::vec(word, 0..8), any::<bool>())
        .prop_map(|(words, slash)| format!("/{}{}", words.join("/"), if slash { "/" } else { "" }))
}

/// Any method: the known ones, a lower-case one, or arbitrary text.
fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(&["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "get"][..])
            .prop_map(String::from),
        any::<String>(),
    ]
}

/// What resolution of a request built from parts must give.
#[derive(Clone, Debug)]
struct Request {
    method: &'static str,
    group: Option<String>,
    version: String,
    watch_in_path: bool,
    namespace: Option<String>,
    resource: String,
    name: Option<String>,
    subresource: Option<String>,
}

/// A path segment name: letters, digits, `-` and `.` (no `%`, `/` or `?`).
fn segment() -> impl Strategy<Value = String> {
    "[a-z0-9][-a-z0-9.]{0,10}"
}

/// A resource request built from valid parts. The resource is never one of the words the
/// path grammar gives a meaning to at that place (`namespaces`, `watch`, `proxy`, and the
/// namespace subresources `status` and `finalize`).
fn request() -> impl Strategy<Value = Request> {
    let method = prop::sample::select(&["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"][..]);
    let resource = "[a-z]{1,12}".prop_filter("a path keyword", |r| {
        !matches!(
            r.as_str(),
            "namespaces" | "watch" | "proxy" | "status" | "finalize"
        )
    });
    let name_and_sub = prop::option::of((segment(), prop::option::of("[a-z]{1,8}")));
    (
        method,
        prop::option::of("[a-z]{1,8}(\\.[a-z]{1,8}){0,2}"),
        "v[1-9]((alpha|beta)[1-9])?",
        any::<bool>(),
        prop::option::of(segment()),
        resource,
        name_and_sub,
    )
        .prop_map(|(method, group, version, watch, namespace, resource, ns)| {
            let (name, subresource) = match ns {
                Some((n, s)) => (Some(n), s),
                None => (None, None),
            };
            Request {
                method,
                watch_in_path: watch && method == "GET" && name.is_none(),
                group,
                version,
                namespace,
                resource,
                name,
                subresource,
            }
        })
}

impl Request {
    fn segments(&self) -> Vec<String> {
        let mut out = vec![];
        match &self.group {
            Some(g) => out.extend(["apis".to_string(), g.clone()]),
            None => out.push("api".into()),
        }
        out.push(self.version.clone());
        if self.watch_in_path {
            out.push("watch".into());
        }
        if let Some(ns) = &self.namespace {
            out.extend(["namespaces".to_string(), ns.clone()]);
        }
        out.push(self.resource.clone());
        out.extend(self.name.clone());
        out.extend(self.subresource.clone());
        out
    }

    fn verb(&self) -> &'static str {
        let collection = self.name.is_none();
        match self.method {
            _ if self.watch_in_path => "watch",
            "GET" | "HEAD" if collection => "list",
            "GET" | "HEAD" => "get",
            "POST" => "create",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" if collection => "deletecollection",
            _ => "delete",
        }
    }
}

/// `s` with each byte percent-encoded where `mask` (cycled) says so.
fn percent_encode(s: &str, mask: &[bool]) -> String {
    s.bytes()
        .zip(mask.iter().cycle())
        .map(|(b, &enc)| {
            if enc || !b.is_ascii_alphanumeric() {
                format!("%{b:02X}")
            } else {
                (b as char).to_string()
            }
        })
        .collect()
}

proptest! {
    /// Any method, path and query resolve without panicking; what resolves is consistent:
    /// a non-resource request keeps the method as verb and has no resource fields, a
    /// resource request has an `api`/`apis` prefix and a known (or empty) verb.
    #[test]
    fn request_info_never_panics(
        method in method(),
        path in prop_oneof![hostile(PATH_ALPHABET), path_like()],
        query in prop::option::of(hostile(QUERY_ALPHABET)),
    ) {
        let Ok(info) = RequestInfoFactory::default().resolve(&method, &path, query.as_deref())
        else {
            return Ok(());
        };
        if info.is_resource_request {
            prop_assert!(info.api_prefix == "api" || info.api_prefix == "apis");
            prop_assert!(info.api_prefix == "apis" || info.api_group.is_empty());
            let verbs = ["get", "list", "watch", "create", "update", "patch", "delete",
                "deletecollection", "proxy", ""];
            prop_assert!(verbs.contains(&info.verb.as_str()), "{:?}", info);
            prop_assert!(!info.parts.is_empty());
            prop_assert_eq!(&info.resource, &info.parts[0]);
        } else {
            prop_assert_eq!(info.verb, method.to_lowercase());
            prop_assert!(info.api_version.is_empty() && info.resource.is_empty());
            prop_assert!(info.name.is_empty() && info.namespace.is_empty());
        }
    }

    /// A path built from known parts resolves to those parts, written plainly or with any
    /// of its bytes percent-encoded (except the `/` separators).
    #[test]
    fn request_info_resolves_built_paths(
        req in request(),
        mask in prop::collection::vec(any::<bool>(), 1..8),
        trailing_slash in any::<bool>(),
    ) {
        let segments = req.segments();
        let plain = format!("/{}", segments.join("/"));
        let encoded: Vec<String> = segments.iter().map(|s| percent_encode(s, &mask)).collect();
        let encoded = format!("/{}{}", encoded.join("/"), if trailing_slash { "/" } else { "" });
        for path in [&plain, &encoded] {
            let info = RequestInfoFactory::default().resolve(req.method, path, None);
            prop_assert!(info.is_ok(), "{}: {:?}", path, info);
            let info = info.unwrap();
            prop_assert!(info.is_resource_request);
            prop_assert_eq!(info.verb.as_str(), req.verb());
            prop_assert_eq!(&info.api_prefix, if req.group.is_some() { "apis" } else { "api" });
            prop_assert_eq!(&info.api_group, req.group.as_deref().unwrap_or(""));
            prop_assert_eq!(&info.api_version, &req.version);
            prop_assert_eq!(&info.namespace, req.namespace.as_deref().unwrap_or(""));
            prop_assert_eq!(&info.resource, &req.resource);
            prop_assert_eq!(&info.name, req.name.as_deref().unwrap_or(""));
            prop_assert_eq!(&info.subresource, req.subresource.as_deref().unwrap_or(""));
            let parts: Vec<String> = [Some(req.resource.clone()), req.name.clone(),
                req.subresource.clone()].into_iter().flatten().collect();
            prop_assert_eq!(&info.parts, &parts);
        }
    }

    /// A collection `GET` takes `watch` from the query and its name from a
    /// `metadata.name=<name>` field selector, and keeps the raw selectors.
    #[test]
    fn request_info_reads_list_query(
        watch in prop::option::of(prop::sample::select(&["true", "1", "false", "0", "x"][..])),
        name in segment(),
        label in prop::option::of(label_key()),
    ) {
        let field_selector = format!("metadata.name={name}");
        let mut query = format!("fieldSelector={}", percent_encode(&field_selector, &[false]));
        if let Some(w) = watch {
            query.push_str(&format!("&watch={w}"));
        }
        if let Some(l) = &label {
            query.push_str(&format!("&labelSelector={}", percent_encode(l, &[false])));
        }
        let info = RequestInfoFactory::default()
            .resolve("GET", "/api/v1/namespaces/ns/pods", Some(&query))
            .unwrap();
        let watching = watch.is_some_and(|w| w != "false" && w != "0");
        prop_assert_eq!(&info.verb, if watching { "watch" } else { "list" });
        prop_assert_eq!(&info.field_selector, &field_selector);
        prop_assert_eq!(&info.label_selector, label.as_deref().unwrap_or(""));
        prop_assert_eq!(&info.name, &name);
    }

    /// A query string of percent-encoded pairs decodes back to exactly those pairs (values
    /// of a repeated key in order), whatever the keys and values are.
    #[test]
    fn query_pairs_round_trip(
        pairs in prop::collection::vec((any::<String>(), any::<String>()), 0..6),
        mask in prop::collection::vec(any::<bool>(), 1..4),
    ) {
        let query: Vec<String> = pairs
            .iter()
            .map(|(k, v)| format!("{}={}", percent_encode(k, &mask), percent_encode(v, &mask)))
            .collect();
        let mut want: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (k, v) in &pairs {
            want.entry(k.clone()).or_default().push(v.clone());
        }
        prop_assert_eq!(parse_query(&query.join("&")), want);
    }
}

// ---------------------------------------------------------------------------------------
// Go's JSON syntax check
// ---------------------------------------------------------------------------------------

/// JSON-like ASCII without `\u` escapes: where Go's scanner and serde_json must agree.
const JSON_ALPHABET: &[&str] = &[
    "{", "}", "[", "]", ":", ",", "\"", "\"a\"", "\\", "\\n", "\\\"", "1", "-", "0", ".", "e", "E",
    "+", "true", "false", "null", "tru", "nul", " ", "\t", "\n", "\r", "x", "'", "\u{7f}", "\u{1}",
];

/// A serialized value with one character (from the JSON alphabet) inserted, or one deleted.
fn near_json() -> impl Strategy<Value = String> {
    let edit = prop_oneof![
        prop::sample::select(JSON_ALPHABET).prop_map(Some),
        Just(None),
    ];
    (json_value(), any::<prop::sample::Index>(), edit).prop_map(|(value, at, edit)| {
        let mut chars: Vec<char> = value.to_string().chars().collect();
        let at = at.index(chars.len() + 1);
        match edit {
            Some(insert) => {
                chars.splice(at..at, insert.chars());
            }
            None if at < chars.len() => {
                chars.remove(at);
            }
            None => {}
        }
        chars.into_iter().collect()
    })
}

proptest! {
    /// Arbitrary bytes never panic Go's syntax check (it reads every request body).
    #[test]
    fn go_json_check_never_panics(data in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = check_valid(&data);
        let _ = unmarshal_map_error(&data);
    }

    /// On JSON-like text, Go's syntax check accepts exactly what serde_json's parser
    /// accepts: ASCII soups without `\u` escapes (where the two could differ on lone
    /// surrogates), and serialized values with one character inserted or deleted.
    #[test]
    fn go_json_check_agrees_with_serde_json(
        s in prop_oneof![soup(JSON_ALPHABET, 24), near_json()],
    ) {
        let serde_ok = serde_json::from_str::<serde::de::IgnoredAny>(&s).is_ok();
        prop_assert_eq!(check_valid(s.as_bytes()).is_ok(), serde_ok, "{:?}", s);
    }

    /// Serialized JSON (compact or pretty) is valid; `unmarshal_map_error` accepts exactly
    /// objects and `null`; and every strict prefix of an object or array is Go's "unexpected
    /// end of JSON input".
    #[test]
    fn go_json_check_on_serialized_values(value in json_value(), pretty in any::<bool>()) {
        let text = if pretty {
            serde_json::to_string_pretty(&value).unwrap()
        } else {
            serde_json::to_string(&value).unwrap()
        };
        prop_assert_eq!(check_valid(text.as_bytes()), Ok(()));
        let is_map = value.is_object() || value.is_null();
        prop_assert_eq!(unmarshal_map_error(text.as_bytes()).is_none(), is_map);
        if value.is_object() || value.is_array() {
            for end in 0..text.len() {
                prop_assert_eq!(
                    check_valid(&text.as_bytes()[..end]),
                    Err("unexpected end of JSON input".to_string()),
                    "prefix {:?}", &text.as_bytes()[..end]
                );
            }
        }
    }

    /// YAML written the way kube-apiserver writes it reads back as the value written, whatever
    /// its strings hold (YAML 1.1 words, indicators, breaks, quotes, unprintable characters).
    #[test]
    fn yaml_reads_back_as_written(value in yaml_value()) {
        let text = goyaml::to_string(&value);
        let read: Value = serde_yaml_ng::from_str(&text)
            .map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
        prop_assert_eq!(&read, &value, "{}", text);
    }
}

/// Strings that exercise YAML's scalar styles.
const YAML_PIECES: &[&str] = &[
    "yes",
    "No",
    "on",
    "~",
    "null",
    "0x1F",
    "1_0",
    "1:20",
    "2026-01-02",
    "T10:00:00Z",
    "1e3",
    ".5",
    " ",
    "  ",
    "\n",
    "\t",
    ":",
    ": ",
    "#",
    " #",
    "-",
    "- ",
    "'",
    "\"",
    "\\",
    "a",
    "é",
    "\u{85}",
    "\u{2028}",
    "\r",
    "---",
    "...",
    "?",
    "|",
    ">",
    "{",
    "}",
    "[",
    "]",
    ",",
    "&",
    "*",
    "!",
    "%",
    "@",
    "`",
    "\u{feff}",
    "\u{0}",
    "\u{7f}",
    "<<",
    "😀",
];

/// JSON values whose strings and keys are [`YAML_PIECES`] glued together.
fn yaml_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        soup(YAML_PIECES, 6).prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(soup(YAML_PIECES, 4), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}
