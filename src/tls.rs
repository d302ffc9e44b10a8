//! rustls configuration: the server side (termination on the client listener, with a serving
//! certificate that a reload can replace) and the client side (verifying `https` upstreams
//! against the system roots plus an optional CA bundle).
//!
//! Owns reading PEM files. Runs at startup and on reload, never on the request path; every
//! failure names the file.

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

/// A certificate chain and its key, read and checked against each other (not yet serving).
pub fn certified_key(
    cert_file: &Path,
    key_file: &Path,
) -> anyhow::Result<Arc<rustls::sign::CertifiedKey>> {
    let key = rustls::sign::CertifiedKey::from_der(
        read_certs(cert_file)?,
        read_key(key_file)?,
        &provider(),
    )
    .with_context(|| {
        format!(
            "certificate {} and key {} do not match",
            cert_file.display(),
            key_file.display()
        )
    })?;
    Ok(Arc::new(key))
}

/// The serving certificate: every handshake reads the current one, and a reload replaces it
/// (new connections get the new certificate; established ones keep theirs).
#[derive(Debug)]
pub struct ServingCert(arc_swap::ArcSwap<rustls::sign::CertifiedKey>);

impl ServingCert {
    /// Reads and checks `cert_file` and `key_file`.
    pub fn load(cert_file: &Path, key_file: &Path) -> anyhow::Result<Arc<Self>> {
        Ok(Arc::new(Self(arc_swap::ArcSwap::new(certified_key(
            cert_file, key_file,
        )?))))
    }

    /// Serves `key` from the next handshake on. Returns whether it differs from the one
    /// being served (same chain and same public key: unchanged).
    pub fn replace(&self, key: Arc<rustls::sign::CertifiedKey>) -> bool {
        let old = self.0.swap(key.clone());
        old.cert != key.cert
    }
}

impl rustls::server::ResolvesServerCert for ServingCert {
    fn resolve(
        &self,
        _hello: rustls::server::ClientHello<'_>,
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        Some(self.0.load_full())
    }
}

/// Server configuration for TLS termination, offering HTTP/2 and HTTP/1.1 by ALPN, serving
/// whatever certificate `cert` holds at each handshake.
pub fn server_config(cert: Arc<ServingCert>) -> anyhow::Result<rustls::ServerConfig> {
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?
        .with_no_client_auth()
        .with_cert_resolver(cert);
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
