//! `/version`: the server's version information in upstream's `version.Info` JSON form.
//!
//! kapi serves the Kubernetes 1.35 API, so it reports `v1.35.0` (clients parse `gitVersion`
//! as semver and compare minors for skew warnings). The build fields say what kapi is built
//! with: the Rust compiler instead of Go's, and the commit, tree state and build date stamped
//! through `KAPI_GIT_COMMIT`, `KAPI_GIT_TREE_STATE` and `KAPI_BUILD_DATE` at build time (the
//! counterpart of Go's `-ldflags -X`), with upstream's unstamped defaults otherwise.

use http::header::CONTENT_TYPE;
use http::{HeaderValue, Method, Response};
use kapi_apimachinery::ApiError;
use serde::Serialize;

use crate::body::{Body, full};
use crate::responses::{APPLICATION_JSON, api_error};

/// Upstream's `version.Info`, fields in its JSON order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    pub major: String,
    pub minor: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub emulation_major: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub emulation_minor: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub min_compatibility_major: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub min_compatibility_minor: String,
    pub git_version: String,
    pub git_commit: String,
    pub git_tree_state: String,
    pub build_date: String,
    pub go_version: String,
    pub compiler: String,
    pub platform: String,
}

impl VersionInfo {
    /// This build's version: Kubernetes 1.35 (emulating 1.35, compatible down to 1.34, as
    /// kube-apiserver 1.35 reports) built by this Rust compiler for this platform.
    pub fn current() -> Self {
        VersionInfo {
            major: "1".into(),
            minor: "35".into(),
            emulation_major: "1".into(),
            emulation_minor: "35".into(),
            min_compatibility_major: "1".into(),
            min_compatibility_minor: "34".into(),
            git_version: "v1.35.0".into(),
            git_commit: option_env!("KAPI_GIT_COMMIT").unwrap_or("").into(),
            git_tree_state: option_env!("KAPI_GIT_TREE_STATE").unwrap_or("").into(),
            build_date: option_env!("KAPI_BUILD_DATE")
                .unwrap_or("1970-01-01T00:00:00Z")
                .into(),
            go_version: format!("rust{}", env!("KAPI_RUSTC_VERSION")),
            compiler: "rustc".into(),
            platform: platform(),
        }
    }

    /// Answers `/version`, `/version/` and paths below them as upstream's go-restful web
    /// service does: the indented JSON for GET of the first two, 404 and 405 Status errors
    /// otherwise. `None` for paths outside `/version`.
    pub(crate) fn serve(&self, method: &Method, path: &str) -> Option<Response<Body>> {
        let rest = path.strip_prefix("/version")?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        if rest.len() > 1 {
            return Some(api_error(&route_not_found()));
        }
        if method != Method::GET {
            return Some(api_error(&method_not_allowed()));
        }
        let json = serde_json::to_string_pretty(self).expect("version info serializes");
        let mut response = Response::new(full(json));
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(APPLICATION_JSON));
        Some(response)
    }
}

/// Go's `GOOS/GOARCH` naming of the platform, e.g. `linux/amd64`.
fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    };
    format!("{}/{arch}", std::env::consts::OS)
}

/// The 404 go-restful answers for an unknown path below a web service (upstream's
/// `NewGenericServerResponse(404)`).
fn route_not_found() -> ApiError {
    generic(
        404,
        "NotFound",
        "the server could not find the requested resource",
    )
}

/// The 405 go-restful answers for a method a route does not serve.
fn method_not_allowed() -> ApiError {
    generic(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
    )
}

/// A failure with empty details (`"details":{}`), as `NewGenericServerResponse` builds it.
fn generic(code: u16, reason: &str, message: &str) -> ApiError {
    let status = kapi_apimachinery::Status::failure(code, reason, message)
        .with_details(kapi_apimachinery::StatusDetails::default());
    ApiError::from(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_in_upstream_order() {
        let json = serde_json::to_string(&VersionInfo::current()).unwrap();
        assert!(json.starts_with(r#"{"major":"1","minor":"35","emulationMajor":"1","emulationMinor":"35","minCompatibilityMajor":"1","minCompatibilityMinor":"34","gitVersion":"v1.35.0","#));
    }

    #[test]
    fn routes_like_go_restful() {
        let info = VersionInfo::current();
        assert_eq!(info.serve(&Method::GET, "/version").unwrap().status(), 200);
        assert_eq!(info.serve(&Method::GET, "/version/").unwrap().status(), 200);
        assert_eq!(
            info.serve(&Method::GET, "/version/x").unwrap().status(),
            404
        );
        assert_eq!(info.serve(&Method::POST, "/version").unwrap().status(), 405);
        assert!(info.serve(&Method::GET, "/versions").is_none());
    }
}
