//! Kerberos for Basalt's gateways, the way HBase 2.6 does it
//! (docs/security.md, docs/rfcs/kerberos.md):
//!
//! - [`gss`]: GSS-API contexts over the system's MIT Kerberos, the
//!   acceptor each connection runs and the initiator of the cluster's own
//!   calls (feature `gssapi`);
//! - [`sasl`]: SASL's GSSAPI mechanism (RFC 4752) with its security
//!   layers, what HBase's native RPC and Thrift servers speak;
//! - [`names`]: principals, `_HOST`, and Hadoop's `auth_to_local` rules
//!   that make short user names of principals;
//! - [`proxy`]: Hadoop's proxy-user rules for acting as another user;
//! - [`spnego`]: HTTP's `Negotiate` authentication and the signed
//!   `hadoop.auth` cookie, as Hadoop's `AuthenticationFilter` runs it for
//!   HBase's REST server and web UI.
//!
//! The crate knows nothing of Basalt's database: a gateway authenticates
//! a connection here, then hands the short name to `basalt::access`.

#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub mod gss;
pub mod names;
pub mod proxy;
pub mod sasl;
pub mod spnego;
#[cfg(feature = "testing")]
pub mod testing;

pub use gss::{Acceptor, Context, Initiator};
pub use names::{local_hostname, substitute_host, AuthToLocal, KerberosName};
pub use proxy::{ProxyUserSettings, ProxyUsers};
pub use sasl::{Negotiated, Qop, SaslClient, SaslServer, SaslStep, SecurityLayer};
pub use spnego::{HttpAuthenticator, HttpCredentials, HttpDecision, HttpIdentity, HttpRefusal};

/// What went wrong, named.
#[derive(Debug, thiserror::Error)]
pub enum KerberosError {
    /// This build has no GSS-API (the `gssapi` feature).
    #[error("this basalt was built without Kerberos: rebuild with `--features kerberos` (needs the krb5 headers and libclang; Debian: libkrb5-dev libclang-dev)")]
    NotBuilt,
    /// The configuration is wrong.
    #[error("Kerberos configuration: {0}")]
    Config(String),
    /// A principal or name rule is wrong, or maps to nothing.
    #[error("{0}")]
    Name(String),
    /// Kerberos refused (a ticket, a key, a wrapped message).
    #[error("{0}")]
    Gss(String),
    /// The SASL exchange went wrong.
    #[error("SASL: {0}")]
    Sasl(String),
}

/// `[security.kerberos]`: the server's principals and keytab, how native
/// RPC and Thrift protect the bytes of authenticated connections, and how
/// REST and the web UI authenticate HTTP requests.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KerberosSettings {
    /// The server's principal, `service/host@REALM`; `_HOST` becomes the
    /// server's host name (HBase's `hbase.regionserver.kerberos.principal`,
    /// usually `hbase/_HOST@REALM`).
    pub principal: String,
    /// The keytab holding the principal's keys (and the HTTP principal's,
    /// for REST and the web UI). Must not be readable by every user.
    pub keytab: PathBuf,
    /// The protections native RPC offers (HBase's `hbase.rpc.protection`):
    /// `authentication`, `integrity`, `privacy`.
    pub rpc_protection: Vec<Qop>,
    /// Let clients that do not authenticate in (HBase's
    /// `hbase.ipc.server.fallback-to-simple-auth-allowed`): for a
    /// migration only; they are then whom they say they are.
    pub allow_simple_fallback: bool,
    /// Hadoop's `auth_to_local` rules, making user names of principals
    /// (empty: `DEFAULT`, the default realm's first component).
    pub auth_to_local: Vec<String>,
    /// The realm `DEFAULT` maps (default: the server principal's).
    pub default_realm: Option<String>,
    /// The principal REST and the web UI accept `Negotiate` (SPNEGO)
    /// tickets for: HBase's `hbase.rest.authentication.kerberos.principal`
    /// and `hbase.security.authentication.spnego.kerberos.principal`.
    /// Browsers, curl and Python's clients ask for `HTTP/<host in the
    /// URL>`. Default `HTTP/_HOST@<the realm of principal>`; `_HOST` is
    /// this machine's host name. Its key must be in `keytab`.
    pub http_principal: Option<String>,
    /// Seconds the `hadoop.auth` cookie an HTTP client gets after a
    /// `Negotiate` exchange stays valid (HBase's
    /// `hbase.rest.authentication.token.validity`). Default 36000 (10 h).
    pub http_token_validity_secs: u64,
    /// A file whose bytes sign the `hadoop.auth` cookies (HBase's
    /// `hbase.rest.authentication.signature.secret.file`): give every
    /// server behind one name the same file so a cookie one issued is
    /// good at the others. At least 16 bytes, not readable by every user.
    /// Default: a random secret per process (cookies die with a restart).
    pub http_signature_secret_file: Option<PathBuf>,
    /// Let authenticated REST clients act for other users with
    /// `?doAs=<user>`, within `[security.proxy_users]` (HBase's
    /// `hbase.rest.support.proxyuser`). Default false: `doAs` is refused.
    pub rest_support_proxyuser: bool,
    /// The principal Thrift1 and Thrift2 clients authenticate to with SASL
    /// GSSAPI (HBase's `hbase.thrift.kerberos.principal`). Default: the
    /// same as `principal`. `_HOST` is this machine's host name.
    pub thrift_principal: Option<String>,
    /// The one protection Thrift offers after SASL (HBase's
    /// `hbase.thrift.security.qop`): `authentication`, `integrity` or
    /// `privacy`. Default `authentication`.
    pub thrift_protection: Qop,
}

impl Default for KerberosSettings {
    fn default() -> Self {
        KerberosSettings {
            principal: String::new(),
            keytab: PathBuf::new(),
            rpc_protection: vec![Qop::Authentication],
            allow_simple_fallback: false,
            auth_to_local: Vec::new(),
            default_realm: None,
            http_principal: None,
            http_token_validity_secs: 36_000,
            http_signature_secret_file: None,
            rest_support_proxyuser: false,
            thrift_principal: None,
            thrift_protection: Qop::Authentication,
        }
    }
}

impl KerberosSettings {
    /// The server principal on host `hostname` (`_HOST` replaced).
    pub fn server_principal(&self, hostname: &str) -> String {
        substitute_host(&self.principal, hostname)
    }

    /// The principal REST and the web UI accept tickets for on host
    /// `hostname`: `http_principal`, else `HTTP/_HOST@<realm of
    /// principal>`, with `_HOST` replaced.
    pub fn http_principal(&self, hostname: &str) -> String {
        let configured = match &self.http_principal {
            Some(principal) => principal.clone(),
            None => {
                let realm = KerberosName::parse(&self.principal)
                    .ok()
                    .and_then(|name| name.realm)
                    .unwrap_or_default();
                format!("HTTP/_HOST@{realm}")
            }
        };
        substitute_host(&configured, hostname)
    }

    /// The principal Thrift clients authenticate to on host `hostname`:
    /// `thrift_principal`, else `principal`, with `_HOST` replaced.
    pub fn thrift_principal(&self, hostname: &str) -> String {
        substitute_host(
            self.thrift_principal.as_deref().unwrap_or(&self.principal),
            hostname,
        )
    }

    /// Checks what can be checked without a KDC, and compiles the name
    /// rules.
    pub fn validate(&self) -> Result<AuthToLocal, KerberosError> {
        let name = KerberosName::parse(&self.principal)
            .map_err(|e| KerberosError::Config(format!("[security.kerberos] principal: {e}")))?;
        let (Some(_), Some(realm)) = (&name.host, &name.realm) else {
            return Err(KerberosError::Config(format!(
                "[security.kerberos] principal {:?} must be service/host@REALM (HBase's servers need all three)",
                self.principal
            )));
        };
        if self.keytab.as_os_str().is_empty() {
            return Err(KerberosError::Config(
                "[security.kerberos] keytab is not set".into(),
            ));
        }
        if self.rpc_protection.is_empty() {
            return Err(KerberosError::Config(
                "[security.kerberos] rpc_protection is empty: name at least one of authentication, integrity, privacy".into(),
            ));
        }
        for (key, principal) in [
            ("http_principal", self.http_principal.as_deref()),
            ("thrift_principal", self.thrift_principal.as_deref()),
        ] {
            let Some(principal) = principal else { continue };
            let name = KerberosName::parse(principal)
                .map_err(|e| KerberosError::Config(format!("[security.kerberos] {key}: {e}")))?;
            if name.host.is_none() || name.realm.is_none() {
                return Err(KerberosError::Config(format!(
                    "[security.kerberos] {key} {principal:?} must be service/host@REALM"
                )));
            }
        }
        if self.http_token_validity_secs == 0 {
            return Err(KerberosError::Config(
                "[security.kerberos] http_token_validity_secs is 0: every cookie would be expired when issued".into(),
            ));
        }
        let default_realm = self.default_realm.as_deref().unwrap_or(realm);
        AuthToLocal::new(&self.auth_to_local, default_realm)
    }
}

/// Proxy-user rules by real user (`[security.proxy_users.<user>]`).
pub type ProxyUserRules = BTreeMap<String, ProxyUserSettings>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_hbase_and_sasl_protection_names() {
        let settings: KerberosSettings = toml::from_str(
            r#"
            principal = "hbase/_HOST@EXAMPLE.COM"
            keytab = "/etc/basalt/hbase.keytab"
            rpc_protection = ["privacy", "auth-int", "auth"]
            auth_to_local = ["RULE:[1:$1@$0](.*@OTHER)s/@.*//", "DEFAULT"]
            "#,
        )
        .unwrap();
        assert_eq!(
            settings.rpc_protection,
            [Qop::Privacy, Qop::Integrity, Qop::Authentication]
        );
        assert_eq!(
            settings.server_principal("Node1"),
            "hbase/node1@EXAMPLE.COM"
        );
        let rules = settings.validate().unwrap();
        assert_eq!(rules.short_name("bob@OTHER").unwrap(), "bob");
        assert_eq!(rules.short_name("carol@EXAMPLE.COM").unwrap(), "carol");
    }

    #[test]
    fn settings_refuse_what_no_server_can_run_with() {
        let bad = |text: &str| {
            let settings: KerberosSettings = toml::from_str(text).unwrap();
            settings.validate().unwrap_err().to_string()
        };
        assert!(bad(r#"principal = "hbase@R"
keytab = "k""#)
        .contains("service/host@REALM"));
        assert!(bad(r#"principal = "hbase/h@R""#).contains("keytab is not set"));
        assert!(bad(r#"principal = "hbase/h@R"
keytab = "k"
rpc_protection = []"#)
        .contains("rpc_protection is empty"));
        let err = toml::from_str::<KerberosSettings>(r#"rpc_protection = ["secret"]"#)
            .unwrap_err()
            .to_string();
        assert!(err.contains("unknown protection"), "{err}");
    }

    #[test]
    fn the_gateways_principals_default_from_the_servers_and_take_host() {
        let mut settings: KerberosSettings = toml::from_str(
            r#"
            principal = "hbase/_HOST@EXAMPLE.COM"
            keytab = "k"
            "#,
        )
        .unwrap();
        assert_eq!(settings.http_principal("Web1"), "HTTP/web1@EXAMPLE.COM");
        assert_eq!(settings.thrift_principal("web1"), "hbase/web1@EXAMPLE.COM");
        assert_eq!(settings.http_token_validity_secs, 36_000);
        assert_eq!(settings.thrift_protection, Qop::Authentication);
        assert!(!settings.rest_support_proxyuser);
        settings = toml::from_str(
            r#"
            principal = "hbase/_HOST@EXAMPLE.COM"
            keytab = "k"
            http_principal = "HTTP/www.example.com@EXAMPLE.COM"
            thrift_principal = "thrift/_HOST@EXAMPLE.COM"
            thrift_protection = "auth-conf"
            "#,
        )
        .unwrap();
        assert_eq!(
            settings.http_principal("web1"),
            "HTTP/www.example.com@EXAMPLE.COM"
        );
        assert_eq!(settings.thrift_principal("web1"), "thrift/web1@EXAMPLE.COM");
        assert_eq!(settings.thrift_protection, Qop::Privacy);
        settings.http_principal = Some("HTTP@EXAMPLE.COM".into());
        let err = settings.validate().unwrap_err().to_string();
        assert!(err.contains("http_principal"), "{err}");
        settings.http_principal = None;
        settings.http_token_validity_secs = 0;
        let err = settings.validate().unwrap_err().to_string();
        assert!(err.contains("http_token_validity_secs"), "{err}");
    }

    #[test]
    fn a_world_readable_keytab_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let keytab = dir.path().join("k.keytab");
        std::fs::write(&keytab, b"\x05\x02").unwrap();
        std::fs::set_permissions(&keytab, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = gss::process_environment(&keytab).unwrap_err().to_string();
        assert!(err.contains("readable by every user"), "{err}");
        std::fs::set_permissions(&keytab, std::fs::Permissions::from_mode(0o600)).unwrap();
        let env = gss::process_environment(&keytab).unwrap();
        assert!(env
            .iter()
            .any(|(k, v)| *k == "KRB5_KTNAME" && v.starts_with("FILE:/")));
    }
}
