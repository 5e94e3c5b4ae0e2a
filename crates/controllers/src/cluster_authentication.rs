//! The `extension-apiserver-authentication` ConfigMap in kube-system (upstream's
//! cluster-authentication-trust controller, started by the
//! `start-cluster-authentication-info-controller` post-start hook): how this server
//! authenticates clients, published for extension API servers (metrics-server and the like),
//! which read it to trust the client CA and the front proxy (the aggregator) in turn.
//!
//! The data combine what the ConfigMap already holds with this server's, as upstream does,
//! so that servers sharing a store each add their CAs and headers instead of fighting.

use crate::kept_config_map;
use kapi_server::endpoints::Served;
use serde_json::{Map, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The ConfigMap's name; it lives in kube-system.
pub const EXTENSION_AUTHENTICATION_CONFIG_MAP: &str = "extension-apiserver-authentication";

/// How this server authenticates clients, as the ConfigMap publishes it.
#[derive(Clone, Debug, Default)]
pub struct ClusterAuthenticationInfo {
    /// The client CA bundle (PEM).
    pub client_ca: String,
    /// The front-proxy settings, when front proxies are trusted.
    pub request_header: Option<RequestHeaderInfo>,
}

/// The front-proxy part of [`ClusterAuthenticationInfo`].
#[derive(Clone, Debug, Default)]
pub struct RequestHeaderInfo {
    /// The front proxies' CA bundle (PEM).
    pub client_ca: String,
    pub allowed_names: Vec<String>,
    pub username_headers: Vec<String>,
    pub uid_headers: Vec<String>,
    pub group_headers: Vec<String>,
    pub extra_header_prefixes: Vec<String>,
}

impl ClusterAuthenticationInfo {
    /// The ConfigMap's data: this server's info combined with `existing` data.
    fn data(&self, existing: &Value) -> Map<String, Value> {
        let mut data = Map::new();
        let ca = |key: &str, ours: &str| Value::from(combine_pem(text(existing, key), ours));
        if !self.client_ca.is_empty() || !text(existing, "client-ca-file").is_empty() {
            data.insert(
                "client-ca-file".into(),
                ca("client-ca-file", &self.client_ca),
            );
        }
        let Some(proxy) = &self.request_header else {
            return data;
        };
        for (key, ours) in [
            ("requestheader-username-headers", &proxy.username_headers),
            ("requestheader-uid-headers", &proxy.uid_headers),
            ("requestheader-group-headers", &proxy.group_headers),
            (
                "requestheader-extra-headers-prefix",
                &proxy.extra_header_prefixes,
            ),
            ("requestheader-allowed-names", &proxy.allowed_names),
        ] {
            data.insert(key.into(), combine_list(text(existing, key), ours).into());
        }
        let key = "requestheader-client-ca-file";
        data.insert(key.into(), ca(key, &proxy.client_ca));
        data
    }
}

/// A string of the ConfigMap's data, or "".
fn text<'a>(data: &'a Value, key: &str) -> &'a str {
    data[key].as_str().unwrap_or_default()
}

/// The JSON list of `existing` (a JSON array of strings, or "") followed by those of `ours`
/// it lacks (upstream serializes an empty list as `null`).
fn combine_list(existing: &str, ours: &[String]) -> String {
    let mut all: Vec<String> = serde_json::from_str::<Option<Vec<String>>>(existing)
        .ok()
        .flatten()
        .unwrap_or_default();
    for value in ours {
        if !all.contains(value) {
            all.push(value.clone());
        }
    }
    if all.is_empty() {
        return "null".into();
    }
    serde_json::to_string(&all).expect("strings serialize")
}

/// The PEM certificates of `existing` that have not expired, then those of `ours` it lacks
/// (upstream drops expired certificates from the combined bundles).
fn combine_pem(existing: &str, ours: &str) -> String {
    let mut blocks: Vec<String> = pem_blocks(existing)
        .into_iter()
        .filter(|block| !expired(block))
        .collect();
    for block in pem_blocks(ours) {
        if !blocks.contains(&block) {
            blocks.push(block);
        }
    }
    blocks.concat()
}

/// Whether a PEM certificate's validity has ended; one that cannot be read is kept.
fn expired(block: &str) -> bool {
    let Ok((_, pem)) = x509_parser::pem::parse_x509_pem(block.as_bytes()) else {
        return false;
    };
    pem.parse_x509()
        .is_ok_and(|cert| cert.validity().not_after < x509_parser::time::ASN1Time::now())
}

/// Each `-----BEGIN CERTIFICATE-----` block of a PEM text, with its final newline.
fn pem_blocks(pem: &str) -> Vec<String> {
    const END: &str = "-----END CERTIFICATE-----";
    let mut blocks = Vec::new();
    let mut rest = pem;
    while let Some(start) = rest.find("-----BEGIN CERTIFICATE-----") {
        let Some(end) = rest[start..].find(END) else {
            break;
        };
        let end = start + end + END.len();
        blocks.push(format!("{}\n", &rest[start..end]));
        rest = &rest[end..];
    }
    blocks
}

/// Keeps the ConfigMap holding `info` combined with what it holds until `stopping`.
pub fn start_cluster_authentication_info(
    config_maps: Served,
    info: ClusterAuthenticationInfo,
    stopping: CancellationToken,
) {
    let wanted = Arc::new(move |existing: &Value| info.data(existing));
    kept_config_map::keep(
        config_maps,
        EXTENSION_AUTHENTICATION_CONFIG_MAP,
        wanted,
        stopping,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const A: &str = "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n";
    const B: &str = "-----BEGIN CERTIFICATE-----\nBBB\n-----END CERTIFICATE-----\n";

    #[test]
    fn data_combine_the_existing_with_ours() {
        let info = ClusterAuthenticationInfo {
            client_ca: A.into(),
            request_header: Some(RequestHeaderInfo {
                client_ca: B.into(),
                allowed_names: vec!["front-proxy-client".into()],
                username_headers: vec!["X-Remote-User".into()],
                ..Default::default()
            }),
        };
        let fresh = Value::Object(info.data(&Value::Null));
        assert_eq!(fresh["client-ca-file"], A);
        assert_eq!(fresh["requestheader-client-ca-file"], B);
        assert_eq!(
            fresh["requestheader-allowed-names"],
            r#"["front-proxy-client"]"#
        );
        assert_eq!(fresh["requestheader-uid-headers"], "null");
        let existing = json!({"client-ca-file": B,
            "requestheader-username-headers": r#"["X-Other-User"]"#});
        let combined = Value::Object(info.data(&existing));
        assert_eq!(combined["client-ca-file"], format!("{B}{A}"));
        assert_eq!(
            combined["requestheader-username-headers"],
            r#"["X-Other-User","X-Remote-User"]"#
        );
        // Already combined: nothing changes.
        assert_eq!(Value::Object(info.data(&combined)), combined);
    }

    #[test]
    fn expired_certificates_leave_the_combined_bundle() {
        let certificate = |not_after: (i32, u8, u8)| {
            let mut params = rcgen::CertificateParams::default();
            params.not_before = rcgen::date_time_ymd(2000, 1, 1);
            params.not_after = rcgen::date_time_ymd(not_after.0, not_after.1, not_after.2);
            let key = rcgen::KeyPair::generate().unwrap();
            params.self_signed(&key).unwrap().pem()
        };
        let (old, current) = (certificate((2001, 1, 1)), certificate((2999, 1, 1)));
        let combined = combine_pem(&format!("{old}{current}"), A);
        assert_eq!(combined, format!("{current}{A}"));
    }

    #[test]
    fn without_a_front_proxy_only_the_client_ca_is_published() {
        let info = ClusterAuthenticationInfo {
            client_ca: A.into(),
            request_header: None,
        };
        let data = info.data(&Value::Null);
        assert_eq!(data.keys().collect::<Vec<_>>(), ["client-ca-file"]);
    }
}
