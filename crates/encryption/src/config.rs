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
    pub kms: Option<serde_json::Value>,
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
    /// kube-apiserver's validation, as a field error list.
    pub(crate) fn validate(&self) -> FieldErrors {
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
                errors.extend(validate_provider(provider, &providers.index(j)));
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
