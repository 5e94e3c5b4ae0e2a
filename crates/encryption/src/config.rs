//! The `--encryption-provider-config` file: an `EncryptionConfiguration`
//! (apiserver.config.k8s.io/v1, or the legacy `v1` `EncryptionConfig`), decoded strictly
//! (unknown fields are errors) and validated with kube-apiserver's rules and messages.

use base64::Engine as _;
use kapi_apimachinery::validation::field::{FieldError, FieldErrors, Path};
use serde::Deserialize;

/// The file, as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct EncryptionConfiguration {
    pub api_version: String,
    pub kind: String,
    #[serde(default)]
    pub resources: Vec<ResourceConfiguration>,
}

/// Resources and the providers that encrypt them, the first writing.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResourceConfiguration {
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub providers: Vec<ProviderConfiguration>,
}

/// One provider: exactly one member set.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ProviderConfiguration {
    pub aesgcm: Option<Keys>,
    pub aescbc: Option<Keys>,
    pub secretbox: Option<Keys>,
    pub identity: Option<Identity>,
    pub kms: Option<KmsConfiguration>,
}

/// A KMS provider: the plugin at `endpoint` (a `unix://` socket) by its API version.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct KmsConfiguration {
    /// `v1` when empty, as upstream defaults it (KMS v1 is refused).
    #[serde(default)]
    pub api_version: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub cachesize: Option<i32>,
    #[serde(default)]
    pub endpoint: String,
    /// A Go duration; 3s when absent.
    #[serde(default)]
    pub timeout: Option<String>,
}

/// A KMS provider's timeout when the file gives none.
const KMS_DEFAULT_TIMEOUT_NANOS: i64 = 3_000_000_000;

impl KmsConfiguration {
    /// The API version, defaulted.
    pub(crate) fn version(&self) -> &str {
        match self.api_version.as_str() {
            "" => "v1",
            version => version,
        }
    }

    /// The timeout in nanoseconds, defaulted; an unparseable one is a decoding error.
    pub(crate) fn timeout_nanos(&self) -> Result<i64, String> {
        match &self.timeout {
            None => Ok(KMS_DEFAULT_TIMEOUT_NANOS),
            Some(text) => kapi_apimachinery::goduration::parse_nanos(text)
                .map_err(|_| format!("time: invalid duration {text:?}")),
        }
    }
}

/// The identity provider has no settings.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Identity {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Keys {
    #[serde(default)]
    pub keys: Vec<Key>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Key {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub secret: String,
}

/// A resource name of the file split as upstream's `ParseGroupResource`: at the first dot.
pub(crate) fn group_resource(name: &str) -> (&str, &str) {
    match name.split_once('.') {
        Some((resource, group)) => (group, resource),
        None => ("", name),
    }
}

/// Decodes a key's secret as Go's `base64.StdEncoding` (which skips line breaks).
pub(crate) fn decode_secret(secret: &str) -> Option<Vec<u8>> {
    let clean: String = secret
        .chars()
        .filter(|c| *c != '\r' && *c != '\n')
        .collect();
    let engine = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
    );
    engine.decode(clean).ok()
}

/// Resources that have no REST API and so cannot be encrypted.
const NOT_REST: [&str; 3] = [
    "apiserveripinfo",
    "serviceipallocations",
    "servicenodeportallocations",
];

impl EncryptionConfiguration {
    /// Decoding errors the YAML decoder cannot see: unparseable durations.
    pub(crate) fn check_durations(&self) -> Result<(), String> {
        let kms = self.resources.iter().flat_map(|r| &r.providers);
        for kms in kms.filter_map(|p| p.kms.as_ref()) {
            kms.timeout_nanos()?;
        }
        Ok(())
    }

    /// kube-apiserver's validation, as a field error list; `reload` (the file is reloaded
    /// automatically) makes KMS names unique whatever their version.
    pub(crate) fn validate(&self, reload: bool) -> FieldErrors {
        let mut kms_names: Vec<&str> = Vec::new();
        let mut errors = FieldErrors::new();
        let root = Path::root("resources");
        if self.resources.is_empty() {
            errors.push(FieldError::required(
                &root,
                "at least one resources is required",
            ));
        }
        for (i, entry) in self.resources.iter().enumerate() {
            let at = root.index(i);
            let names = at.child("resources");
            if entry.resources.is_empty() {
                let detail = format!("at least one {} is required", names.as_str());
                errors.push(FieldError::required(&names, detail));
            }
            errors.extend(validate_overlap(&entry.resources, &names));
            for (j, name) in entry.resources.iter().enumerate() {
                if let Some(detail) = invalid_name(name) {
                    errors.push(FieldError::invalid(&names.index(j), name.as_str(), detail));
                }
            }
            let providers = at.child("providers");
            if entry.providers.is_empty() {
                let detail = format!("at least one {} is required", providers.as_str());
                errors.push(FieldError::required(&providers, detail));
            }
            for (j, provider) in entry.providers.iter().enumerate() {
                let at = providers.index(j);
                errors.extend(validate_provider(provider, &at));
                if let Some(kms) = &provider.kms {
                    errors.extend(validate_kms(kms, &at.child("kms"), &kms_names, reload));
                    kms_names.push(&kms.name);
                }
            }
        }
        errors
    }
}

/// Why a resource name of the file is refused, if it is.
fn invalid_name(name: &str) -> Option<&'static str> {
    let (group, resource) = group_resource(name);
    if name.chars().any(|c| c.is_ascii_uppercase()) {
        return Some("resource name should not contain capital letters");
    }
    if name == "*" {
        return Some(
            "use '*.' to encrypt all the resources from core API group or *.* to encrypt all resources",
        );
    }
    if group.is_empty() && NOT_REST.contains(&resource) {
        return Some("resources which do not have REST API/s cannot be encrypted");
    }
    if group == "events.k8s.io" {
        return Some(
            "'*.events.k8s.io' objects are stored using the 'events' API group in etcd. Use 'events' instead in the config file",
        );
    }
    if group == "extensions" {
        return Some("'extensions' group has been removed and cannot be used for encryption");
    }
    if group == "*" && resource != "*" {
        return Some("encrypting the same resource across groups is not supported");
    }
    None
}

/// The overlaps of one entry's resource list: a name twice, or a wildcard masking another.
fn validate_overlap(names: &[String], path: &Path) -> FieldErrors {
    let mut errors = FieldErrors::new();
    if names.len() < 2 {
        return errors;
    }
    let listed = serde_json::Value::from(names.to_vec());
    let parsed: Vec<(&str, &str)> = names.iter().map(|n| group_resource(n)).collect();
    let duplicate = parsed
        .iter()
        .enumerate()
        .any(|(i, a)| parsed[..i].contains(a));
    if duplicate {
        errors.push(FieldError::invalid(
            path,
            listed.clone(),
            "the same resource cannot be specified multiple times",
        ));
    }
    let masks =
        |(g1, r1): (&str, &str), (g2, _): (&str, &str)| r1 == "*" && (g1 == "*" || g1 == g2);
    let overlapping = parsed.iter().enumerate().any(|(i, a)| {
        parsed
            .iter()
            .enumerate()
            .any(|(j, b)| i != j && a != b && masks(*a, *b))
    });
    if overlapping {
        errors.push(FieldError::invalid(
            path,
            listed,
            "using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked",
        ));
    }
    errors
}

fn validate_provider(provider: &ProviderConfiguration, path: &Path) -> FieldErrors {
    let mut errors = FieldErrors::new();
    let set = [
        provider.aesgcm.is_some(),
        provider.aescbc.is_some(),
        provider.secretbox.is_some(),
        provider.identity.is_some(),
        provider.kms.is_some(),
    ]
    .iter()
    .filter(|set| **set)
    .count();
    match set {
        0 => errors.push(FieldError::invalid(
            path,
            serde_json::json!({}),
            "provider does not contain any of the expected providers: KMS, AESGCM, AESCBC, Secretbox, Identity",
        )),
        1 => {}
        _ => errors.push(FieldError::invalid(
            path,
            serde_json::json!({}),
            "more than one provider specified in a single element, should split into different list elements",
        )),
    }
    // Upstream validates the first provider set, in the order kms, aesgcm, aescbc,
    // secretbox (a second one is already an error).
    if provider.kms.is_some() {
        return errors;
    }
    let keyed = [
        (&provider.aesgcm, "aesgcm", &[16, 24, 32][..]),
        (&provider.aescbc, "aescbc", &[16, 24, 32][..]),
        (&provider.secretbox, "secretbox", &[32][..]),
    ];
    let first = keyed
        .into_iter()
        .find_map(|(keys, name, lengths)| Some((keys.as_ref()?, name, lengths)));
    if let Some((keys, name, lengths)) = first {
        errors.extend(validate_keys(
            keys,
            &path.child(name).child("keys"),
            lengths,
        ));
    }
    errors
}

fn validate_keys(keys: &Keys, path: &Path, lengths: &[usize]) -> FieldErrors {
    let mut errors = FieldErrors::new();
    if keys.keys.is_empty() {
        errors.push(FieldError::required(path, "at least one keys is required"));
    }
    for (i, key) in keys.keys.iter().enumerate() {
        let at = path.index(i);
        if key.name.is_empty() {
            errors.push(FieldError::required(
                &at.child("name"),
                "name is a mandatory field for a key",
            ));
        }
        let secret = at.child("secret");
        if key.secret.is_empty() {
            errors.push(FieldError::required(
                &secret,
                "secret is a mandatory field for a key",
            ));
            continue;
        }
        match decode_secret(&key.secret) {
            None => errors.push(FieldError::invalid(
                &secret,
                "REDACTED",
                "secrets must be base64 encoded",
            )),
            Some(bytes) if !lengths.contains(&bytes.len()) => {
                let expected: Vec<String> = lengths.iter().map(usize::to_string).collect();
                let detail = format!(
                    "secret is not of the expected length, got {}, expected one of [{}]",
                    bytes.len(),
                    expected.join(" ")
                );
                errors.push(FieldError::invalid(&secret, "REDACTED", detail));
            }
            Some(_) => {}
        }
    }
    errors
}

/// A KMS provider's settings, with upstream's rules and messages.
fn validate_kms(
    kms: &KmsConfiguration,
    path: &Path,
    earlier: &[&str],
    reload: bool,
) -> FieldErrors {
    let mut errors = FieldErrors::new();
    let version = kms.version();
    let name = path.child("name");
    if kms.name.is_empty() {
        errors.push(FieldError::required(
            &name,
            "name is a mandatory field for a provider",
        ));
    }
    if version != "v1" && kms.name.contains(':') {
        let detail = format!(
            "invalid KMS provider name {}, must not contain ':'",
            kms.name
        );
        errors.push(FieldError::invalid(&name, kms.name.as_str(), detail));
    }
    if (reload || version != "v1") && earlier.contains(&kms.name.as_str()) {
        let detail = format!(
            "duplicate KMS provider name {}, names must be unique",
            kms.name
        );
        errors.push(FieldError::invalid(&name, kms.name.as_str(), detail));
    }
    let timeout = kms.timeout_nanos().unwrap_or(KMS_DEFAULT_TIMEOUT_NANOS);
    if timeout <= 0 {
        let shown = kapi_apimachinery::goduration::format(std::time::Duration::ZERO);
        errors.push(FieldError::invalid(
            &path.child("timeout"),
            shown,
            "timeout should be a positive value",
        ));
    }
    let endpoint = path.child("endpoint");
    if kms.endpoint.is_empty() {
        errors.push(FieldError::invalid(
            &endpoint,
            "",
            "endpoint is a mandatory field for a kms",
        ));
    } else {
        match url_scheme(&kms.endpoint) {
            Ok("unix") => {}
            Ok(scheme) => {
                let detail = format!(
                    "unsupported scheme {scheme:?} for KMS provider, only unix is supported"
                );
                errors.push(FieldError::invalid(
                    &endpoint,
                    kms.endpoint.as_str(),
                    detail,
                ));
            }
            Err(err) => {
                let detail = format!("invalid endpoint for kms provider, error: {err}");
                errors.push(FieldError::invalid(
                    &endpoint,
                    kms.endpoint.as_str(),
                    detail,
                ));
            }
        }
    }
    let cachesize = path.child("cachesize");
    match (version, kms.cachesize) {
        ("v1", Some(0)) => errors.push(FieldError::invalid(
            &cachesize,
            0,
            "cachesize should be a positive value, or negative to disable",
        )),
        ("v1", _) => {}
        (_, Some(size)) => errors.push(FieldError::invalid(
            &cachesize,
            size,
            "cachesize is not supported in v2",
        )),
        _ => {}
    }
    if version != "v1" && version != "v2" {
        errors.push(FieldError::invalid(
            &path.child("apiVersion"),
            version,
            "unsupported apiVersion apiVersion for KMS provider, only v1 and v2 are supported",
        ));
    }
    errors
}

/// A URL's scheme as Go's `url.Parse` finds it: the letters before the first `:`, none when
/// a character no scheme has comes first, an error when the `:` comes first.
fn url_scheme(url: &str) -> Result<&str, String> {
    for (i, c) in url.char_indices() {
        match c {
            ':' if i == 0 => return Err(format!("parse {url:?}: missing protocol scheme")),
            ':' => return Ok(&url[..i]),
            c if c.is_ascii_alphabetic() => {}
            '0'..='9' | '+' | '-' | '.' if i > 0 => {}
            _ => return Ok(""),
        }
    }
    Ok("")
}
