//! GSS-API security contexts over the system's MIT Kerberos (feature
//! `gssapi`): the acceptor a server runs for each connection, and the
//! initiator the cluster's own calls and the tests use.
//!
//! Keys come from where MIT Kerberos looks for them: an acceptor's from
//! the keytab `KRB5_KTNAME` names, an initiator's from the ticket cache
//! or the client keytab `KRB5_CLIENT_KTNAME` names. A server sets those
//! once, before it starts any thread ([`process_environment`]); nothing
//! here changes the environment.
//!
//! Without the feature, [`Acceptor::new`] and [`Initiator::new`] refuse
//! with [`KerberosError::NotBuilt`] and no context can exist.

use crate::KerberosError;

/// Credentials to accept contexts for one principal (`hbase/host@REALM`,
/// `HTTP/host@REALM`), read from the keytab. Acquired for exactly that
/// principal (a Kerberos principal name, not a host-based service name,
/// so no DNS canonicalisation decides which key is used): a ticket for
/// another principal is refused.
#[derive(Clone)]
pub struct Acceptor {
    principal: String,
    #[cfg(feature = "gssapi")]
    credentials: libgssapi::credential::Cred,
    #[cfg(not(feature = "gssapi"))]
    never: Never,
}

impl std::fmt::Debug for Acceptor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Acceptor")
            .field("principal", &self.principal)
            .finish_non_exhaustive()
    }
}

impl Acceptor {
    /// Acquires acceptor credentials for `principal` from the keytab.
    /// Fails when the keytab holds no key for it (the error says so, in
    /// Kerberos' words), or when this build has no GSS-API.
    pub fn new(principal: &str) -> Result<Acceptor, KerberosError> {
        #[cfg(feature = "gssapi")]
        {
            use libgssapi::credential::{Cred, CredUsage};
            let name = principal_name(principal)?;
            let credentials =
                Cred::acquire(Some(&name), None, CredUsage::Accept, None).map_err(|e| {
                    KerberosError::Gss(format!(
                        "no acceptor key for {principal} in the keytab (KRB5_KTNAME={}): {e}",
                        std::env::var("KRB5_KTNAME").unwrap_or_else(|_| "unset".into())
                    ))
                })?;
            Ok(Acceptor {
                principal: principal.to_string(),
                credentials,
            })
        }
        #[cfg(not(feature = "gssapi"))]
        {
            let _ = principal;
            Err(KerberosError::NotBuilt)
        }
    }

    /// The principal contexts are accepted for.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// A new context, waiting for the client's first token.
    pub fn context(&self) -> Context {
        #[cfg(feature = "gssapi")]
        {
            Context {
                side: Side::Accepting(libgssapi::context::ServerCtx::new(Some(
                    self.credentials.clone(),
                ))),
            }
        }
        #[cfg(not(feature = "gssapi"))]
        {
            match self.never {}
        }
    }
}

/// Credentials to start contexts as this process's own principal (the
/// ticket cache, or the client keytab).
#[derive(Clone)]
pub struct Initiator {
    #[cfg(feature = "gssapi")]
    credentials: libgssapi::credential::Cred,
    #[cfg(not(feature = "gssapi"))]
    never: Never,
}

impl std::fmt::Debug for Initiator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Initiator").finish_non_exhaustive()
    }
}

impl Initiator {
    /// Initiator credentials for `principal`, or the default one (the
    /// ticket cache's) when `None`.
    pub fn new(principal: Option<&str>) -> Result<Initiator, KerberosError> {
        #[cfg(feature = "gssapi")]
        {
            use libgssapi::credential::{Cred, CredUsage};
            let name = principal.map(principal_name).transpose()?;
            let _turn = initiating_turn();
            let credentials = Cred::acquire(name.as_ref(), None, CredUsage::Initiate, None)
                .map_err(|e| {
                    KerberosError::Gss(format!(
                        "no Kerberos credentials for {}: {e}",
                        principal.unwrap_or("the default principal")
                    ))
                })?;
            Ok(Initiator { credentials })
        }
        #[cfg(not(feature = "gssapi"))]
        {
            let _ = principal;
            Err(KerberosError::NotBuilt)
        }
    }

    /// The principal these credentials are (`alice@REALM`).
    pub fn principal(&self) -> Result<String, KerberosError> {
        #[cfg(feature = "gssapi")]
        {
            self.credentials
                .name()
                .map(|name| name.to_string())
                .map_err(|e| KerberosError::Gss(format!("the credentials' name: {e}")))
        }
        #[cfg(not(feature = "gssapi"))]
        {
            match self.never {}
        }
    }

    /// A new context towards `target` (a principal such as
    /// `hbase/host@REALM`), asking for mutual authentication, integrity
    /// and confidentiality, as HBase's Java client does.
    pub fn context(&self, target: &str) -> Result<Context, KerberosError> {
        self.context_through(target, Mechanism::Krb5)
    }

    /// A context towards `target` wrapped in SPNEGO (RFC 4178), as
    /// browsers, curl and Python's `requests-gssapi` send in HTTP's
    /// `Authorization: Negotiate`.
    pub fn spnego_context(&self, target: &str) -> Result<Context, KerberosError> {
        self.context_through(target, Mechanism::Spnego)
    }

    fn context_through(
        &self,
        target: &str,
        mechanism: Mechanism,
    ) -> Result<Context, KerberosError> {
        #[cfg(feature = "gssapi")]
        {
            use libgssapi::context::{ClientCtx, CtxFlags};
            use libgssapi::oid::{GSS_MECH_KRB5, GSS_MECH_SPNEGO};
            let target = principal_name(target)?;
            let flags = CtxFlags::GSS_C_MUTUAL_FLAG
                | CtxFlags::GSS_C_CONF_FLAG
                | CtxFlags::GSS_C_INTEG_FLAG
                | CtxFlags::GSS_C_SEQUENCE_FLAG;
            let mech = match mechanism {
                Mechanism::Krb5 => GSS_MECH_KRB5,
                Mechanism::Spnego => GSS_MECH_SPNEGO,
            };
            Ok(Context {
                side: Side::Initiating(ClientCtx::new(
                    Some(self.credentials.clone()),
                    target,
                    flags,
                    Some(mech),
                )),
            })
        }
        #[cfg(not(feature = "gssapi"))]
        {
            let _ = (target, mechanism);
            match self.never {}
        }
    }
}

/// One initiator at a time per process acquires credentials or steps a
/// context. With a client keytab the library fetches the ticket in those
/// calls and stores it in the default cache; two threads doing that for
/// one principal at once replace each other's cache file under a
/// collection (`KRB5CCNAME=DIR:...`), and one of them fails with "No
/// credentials cache found" (seen in CI). Handshakes are rare and short,
/// so taking turns costs nothing measurable.
#[cfg(feature = "gssapi")]
fn initiating_turn() -> std::sync::MutexGuard<'static, ()> {
    static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());
    // A panic elsewhere while holding it leaves nothing to repair.
    TURN.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The mechanism an initiator speaks.
#[derive(Debug, Clone, Copy)]
enum Mechanism {
    /// Kerberos 5 itself (SASL GSSAPI).
    Krb5,
    /// Kerberos 5 negotiated through SPNEGO (HTTP).
    Spnego,
}

#[cfg(not(feature = "gssapi"))]
#[derive(Clone, Copy, Debug)]
enum Never {}

#[cfg(feature = "gssapi")]
fn principal_name(principal: &str) -> Result<libgssapi::name::Name, KerberosError> {
    use libgssapi::oid::GSS_NT_KRB5_PRINCIPAL;
    libgssapi::name::Name::new(principal.as_bytes(), Some(GSS_NT_KRB5_PRINCIPAL))
        .map_err(|e| KerberosError::Gss(format!("principal {principal:?}: {e}")))
}

#[cfg(feature = "gssapi")]
enum Side {
    Accepting(libgssapi::context::ServerCtx),
    Initiating(libgssapi::context::ClientCtx),
}

/// One security context: stepped with the peer's tokens until it is
/// complete, then used to wrap and unwrap messages. Not shared between
/// threads at once (a Kerberos context numbers its messages).
pub struct Context {
    #[cfg(feature = "gssapi")]
    side: Side,
    #[cfg(not(feature = "gssapi"))]
    never: Never,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("complete", &self.is_complete())
            .finish_non_exhaustive()
    }
}

impl Context {
    /// Feeds the peer's token (empty for an initiator's first step);
    /// answers the token to send back, if any. An error ends the
    /// context: the peer's ticket was refused (expired, for another
    /// principal, replayed, not decryptable with the keytab's key).
    pub fn step(&mut self, token: &[u8]) -> Result<Option<Vec<u8>>, KerberosError> {
        #[cfg(feature = "gssapi")]
        {
            let out = match &mut self.side {
                Side::Accepting(ctx) => ctx.step(token, None),
                Side::Initiating(ctx) => {
                    let _turn = initiating_turn();
                    ctx.step((!token.is_empty()).then_some(token), None)
                }
            };
            out.map(|t| t.map(|t| t.to_vec()))
                .map_err(|e| KerberosError::Gss(format!("GSS-API context refused: {e}")))
        }
        #[cfg(not(feature = "gssapi"))]
        {
            let _ = token;
            match self.never {}
        }
    }

    /// Whether the context is established.
    pub fn is_complete(&self) -> bool {
        #[cfg(feature = "gssapi")]
        {
            use libgssapi::context::SecurityContext;
            match &self.side {
                Side::Accepting(ctx) => ctx.is_complete(),
                Side::Initiating(ctx) => ctx.is_complete(),
            }
        }
        #[cfg(not(feature = "gssapi"))]
        {
            match self.never {}
        }
    }

    /// The authenticated peer's principal (`alice@REALM`), once complete.
    pub fn peer(&self) -> Result<String, KerberosError> {
        #[cfg(feature = "gssapi")]
        {
            use libgssapi::context::SecurityContext;
            let name = match &self.side {
                Side::Accepting(ctx) => ctx.source_name(),
                Side::Initiating(ctx) => ctx.target_name(),
            }
            .map_err(|e| KerberosError::Gss(format!("the peer's name: {e}")))?;
            Ok(name.to_string())
        }
        #[cfg(not(feature = "gssapi"))]
        {
            match self.never {}
        }
    }

    /// `message` protected for the peer: signed, and sealed when
    /// `encrypt`.
    pub fn wrap(&mut self, encrypt: bool, message: &[u8]) -> Result<Vec<u8>, KerberosError> {
        #[cfg(feature = "gssapi")]
        {
            use libgssapi::context::SecurityContext;
            let wrapped = match &mut self.side {
                Side::Accepting(ctx) => ctx.wrap(encrypt, message),
                Side::Initiating(ctx) => ctx.wrap(encrypt, message),
            };
            wrapped
                .map(|b| b.to_vec())
                .map_err(|e| KerberosError::Gss(format!("wrapping a message: {e}")))
        }
        #[cfg(not(feature = "gssapi"))]
        {
            let _ = (encrypt, message);
            match self.never {}
        }
    }

    /// The message inside a token the peer wrapped; refused when it was
    /// altered, replayed or out of order.
    pub fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>, KerberosError> {
        #[cfg(feature = "gssapi")]
        {
            use libgssapi::context::SecurityContext;
            let message = match &mut self.side {
                Side::Accepting(ctx) => ctx.unwrap(token),
                Side::Initiating(ctx) => ctx.unwrap(token),
            };
            message
                .map(|b| b.to_vec())
                .map_err(|e| KerberosError::Gss(format!("a wrapped message was refused: {e}")))
        }
        #[cfg(not(feature = "gssapi"))]
        {
            let _ = token;
            match self.never {}
        }
    }
}

/// Whether this build can run Kerberos (the `gssapi` feature).
pub const fn built() -> bool {
    cfg!(feature = "gssapi")
}

/// The environment a process serving as `keytab`'s principals sets once,
/// before it starts any thread: MIT Kerberos reads acceptor keys from
/// `KRB5_KTNAME` and, for the cluster's own calls, initiator keys from
/// `KRB5_CLIENT_KTNAME`; tickets it gets go to a cache of its own in
/// memory, not the user's. Refuses a keytab other users may read: it
/// holds the server's keys.
pub fn process_environment(
    keytab: &std::path::Path,
) -> Result<Vec<(&'static str, String)>, KerberosError> {
    use std::os::unix::fs::PermissionsExt;
    let metadata = std::fs::metadata(keytab)
        .map_err(|e| KerberosError::Config(format!("keytab {}: {e}", keytab.display())))?;
    if metadata.permissions().mode() & 0o004 != 0 {
        return Err(KerberosError::Config(format!(
            "keytab {} is readable by every user; it holds the server's keys (chmod 600 it)",
            keytab.display()
        )));
    }
    let absolute = std::path::absolute(keytab)
        .map_err(|e| KerberosError::Config(format!("keytab {}: {e}", keytab.display())))?;
    let file = format!("FILE:{}", absolute.display());
    Ok(vec![
        ("KRB5_KTNAME", file.clone()),
        ("KRB5_CLIENT_KTNAME", file),
        (
            "KRB5CCNAME",
            format!("MEMORY:basalt-{}", std::process::id()),
        ),
    ])
}
