//! The PKI kapi makes on first start in `<data-dir>/pki/`: a CA, the serving certificate,
//! an admin client certificate (`CN=kapi-admin, O=system:masters`), the service-account
//! token key pair (`sa.key`, `sa.pub`, as kubeadm names them), and the front proxy's own CA
//! (`front-proxy-ca`) with the aggregator's client certificate (`front-proxy-client`,
//! `CN=front-proxy-client`), which extension API servers trust as kubeadm sets them up, plus
//! `<data-dir>/admin.kubeconfig` embedding the admin's, so `kubectl --kubeconfig` works at
//! once.
//!
//! Later starts reuse what is there. The serving certificate is made anew when it lacks a
//! subject alternative name the server now needs, was not issued by the CA, or expires within
//! 30 days; the admin certificate when it expires within 30 days or was not issued by the CA.
//! Keys and the kubeconfig are written with mode 0600, every file atomically.

use std::collections::BTreeSet;
use std::fs;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kapi_builtin::token::ServiceAccountTokens;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use time::{Duration, OffsetDateTime};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;

/// The CA's lifetime (kubeadm's).
const CA_VALIDITY: Duration = Duration::days(3650);
/// The leaf certificates' lifetime (kubeadm's).
const LEAF_VALIDITY: Duration = Duration::days(365);
/// Leaf certificates closer than this to expiry are renewed at start.
const RENEW_BEFORE: Duration = Duration::days(30);
/// The admin user's name and group.
const ADMIN_USER: &str = "kapi-admin";
const ADMIN_GROUP: &str = "system:masters";
/// The names of the kubeconfig's cluster, user and context.
const KUBECONFIG_NAME: &str = "kapi";

/// Where the PKI's files are.
#[derive(Debug, Clone)]
pub struct PkiFiles {
    pub ca_cert: PathBuf,
    /// The CA's key, which the CSR signing controller signs with by default.
    pub ca_key: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub kubeconfig: PathBuf,
    /// The key service-account tokens are signed with (PKCS#8 ECDSA P-256).
    pub service_account_key: PathBuf,
    /// Its public key, which verifies them.
    pub service_account_pub: PathBuf,
    /// The front proxy's CA, which extension API servers trust the aggregator by.
    pub front_proxy_ca: PathBuf,
    /// The aggregator's client certificate and key, issued by the front proxy's CA.
    pub front_proxy_client_cert: PathBuf,
    pub front_proxy_client_key: PathBuf,
}

/// The common name of the aggregator's front-proxy client certificate (kubeadm's), which
/// `--requestheader-allowed-names` lists by default.
pub const FRONT_PROXY_CLIENT: &str = "front-proxy-client";

/// A certificate and its key, as PEM.
struct Pair {
    cert: String,
    key: String,
}

/// Makes or reuses the PKI under `data_dir` with a serving certificate valid for `names`,
/// and writes the admin kubeconfig for `server_url`.
pub fn ensure(data_dir: &Path, names: &BTreeSet<String>, server_url: &str) -> Result<PkiFiles> {
    let dir = data_dir.join("pki");
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let ca = ensure_ca(&dir, "ca", "kapi-ca")?;
    let (issuer, ca_der) = issuer_of(&ca)?;
    let lacks_names = |cert: &X509Certificate<'_>| !covers(cert, names);
    ensure_leaf(&dir, "apiserver", &issuer, &ca_der, lacks_names, || {
        serving_params(names)
    })?;
    let admin = ensure_leaf(
        &dir,
        "admin",
        &issuer,
        &ca_der,
        |_| false,
        || client_params(ADMIN_USER, Some(ADMIN_GROUP)),
    )?;
    let kubeconfig = data_dir.join("admin.kubeconfig");
    let config = render_kubeconfig(server_url, &ca.cert, &admin);
    if fs::read_to_string(&kubeconfig).ok().as_deref() != Some(config.as_str()) {
        write_atomic(&kubeconfig, config.as_bytes(), true)?;
    }
    let (service_account_key, service_account_pub) = ensure_service_account_key(&dir)?;
    let front_proxy_ca = ensure_ca(&dir, "front-proxy-ca", "front-proxy-ca")?;
    let (issuer, ca_der) = issuer_of(&front_proxy_ca)?;
    ensure_leaf(
        &dir,
        FRONT_PROXY_CLIENT,
        &issuer,
        &ca_der,
        |_| false,
        || client_params(FRONT_PROXY_CLIENT, None),
    )?;
    Ok(PkiFiles {
        ca_cert: dir.join("ca.crt"),
        ca_key: dir.join("ca.key"),
        serving_cert: dir.join("apiserver.crt"),
        serving_key: dir.join("apiserver.key"),
        kubeconfig,
        service_account_key,
        service_account_pub,
        front_proxy_ca: dir.join("front-proxy-ca.crt"),
        front_proxy_client_cert: dir.join(format!("{FRONT_PROXY_CLIENT}.crt")),
        front_proxy_client_key: dir.join(format!("{FRONT_PROXY_CLIENT}.key")),
    })
}

/// The issuer of the CA `ca`, and its certificate's DER.
fn issuer_of(ca: &Pair) -> Result<(Issuer<'static, KeyPair>, Vec<u8>)> {
    let key = KeyPair::from_pem(&ca.key).context("reading a CA key")?;
    let issuer = Issuer::from_ca_cert_pem(&ca.cert, key).context("reading a CA certificate")?;
    Ok((issuer, der_of(&ca.cert)?))
}

/// The service-account token issuer of kube-apiserver's flags: signing with `signing_key`
/// (`--service-account-signing-key-file`, the PKI's `sa.key` when not given) and verifying
/// with `key_files` (`--service-account-key-file`, the PKI's `sa.pub` when none).
pub fn service_account_tokens(
    pki: &PkiFiles,
    issuer: &str,
    api_audiences: &[String],
    signing_key: Option<&Path>,
    key_files: &[PathBuf],
) -> Result<ServiceAccountTokens> {
    let read = |path: &Path| {
        fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    };
    let signing = read(signing_key.unwrap_or(&pki.service_account_key))?;
    let verifying = if key_files.is_empty() {
        vec![read(&pki.service_account_pub)?]
    } else {
        key_files
            .iter()
            .map(|path| read(path))
            .collect::<Result<Vec<_>>>()?
    };
    ServiceAccountTokens::new(issuer, api_audiences.to_vec(), &signing, &verifying)
        .context("loading the service-account keys")
}

/// Makes the service-account key pair (`sa.key`, `sa.pub`) unless both exist; tokens signed
/// with an existing key stay valid across restarts.
fn ensure_service_account_key(dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let (key_path, pub_path) = (dir.join("sa.key"), dir.join("sa.pub"));
    if key_path.exists() && pub_path.exists() {
        return Ok((key_path, pub_path));
    }
    let key = KeyPair::generate().context("generating the service-account key")?;
    write_atomic(&key_path, key.serialize_pem().as_bytes(), true)?;
    write_atomic(&pub_path, key.public_key_pem().as_bytes(), false)?;
    Ok((key_path, pub_path))
}

/// Loads the CA `name`, or makes it, with the common name `common_name`, when absent.
fn ensure_ca(dir: &Path, name: &str, common_name: &str) -> Result<Pair> {
    if let Some(pair) = load(dir, name)? {
        return Ok(pair);
    }
    let key = KeyPair::generate().context("generating the CA key")?;
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut params, CA_VALIDITY);
    let cert = params.self_signed(&key).context("signing the CA")?;
    store(
        dir,
        name,
        Pair {
            cert: cert.pem(),
            key: key.serialize_pem(),
        },
    )
}

/// Loads the leaf `name`, or makes it with `params` when absent, not issued by the CA, close
/// to expiry, or when `stale` says the existing certificate no longer fits.
fn ensure_leaf(
    dir: &Path,
    name: &str,
    issuer: &Issuer<'_, KeyPair>,
    ca_der: &[u8],
    stale: impl Fn(&X509Certificate<'_>) -> bool,
    params: impl Fn() -> Result<CertificateParams>,
) -> Result<Pair> {
    if let Some(pair) = load(dir, name)? {
        let der = der_of(&pair.cert)?;
        let cert = parse(&der)?;
        if !stale(&cert) && issued_by(&cert, ca_der) && !expiring(&cert) {
            return Ok(pair);
        }
        tracing::info!(certificate = name, "renewing the certificate");
    }
    let key = KeyPair::generate().with_context(|| format!("generating the {name} key"))?;
    let cert = params()?
        .signed_by(&key, issuer)
        .with_context(|| format!("signing the {name} certificate"))?;
    store(
        dir,
        name,
        Pair {
            cert: cert.pem(),
            key: key.serialize_pem(),
        },
    )
}

/// The serving certificate: `CN=kapi-apiserver`, for server authentication, valid for `names`.
fn serving_params(names: &BTreeSet<String>) -> Result<CertificateParams> {
    let mut params = CertificateParams::new(names.iter().cloned().collect::<Vec<_>>())
        .context("invalid subject alternative name")?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    params
        .distinguished_name
        .push(DnType::CommonName, "kapi-apiserver");
    leaf_params(&mut params, ExtendedKeyUsagePurpose::ServerAuth);
    Ok(params)
}

/// A client certificate of `CN=<user>` and, if given, `O=<group>`.
fn client_params(user: &str, group: Option<&str>) -> Result<CertificateParams> {
    let mut params = CertificateParams::default();
    params.distinguished_name = rcgen::DistinguishedName::new();
    if let Some(group) = group {
        params
            .distinguished_name
            .push(DnType::OrganizationName, group);
    }
    params.distinguished_name.push(DnType::CommonName, user);
    leaf_params(&mut params, ExtendedKeyUsagePurpose::ClientAuth);
    Ok(params)
}

/// Usages and validity shared by the leaf certificates.
fn leaf_params(params: &mut CertificateParams, usage: ExtendedKeyUsagePurpose) {
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![usage];
    params.use_authority_key_identifier_extension = true;
    validity(params, LEAF_VALIDITY);
}

/// Valid from an hour ago (for clock skew) for `lifetime`.
fn validity(params: &mut CertificateParams, lifetime: Duration) {
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::hours(1);
    params.not_after = now + lifetime;
}

/// Reads `<name>.crt` and `<name>.key` when both exist.
fn load(dir: &Path, name: &str) -> Result<Option<Pair>> {
    let (cert, key) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    if !cert.exists() || !key.exists() {
        return Ok(None);
    }
    let read = |path: &Path| {
        fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    };
    Ok(Some(Pair {
        cert: read(&cert)?,
        key: read(&key)?,
    }))
}

/// Writes `<name>.crt` and `<name>.key` (0600).
fn store(dir: &Path, name: &str, pair: Pair) -> Result<Pair> {
    write_atomic(&dir.join(format!("{name}.key")), pair.key.as_bytes(), true)?;
    write_atomic(
        &dir.join(format!("{name}.crt")),
        pair.cert.as_bytes(),
        false,
    )?;
    Ok(pair)
}

/// Writes a file through a temporary file and a rename, so a crash never leaves half a file;
/// `private` files get mode 0600.
fn write_atomic(path: &Path, contents: &[u8], private: bool) -> Result<()> {
    let temporary = path.with_extension("tmp");
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(if private { 0o600 } else { 0o644 });
    }
    let mut file = options
        .open(&temporary)
        .with_context(|| format!("creating {}", temporary.display()))?;
    file.write_all(contents)
        .and_then(|()| file.sync_all())
        .with_context(|| format!("writing {}", temporary.display()))?;
    fs::rename(&temporary, path).with_context(|| format!("writing {}", path.display()))
}

/// The DER of the first certificate in a PEM text.
fn der_of(pem: &str) -> Result<Vec<u8>> {
    let (_, block) =
        x509_parser::pem::parse_x509_pem(pem.as_bytes()).context("parsing a PEM certificate")?;
    Ok(block.contents)
}

/// Parses a DER certificate.
fn parse(der: &[u8]) -> Result<X509Certificate<'_>> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).context("parsing a certificate")?;
    Ok(cert)
}

/// Whether `cert` was issued (and signed) by the CA.
fn issued_by(cert: &X509Certificate<'_>, ca_der: &[u8]) -> bool {
    parse(ca_der).is_ok_and(|ca| {
        cert.issuer() == ca.subject() && cert.verify_signature(Some(ca.public_key())).is_ok()
    })
}

/// Whether `cert` expires within [`RENEW_BEFORE`].
fn expiring(cert: &X509Certificate<'_>) -> bool {
    cert.validity().not_after.to_datetime() < OffsetDateTime::now_utc() + RENEW_BEFORE
}

/// Whether `cert`'s subject alternative names include every one of `names`.
fn covers(cert: &X509Certificate<'_>, names: &BTreeSet<String>) -> bool {
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return names.is_empty();
    };
    let present: BTreeSet<String> = san
        .value
        .general_names
        .iter()
        .filter_map(san_text)
        .collect();
    names.iter().all(|name| present.contains(&normalize(name)))
}

/// A DNS or IP subject alternative name as text.
fn san_text(name: &GeneralName<'_>) -> Option<String> {
    match name {
        GeneralName::DNSName(dns) => Some(dns.to_ascii_lowercase()),
        GeneralName::IPAddress(bytes) => ip_of(bytes).map(|ip| ip.to_string()),
        _ => None,
    }
}

/// The address in a SAN's IP bytes.
fn ip_of(bytes: &[u8]) -> Option<IpAddr> {
    match bytes.len() {
        4 => Some(IpAddr::from(<[u8; 4]>::try_from(bytes).ok()?)),
        16 => Some(IpAddr::from(<[u8; 16]>::try_from(bytes).ok()?)),
        _ => None,
    }
}

/// A name as [`san_text`] prints it: IPs canonical, DNS names lower-cased.
fn normalize(name: &str) -> String {
    name.parse::<IpAddr>()
        .map_or_else(|_| name.to_ascii_lowercase(), |ip| ip.to_string())
}

/// The admin kubeconfig: one cluster, user and context, all named `kapi`, with the CA, the
/// client certificate and its key embedded.
fn render_kubeconfig(server_url: &str, ca_pem: &str, admin: &Pair) -> String {
    let data = |pem: &str| STANDARD.encode(pem);
    format!(
        "apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: {ca}
    server: {server_url}
  name: {name}
contexts:
- context:
    cluster: {name}
    user: {name}
  name: {name}
current-context: {name}
preferences: {{}}
users:
- name: {name}
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
",
        ca = data(ca_pem),
        cert = data(&admin.cert),
        key = data(&admin.key),
        name = KUBECONFIG_NAME,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn makes_then_reuses_and_renews_for_new_names() {
        let dir = tempfile::tempdir().unwrap();
        let url = "https://127.0.0.1:6443";
        let first = ensure(dir.path(), &names(&["localhost", "127.0.0.1"]), url).unwrap();
        let ca = fs::read(&first.ca_cert).unwrap();
        let serving = fs::read(&first.serving_cert).unwrap();
        let kubeconfig = fs::read(&first.kubeconfig).unwrap();

        ensure(dir.path(), &names(&["localhost", "127.0.0.1"]), url).unwrap();
        assert_eq!(fs::read(&first.serving_cert).unwrap(), serving);
        assert_eq!(fs::read(&first.kubeconfig).unwrap(), kubeconfig);

        ensure(
            dir.path(),
            &names(&["localhost", "127.0.0.1", "kapi.example"]),
            url,
        )
        .unwrap();
        assert_eq!(fs::read(&first.ca_cert).unwrap(), ca);
        let renewed = fs::read(&first.serving_cert).unwrap();
        assert_ne!(renewed, serving);
        let der = der_of(&String::from_utf8(renewed).unwrap()).unwrap();
        assert!(covers(
            &parse(&der).unwrap(),
            &names(&["kapi.example", "localhost", "127.0.0.1"])
        ));

        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&first.serving_key)
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = fs::metadata(&first.kubeconfig)
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }

    #[test]
    fn the_service_account_key_pair_is_made_once_and_signs_tokens() {
        let dir = tempfile::tempdir().unwrap();
        let url = "https://127.0.0.1:6443";
        let first = ensure(dir.path(), &names(&["localhost"]), url).unwrap();
        let key = fs::read_to_string(&first.service_account_key).unwrap();
        let public = fs::read_to_string(&first.service_account_pub).unwrap();
        assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"));
        assert!(public.starts_with("-----BEGIN PUBLIC KEY-----"));
        ensure(dir.path(), &names(&["localhost"]), url).unwrap();
        assert_eq!(fs::read_to_string(&first.service_account_key).unwrap(), key);

        // The public key alone verifies what the private key signs.
        let issuer = kapi_builtin::token::DEFAULT_ISSUER;
        let signer =
            kapi_builtin::token::ServiceAccountTokens::new(issuer, vec![], &key, &[]).unwrap();
        let verifier = kapi_builtin::token::ServiceAccountTokens::new(
            issuer,
            vec![],
            &KeyPair::generate().unwrap().serialize_pem(),
            &[public],
        )
        .unwrap();
        let claims = serde_json::json!({
            "sub": "system:serviceaccount:ns:sa", "aud": [issuer], "exp": 2_000_000_000,
            "kubernetes.io": {"namespace": "ns", "serviceaccount": {"name": "sa", "uid": "u"}},
        });
        let token = signer.issue(&claims).unwrap();
        let verified = verifier.verify(&token, &[], 1_000_000_000).unwrap();
        assert_eq!(verified.user.name, "system:serviceaccount:ns:sa");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&first.service_account_key)
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
