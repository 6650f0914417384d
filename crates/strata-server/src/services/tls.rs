//! TLS's server configuration, built with rustls from the `tls-*` options
//! (`config::TlsConfig`), as Redis's `tlsConfigure` builds its OpenSSL
//! context: the certificate chain and key (an encrypted PKCS#8 key with
//! `tls-key-file-pass`), the CAs that vouch for clients (`tls-ca-cert-file`,
//! `tls-ca-cert-dir`) and whether clients must show a certificate
//! (`tls-auth-clients`), the versions and cipher suites offered, whose
//! order chooses the suite, and session resumption.
//!
//! Invariants:
//! 1. A configuration that does not build is refused whole, with the
//!    reason: at start the server does not start; on CONFIG SET the old
//!    configuration stays (`Tls::reload`).
//! 2. `Tls::current` is what a connection accepted now handshakes with;
//!    one that is open keeps what it handshook with (a reload drops no
//!    client).

use crate::services::config::{TlsAuthClients, TlsConfig};
use parking_lot::RwLock;
use rustls::crypto::CryptoProvider;
use rustls::server::{NoServerSessionStorage, ServerSessionMemoryCache, WebPkiClientVerifier};
use rustls::{RootCertStore, ServerConfig, SupportedCipherSuite, SupportedProtocolVersion};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;

/// The TLS configuration new connections handshake with (invariant 2).
#[derive(Default)]
pub struct Tls {
    current: RwLock<Option<Arc<ServerConfig>>>,
}

impl Tls {
    /// What a connection accepted now handshakes with (None: TLS is off).
    pub fn current(&self) -> Option<Arc<ServerConfig>> {
        self.current.read().clone()
    }

    /// Builds and installs the configuration of `c` (invariant 1).
    pub fn reload(&self, c: &TlsConfig) -> Result<(), String> {
        let built = build(c)?;
        *self.current.write() = Some(built);
        Ok(())
    }
}

/// rustls's server configuration for `c`; Err: why it does not build.
pub fn build(c: &TlsConfig) -> Result<Arc<ServerConfig>, String> {
    if c.cert_file.is_empty() || c.key_file.is_empty() {
        return Err("tls-cert-file and tls-key-file must be set".into());
    }
    let provider = provider(c)?;
    let versions = versions(&c.protocols)?;
    let builder = ServerConfig::builder_with_provider(Arc::new(provider))
        .with_protocol_versions(&versions)
        .map_err(|e| format!("tls-protocols / tls-ciphers / tls-ciphersuites: {e}"))?;
    let builder = match c.auth_clients {
        TlsAuthClients::No => builder.with_no_client_auth(),
        auth => {
            let roots = Arc::new(roots(c)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(
                roots,
                Arc::new(rustls::crypto::ring::default_provider()),
            );
            let verifier = match auth {
                TlsAuthClients::Optional => verifier.allow_unauthenticated(),
                _ => verifier,
            };
            builder.with_client_cert_verifier(
                verifier
                    .build()
                    .map_err(|e| format!("client certificates: {e}"))?,
            )
        }
    };
    let chain = certs(&c.cert_file)?;
    let key = key(&c.key_file, &c.key_file_pass)?;
    let mut config = builder
        .with_single_cert(chain, key)
        .map_err(|e| format!("tls-cert-file / tls-key-file: {e}"))?;
    config.ignore_client_order = c.prefer_server_ciphers;
    if c.session_caching {
        config.session_storage = ServerSessionMemoryCache::new(c.session_cache_size as usize);
    } else {
        config.session_storage = Arc::new(NoServerSessionStorage {});
        config.send_tls13_tickets = 0;
    }
    Ok(Arc::new(config))
}

/// ring's primitives, with the cipher suites `tls-ciphers` (TLSv1.2) and
/// `tls-ciphersuites` (TLSv1.3) name, in their order (all, when empty).
fn provider(c: &TlsConfig) -> Result<CryptoProvider, String> {
    let mut p = rustls::crypto::ring::default_provider();
    let all = p.cipher_suites.clone();
    let tls12: Vec<SupportedCipherSuite> = all
        .iter()
        .filter(|s| s.tls13().is_none())
        .copied()
        .collect();
    let tls13: Vec<SupportedCipherSuite> = all
        .iter()
        .filter(|s| s.tls13().is_some())
        .copied()
        .collect();
    let mut chosen = pick(&c.ciphersuites, &tls13, "tls-ciphersuites")?;
    chosen.extend(pick(&c.ciphers, &tls12, "tls-ciphers")?);
    p.cipher_suites = chosen;
    Ok(p)
}

/// The suites of `offered` a colon-separated `list` names, in its order
/// (OpenSSL's names or IANA's); all of them for an empty list. Names
/// rustls does not have are skipped, as OpenSSL skips them; a list that
/// names none of them is refused.
fn pick(
    list: &str,
    offered: &[SupportedCipherSuite],
    what: &str,
) -> Result<Vec<SupportedCipherSuite>, String> {
    if list.trim().is_empty() {
        return Ok(offered.to_vec());
    }
    let mut out = Vec::new();
    for name in list.split(':').map(str::trim).filter(|n| !n.is_empty()) {
        if let Some(s) = offered
            .iter()
            .find(|s| suite_matches(s, name) && !out.contains(*s))
        {
            out.push(*s);
        }
    }
    if out.is_empty() {
        return Err(format!("{what}: no cipher suite rustls has in '{list}'"));
    }
    Ok(out)
}

/// Whether `name` (IANA's, or OpenSSL's for TLSv1.2) names `s`.
fn suite_matches(s: &SupportedCipherSuite, name: &str) -> bool {
    // (rustls names TLSv1.3's suites TLS13_*, IANA TLS_*.)
    let iana = format!("{:?}", s.suite()).replacen("TLS13_", "TLS_", 1);
    iana.eq_ignore_ascii_case(name) || openssl_name(&iana).eq_ignore_ascii_case(name)
}

/// OpenSSL's name of a TLSv1.2 ECDHE suite from IANA's:
/// TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 is ECDHE-RSA-AES256-GCM-SHA384,
/// and the CHACHA20 suites drop their hash.
fn openssl_name(iana: &str) -> String {
    let Some(rest) = iana.strip_prefix("TLS_") else {
        return String::new();
    };
    let Some((kx, cipher)) = rest.split_once("_WITH_") else {
        return rest.replace('_', "-");
    };
    let cipher = cipher
        .replace("AES_128", "AES128")
        .replace("AES_256", "AES256")
        .replace("CHACHA20_POLY1305_SHA256", "CHACHA20_POLY1305");
    format!("{kx}_{cipher}").replace('_', "-")
}

/// The versions `tls-protocols` names (both when empty). rustls has no
/// TLSv1 or TLSv1.1: they are skipped with a warning; a list of nothing
/// else is refused.
fn versions(list: &str) -> Result<Vec<&'static SupportedProtocolVersion>, String> {
    if list.trim().is_empty() {
        return Ok(vec![&rustls::version::TLS13, &rustls::version::TLS12]);
    }
    let mut out = Vec::new();
    for name in list.split_ascii_whitespace() {
        match name.to_ascii_lowercase().as_str() {
            "tlsv1.2" => out.push(&rustls::version::TLS12),
            "tlsv1.3" => out.push(&rustls::version::TLS13),
            "tlsv1" | "tlsv1.1" => {
                tracing::warn!(
                    "tls-protocols: {name} is not offered (rustls has TLSv1.2 and TLSv1.3)"
                );
            }
            _ => return Err(format!("tls-protocols: invalid protocol '{name}'")),
        }
    }
    if out.is_empty() {
        return Err(format!(
            "tls-protocols: no protocol rustls offers in '{list}'"
        ));
    }
    Ok(out)
}

/// The CAs of `tls-ca-cert-file` and every PEM file in `tls-ca-cert-dir`.
fn roots(c: &TlsConfig) -> Result<RootCertStore, String> {
    if c.ca_cert_file.is_empty() && c.ca_cert_dir.is_empty() {
        // Redis's words.
        return Err(
            "Either tls-ca-cert-file or tls-ca-cert-dir must be specified when \
                    tls-auth-clients is enabled"
                .into(),
        );
    }
    let mut store = RootCertStore::empty();
    let mut files = Vec::new();
    if !c.ca_cert_file.is_empty() {
        files.push(std::path::PathBuf::from(&c.ca_cert_file));
    }
    if !c.ca_cert_dir.is_empty() {
        let dir = std::fs::read_dir(&c.ca_cert_dir)
            .map_err(|e| format!("tls-ca-cert-dir {}: {e}", c.ca_cert_dir))?;
        for entry in dir.flatten() {
            if entry
                .file_type()
                .is_ok_and(|t| t.is_file() || t.is_symlink())
            {
                files.push(entry.path());
            }
        }
        files.sort();
    }
    for f in &files {
        let Ok(certs) = CertificateDer::pem_file_iter(f) else {
            return Err(format!("CA certificates {}: cannot read", f.display()));
        };
        for cert in certs {
            let cert = cert.map_err(|e| format!("CA certificates {}: {e}", f.display()))?;
            store
                .add(cert)
                .map_err(|e| format!("CA certificate in {}: {e}", f.display()))?;
        }
    }
    if store.is_empty() {
        return Err("no CA certificate in tls-ca-cert-file / tls-ca-cert-dir".into());
    }
    Ok(store)
}

/// The certificate chain of `tls-cert-file`.
fn certs(path: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Result<Vec<_>, _> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("tls-cert-file {path}: {e}"))?
        .collect();
    let certs = certs.map_err(|e| format!("tls-cert-file {path}: {e}"))?;
    if certs.is_empty() {
        return Err(format!("tls-cert-file {path}: no certificate"));
    }
    Ok(certs)
}

/// The private key of `tls-key-file`: PKCS#8, PKCS#1 or SEC1; an
/// encrypted PKCS#8 one is decrypted with `pass`.
fn key(path: &str, pass: &str) -> Result<PrivateKeyDer<'static>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("tls-key-file {path}: {e}"))?;
    if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
        if pass.is_empty() {
            return Err(format!(
                "tls-key-file {path} is encrypted: tls-key-file-pass is not set"
            ));
        }
        const END: &str = "-----END ENCRYPTED PRIVATE KEY-----";
        let from = text
            .find("-----BEGIN ENCRYPTED PRIVATE KEY-----")
            .unwrap_or(0);
        let to = text.find(END).map_or(text.len(), |i| i + END.len());
        let (_, der) = pkcs8::der::pem::decode_vec(&text.as_bytes()[from..to])
            .map_err(|e| format!("tls-key-file {path}: {e}"))?;
        let info = pkcs8::EncryptedPrivateKeyInfo::try_from(der.as_slice())
            .map_err(|e| format!("tls-key-file {path}: {e}"))?;
        let doc = info.decrypt(pass.as_bytes()).map_err(|_| {
            format!("tls-key-file {path}: cannot decrypt (wrong tls-key-file-pass?)")
        })?;
        return Ok(PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            doc.as_bytes().to_vec(),
        )));
    }
    if text.contains("Proc-Type: 4,ENCRYPTED") {
        return Err(format!(
            "tls-key-file {path}: a legacy encrypted PEM key; convert it to encrypted PKCS#8 \
             (openssl pkcs8 -topk8 -v2 aes-256-cbc)"
        ));
    }
    PrivateKeyDer::from_pem_slice(text.as_bytes()).map_err(|e| format!("tls-key-file {path}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openssl_names_of_tls12_suites() {
        assert_eq!(
            openssl_name("TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"),
            "ECDHE-RSA-AES256-GCM-SHA384"
        );
        assert_eq!(
            openssl_name("TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"),
            "ECDHE-ECDSA-CHACHA20-POLY1305"
        );
        assert_eq!(openssl_name("SSL_X"), "");
    }

    #[test]
    fn suites_and_versions_chosen_by_name() {
        let all = rustls::crypto::ring::default_provider().cipher_suites;
        let tls13: Vec<_> = all
            .iter()
            .filter(|s| s.tls13().is_some())
            .copied()
            .collect();
        let one = pick("TLS_AES_256_GCM_SHA384", &tls13, "x").unwrap();
        assert_eq!(one.len(), 1);
        assert!(pick("NOPE:ALSO-NOPE", &tls13, "tls-ciphersuites").is_err());
        assert_eq!(pick("", &tls13, "x").unwrap().len(), tls13.len());
        assert_eq!(versions("TLSv1.3").unwrap().len(), 1);
        assert!(versions("TLSv1.1").is_err());
        assert!(versions("SSLv3").is_err());
        assert_eq!(versions("").unwrap().len(), 2);
    }
}
