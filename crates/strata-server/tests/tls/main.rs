//! TLS end to end, with certificates the test makes (rcgen): the `redis`
//! crate, `redis-cli --tls` and redis-py (`ssl=True`) against `tls-port`;
//! client certificates from another CA, expired or missing refused;
//! CONFIG SET reloading the certificates without dropping an open client
//! (and refusing a configuration that does not build); an encrypted key;
//! the versions offered; the memcached port over TLS.

mod certs;
#[path = "../common/mod.rs"]
mod common;

use certs::{ask, client_config, connect, write, Ca, Leaf};
use common::{free_port, Server};
use rustls::pki_types::pem::PemObject;
use std::path::Path;
use std::process::Command;

/// redis-py, installed with pip when python3 lacks it (as the differential
/// test installs redis-server).
fn require_redis_py() {
    let has = || {
        Command::new("python3")
            .args(["-c", "import redis"])
            .status()
            .is_ok_and(|s| s.success())
    };
    if has() {
        return;
    }
    eprintln!("installing redis-py (pip)");
    let _ = Command::new("python3")
        .args(["-m", "pip", "install", "--quiet", "redis"])
        .status();
    assert!(has(), "redis-py is missing and pip could not install it");
}

/// A server with `tls-port` on, its certificates from `ca`; `extra` added.
struct TlsServer {
    srv: Server,
    tls_port: u16,
    ca: Ca,
    client: Leaf,
    _files: tempfile::TempDir,
    files: String,
}

fn tls_server(extra: &[&str]) -> TlsServer {
    let ca = Ca::new("strata test CA");
    let server = ca.server();
    let client = ca.client(false);
    let files = tempfile::tempdir().unwrap();
    let dir = files.path();
    let cert = write(dir, "server.crt", &server.cert_pem);
    let key = write(dir, "server.key", &server.key_pem);
    let ca_file = write(dir, "ca.crt", &ca.pem());
    write(dir, "client.crt", &client.cert_pem);
    write(dir, "client.key", &client.key_pem);
    let tls_port = free_port();
    let port = tls_port.to_string();
    let mut args = vec![
        "--tls-port",
        &port,
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
        "--tls-ca-cert-file",
        &ca_file,
    ];
    args.extend_from_slice(extra);
    let srv = Server::start(&args);
    let path = dir.to_str().unwrap().to_string();
    TlsServer {
        srv,
        tls_port,
        ca,
        client,
        _files: files,
        files: path,
    }
}

impl TlsServer {
    fn file(&self, name: &str) -> String {
        format!("{}/{name}", self.files)
    }

    /// A `redis` crate client over TLS, trusting `ca_pem`, showing the
    /// test's client certificate.
    fn redis_client(&self, ca_pem: &str) -> redis::RedisResult<redis::Connection> {
        let client = redis::Client::build_with_tls(
            format!("rediss://localhost:{}/", self.tls_port),
            redis::TlsCertificates {
                client_tls: Some(redis::ClientTlsConfig {
                    client_cert: self.client.cert_pem.clone().into_bytes(),
                    client_key: self.client.key_pem.clone().into_bytes(),
                }),
                root_cert: Some(ca_pem.as_bytes().to_vec()),
            },
        )?;
        client.get_connection_with_timeout(std::time::Duration::from_secs(10))
    }

    /// `redis-cli --tls` with the test's CA and client certificate.
    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["--tls", "-p", &self.tls_port.to_string()])
            .args(["--cacert", &self.file("ca.crt")])
            .args(["--cert", &self.file("client.crt")])
            .args(["--key", &self.file("client.key")])
            .args(args)
            .output()
            .expect("redis-cli (Debian's redis-tools, installed with redis-server)");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
            + &String::from_utf8_lossy(&out.stderr)
    }
}

#[test]
fn resp_over_tls_with_the_redis_crate_and_redis_cli() {
    let t = tls_server(&[]);
    let mut con = t.redis_client(&t.ca.pem()).unwrap();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con).unwrap();
    let v: String = redis::cmd("GET").arg("k").query(&mut con).unwrap();
    assert_eq!(v, "v");
    // A reply far larger than a TLS record and the socket's buffer.
    let big: Vec<u8> = (0..8 << 20).map(|i| (i % 251) as u8).collect();
    let _: () = redis::cmd("SET")
        .arg("big")
        .arg(&big)
        .query(&mut con)
        .unwrap();
    let got: Vec<u8> = redis::cmd("GET").arg("big").query(&mut con).unwrap();
    assert!(got == big, "an 8 MB value over TLS came back changed");
    // A pipeline of 20,000 commands, its replies read after all are sent.
    let mut p = redis::pipe();
    for i in 0..20_000 {
        p.cmd("INCR").arg("n").ignore();
        if i % 5_000 == 0 {
            p.cmd("GET").arg("k");
        }
    }
    let r: Vec<String> = p.query(&mut con).unwrap();
    assert_eq!(r, vec!["v"; 4]);
    let n: u64 = redis::cmd("GET").arg("n").query(&mut con).unwrap();
    assert_eq!(n, 20_000);
    // The plain port serves the same keyspace.
    let mut plain = t.srv.client();
    let n: u64 = redis::cmd("GET").arg("n").query(&mut plain).unwrap();
    assert_eq!(n, 20_000);
    // redis-cli --tls.
    assert_eq!(t.cli(&["SET", "cli", "hello"]), "OK");
    assert_eq!(t.cli(&["GET", "cli"]), "hello");
    assert_eq!(t.cli(&["GET", "k"]), "v");
}

#[test]
fn client_certificates_another_ca_expired_or_missing_are_refused() {
    let t = tls_server(&[]);
    let ca = t.ca.pem();
    let ping = b"*1\r\n$4\r\nPING\r\n";
    // The test's certificate: served.
    let mut ok = connect(t.tls_port, client_config(&ca, Some(&t.client), false));
    assert_eq!(ask(&mut ok, ping, 7).unwrap(), b"+PONG\r\n");
    // From another CA, expired, none: refused (by the handshake's alert).
    let other = Ca::new("another CA").client(false);
    let expired = t.ca.client(true);
    for (what, leaf) in [
        ("another CA's", Some(&other)),
        ("an expired", Some(&expired)),
        ("no", None),
    ] {
        let mut s = connect(t.tls_port, client_config(&ca, leaf, false));
        let r = ask(&mut s, ping, 7);
        assert!(r.is_err(), "{what} client certificate was served: {r:?}");
    }
    // A client that does not trust the server's CA refuses it.
    let mut s = connect(
        t.tls_port,
        client_config(&Ca::new("unknown").pem(), Some(&t.client), false),
    );
    let r = ask(&mut s, ping, 7);
    assert!(r.unwrap_err().contains("UnknownIssuer"));
    // optional: none is fine, a bad one still refused.
    let mut plain = t.srv.client();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tls-auth-clients")
        .arg("optional")
        .query(&mut plain)
        .unwrap();
    let mut s = connect(t.tls_port, client_config(&ca, None, false));
    assert_eq!(ask(&mut s, ping, 7).unwrap(), b"+PONG\r\n");
    let mut s = connect(t.tls_port, client_config(&ca, Some(&expired), false));
    assert!(ask(&mut s, ping, 7).is_err());
    // The one connected first was never dropped.
    assert_eq!(ask(&mut ok, ping, 7).unwrap(), b"+PONG\r\n");
}

#[test]
fn config_set_reloads_certificates_without_dropping_clients() {
    let t = tls_server(&[]);
    let old_ca = t.ca.pem();
    let mut open = t.redis_client(&old_ca).unwrap();
    let _: () = redis::cmd("SET")
        .arg("a")
        .arg("1")
        .query(&mut open)
        .unwrap();
    // A new server certificate from a new CA, which also vouches for
    // clients from now on (the test's client keeps the old CA's: both
    // CAs go in the file).
    let ca2 = Ca::new("strata test CA 2");
    let server2 = ca2.server();
    let dir = Path::new(&t.files);
    let cert2 = write(dir, "server2.crt", &server2.cert_pem);
    let key2 = write(dir, "server2.key", &server2.key_pem);
    let both = write(dir, "both.crt", &format!("{}{}", old_ca, ca2.pem()));
    let mut admin = t.srv.client();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tls-cert-file")
        .arg(&cert2)
        .arg("tls-key-file")
        .arg(&key2)
        .arg("tls-ca-cert-file")
        .arg(&both)
        .query(&mut admin)
        .unwrap();
    // The open connection goes on.
    let v: String = redis::cmd("GET").arg("a").query(&mut open).unwrap();
    assert_eq!(v, "1");
    // New ones get the new certificate: trusted through the new CA only.
    let mut fresh = t.redis_client(&ca2.pem()).unwrap();
    let v: String = redis::cmd("GET").arg("a").query(&mut fresh).unwrap();
    assert_eq!(v, "1");
    assert!(
        t.redis_client(&old_ca).is_err(),
        "the old certificate is still served"
    );
    // A configuration that does not build: refused whole, Redis's words;
    // the one in force stays.
    let e = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tls-key-file")
        .arg(t.file("nonexistent.key"))
        .query::<()>(&mut admin)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "An error was signalled by the server - ResponseError: CONFIG SET failed (possibly \
         related to argument 'tls-key-file') - Unable to update TLS configuration. Check server \
         logs."
    );
    let key: String = redis::cmd("CONFIG")
        .arg("GET")
        .arg("tls-key-file")
        .query::<Vec<String>>(&mut admin)
        .unwrap()
        .remove(1);
    assert_eq!(key, key2);
    let mut again = t.redis_client(&ca2.pem()).unwrap();
    let v: String = redis::cmd("GET").arg("a").query(&mut again).unwrap();
    assert_eq!(v, "1");
    let v: String = redis::cmd("GET").arg("a").query(&mut open).unwrap();
    assert_eq!(v, "1");
}

#[test]
fn an_encrypted_key_with_its_passphrase() {
    let ca = Ca::new("strata test CA");
    let server = ca.server();
    let files = tempfile::tempdir().unwrap();
    let dir = files.path();
    // The key as encrypted PKCS#8 (PBES2), as `openssl pkcs8 -topk8` makes it.
    let der = rustls::pki_types::PrivateKeyDer::from_pem_slice(server.key_pem.as_bytes()).unwrap();
    let info = pkcs8::PrivateKeyInfo::try_from(der.secret_der()).unwrap();
    let enc = info.encrypt(rand::rngs::OsRng, b"sesame").unwrap();
    let pem = enc
        .to_pem("ENCRYPTED PRIVATE KEY", pkcs8::LineEnding::LF)
        .unwrap();
    let cert = write(dir, "server.crt", &server.cert_pem);
    let key = write(dir, "server.key", &pem);
    let tls_port = free_port().to_string();
    let srv = Server::start(&[
        "--tls-port",
        &tls_port,
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
        "--tls-key-file-pass",
        "sesame",
        "--tls-auth-clients",
        "no",
    ]);
    let mut s = connect(
        tls_port.parse().unwrap(),
        client_config(&ca.pem(), None, false),
    );
    assert_eq!(ask(&mut s, b"PING\r\n", 7).unwrap(), b"+PONG\r\n");
    drop(srv);
    // The wrong passphrase: the server does not start, and says why.
    let data = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_strata-server"))
        .args(["--port", "0", "--memcached-port", "0"])
        .args(["--dir", data.path().to_str().unwrap()])
        .args(["--tls-port", &free_port().to_string()])
        .args(["--tls-cert-file", &cert, "--tls-key-file", &key])
        .args(["--tls-key-file-pass", "wrong", "--tls-auth-clients", "no"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot decrypt"), "{err}");
}

#[test]
fn tls_protocols_and_ciphersuites_choose_what_is_offered() {
    let t = tls_server(&["--tls-protocols", "TLSv1.2", "--tls-auth-clients", "no"]);
    let ca = t.ca.pem();
    let mut s = connect(t.tls_port, client_config(&ca, None, false));
    assert_eq!(ask(&mut s, b"PING\r\n", 7).unwrap(), b"+PONG\r\n");
    assert_eq!(
        s.conn.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_2)
    );
    let mut admin = t.srv.client();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tls-protocols")
        .arg("TLSv1.3")
        .arg("tls-ciphersuites")
        .arg("TLS_CHACHA20_POLY1305_SHA256")
        .query(&mut admin)
        .unwrap();
    let mut s = connect(t.tls_port, client_config(&ca, None, false));
    assert_eq!(ask(&mut s, b"PING\r\n", 7).unwrap(), b"+PONG\r\n");
    assert_eq!(
        s.conn.protocol_version(),
        Some(rustls::ProtocolVersion::TLSv1_3)
    );
    assert_eq!(
        format!("{:?}", s.conn.negotiated_cipher_suite().unwrap().suite()),
        "TLS13_CHACHA20_POLY1305_SHA256"
    );
    // A TLSv1.2-only client finds nothing it speaks.
    let mut s = connect(t.tls_port, client_config(&ca, None, true));
    assert!(ask(&mut s, b"PING\r\n", 7).is_err());
    // Names that are not protocols are refused as CONFIG SET errors.
    let e = redis::cmd("CONFIG")
        .arg("SET")
        .arg("tls-protocols")
        .arg("SSLv3")
        .query::<()>(&mut admin)
        .unwrap_err();
    assert!(
        e.to_string().contains("Unable to update TLS configuration"),
        "{e}"
    );
}

#[test]
fn redis_py_over_tls() {
    let t = tls_server(&[]);
    require_redis_py();
    let script = format!(
        "import redis\n\
         r = redis.Redis(host='localhost', port={}, ssl=True, ssl_ca_certs='{}', \
         ssl_certfile='{}', ssl_keyfile='{}')\n\
         r.set('py', 'over tls')\n\
         print(r.get('py').decode())\n\
         print(r.ping())\n",
        t.tls_port,
        t.file("ca.crt"),
        t.file("client.crt"),
        t.file("client.key"),
    );
    let out = Command::new("python3")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "over tls\nTrue\n");
}

#[test]
fn the_memcached_port_over_tls() {
    let t = tls_server(&["--memcached-tls", "yes"]);
    let config = client_config(&t.ca.pem(), Some(&t.client), false);
    let mut s = connect(t.srv.mc_port, config.clone());
    let r = ask(&mut s, b"set k 0 0 5\r\nhello\r\nget k\r\n", 8 + 25).unwrap();
    assert_eq!(r, b"STORED\r\nVALUE k 0 5\r\nhello\r\nEND\r\n");
    // The same keyspace as RESP (database 0).
    let mut con = t.srv.client();
    let v: String = redis::cmd("GET").arg("k").query(&mut con).unwrap();
    assert_eq!(v, "hello");
    // Plain text on the TLS port is not served.
    let mut plain = std::net::TcpStream::connect(("127.0.0.1", t.srv.mc_port)).unwrap();
    plain
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let got = common::roundtrip(&mut plain, b"get k\r\n", 1);
    assert!(
        !got.starts_with(b"VALUE"),
        "plain text served over the TLS port"
    );
}
