//! Pretty-printed JSON for people (upstream's `isPrettyPrint` and pretty serializer): a JSON
//! answer of the API (objects, lists, tables, Status errors, discovery) is indented as Go's
//! `json.MarshalIndent(v, "", "  ")` writes it when the request says `?pretty=true` (any
//! value Go's `strconv.ParseBool` takes; `?pretty=false` turns it off), when its `Accept` media
//! type has `pretty=1`, or when its `User-Agent` starts with `curl`, `Wget` or `Mozilla/5.0`.
//! Watches and proxied responses are never indented, as upstream's stream serializer and
//! proxy are not. The body is re-indented as it streams, so a LIST stays streamed.

use http::{HeaderMap, Request, Response, header};
use http_body_util::BodyExt;
use kapi_apimachinery::gojson::Indenter;
use kapi_apimachinery::request_info::RequestInfo;

use super::{Filter, FilterFuture, FilterLayer, Next, call, request_info_of};
use crate::body::Body;

/// The layer that adds [`PrettyJson`].
pub type PrettyJsonLayer = FilterLayer<PrettyJson>;

/// The filter: its configuration, shared by every request (see the module documentation).
#[derive(Clone, Copy, Debug, Default)]
pub struct PrettyJson;

impl Filter for PrettyJson {
    fn filter<S: Next<B>, B: Send + 'static>(&self, inner: S, request: Request<B>) -> FilterFuture {
        let pretty = request_info_of(&request).is_some_and(|info| {
            negotiated(info) && wants_pretty(request.uri().query(), request.headers())
        });
        Box::pin(async move {
            let response = call(inner, request).await;
            Ok(if pretty && is_json(response.headers()) {
                indent(response)
            } else {
                response
            })
        })
    }
}

/// Whether upstream answers the request through content negotiation (where its pretty
/// serializer applies): API resources but not watches or proxies, and discovery.
fn negotiated(info: &RequestInfo) -> bool {
    if info.is_resource_request {
        return info.verb != "watch" && info.verb != "proxy" && info.subresource != "proxy";
    }
    ["/api", "/apis"]
        .iter()
        .any(|root| info.path == *root || info.path.starts_with(&format!("{root}/")))
}

/// Upstream's `isPrettyPrint`, plus the `pretty=1` parameter of the `Accept` media type.
fn wants_pretty(query: Option<&str>, headers: &HeaderMap) -> bool {
    if let Some(value) = query
        .and_then(|query| crate::query::first(query, "pretty"))
        .filter(|value| !value.is_empty())
    {
        return parse_bool(&value);
    }
    let header = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let accept_pretty = header(header::ACCEPT).is_some_and(|accept| {
        accept
            .split(',')
            .flat_map(|range| range.split(';').skip(1))
            .any(|param| param.trim() == "pretty=1")
    });
    let user_agent = header(header::USER_AGENT).unwrap_or_default();
    accept_pretty
        || ["curl", "Wget", "Mozilla/5.0"]
            .iter()
            .any(|human| user_agent.starts_with(human))
}

/// Go's `strconv.ParseBool`; anything else is false, as upstream ignores the error.
fn parse_bool(value: &str) -> bool {
    matches!(value, "1" | "t" | "T" | "TRUE" | "true" | "True")
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.split(';').next().unwrap_or_default().trim() == "application/json")
}

/// The response with its body re-indented as it streams (and so without a length).
fn indent(response: Response<Body>) -> Response<Body> {
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    let mut indenter = Indenter::default();
    let body = body.map_frame(move |frame| {
        frame.map_data(|data| {
            let mut out = Vec::new();
            indenter.push(&data, &mut out);
            bytes::Bytes::from(out)
        })
    });
    Response::from_parts(parts, BodyExt::boxed_unsync(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (name.clone(), value.parse().unwrap()))
            .collect()
    }

    #[test]
    fn pretty_as_upstream_decides() {
        let none = HeaderMap::new();
        let curl = headers(&[(header::USER_AGENT, "curl/8.5.0")]);
        let kubectl = headers(&[(header::USER_AGENT, "kubectl/v1.35.0 (linux/amd64)")]);
        assert!(wants_pretty(Some("pretty=true"), &none));
        assert!(wants_pretty(Some("limit=1&pretty=1"), &kubectl));
        assert!(!wants_pretty(Some("pretty=false"), &curl));
        assert!(
            !wants_pretty(Some("pretty=yes"), &curl),
            "ParseBool fails: false"
        );
        assert!(
            wants_pretty(Some("pretty="), &curl),
            "empty: the user agent decides"
        );
        assert!(wants_pretty(None, &curl));
        assert!(wants_pretty(
            None,
            &headers(&[(header::USER_AGENT, "Wget/1.21")])
        ));
        assert!(wants_pretty(
            None,
            &headers(&[(header::USER_AGENT, "Mozilla/5.0 (X11)")])
        ));
        assert!(!wants_pretty(None, &kubectl));
        assert!(!wants_pretty(None, &none));
        let accept = headers(&[(header::ACCEPT, "application/json;pretty=1")]);
        assert!(wants_pretty(None, &accept));
    }
}
