//! Who a request comes from, and the scope its per-user memory is kept in.
//!
//! Owns the principal of an exchange (a verified identity when `identity.mode` is on; else a
//! digest of the raw `Authorization` header, else the client address — used only to key
//! 2026-07-28 calls without `requestState`) and the **scope** that repeat memory and rate
//! limits count in:
//!
//! - a verified principal, whatever the era (it survives token refresh and spans sessions);
//! - else a legacy session;
//! - else (2026-07-28) the retry chain: the `requestState` lineage a retry continues, or a new
//!   chain for a request that continues none. Anonymous users behind one address are never
//!   merged; the address has its own, coarse and optional, flood limit.
//!
//! Scopes name sessions, credentials and addresses by digest only, so nothing stored holds a
//! session id, a token or an address.

use crate::state::Scope;
use http::HeaderValue;
use sha2::{Digest, Sha256};
use std::net::IpAddr;
use std::sync::{Arc, OnceLock};

/// The caller of one exchange; built once per request by the transport.
#[derive(Clone, Debug)]
pub struct Caller {
    /// A principal the identity stage verified (JWT issuer + subject, or a trusted proxy's
    /// user header), as a digest.
    verified: Option<Scope>,
    /// The raw `Authorization` header, unverified (`identity.mode: none`).
    authorization: Option<HeaderValue>,
    address: Option<IpAddr>,
    /// [`Caller::principal`], computed on first use (only elicitation paths need it).
    derived: OnceLock<Scope>,
}

impl Caller {
    /// No verified identity: the raw credentials and the client address.
    pub fn anonymous(authorization: Option<HeaderValue>, address: IpAddr) -> Self {
        Self {
            verified: None,
            authorization,
            address: Some(address),
            derived: OnceLock::new(),
        }
    }

    /// A principal the identity stage verified (`principal` is already a stable digest).
    pub fn verified(principal: Scope, address: IpAddr) -> Self {
        Self {
            verified: Some(principal),
            authorization: None,
            address: Some(address),
            derived: OnceLock::new(),
        }
    }

    /// A fixed principal (the one client of a stdio connection).
    pub fn fixed(principal: &str) -> Self {
        let derived = OnceLock::new();
        let _ = derived.set(Scope::from(principal));
        Self {
            verified: None,
            authorization: None,
            address: None,
            derived,
        }
    }

    /// The verified principal, if identity is on and the request proved one.
    pub fn verified_principal(&self) -> Option<&Scope> {
        self.verified.as_ref()
    }

    /// The caller's key: the verified principal, else a digest of the credentials, else the
    /// client address.
    pub fn principal(&self) -> &Scope {
        if let Some(v) = &self.verified {
            return v;
        }
        self.derived
            .get_or_init(|| match (&self.authorization, self.address) {
                (Some(auth), _) => digest_scope("a:", auth.as_bytes()),
                (None, Some(address)) => digest_scope("ip:", address.to_string().as_bytes()),
                (None, None) => Arc::from("unknown"),
            })
    }

    /// The client address's scope for the per-address flood limit (a digest, like every
    /// scope: an address is personal data too).
    pub fn address_scope(&self) -> Option<Scope> {
        self.address
            .map(|a| digest_scope("ip:", a.to_string().as_bytes()))
    }
}

/// `prefix` + the first 16 bytes of SHA-256 of `bytes`, in hex.
pub fn digest_scope(prefix: &str, bytes: &[u8]) -> Scope {
    use std::fmt::Write;
    let digest = Sha256::digest(bytes);
    let mut hex = String::with_capacity(prefix.len() + 32);
    hex.push_str(prefix);
    for b in &digest[..16] {
        let _ = write!(hex, "{b:02x}");
    }
    Arc::from(hex)
}

/// A fresh retry chain id (a request that continues none).
pub fn new_chain() -> Scope {
    Arc::from(format!("c:{}", uuid::Uuid::new_v4().simple()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_never_hold_the_raw_credential() {
        let c = Caller::anonymous(
            Some(HeaderValue::from_static("Bearer hunter2")),
            "10.0.0.1".parse().unwrap(),
        );
        assert!(c.principal().starts_with("a:"));
        assert!(!c.principal().contains("hunter2"));
        let anon = Caller::anonymous(None, "10.0.0.1".parse().unwrap());
        assert!(anon.principal().starts_with("ip:"));
        assert!(!anon.principal().contains("10.0.0.1"));
        assert_eq!(anon.address_scope().as_ref(), Some(anon.principal()));
    }

    #[test]
    fn a_verified_principal_wins_over_everything() {
        let c = Caller::verified(Arc::from("u:abc"), "10.0.0.1".parse().unwrap());
        assert_eq!(&**c.principal(), "u:abc");
        assert!(c.address_scope().is_some_and(|a| a.starts_with("ip:")));
    }

    #[test]
    fn chains_are_distinct() {
        assert_ne!(new_chain(), new_chain());
    }
}
