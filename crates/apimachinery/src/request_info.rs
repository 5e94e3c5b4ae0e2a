//! What a request addresses: resource or not, verb, group, version, namespace, resource,
//! subresource and name, read from the method, path and query exactly as
//! k8s.io/apiserver/pkg/endpoints/request's `RequestInfoFactory.NewRequestInfo` does, since
//! authorization, auditing and routing all key on it.

use std::collections::{BTreeMap, BTreeSet};

use crate::validation::is_valid_path_segment_name;
use crate::{fields, labels};

/// The parsed address of a request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    /// True for requests to `/<prefix>/[<group>/]<version>/<resource...>`.
    pub is_resource_request: bool,
    /// The percent-decoded URL path.
    pub path: String,
    /// The Kubernetes verb (`get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
    /// `deletecollection`, `proxy`) for resource requests, the lower-cased HTTP method
    /// otherwise (empty for unknown methods on resources).
    pub verb: String,
    /// `api` or `apis`.
    pub api_prefix: String,
    /// The API group; empty for the core group.
    pub api_group: String,
    /// The API version.
    pub api_version: String,
    /// The namespace; empty for cluster-wide requests. For `/api/v1/namespaces/<name>` it is
    /// the namespace's own name.
    pub namespace: String,
    /// The resource, e.g. `pods`.
    pub resource: String,
    /// The subresource, e.g. `status`.
    pub subresource: String,
    /// The object name, also taken from a `metadata.name=<name>` field selector on list and
    /// watch requests.
    pub name: String,
    /// The path segments from the resource on.
    pub parts: Vec<String>,
    /// The raw `fieldSelector` of list, watch and deletecollection requests (for
    /// authorization with selectors).
    pub field_selector: String,
    /// The raw `labelSelector` of list, watch and deletecollection requests.
    pub label_selector: String,
}

/// Whether requests of `verb` write: every verb but upstream's non-mutating `get`, `list`
/// and `watch` (the request kinds of the in-flight limits, API Priority and Fairness and
/// their metrics).
pub fn is_mutating_verb(verb: &str) -> bool {
    !matches!(verb, "get" | "list" | "watch")
}

/// Resolves requests into `RequestInfo`s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestInfoFactory {
    /// The first path segments of resource requests.
    pub api_prefixes: BTreeSet<String>,
    /// The prefixes followed by an API group (`apis`); the others (`api`) are groupless.
    pub grouped_api_prefixes: BTreeSet<String>,
}

/// Prefixes `api` and `apis`, with groups under `apis`.
impl Default for RequestInfoFactory {
    fn default() -> Self {
        RequestInfoFactory {
            api_prefixes: ["api", "apis"].map(String::from).into(),
            grouped_api_prefixes: ["apis"].map(String::from).into(),
        }
    }
}

/// Verbs that can lead the path after the version (`/api/v1/watch/pods`).
const SPECIAL_VERBS: [&str; 2] = ["proxy", "watch"];

/// Subresources of namespaces that follow the namespace's name directly.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

/// Verbs whose selectors are recorded for authorization.
const VERBS_WITH_SELECTORS: [&str; 3] = ["list", "watch", "deletecollection"];

impl RequestInfoFactory {
    /// Resolves a request. `path` is the path as sent on the request line (percent-encoded,
    /// decoded here as Go's URL parser does); `query` is the raw query string without `?`.
    /// The errors are upstream's for `/…/watch` or `/…/proxy` with nothing after it, which
    /// the server answers with a 500, and Go's `invalid URL escape "%zz"` for a malformed
    /// path, which Go's HTTP server answers with a 400.
    pub fn resolve(
        &self,
        method: &str,
        path: &str,
        query: Option<&str>,
    ) -> Result<RequestInfo, String> {
        let decoded = percent_decode(path, false)?;
        let mut info = RequestInfo {
            path: decoded.clone(),
            verb: method.to_lowercase(),
            ..RequestInfo::default()
        };
        let trimmed = decoded.trim_matches('/');
        let segments: Vec<&str> = if trimmed.is_empty() {
            Vec::new()
        } else {
            trimmed.split('/').collect()
        };
        let Some(rest) = self.split_api_path(&mut info, &segments) else {
            return Ok(info);
        };
        let verb_from_path = SPECIAL_VERBS.contains(&rest[0]);
        let rest = if verb_from_path {
            if rest.len() < 2 {
                let url = match query.filter(|q| !q.is_empty()) {
                    Some(q) => format!("{path}?{q}"),
                    None => path.to_string(),
                };
                return Err(format!(
                    "unable to determine kind and namespace from url, {url}"
                ));
            }
            info.verb = rest[0].to_string();
            &rest[1..]
        } else {
            info.verb = verb_for_method(method).to_string();
            rest
        };
        assign_parts(&mut info, rest);
        let values = parse_query(query.unwrap_or(""));
        if info.name.is_empty() && info.verb == "get" {
            resolve_list_or_watch(&mut info, &values);
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".into();
        }
        if !verb_from_path && VERBS_WITH_SELECTORS.contains(&info.verb.as_str()) {
            info.field_selector = first(&values, "fieldSelector").unwrap_or_default().into();
            info.label_selector = first(&values, "labelSelector").unwrap_or_default().into();
        }
        Ok(info)
    }

    /// Takes the prefix, group and version off a resource path, recording them, and returns
    /// the (non-empty) rest; `None` when the path is not a resource path.
    fn split_api_path<'a>(
        &self,
        info: &mut RequestInfo,
        segments: &'a [&'a str],
    ) -> Option<&'a [&'a str]> {
        let [prefix, rest @ ..] = segments else {
            return None;
        };
        if segments.len() < 3 || !self.api_prefixes.contains(*prefix) {
            return None;
        }
        info.api_prefix = prefix.to_string();
        let rest = if self.grouped_api_prefixes.contains(*prefix) {
            let [group, rest @ ..] = rest else {
                return None;
            };
            if rest.len() < 2 {
                return None;
            }
            info.api_group = group.to_string();
            rest
        } else {
            rest
        };
        info.is_resource_request = true;
        info.api_version = rest[0].to_string();
        Some(&rest[1..])
    }
}

/// Reads namespace, resource, name and subresource from the path after the version (and
/// verb). `namespaces/<ns>/...` sets the namespace; `namespaces/<ns>` alone and its
/// `status` and `finalize` subresources address the namespace object itself.
fn assign_parts(info: &mut RequestInfo, mut parts: &[&str]) {
    if let ["namespaces", namespace, rest @ ..] = parts {
        info.namespace = namespace.to_string();
        if !rest.is_empty() && !NAMESPACE_SUBRESOURCES.contains(&rest[0]) {
            parts = rest;
        }
    }
    info.parts = parts.iter().map(|s| s.to_string()).collect();
    if parts.len() >= 3 && info.verb != "proxy" {
        info.subresource = parts[2].to_string();
    }
    if parts.len() >= 2 {
        info.name = parts[1].to_string();
    }
    info.resource = parts[0].to_string();
}

/// The verb of a resource request whose path does not name one.
fn verb_for_method(method: &str) -> &'static str {
    match method {
        "POST" => "create",
        "GET" | "HEAD" => "get",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        _ => "",
    }
}

/// Turns a collection `get` into `list` or `watch` (`watch` present and neither `false` nor
/// `0`), and takes the name from a `metadata.name=<name>` field selector when all list
/// options decode, as upstream does.
fn resolve_list_or_watch(info: &mut RequestInfo, values: &BTreeMap<String, Vec<String>>) {
    let watch =
        first(values, "watch").is_some_and(|w| w != "0" && !w.eq_ignore_ascii_case("false"));
    info.verb = if watch { "watch" } else { "list" }.into();
    let Some(field_selector) = decode_list_options(values) else {
        return;
    };
    if let Some(name) = field_selector.requires_exact_match("metadata.name")
        && is_valid_path_segment_name(name).is_empty()
    {
        info.name = name.to_string();
    }
}

/// Decodes the list options as upstream's parameter codec does, returning the field
/// selector when everything decodes: `timeoutSeconds` and `limit` must be integers and both
/// selectors must parse.
fn decode_list_options(values: &BTreeMap<String, Vec<String>>) -> Option<fields::Selector> {
    for key in ["timeoutSeconds", "limit"] {
        if let Some(v) = first(values, key) {
            v.parse::<i64>().ok()?;
        }
    }
    labels::Selector::parse(first(values, "labelSelector").unwrap_or("")).ok()?;
    fields::Selector::parse(first(values, "fieldSelector").unwrap_or("")).ok()
}

/// The first value of a query parameter.
fn first<'a>(values: &'a BTreeMap<String, Vec<String>>, key: &str) -> Option<&'a str> {
    values.get(key).and_then(|v| v.first()).map(String::as_str)
}

/// Parses a query string as Go's `url.ParseQuery` does: pairs split on `&`, `+` as space,
/// percent escapes decoded; pairs with a `;` or an invalid escape are skipped. Values keep
/// their order; handlers use the first one.
pub fn parse_query(query: &str) -> BTreeMap<String, Vec<String>> {
    let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for pair in query.split('&') {
        if pair.is_empty() || pair.contains(';') {
            continue;
        }
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if let (Ok(key), Ok(value)) = (percent_decode(key, true), percent_decode(value, true)) {
            values.entry(key).or_default().push(value);
        }
    }
    values
}

/// Decodes the `%XX` escapes of a path segment (Go's `url.PathUnescape`), as upstream
/// decodes the extra keys of impersonation and front-proxy headers.
pub fn path_unescape(s: &str) -> Result<String, String> {
    percent_decode(s, false)
}

/// Decodes `%XX` escapes (and `+` as space in query components). The error is Go's text
/// for an invalid escape.
fn percent_decode(s: &str, plus_is_space: bool) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = b
                    .get(i + 1..i + 3)
                    .filter(|h| h.iter().all(u8::is_ascii_hexdigit));
                let Some(hex) = hex else {
                    let bad: String = s[i..].chars().take(3).collect();
                    return Err(format!("invalid URL escape {}", crate::quote(&bad)));
                };
                let text = std::str::from_utf8(hex).expect("hex digits are ASCII");
                out.push(u8::from_str_radix(text, 16).expect("checked hex digits"));
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests;
