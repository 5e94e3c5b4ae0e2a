//! The file's loading and validation, and the transformers' formats, order and staleness.

use super::*;

const KEY: &str = "/registry/secrets/default/s1";
const KEY32: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
const KEY16: &str = "AAECAwQFBgcICQoLDA0ODw==";

fn load(yaml: &str) -> Result<Arc<EncryptionConfig>, ConfigError> {
    let file = tempfile_with(yaml);
    block_on(EncryptionConfig::load(
        file.path(),
        false,
        &Metrics::default(),
    ))
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

impl Transformer {
    /// [`Transformer::from_storage`], waited for.
    fn read_now(&self, stored: &[u8], key: &str) -> Result<Read, String> {
        block_on(self.from_storage(stored, key))
    }
}

struct TempFile(std::path::PathBuf);

impl TempFile {
    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn tempfile_with(content: &str) -> TempFile {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let name = format!(
        "kapi-encryption-{}-{}.yaml",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let path = std::env::temp_dir().join(name);
    std::fs::write(&path, content).unwrap();
    TempFile(path)
}

fn config(resources: &str, providers: &str) -> String {
    format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: {resources}\n  providers:\n{providers}"
    )
}

fn aescbc(name: &str, secret: &str) -> String {
    format!("  - aescbc:\n      keys:\n      - name: {name}\n        secret: {secret}\n")
}

/// The bytes of a hex string.
pub(crate) fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn every_provider_reads_what_it_writes_under_its_prefix() {
    let providers = [
        ("aescbc", KEY32, "k8s:enc:aescbc:v1:k1:"),
        ("aesgcm", KEY16, "k8s:enc:aesgcm:v1:k1:"),
        ("secretbox", KEY32, "k8s:enc:secretbox:v1:k1:"),
    ];
    for (name, secret, prefix) in providers {
        let yaml = config(
            "[secrets]",
            &format!("  - {name}:\n      keys:\n      - name: k1\n        secret: {secret}\n"),
        );
        let secrets = load(&yaml).unwrap().transformer("", "secrets");
        let stored = secrets.to_storage(b"{\"kind\":\"Secret\"}", KEY).unwrap();
        assert!(stored.starts_with(prefix.as_bytes()), "{name}");
        let read = secrets.read_now(&stored, KEY).unwrap();
        assert_eq!(
            read,
            Read {
                data: b"{\"kind\":\"Secret\"}".to_vec(),
                stale: false
            }
        );
        // Plaintext is not read by a list without identity.
        assert_eq!(
            secrets.read_now(b"{}", KEY).unwrap_err(),
            "no matching prefix found"
        );
    }
}

#[test]
fn the_research_values_decrypt_with_their_prefixes() {
    let cases = [
        (
            "aescbc",
            KEY32,
            "6b38733a656e633a6165736362633a76313a6b6579313aa0a1a2a3a4a5a6a7a8a9aaabacadaeaf2dff7dd97b09c7d84e550834736cd0acfea2d6b33f129d470f30b2fd028885e3",
        ),
        (
            "aesgcm",
            KEY32,
            "6b38733a656e633a61657367636d3a76313a6b6579313ab0b1b2b3b4b5b6b7b8b9babbe93434cf8dbe9b3e359db7d6a538a8a0e14f3de9746af361e1c4d64237a61c80a3644a",
        ),
        (
            "secretbox",
            KEY32,
            "6b38733a656e633a736563726574626f783a76313a6b6579313ac0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d731810094ca62a72a61adebfa90f14dfced96eded3bc0508e494dfc20f817e717fb6697",
        ),
    ];
    for (name, secret, value) in cases {
        let yaml = config(
            "[secrets]",
            &format!("  - {name}:\n      keys:\n      - name: key1\n        secret: {secret}\n"),
        );
        let secrets = load(&yaml).unwrap().transformer("", "secrets");
        let read = secrets.read_now(&hex(value), KEY).unwrap();
        assert_eq!(read.data, b"pandas are the best", "{name}");
    }
}

#[test]
fn aes_gcm_authenticates_the_etcd_key() {
    let yaml = config(
        "[secrets]",
        &format!("  - aesgcm:\n      keys:\n      - name: k1\n        secret: {KEY32}\n"),
    );
    let secrets = load(&yaml).unwrap().transformer("", "secrets");
    let stored = secrets.to_storage(b"data", KEY).unwrap();
    let moved = secrets.read_now(&stored, "/registry/secrets/default/s2");
    assert_eq!(moved.unwrap_err(), "cipher: message authentication failed");
}

#[test]
fn reads_by_any_but_the_first_provider_or_key_are_stale() {
    // Identity first: plaintext reads fresh, encrypted values are stale (rewritten plain).
    let yaml = config(
        "[secrets]",
        &format!("  - identity: {{}}\n{}", aescbc("k1", KEY32)),
    );
    let plain_first = load(&yaml).unwrap().transformer("", "secrets");
    let yaml = config(
        "[secrets]",
        &format!("{}  - identity: {{}}\n", aescbc("k1", KEY32)),
    );
    let encrypting = load(&yaml).unwrap().transformer("", "secrets");
    let encrypted = encrypting.to_storage(b"v", KEY).unwrap();
    assert!(plain_first.read_now(&encrypted, KEY).unwrap().stale);
    assert!(!plain_first.read_now(b"v", KEY).unwrap().stale);
    assert!(encrypting.read_now(b"v", KEY).unwrap().stale);
    assert_eq!(plain_first.to_storage(b"v", KEY).unwrap(), b"v");

    // A rotated key: the new one first writes; values of the old one read stale.
    let rotated = format!(
        "  - aescbc:\n      keys:\n      - name: k2\n        secret: {KEY16}\n      - name: k1\n        secret: {KEY32}\n"
    );
    let rotated = load(&config("[secrets]", &rotated)).unwrap();
    let rotated = rotated.transformer("", "secrets");
    let read = rotated.read_now(&encrypted, KEY).unwrap();
    assert_eq!(
        read,
        Read {
            data: b"v".to_vec(),
            stale: true
        }
    );
    let rewritten = rotated.to_storage(&read.data, KEY).unwrap();
    assert!(rewritten.starts_with(b"k8s:enc:aescbc:v1:k2:"));
    assert!(!rotated.read_now(&rewritten, KEY).unwrap().stale);
}

#[test]
fn missing_keys_and_identity_only_lists_fail_as_upstream() {
    let yaml = config("[secrets]", &aescbc("other", KEY32));
    let other = load(&yaml).unwrap().transformer("", "secrets");
    let encrypted = load(&config("[secrets]", &aescbc("k1", KEY32)))
        .unwrap()
        .transformer("", "secrets")
        .to_storage(b"v", KEY)
        .unwrap();
    assert_eq!(
        other.read_now(&encrypted, KEY).unwrap_err(),
        "no matching key was found for the provided AES transformer"
    );
    let identity = load(&config("[secrets]", "  - identity: {}\n")).unwrap();
    let identity = identity.transformer("", "secrets");
    assert_eq!(
        identity.read_now(&encrypted, KEY).unwrap_err(),
        "no matching prefix found"
    );
}

#[test]
fn names_match_exactly_then_by_group_then_everything() {
    let yaml = format!(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets, configmaps]\n  providers:\n{}- resources: ['*.apps']\n  providers:\n{}- resources: ['*.*']\n  providers:\n  - identity: {{}}\n",
        aescbc("exact", KEY32),
        aescbc("apps", KEY32)
    );
    let loaded = load(&yaml).unwrap();
    let prefix_of = |group: &str, resource: &str| {
        let stored = loaded
            .transformer(group, resource)
            .to_storage(b"v", KEY)
            .unwrap();
        String::from_utf8_lossy(&stored[..stored.len().min(24)]).into_owned()
    };
    assert!(prefix_of("", "configmaps").starts_with("k8s:enc:aescbc:v1:exact:"));
    assert!(prefix_of("apps", "deployments").starts_with("k8s:enc:aescbc:v1:apps:"));
    assert_eq!(prefix_of("batch", "jobs"), "v");
    assert!(loaded.hash().starts_with("sha256:") && loaded.hash().len() == 71);
    let only_secrets = load(&config("[secrets]", "  - identity: {}\n")).unwrap();
    assert!(only_secrets.providers("", "configmaps").is_none());
}

#[test]
fn refused_files_say_why_as_upstream() {
    let refused = |yaml: &str| load(yaml).err().expect("refused").to_string();
    assert!(refused("").ends_with("is empty"), "{}", refused(""));
    let unknown = config("[secrets]", "  - identity: {}\n    pandas: 1\n");
    assert!(
        refused(&unknown).contains("strict decoding error"),
        "{}",
        refused(&unknown)
    );
    let kind =
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfigurations\nresources: []\n";
    assert!(refused(kind).contains("no kind \"EncryptionConfigurations\" is registered"));
    assert_eq!(
        refused(&config("[secrets]", &aescbc("k1", "AAAA"))),
        "error while parsing file: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secret is not of the expected length, got 3, expected one of [16 24 32]"
    );
    assert_eq!(
        refused(&config("[secrets]", &aescbc("k1", "not base64!"))),
        "error while parsing file: resources[0].providers[0].aescbc.keys[0].secret: Invalid value: \"REDACTED\": secrets must be base64 encoded"
    );
    assert_eq!(
        refused(&config("['secrets', '*.']", "  - identity: {}\n")),
        "error while parsing file: resources[0].resources: Invalid value: [\"secrets\",\"*.\"]: using overlapping resources such as 'secrets' and '*.' in the same resource list is not allowed as they will be masked"
    );
    assert_eq!(
        refused(&config("[Secrets]", "  - identity: {}\n")),
        "error while parsing file: resources[0].resources[0]: Invalid value: \"Secrets\": resource name should not contain capital letters"
    );
    let twice = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: ['*.apps']\n  providers:\n  - identity: {}\n- resources: ['*.apps']\n  providers:\n  - identity: {}\n";
    assert_eq!(
        refused(twice),
        "error while building transformers: resource \"*.apps\" is masked by earlier rule \"*.apps\""
    );
    let no_keys = config("[secrets]", "  - aescbc:\n      keys: []\n");
    assert_eq!(
        refused(&no_keys),
        "error while parsing file: resources[0].providers[0].aescbc.keys: Required value: at least one keys is required"
    );
    let masked = "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: ['*.']\n  providers:\n  - identity: {}\n- resources: [secrets]\n  providers:\n  - identity: {}\n";
    assert_eq!(
        refused(masked),
        "error while building transformers: resource \"secrets\" is masked by earlier rule \"*.\""
    );
    let kms = |settings: &str| config("[secrets]", &format!("  - kms:\n{settings}"));
    assert_eq!(
        refused(&kms(
            "      name: p\n      endpoint: unix:///tmp/kms.sock\n"
        )),
        "error while building transformers: KMSv1 is deprecated and will only receive security updates going forward. Use KMSv2 instead.  Set --feature-gates=KMSv1=true to use the deprecated KMSv1 feature."
    );
    assert_eq!(
        refused(&kms(
            "      apiVersion: v2\n      name: 'a:b'\n      endpoint: tcp://x\n      cachesize: 10\n      timeout: 0s\n"
        )),
        "error while parsing file: [resources[0].providers[0].kms.name: Invalid value: \"a:b\": invalid KMS provider name a:b, must not contain ':', resources[0].providers[0].kms.timeout: Invalid value: \"0s\": timeout should be a positive value, resources[0].providers[0].kms.endpoint: Invalid value: \"tcp://x\": unsupported scheme \"tcp\" for KMS provider, only unix is supported, resources[0].providers[0].kms.cachesize: Invalid value: 10: cachesize is not supported in v2]"
    );
    assert!(
        refused(&kms(
            "      apiVersion: v2\n      name: p\n      endpoint: unix:///k\n      timeout: soon\n"
        ))
        .contains("time: invalid duration \"soon\""),
    );
    let twice = "  - kms:\n      apiVersion: v2\n      name: p\n      endpoint: unix:///k\n";
    assert_eq!(
        refused(&config("[secrets]", &twice.repeat(2))),
        "error while parsing file: resources[0].providers[1].kms.name: Invalid value: \"p\": duplicate KMS provider name p, names must be unique"
    );
    assert_eq!(
        refused(&kms(
            "      apiVersion: v3\n      name: p\n      endpoint: unix:///k\n"
        )),
        "error while parsing file: resources[0].providers[0].kms.apiVersion: Invalid value: \"v3\": unsupported apiVersion apiVersion for KMS provider, only v1 and v2 are supported"
    );
}

#[test]
fn wildcard_matches_are_labelled_by_their_resource() {
    let loaded = load(&config("['*.apps']", &aescbc("k1", KEY32))).unwrap();
    assert_eq!(
        loaded.transformer("apps", "deployments").label,
        "deployments.apps"
    );
    let everything = load(&config("['*.*']", "  - identity: {}\n")).unwrap();
    assert_eq!(everything.transformer("", "secrets").label, "secrets");
}

#[test]
fn failures_of_several_providers_are_listed_flat() {
    // Two aescbc providers share a prefix: both are tried, both errors reported.
    let providers = format!("{}{}", aescbc("k1", KEY32), aescbc("k1", KEY16));
    let both = load(&config("[secrets]", &providers)).unwrap();
    let both = both.transformer("", "secrets");
    let mut value = b"k8s:enc:aescbc:v1:k1:".to_vec();
    value.extend([0u8; 20]);
    assert_eq!(
        both.read_now(&value, KEY).unwrap_err(),
        "the stored data is not a multiple of the block size"
    );
    value.extend([0u8; 12]);
    let err = both.read_now(&value, KEY).unwrap_err();
    assert!(err.starts_with('[') && !err[1..].contains('['), "{err}");
}

#[test]
fn a_reload_takes_a_valid_file_and_keeps_the_old_one_for_a_broken_one() {
    let file = tempfile_with(&config("[secrets]", &aescbc("k1", KEY32)));
    block_on(async {
        let metrics = Metrics::default();
        let loaded = EncryptionConfig::load(file.path(), true, &metrics)
            .await
            .unwrap();
        let secrets = loaded.transformer("", "secrets");
        let first = loaded.hash();
        assert!(
            loaded.has_kms_check(),
            "reloading configurations always have the check"
        );
        assert!(loaded.check_kms().await.is_ok());

        // Unchanged: nothing happens.
        loaded.reload_if_changed().await.unwrap();
        assert_eq!(loaded.hash(), first);

        // Broken: refused, the configuration in use kept.
        std::fs::write(file.path(), "kind: Nonsense\n").unwrap();
        assert!(loaded.reload_if_changed().await.is_err());
        assert_eq!(loaded.hash(), first);
        let stored = secrets.to_storage(b"v", KEY).unwrap();
        assert!(stored.starts_with(b"k8s:enc:aescbc:v1:k1:"));

        // Valid: used at once by the transformers already handed out.
        let rotated = format!("{}{}", aescbc("k2", KEY16), aescbc("k1", KEY32));
        std::fs::write(file.path(), config("[secrets]", &rotated)).unwrap();
        loaded.reload_if_changed().await.unwrap();
        assert_ne!(loaded.hash(), first);
        assert!(
            secrets
                .to_storage(b"v", KEY)
                .unwrap()
                .starts_with(b"k8s:enc:aescbc:v1:k2:")
        );
        let read = secrets.from_storage(&stored, KEY).await.unwrap();
        assert_eq!(
            read,
            Read {
                data: b"v".to_vec(),
                stale: true
            }
        );
    });
}
