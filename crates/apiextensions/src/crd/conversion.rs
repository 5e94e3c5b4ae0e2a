//! A CRD's `spec.conversion`: the strategy, the webhook's client config (upstream's
//! ValidateWebhookURL and ValidateWebhookService of k8s.io/apiserver/pkg/util/webhook) and
//! the ConversionReview versions.

use std::collections::HashSet;

use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use kapi_apimachinery::validation::{is_dns1035_label, is_dns1123_subdomain};
use serde_json::Value;

use super::gojson;
use super::validation::{list, text, validate_enum};

/// The ConversionReview versions a conversion webhook may accept (sorted).
const CONVERSION_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// The format upstream suggests for a webhook URL.
const URL_FORM: &str = "; desired format: https://host[/path]";

/// Exactly one of `url` and `service`, each valid (`path` is the internal
/// `webhookClientConfig`).
fn validate_client_config(config: &Value, path: &Path) -> FieldErrors {
    let url = config["url"].as_str();
    let service = &config["service"];
    match (url, service.is_object()) {
        (Some(url), false) => validate_url(url, &path.child("url")),
        (None, true) => validate_service(service, &path.child("service")),
        _ => FieldErrors::from(FieldError::required(
            path,
            "exactly one of url or service is required",
        )),
    }
}

/// The parts of a URL the webhook rules look at.
struct UrlParts<'a> {
    scheme: &'a str,
    user: Option<&'a str>,
    host: &'a str,
    query: &'a str,
    fragment: &'a str,
}

/// Splits `scheme://user@host/path?query#fragment` as Go's url.Parse does for the parts
/// the rules need (a URL without `://` has no scheme or host).
fn split_url(url: &str) -> UrlParts<'_> {
    let (rest, fragment) = url.split_once('#').unwrap_or((url, ""));
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (scheme, rest) = match rest.split_once("://") {
        Some((scheme, rest)) if !scheme.contains('/') => (scheme, Some(rest)),
        _ => ("", None),
    };
    let authority = rest.map_or("", |rest| rest.split('/').next().unwrap_or_default());
    let (user, host) = match authority.rsplit_once('@') {
        Some((user, host)) => (Some(user), host),
        None => (None, authority),
    };
    UrlParts {
        scheme,
        user,
        host,
        query,
        fragment,
    }
}

/// https, a host, and no user information, query or fragment.
fn validate_url(url: &str, path: &Path) -> FieldErrors {
    let parts = split_url(url);
    let mut errs = FieldErrors::new();
    if parts.scheme != "https" {
        errs.push(FieldError::invalid(
            path,
            parts.scheme,
            format!("'https' is the only allowed URL scheme{URL_FORM}"),
        ));
    }
    if parts.host.is_empty() {
        errs.push(FieldError::invalid(
            path,
            parts.host,
            format!("host must be specified{URL_FORM}"),
        ));
    }
    if let Some(user) = parts.user {
        errs.push(FieldError::invalid(
            path,
            user,
            "user information is not permitted in the URL",
        ));
    }
    if !parts.fragment.is_empty() {
        errs.push(FieldError::invalid(
            path,
            parts.fragment,
            "fragments are not permitted in the URL",
        ));
    }
    if !parts.query.is_empty() {
        errs.push(FieldError::invalid(
            path,
            parts.query,
            "query parameters are not permitted in the URL",
        ));
    }
    errs
}

/// A service reference: name and namespace required, a valid port, a path of DNS
/// subdomain segments.
fn validate_service(service: &Value, path: &Path) -> FieldErrors {
    let mut errs = FieldErrors::new();
    for key in ["name", "namespace"] {
        if service[key].as_str().unwrap_or_default().is_empty() {
            errs.push(FieldError::required(&path.child(key), ""));
        }
    }
    let port = service["port"].as_i64().unwrap_or(0);
    if !(1..=65535).contains(&port) {
        errs.push(FieldError::invalid(
            &path.child("port"),
            port,
            "port is not valid: must be between 1 and 65535, inclusive",
        ));
    }
    if let Some(url_path) = service["path"].as_str() {
        errs.extend(validate_service_path(url_path, &path.child("path")));
    }
    errs
}

/// A service path: `/` or segments that are DNS subdomains.
fn validate_service_path(url_path: &str, path: &Path) -> FieldErrors {
    if url_path.is_empty() || url_path == "/" {
        return FieldErrors::new();
    }
    if url_path == "//" {
        return FieldErrors::from(FieldError::invalid(
            path,
            url_path,
            "segment[0] may not be empty",
        ));
    }
    let mut errs = FieldErrors::new();
    if !url_path.starts_with('/') {
        errs.push(FieldError::invalid(path, url_path, "must start with a '/'"));
    }
    let mut rest = url_path.chars();
    rest.next();
    errs.extend(segments(rest.as_str(), url_path, path));
    errs
}

/// The segment rules for the path after its first character (a trailing `/` allowed).
fn segments(rest: &str, url_path: &str, path: &Path) -> FieldErrors {
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let mut errs = FieldErrors::new();
    for (i, step) in rest.split('/').enumerate() {
        if step.is_empty() {
            errs.push(FieldError::invalid(
                path,
                url_path,
                format!("segment[{i}] may not be empty"),
            ));
            continue;
        }
        for problem in is_dns1123_subdomain(step) {
            errs.push(FieldError::invalid(
                path,
                url_path,
                format!("segment[{i}]: {problem}"),
            ));
        }
    }
    errs
}

/// Why a (base64) `caBundle` cannot be loaded, as client-go says it; `None` when it is
/// absent, empty or loads.
pub(crate) fn ca_bundle_error(bundle: &Value) -> Option<String> {
    let bytes = decoded(bundle);
    if bytes.is_empty() {
        return None;
    }
    kapi_server::webhook_client::trusted_roots(&bytes).err()
}

/// The bytes of a base64 field (none when absent or not base64).
fn decoded(field: &Value) -> Vec<u8> {
    use base64::Engine;
    let text = field.as_str().unwrap_or_default();
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap_or_default()
}

/// A byte slice as upstream prints a bad `caBundle`: its JSON, a base64 string.
fn go_bytes(bytes: &[u8]) -> String {
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(bytes);
    Value::from(encoded).to_string()
}

/// Upstream's validateCustomResourceConversion.
pub(crate) fn validate_conversion(
    conversion: &Value,
    require_recognized: bool,
    allow_invalid_ca_bundle: bool,
    path: &Path,
) -> FieldErrors {
    if !conversion.is_object() {
        return FieldErrors::new();
    }
    let mut errs = validate_enum(
        &conversion["strategy"],
        &["None", "Webhook"],
        &path.child("strategy"),
    );
    let webhook = &conversion["webhook"];
    let client_config = &webhook["clientConfig"];
    let review_versions = &webhook["conversionReviewVersions"];
    if text(&conversion["strategy"]) == "Webhook" {
        if client_config.is_object() {
            let config_path = path.child("webhookClientConfig");
            let bundle = &client_config["caBundle"];
            if !allow_invalid_ca_bundle && let Some(err) = ca_bundle_error(bundle) {
                let mut error =
                    FieldError::invalid(&config_path.child("caBundle"), Value::Null, err);
                error.bad_value = Some(go_bytes(&decoded(bundle)));
                errs.push(error);
            }
            errs.extend(validate_client_config(client_config, &config_path));
        } else {
            errs.push(FieldError::required(
                &path.child("webhookClientConfig"),
                "required when strategy is set to Webhook",
            ));
        }
        errs.extend(validate_review_versions(
            review_versions,
            require_recognized,
            &path.child("conversionReviewVersions"),
        ));
        return errs;
    }
    if client_config.is_object() {
        errs.push(FieldError::forbidden(
            &path.child("webhookClientConfig"),
            "should not be set when strategy is not set to Webhook",
        ));
    }
    if !list(review_versions).is_empty() {
        errs.push(FieldError::forbidden(
            &path.child("conversionReviewVersions"),
            "should not be set when strategy is not set to Webhook",
        ));
    }
    errs
}

/// A webhook's `conversionReviewVersions`: at least one, no duplicates, DNS-1035 labels,
/// one the server understands (when required).
fn validate_review_versions(
    versions: &Value,
    require_recognized: bool,
    path: &Path,
) -> FieldErrors {
    let entries = list(versions);
    if entries.is_empty() {
        return FieldErrors::from(FieldError::required(path, ""));
    }
    let mut errs = FieldErrors::new();
    let mut seen = HashSet::new();
    let mut recognized = false;
    for (i, version) in entries.iter().map(text).enumerate() {
        if !seen.insert(version) {
            errs.push(FieldError::invalid(
                &path.index(i),
                version,
                "duplicate version",
            ));
            continue;
        }
        for problem in is_dns1035_label(version) {
            errs.push(FieldError::invalid(&path.index(i), version, problem));
        }
        recognized |= CONVERSION_REVIEW_VERSIONS.contains(&version);
    }
    if require_recognized && !recognized {
        errs.push(FieldError::invalid_rendered(
            path,
            gojson::string_slice(versions),
            format!(
                "must include at least one of {}",
                CONVERSION_REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
    errs
}

/// Whether a stored CRD's review versions include a known one (or are empty): only then
/// does an update have to keep one (upstream's hasValidConversionReviewVersionOrEmpty).
pub(crate) fn accepts_known_review_version_or_none(versions: &Value) -> bool {
    let entries = list(versions);
    entries.is_empty()
        || entries
            .iter()
            .any(|v| CONVERSION_REVIEW_VERSIONS.contains(&text(v)))
}
