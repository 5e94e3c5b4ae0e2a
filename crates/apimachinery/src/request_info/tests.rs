//! Upstream's RequestInfo test tables, re-expressed.

use super::*;

fn resolve(method: &str, url: &str) -> RequestInfo {
    let (path, query) = match url.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (url, None),
    };
    RequestInfoFactory::default()
        .resolve(method, path, query)
        .unwrap()
}

/// method, url, verb, group, version, namespace, resource, subresource, name, parts
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
);

#[test]
fn resource_requests() {
    #[rustfmt::skip]
    let cases: &[Case] = &[
        // method, url, verb, group, version, namespace, resource, subresource, name, parts
        ("GET", "/api/v1/namespaces", "list", "", "v1", "", "namespaces", "", "", &["namespaces"]),
        ("GET", "/api/v1/namespaces/other", "get", "", "v1", "other", "namespaces", "", "other", &["namespaces", "other"]),
        ("GET", "/api/v1/namespaces/other/pods", "list", "", "v1", "other", "pods", "", "", &["pods"]),
        ("GET", "/api/v1/namespaces/other/pods/foo", "get", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
        ("HEAD", "/api/v1/namespaces/other/pods/foo", "get", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
        ("GET", "/api/v1/pods", "list", "", "v1", "", "pods", "", "", &["pods"]),
        ("HEAD", "/api/v1/pods", "list", "", "v1", "", "pods", "", "", &["pods"]),
        // special verbs
        ("GET", "/api/v1/proxy/namespaces/other/pods/foo", "proxy", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
        ("GET", "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource", "proxy", "", "v1", "other", "pods", "", "foo", &["pods", "foo", "subpath", "not", "a", "subresource"]),
        ("GET", "/api/v1/watch/pods", "watch", "", "v1", "", "pods", "", "", &["pods"]),
        ("GET", "/api/v1/pods?watch=true", "watch", "", "v1", "", "pods", "", "", &["pods"]),
        ("GET", "/api/v1/pods?watch=false", "list", "", "v1", "", "pods", "", "", &["pods"]),
        ("GET", "/api/v1/watch/namespaces/other/pods", "watch", "", "v1", "other", "pods", "", "", &["pods"]),
        ("GET", "/api/v1/namespaces/other/pods?watch=1", "watch", "", "v1", "other", "pods", "", "", &["pods"]),
        ("GET", "/api/v1/namespaces/other/pods?watch=0", "list", "", "v1", "other", "pods", "", "", &["pods"]),
        // subresources
        ("GET", "/api/v1/namespaces/other/pods/foo/status", "get", "", "v1", "other", "pods", "status", "foo", &["pods", "foo", "status"]),
        ("GET", "/api/v1/namespaces/other/pods/foo/proxy/subpath", "get", "", "v1", "other", "pods", "proxy", "foo", &["pods", "foo", "proxy", "subpath"]),
        ("PUT", "/api/v1/namespaces/other/finalize", "update", "", "v1", "other", "namespaces", "finalize", "other", &["namespaces", "other", "finalize"]),
        ("PUT", "/api/v1/namespaces/other/status", "update", "", "v1", "other", "namespaces", "status", "other", &["namespaces", "other", "status"]),
        // verbs
        ("PATCH", "/api/v1/namespaces/other/pods/foo", "patch", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
        ("DELETE", "/api/v1/namespaces/other/pods/foo", "delete", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
        ("POST", "/api/v1/namespaces/other/pods", "create", "", "v1", "other", "pods", "", "", &["pods"]),
        ("DELETE", "/api/v1/nodes", "deletecollection", "", "v1", "", "nodes", "", "", &["nodes"]),
        ("DELETE", "/api/v1/namespaces", "deletecollection", "", "v1", "", "namespaces", "", "", &["namespaces"]),
        ("DELETE", "/api/v1/namespaces/other/pods", "deletecollection", "", "v1", "other", "pods", "", "", &["pods"]),
        ("DELETE", "/apis/extensions/v1/namespaces/other/pods", "deletecollection", "extensions", "v1", "other", "pods", "", "", &["pods"]),
        // groups and versions
        ("POST", "/apis/extensions/v1/namespaces/other/pods", "create", "extensions", "v1", "other", "pods", "", "", &["pods"]),
        ("POST", "/apis/extensions/v1beta3/namespaces/other/pods", "create", "extensions", "v1beta3", "other", "pods", "", "", &["pods"]),
        ("GET", "/apis/apps/v1/namespaces/ns/deployments/d/scale", "get", "apps", "v1", "ns", "deployments", "scale", "d", &["deployments", "d", "scale"]),
        ("OPTIONS", "/api/v1/pods", "", "", "v1", "", "pods", "", "", &["pods"]),
    ];
    for &(method, url, verb, group, version, namespace, resource, subresource, name, parts) in cases
    {
        let info = resolve(method, url);
        assert!(info.is_resource_request, "{url}");
        let got = (
            info.verb.as_str(),
            info.api_group.as_str(),
            info.api_version.as_str(),
            info.namespace.as_str(),
        );
        assert_eq!(got, (verb, group, version, namespace), "{method} {url}");
        let got = (
            info.resource.as_str(),
            info.subresource.as_str(),
            info.name.as_str(),
        );
        assert_eq!(got, (resource, subresource, name), "{method} {url}");
        assert_eq!(info.parts, parts, "{url}");
        assert_eq!(
            info.api_prefix,
            if group.is_empty() { "api" } else { "apis" }
        );
    }
}

#[test]
fn non_resource_requests() {
    let cases = [
        ("/api/version/resource", true),
        ("/apis/group/version/resource/name/subresource", true),
        ("/api/version/resource/name/subresource", true),
        ("/apis/batch/v1/job", true),
        ("/apis/batch/v1/job/foo", true),
        ("/apis/batch/v1/job/foo/scale", true),
        ("/not-api/version/resource", false),
        ("/apis/extensions/v1beta1", false),
        ("/apis/extensions/v1beta1/", false),
        ("/api/version", false),
        ("/api", false),
        ("/", false),
        ("", false),
        ("/api/version/", false),
        ("/apis/group/version/", false),
        ("/badprefix/version/resource", false),
        ("/apis/version/resource", false),
    ];
    for (url, resource) in cases {
        assert_eq!(resolve("GET", url).is_resource_request, resource, "{url}");
    }
    let info = resolve("GET", "/healthz/ping");
    assert_eq!(
        (info.verb.as_str(), info.path.as_str()),
        ("get", "/healthz/ping")
    );
    assert_eq!(resolve("POST", "/apis").verb, "post");
}

#[test]
fn selectors() {
    #[rustfmt::skip]
    let cases = [
        // method, url, name, verb, fieldSelector, labelSelector
        ("GET", "/apis/group/version/resource", "", "list", "", ""),
        ("GET", "/apis/group/version/resource?fieldSelector=metadata.name=name1", "name1", "list", "metadata.name=name1", ""),
        ("GET", "/apis/group/version/resource?watch=true&fieldSelector=metadata.name=name1", "name1", "watch", "metadata.name=name1", ""),
        ("GET", "/apis/group/version/resource?fieldSelector=foo=bar&labelSelector=baz=qux", "", "list", "foo=bar", "baz=qux"),
        ("GET", "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo", "", "list", "metadata.name=name1,foo", ""),
        ("GET", "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=true", "", "watch", "metadata.name=name1,foo", ""),
        ("GET", "/apis/group/version/resource?fieldSelector=metadata.name=name1,foo&watch=false", "", "list", "metadata.name=name1,foo", ""),
        ("DELETE", "/apis/group/version/resource?fieldSelector=foo=bar&labelSelector=baz=qux", "", "deletecollection", "foo=bar", "baz=qux"),
        ("GET", "/apis/group/version/resource?fieldSelector=metadata.name=foo&fieldSelector=metadata.name=bar&labelSelector=foo=bar&labelSelector=foo=baz", "foo", "list", "metadata.name=foo", "foo=bar"),
        ("GET", "/apis/group/version/resource/name?fieldSelector=foo=bar&labelSelector=foo=bar", "name", "get", "", ""),
        ("GET", "/apis/group/version/watch/resource?fieldSelector=metadata.name=foo&labelSelector=foo=bar", "", "watch", "", ""),
        ("GET", "/apis/group/version/watch/resource/name?fieldSelector=metadata.name=foo&labelSelector=foo=bar", "name", "watch", "", ""),
        // a bad parameter makes upstream ignore the field selector, but not watch
        ("GET", "/api/v1/pods?fieldSelector=metadata.name%3Dx&limit=abc&watch=TRUE", "", "watch", "metadata.name=x", ""),
        ("GET", "/api/v1/pods?fieldSelector=metadata.name%3Dx&labelSelector=a%20b", "", "list", "metadata.name=x", "a b"),
        ("GET", "/api/v1/pods?fieldSelector=metadata.name%3Dx&limit=500&timeoutSeconds=3", "x", "list", "metadata.name=x", ""),
        // the name must be a valid path segment
        ("GET", "/api/v1/pods?fieldSelector=metadata.name%3D..", "", "list", "metadata.name=..", ""),
        ("GET", "/api/v1/pods?fieldSelector=metadata.name!%3Dx", "", "list", "metadata.name!=x", ""),
    ];
    for (method, url, name, verb, field, label) in cases {
        let info = resolve(method, url);
        assert_eq!(
            (
                info.name.as_str(),
                info.verb.as_str(),
                info.field_selector.as_str(),
                info.label_selector.as_str()
            ),
            (name, verb, field, label),
            "{method} {url}"
        );
    }
}

#[test]
fn errors_and_decoding() {
    let factory = RequestInfoFactory::default();
    assert_eq!(
        factory
            .resolve("GET", "/api/v1/watch", Some("x=1"))
            .unwrap_err(),
        "unable to determine kind and namespace from url, /api/v1/watch?x=1"
    );
    assert_eq!(
        factory
            .resolve("GET", "/api/v1/pods/a%zz", None)
            .unwrap_err(),
        r#"invalid URL escape "%zz""#
    );
    let info = factory
        .resolve("GET", "/api/v1/namespaces/default/configmaps/a%2Fb", None)
        .unwrap();
    assert_eq!((info.name.as_str(), info.subresource.as_str()), ("a", "b"));
    assert_eq!(info.path, "/api/v1/namespaces/default/configmaps/a/b");
    let info = factory
        .resolve("GET", "/api/v1/namespaces/default/configmaps/a+b%20c", None)
        .unwrap();
    assert_eq!(info.name, "a+b c");
}

#[test]
fn query_parsing() {
    let q = parse_query("a=1&a=2&b=x+y%21&c&;d=1&e=%zz&=v&f=a=b");
    assert_eq!(q["a"], ["1", "2"]);
    assert_eq!(q["b"], ["x y!"]);
    assert_eq!(q["c"], [""]);
    assert_eq!(q[""], ["v"]);
    assert_eq!(q["f"], ["a=b"]);
    assert!(!q.contains_key(";d") && !q.contains_key("e"));
}
