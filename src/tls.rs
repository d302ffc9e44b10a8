//! rustls configuration: the server side (termination on the client listener) and the client
//! side (verifying `https` upstreams against the system roots plus an optional CA bundle).
//!
//! Owns reading PEM files. Runs at startup only; every failure names the file.

use anyhow::{bail, Context};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read_certs(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let certs = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing certificates in {}", path.display()))?;
    if certs.is_empty() {
        bail!("no certificate found in {}", path.display());
    }
    Ok(certs)
}

fn read_key(path: &Path) -> anyhow::Result<PrivateKeyDer<'static>> {
    let pem = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    rustls_pemfile::private_key(&mut pem.as_slice())
        .with_context(|| format!("parsing private key in {}", path.display()))?
        .with_context(|| format!("no private key found in {}", path.display()))
}

/// Server configuration for TLS termination, offering HTTP/2 and HTTP/1.1 by ALPN.
pub fn server_config(cert_file: &Path, key_file: &Path) -> anyhow::Result<rustls::ServerConfig> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_single_cert(read_certs(cert_file)?, read_key(key_file)?)
        .context("certificate and key do not match")?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

/// Client configuration for `https` upstreams: system roots, plus `ca_file` when given.
pub fn client_config(ca_file: Option<&Path>) -> anyhow::Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        // A malformed system certificate is skipped, not fatal: the others still verify.
        let _ = roots.add(cert);
    }
    if let Some(ca) = ca_file {
        for cert in read_certs(ca)? {
            roots
                .add(cert)
                .with_context(|| format!("adding CA from {}", ca.display()))?;
        }
    }
    // ALPN stays empty: the hyper-rustls connector sets it from the enabled HTTP versions.
    Ok(rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
