//! Serving the documents over HTTP as kube-apiserver (kube-openapi's handlers) does: the
//! documents generated once, on first request; v2 as JSON or gnostic protobuf by Accept; and
//! HTTP caching: a quoted ETag per document (304 for a matching `If-None-Match`), v3
//! documents pinned by `?hash=` as `Cache-Control: public, immutable` with a year's
//! `Expires`, a stale hash redirected to the current URL. Separate from the document
//! assembly, which knows nothing of requests.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde_json::{Map, Value, json};

use kapi_apimachinery::gotime::{Timestamp, format_rfc1123_utc};
use kapi_apimachinery::status::ApiError;

use super::{DocumentKey, document_keys, schemas, v2, v2proto, v3_document};
use crate::discovery;
use crate::resource::ResourceDefinition;

/// One served v3 document: its bytes and their hash (the `?hash=` of its URL, and its ETag).
struct V3Document {
    bytes: Vec<u8>,
    hash: String,
}

/// The v3 index and every v3 document, by path (`api/v1`, `apis/apps/v1`, ...).
struct V3Documents {
    index: Vec<u8>,
    documents: BTreeMap<String, V3Document>,
}

fn v3_documents(
    defs: &[Arc<ResourceDefinition>],
    schemas: &BTreeMap<String, Value>,
) -> V3Documents {
    let documents: BTreeMap<String, V3Document> = document_keys(defs)
        .into_iter()
        .filter_map(|key| {
            let path = key.path();
            let doc = v3_document(defs, &path, schemas)?;
            let bytes = serde_json::to_vec(&doc).unwrap_or_default();
            let hash = discovery::sha512_hex(&bytes);
            Some((path, V3Document { bytes, hash }))
        })
        .collect();
    let paths: Map<String, Value> = documents
        .iter()
        .map(|(path, doc)| {
            let url = format!("/openapi/v3/{path}?hash={}", doc.hash);
            (path.clone(), json!({"serverRelativeURL": url}))
        })
        .collect();
    let index = serde_json::to_vec(&json!({"paths": paths})).unwrap_or_default();
    V3Documents { index, documents }
}

/// Gives the full schema set the documents' definitions may reference (a schema provider's
/// definitions), asked for only when the documents are generated.
pub type FullSchemas<'a> = dyn Fn() -> Option<Arc<Map<String, Value>>> + 'a;

/// The served OpenAPI documents of a fixed set of definitions, generated once, on first
/// request (generating every document with full schemas takes a while; start-up does not
/// wait for it).
#[derive(Default)]
pub struct Documents {
    schemas: OnceLock<BTreeMap<String, Value>>,
    v2: OnceLock<Value>,
    v2_json: OnceLock<Vec<u8>>,
    v2_protobuf: OnceLock<Vec<u8>>,
    v3: OnceLock<V3Documents>,
}

impl Documents {
    fn schemas(
        &self,
        defs: &[Arc<ResourceDefinition>],
        full: &FullSchemas<'_>,
    ) -> &BTreeMap<String, Value> {
        self.schemas
            .get_or_init(|| schemas(defs, full().as_deref()))
    }

    fn v3(&self, defs: &[Arc<ResourceDefinition>], full: &FullSchemas<'_>) -> &V3Documents {
        self.v3
            .get_or_init(|| v3_documents(defs, self.schemas(defs, full)))
    }

    /// The v2 document as JSON, or as protobuf when the client prefers it.
    fn v2_bytes(
        &self,
        defs: &[Arc<ResourceDefinition>],
        full: &FullSchemas<'_>,
        protobuf: bool,
    ) -> (&[u8], &'static str) {
        let doc = || self.v2.get_or_init(|| v2(defs, self.schemas(defs, full)));
        if protobuf {
            let bytes = self.v2_protobuf.get_or_init(|| v2proto::encode(doc()));
            return (bytes, v2proto::CONTENT_TYPE);
        }
        let bytes = self
            .v2_json
            .get_or_init(|| serde_json::to_vec(doc()).unwrap_or_default());
        (bytes, "application/json")
    }

    /// Answers `/openapi/v2` and `/openapi/v3[/<path>]` as kube-apiserver does (kube-openapi's
    /// handlers): JSON (v2 also as gnostic protobuf) with a quoted ETag (304 for a matching
    /// `If-None-Match`); a v3 document asked for with its current `?hash=` is
    /// `Cache-Control: public, immutable`, one asked for with another hash redirects (301) to
    /// its current URL. `None` for other paths; 406 for a v2 request accepting neither form.
    pub fn respond<B>(
        &self,
        request: &http::Request<B>,
        defs: &[Arc<ResourceDefinition>],
        full: &FullSchemas<'_>,
    ) -> Option<Result<http::Response<crate::body::Body>, ApiError>> {
        let path = request.uri().path().trim_end_matches('/');
        let mut content_type = "application/json";
        let (bytes, hash, immutable) = match path.strip_prefix("/openapi/") {
            Some("v2") => {
                let accept = request.headers().get(http::header::ACCEPT);
                let Some(protobuf) = v2_wants_protobuf(accept.and_then(|v| v.to_str().ok())) else {
                    return Some(Err(ApiError::not_acceptable([
                        "application/json",
                        v2proto::MEDIA_TYPE,
                    ])));
                };
                let (bytes, media_type) = self.v2_bytes(defs, full, protobuf);
                content_type = media_type;
                (bytes, discovery::sha512_hex(bytes), false)
            }
            Some("v3") => {
                let index = &self.v3(defs, full).index;
                (index.as_slice(), discovery::sha512_hex(index), false)
            }
            Some(other) => {
                let key = DocumentKey::parse(other.strip_prefix("v3/")?)?.path();
                let doc = self.v3(defs, full).documents.get(&key)?;
                let query = request.uri().query().unwrap_or_default();
                let hash = query.split('&').find_map(|pair| pair.strip_prefix("hash="));
                match hash {
                    Some(hash) if hash != doc.hash => {
                        let location = format!("/openapi/v3/{key}?hash={}", doc.hash);
                        return Some(Ok(redirect(&location)));
                    }
                    Some(_) => (doc.bytes.as_slice(), doc.hash.clone(), true),
                    None => (doc.bytes.as_slice(), doc.hash.clone(), false),
                }
            }
            None => return None,
        };
        let body = (bytes, content_type);
        Some(Ok(document_response(request, body, &hash, immutable)))
    }
}

/// Whether a v2 request gets protobuf (`Some(true)`), JSON (`Some(false)`) or nothing: the
/// first Accept clause naming either (or a wildcard) decides; no Accept means JSON.
fn v2_wants_protobuf(accept: Option<&str>) -> Option<bool> {
    let Some(accept) = accept.filter(|a| !a.trim().is_empty()) else {
        return Some(false);
    };
    accept.split(',').find_map(|clause| {
        let media = clause.split(';').next().unwrap_or_default().trim();
        match media {
            "application/json" | "application/*" | "*/*" => Some(false),
            v2proto::MEDIA_TYPE | v2proto::CONTENT_TYPE => Some(true),
            _ => None,
        }
    })
}

/// 301 to `location`.
fn redirect(location: &str) -> http::Response<crate::body::Body> {
    let mut response = http::Response::new(crate::body::empty());
    *response.status_mut() = http::StatusCode::MOVED_PERMANENTLY;
    if let Ok(value) = http::HeaderValue::from_str(location) {
        response.headers_mut().insert(http::header::LOCATION, value);
    }
    response
}

/// A document with its ETag, or 304 when the client has it.
fn document_response<B>(
    request: &http::Request<B>,
    (bytes, content_type): (&[u8], &str),
    hash: &str,
    immutable: bool,
) -> http::Response<crate::body::Body> {
    use http::header;
    let etag = format!("\"{hash}\"");
    let fresh = request
        .headers()
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes());
    let mut response = match fresh {
        true => http::Response::new(crate::body::empty()),
        false => http::Response::new(crate::body::full(bytes.to_vec())),
    };
    if fresh {
        *response.status_mut() = http::StatusCode::NOT_MODIFIED;
    }
    let headers = response.headers_mut();
    let mut set = |name: header::HeaderName, value: &str| {
        if let Ok(value) = http::HeaderValue::from_str(value) {
            headers.insert(name, value);
        }
    };
    set(header::CONTENT_TYPE, content_type);
    set(header::ETAG, &etag);
    if immutable {
        set(header::VARY, "Accept");
        set(header::CACHE_CONTROL, "public, immutable");
        let year = Timestamp::now().seconds.saturating_add(365 * 24 * 3600);
        set(header::EXPIRES, &format_rfc1123_utc(year));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::tests::builtin;
    use crate::openapi::tests::full;

    fn get(
        documents: &Documents,
        uri: &str,
        etag: Option<&str>,
    ) -> http::Response<crate::body::Body> {
        let mut request = http::Request::builder().uri(uri);
        if let Some(etag) = etag {
            request = request.header(http::header::IF_NONE_MATCH, etag);
        }
        let request = request.body(()).unwrap();
        documents
            .respond(&request, &builtin(), &|| Some(full()))
            .unwrap()
            .unwrap()
    }

    #[test]
    fn documents_are_served_with_etags_and_hashes() {
        let documents = Documents::default();
        let index = get(&documents, "/openapi/v3", None);
        assert_eq!(index.status(), 200);
        let bytes =
            futures::executor::block_on(http_body_util::BodyExt::collect(index.into_body()))
                .unwrap()
                .to_bytes();
        let index: Value = serde_json::from_slice(&bytes).unwrap();
        let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap();
        let hash = url.rsplit_once("?hash=").unwrap().1;

        let plain = get(&documents, "/openapi/v3/apis/apps/v1", None);
        assert_eq!(plain.status(), 200);
        let etag = format!("\"{hash}\"");
        assert_eq!(plain.headers()["etag"], etag.as_str());
        assert!(plain.headers().get("cache-control").is_none());

        let pinned = get(&documents, url, None);
        assert_eq!(pinned.headers()["cache-control"], "public, immutable");
        assert_eq!(pinned.headers()["vary"], "Accept");
        assert!(
            pinned.headers()["expires"]
                .to_str()
                .unwrap()
                .ends_with(" UTC")
        );

        let stale = get(&documents, "/openapi/v3/apis/apps/v1?hash=ABC", None);
        assert_eq!(stale.status(), 301);
        assert_eq!(stale.headers()["location"], url);

        let cached = get(&documents, "/openapi/v3/apis/apps/v1", Some(&etag));
        assert_eq!(cached.status(), 304);
        assert_eq!(get(&documents, "/openapi/v3/api/v1", None).status(), 200);
        assert_eq!(get(&documents, "/openapi/v3/apis/apps", None).status(), 200);
        assert_eq!(get(&documents, "/openapi/v2", None).status(), 200);
        let missing = http::Request::builder()
            .uri("/openapi/v3/apis/nothing/v1")
            .body(())
            .unwrap();
        assert!(
            documents
                .respond(&missing, &builtin(), &|| Some(full()))
                .is_none()
        );
    }

    #[test]
    fn v2_is_json_or_protobuf_by_accept() {
        let proto = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
        assert_eq!(v2_wants_protobuf(None), Some(false));
        assert_eq!(v2_wants_protobuf(Some("application/json")), Some(false));
        assert_eq!(v2_wants_protobuf(Some(proto)), Some(true));
        assert_eq!(
            v2_wants_protobuf(Some(&format!("{proto}, application/json"))),
            Some(true)
        );
        assert_eq!(v2_wants_protobuf(Some("text/html")), None);
        let documents = Documents::default();
        let request = http::Request::builder()
            .uri("/openapi/v2")
            .header(http::header::ACCEPT, proto)
            .body(())
            .unwrap();
        let response = documents
            .respond(&request, &builtin(), &|| Some(full()))
            .unwrap()
            .unwrap();
        assert_eq!(
            response.headers()["content-type"],
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        );
    }
}
