//! TLS: the port, the memcached port's switch, and Redis 7.0's `tls-*`
//! server options. Every `tls-*` option may change at runtime: CONFIG SET
//! rebuilds the TLS configuration (`net::tls`), which new connections use;
//! connections already open keep theirs.

use super::super::*;

/// A `tls-*` option holding a text value of `TlsConfig`.
macro_rules! tls_text {
    ($name:literal, $field:ident, $doc:literal) => {
        OptionDef {
            name: $name,
            default: "",
            doc: $doc,
            runtime: true,
            set: Setter::One(|c, v| {
                c.tls.$field = v.to_string();
                Ok(())
            }),
            get: |c| c.tls.$field.clone(),
        }
    };
}

pub(super) static OPTIONS: &[OptionDef] = &[
    OptionDef {
        name: "tls-port",
        default: "0",
        doc: "TCP port of the RESP protocol over TLS (same bind); 0 = off",
        runtime: false,
        set: Setter::One(|c, v| {
            c.tls_port = parse_uint(v, 0, u16::MAX as u64, "port")? as u16;
            Ok(())
        }),
        get: |c| c.tls_port.to_string(),
    },
    OptionDef {
        name: "memcached-tls",
        default: "no",
        doc: "the memcached port speaks TLS, with the tls-* certificates (memcached 1.6's -Z)",
        runtime: false,
        set: Setter::One(|c, v| {
            c.memcached_tls = parse_bool(v)?;
            Ok(())
        }),
        get: |c| bool_text(c.memcached_tls),
    },
    tls_text!(
        "tls-cert-file",
        cert_file,
        "the server's certificate chain (PEM); CONFIG SET reloads it"
    ),
    tls_text!(
        "tls-key-file",
        key_file,
        "the server's private key (PEM: PKCS#8, PKCS#1 or SEC1; encrypted PKCS#8 with tls-key-file-pass)"
    ),
    tls_text!(
        "tls-key-file-pass",
        key_file_pass,
        "the passphrase of an encrypted tls-key-file"
    ),
    tls_text!(
        "tls-ca-cert-file",
        ca_cert_file,
        "CA certificates (PEM) that vouch for clients' certificates"
    ),
    tls_text!(
        "tls-ca-cert-dir",
        ca_cert_dir,
        "a directory of CA certificates (PEM files) that vouch for clients' certificates"
    ),
    OptionDef {
        name: "tls-auth-clients",
        default: "yes",
        doc: "clients must show a certificate the CA files vouch for: yes, no, or optional (checked when shown)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.tls.auth_clients = TlsAuthClients::parse(v)?;
            Ok(())
        }),
        get: |c| c.tls.auth_clients.as_str().to_string(),
    },
    tls_text!(
        "tls-protocols",
        protocols,
        "TLS versions offered, space-separated (TLSv1.2 TLSv1.3); empty = both"
    ),
    tls_text!(
        "tls-ciphers",
        ciphers,
        "TLSv1.2 cipher suites, colon-separated (OpenSSL or IANA names); empty = all rustls offers"
    ),
    tls_text!(
        "tls-ciphersuites",
        ciphersuites,
        "TLSv1.3 cipher suites, colon-separated (TLS_AES_256_GCM_SHA384 ...); empty = all rustls offers"
    ),
    OptionDef {
        name: "tls-prefer-server-ciphers",
        default: "no",
        doc: "choose the cipher suite by the server's order, not the client's",
        runtime: true,
        set: Setter::One(|c, v| {
            c.tls.prefer_server_ciphers = parse_bool(v)?;
            Ok(())
        }),
        get: |c| bool_text(c.tls.prefer_server_ciphers),
    },
    OptionDef {
        name: "tls-session-caching",
        default: "yes",
        doc: "resume TLS sessions (a cache of tls-session-cache-size sessions)",
        runtime: true,
        set: Setter::One(|c, v| {
            c.tls.session_caching = parse_bool(v)?;
            Ok(())
        }),
        get: |c| bool_text(c.tls.session_caching),
    },
    OptionDef {
        name: "tls-session-cache-size",
        default: "20480",
        doc: "TLS sessions cached for resumption, at most",
        runtime: true,
        set: Setter::One(|c, v| {
            c.tls.session_cache_size = parse_uint(v, 1, i32::MAX as u64, "tls-session-cache-size")?;
            Ok(())
        }),
        get: |c| c.tls.session_cache_size.to_string(),
    },
];
