use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};

use super::*;

/// An RSA key as kubeadm writes `sa.key` (PKCS#1), and its public key as `sa.pub`.
const RSA_KEY: &str = include_str!("testdata/rsa.key");
const RSA_PUB: &str = include_str!("testdata/rsa.pub");

/// A fresh ECDSA P-256 key in PKCS#8 PEM, as kapi's PKI writes `sa.key`.
pub(crate) fn ecdsa_pem() -> String {
    let document =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .expect("generating a key");
    pem_encode("PRIVATE KEY", document.as_ref())
}

/// One PEM block, as Go's pem.Encode writes it.
fn pem_encode(label: &str, der: &[u8]) -> String {
    let body = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|chunk| std::str::from_utf8(chunk).unwrap_or_default())
        .collect();
    format!(
        "-----BEGIN {label}-----\n{}\n-----END {label}-----\n",
        lines.join("\n")
    )
}

/// An issuer with a fresh ECDSA key and the default issuer.
pub(crate) fn tokens() -> ServiceAccountTokens {
    ServiceAccountTokens::new(DEFAULT_ISSUER, vec![], &ecdsa_pem(), &[]).unwrap()
}

fn claims(audiences: &[&str], now: i64) -> Value {
    json!({
        "sub": "system:serviceaccount:ns:sa",
        "aud": audiences,
        "iat": now, "nbf": now, "exp": now + 600,
        "jti": "j1",
        "kubernetes.io": {
            "namespace": "ns",
            "serviceaccount": {"name": "sa", "uid": "u1"},
            "pod": {"name": "p", "uid": "u2"},
        },
    })
}

#[test]
fn issued_tokens_verify_and_name_the_service_account() {
    for (key, algorithm) in [(ecdsa_pem(), "ES256"), (RSA_KEY.to_string(), "RS256")] {
        let tokens = ServiceAccountTokens::new(DEFAULT_ISSUER, vec![], &key, &[]).unwrap();
        let token = tokens.issue(&claims(&[DEFAULT_ISSUER], 1000)).unwrap();
        let header: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD
                .decode(token.split('.').next().unwrap())
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["alg"], algorithm);
        assert_eq!(header["kid"], tokens.key_id);
        let verified = tokens.verify(&token, &[], 1100).unwrap();
        assert_eq!(verified.audiences, [DEFAULT_ISSUER]);
        assert_eq!(verified.user.name, "system:serviceaccount:ns:sa");
        assert_eq!(verified.user.uid, "u1");
        assert_eq!(
            verified.user.groups,
            ["system:serviceaccounts", "system:serviceaccounts:ns"]
        );
        assert_eq!(
            verified.user.extra,
            BTreeMap::from([
                (
                    "authentication.kubernetes.io/credential-id".to_string(),
                    vec!["JTI=j1".to_string()]
                ),
                (
                    "authentication.kubernetes.io/pod-name".to_string(),
                    vec!["p".to_string()]
                ),
                (
                    "authentication.kubernetes.io/pod-uid".to_string(),
                    vec!["u2".to_string()]
                ),
            ])
        );
    }
}

#[test]
fn the_key_id_is_the_hash_of_the_public_key_info_openssl_writes() {
    let from_private = ServiceAccountTokens::new(DEFAULT_ISSUER, vec![], RSA_KEY, &[]).unwrap();
    let published = public_keys(RSA_PUB).unwrap();
    assert_eq!(published, from_private.verifying);
    let spki = der::pem_blocks(RSA_PUB).remove(0).1;
    assert_eq!(der::subject_public_key_info(true, &published[0].key), spki);
}

#[test]
fn tokens_are_rejected_as_upstream_rejects_them() {
    let tokens = tokens();
    let token = tokens.issue(&claims(&["api"], 1000)).unwrap();
    let other = tokens.issue(&claims(&[DEFAULT_ISSUER], 1000)).unwrap();
    let foreign = ServiceAccountTokens::new("https://other", vec![], &ecdsa_pem(), &[]).unwrap();
    let mut tampered = token.clone();
    tampered.replace_range(tampered.len() - 4.., "AAAA");
    let cases = [
        (
            token.clone(),
            vec![],
            1000,
            TokenError::Audience(vec!["api".into()], vec![DEFAULT_ISSUER.into()]),
        ),
        (
            token.clone(),
            vec!["api".to_string()],
            1661,
            TokenError::Expired,
        ),
        (
            token.clone(),
            vec!["api".to_string()],
            900,
            TokenError::NotYetValid,
        ),
        (
            tampered,
            vec!["api".to_string()],
            1000,
            TokenError::Signature,
        ),
        ("a.b".to_string(), vec![], 1000, TokenError::Malformed),
        (
            foreign.issue(&claims(&[DEFAULT_ISSUER], 1000)).unwrap(),
            vec![],
            1000,
            TokenError::Signature,
        ),
    ];
    for (token, audiences, now, expected) in cases {
        assert_eq!(tokens.verify(&token, &audiences, now), Err(expected));
    }
    assert!(tokens.verify(&token, &["api".to_string()], 1660).is_ok());
    assert!(tokens.verify(&other, &[], 1000).is_ok());

    let mut not_account = claims(&[DEFAULT_ISSUER], 1000);
    not_account["sub"] = json!("alice");
    let token = tokens.issue(&not_account).unwrap();
    assert_eq!(
        tokens.verify(&token, &[], 1000),
        Err(TokenError::NotServiceAccount)
    );
    let token = foreign.issue(&claims(&["https://other"], 1000)).unwrap();
    assert_eq!(
        tokens.verify(&token, &[], 1000),
        Err(TokenError::Signature),
        "another server's token"
    );
    assert_eq!(
        foreign.verify(&token, &[], 1000).map(|v| v.user.name),
        Ok("system:serviceaccount:ns:sa".to_string())
    );
}

#[test]
fn pem_without_keys_is_an_error() {
    assert_eq!(
        ServiceAccountTokens::new(DEFAULT_ISSUER, vec![], "nothing", &[]).unwrap_err(),
        TokenError::NoKey
    );
    assert_eq!(
        public_keys("-----BEGIN CERTIFICATE-----\nAA==\n-----END CERTIFICATE-----").unwrap_err(),
        TokenError::NoKey
    );
}

#[test]
fn legacy_tokens_carry_upstreams_claims_and_verify_apart() {
    let tokens = tokens();
    let token = tokens.issue_legacy("ns", "sa", "u1", "sa-token").unwrap();
    let claims: Value = serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.split('.').nth(1).unwrap())
            .unwrap(),
    )
    .unwrap();
    assert_eq!(claims["iss"], LEGACY_ISSUER);
    assert_eq!(
        claims["kubernetes.io/serviceaccount/secret.name"],
        "sa-token"
    );
    assert_eq!(claims["sub"], "system:serviceaccount:ns:sa");
    assert!(claims.get("exp").is_none() && claims.get("aud").is_none());
    // Not a token of the configured issuer...
    assert!(matches!(
        tokens.verify(&token, &[], 0),
        Err(TokenError::Issuer(issuer, _)) if issuer == LEGACY_ISSUER
    ));
    // ...but a legacy one, naming its account and secret.
    let verified = tokens.verify_legacy(&token).unwrap();
    assert_eq!(verified.user.name, "system:serviceaccount:ns:sa");
    assert_eq!(verified.user.uid, "u1");
    assert_eq!(verified.kubernetes["secret"]["name"], "sa-token");
    let other = super::tests::tokens();
    assert_eq!(
        other.verify_legacy(&token).unwrap_err(),
        TokenError::Signature
    );
}
