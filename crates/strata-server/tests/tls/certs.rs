//! Certificates made by the tests (rcgen): CAs, a server certificate for
//! localhost and 127.0.0.1, client certificates (valid, expired), written
//! as PEM files; and a rustls client for raw TLS connections. (Only
//! the TLS tests use it: not in `common`, which every test builds.)
#![allow(dead_code)]

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A CA: its certificate and key.
pub struct Ca {
    pub cert: rcgen::Certificate,
    key: KeyPair,
}

/// A certificate and its key, as PEM.
pub struct Leaf {
    pub cert_pem: String,
    pub key_pem: String,
}

impl Ca {
    pub fn new(name: &str) -> Ca {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        Ca { cert, key }
    }

    pub fn pem(&self) -> String {
        self.cert.pem()
    }

    /// A server certificate for localhost and 127.0.0.1.
    pub fn server(&self) -> Leaf {
        self.leaf(
            &["localhost", "127.0.0.1"],
            ExtendedKeyUsagePurpose::ServerAuth,
            false,
        )
    }

    /// A client certificate; `expired`: its validity ended in 2021.
    pub fn client(&self, expired: bool) -> Leaf {
        self.leaf(&[], ExtendedKeyUsagePurpose::ClientAuth, expired)
    }

    fn leaf(&self, names: &[&str], eku: ExtendedKeyUsagePurpose, expired: bool) -> Leaf {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        let mut params = CertificateParams::new(names).unwrap();
        params
            .distinguished_name
            .push(DnType::CommonName, "strata-test");
        params.extended_key_usages = vec![eku];
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.cert, &self.key).unwrap();
        Leaf {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// Writes `text` to `dir/name`; returns its path as a string.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let p: PathBuf = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

/// A rustls client trusting `ca_pem`, showing `client` if given; `v12`:
/// TLSv1.2 only.
pub fn client_config(ca_pem: &str, client: Option<&Leaf>, v12: bool) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(ca_pem.as_bytes()).unwrap())
        .unwrap();
    let versions: &[&rustls::SupportedProtocolVersion] = if v12 {
        &[&rustls::version::TLS12]
    } else {
        &[&rustls::version::TLS13, &rustls::version::TLS12]
    };
    let b = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(versions)
    .unwrap()
    .with_root_certificates(roots);
    Arc::new(match client {
        Some(l) => {
            let certs = vec![CertificateDer::from_pem_slice(l.cert_pem.as_bytes()).unwrap()];
            let key = PrivateKeyDer::from_pem_slice(l.key_pem.as_bytes()).unwrap();
            b.with_client_auth_cert(certs, key).unwrap()
        }
        None => b.with_no_client_auth(),
    })
}

/// A raw TLS connection to 127.0.0.1:`port`.
pub type TlsConn = rustls::StreamOwned<rustls::ClientConnection, TcpStream>;

pub fn connect(port: u16, config: Arc<rustls::ClientConfig>) -> TlsConn {
    let tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let name = ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(config, name).unwrap();
    rustls::StreamOwned::new(conn, tcp)
}

/// Sends `req` and reads until `want` bytes came (or an error / the end):
/// what was read, or the error's text.
pub fn ask(s: &mut TlsConn, req: &[u8], want: usize) -> Result<Vec<u8>, String> {
    s.write_all(req).map_err(|e| e.to_string())?;
    s.flush().map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut buf = [0u8; 65536];
    while out.len() < want {
        match s.read(&mut buf) {
            Ok(0) => return Err(format!("closed after {} bytes", out.len())),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(out)
}
