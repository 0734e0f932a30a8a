//! The Kerberos options of the commands that connect to a server as a
//! client (`basalt shell`, `basalt compare`): whom to expect, and which
//! protections to take. The client is the ticket cache's principal
//! (`kinit`), as with HBase's own tools.

use basalt_kerberos::Qop;

/// `--kerberos-principal` and `--kerberos-protection`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct KerberosClientArgs {
    /// Authenticate with Kerberos, as the ticket cache's principal
    /// (`kinit`), expecting servers of this principal, e.g.
    /// `hbase/_HOST@EXAMPLE.COM`. Needs a basalt built with `--features
    /// kerberos`.
    #[arg(long, value_name = "PRINCIPAL")]
    pub(crate) kerberos_principal: Option<String>,
    /// With Kerberos, the protections to take, in order of preference
    /// (authentication, integrity, privacy).
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "privacy,integrity,authentication"
    )]
    pub(crate) kerberos_protection: Vec<String>,
}

impl KerberosClientArgs {
    /// The expected server principal and the protections, when Kerberos
    /// is asked for; a clear error for an unknown protection or a build
    /// without Kerberos.
    pub(crate) fn settings(&self) -> Result<Option<(String, Vec<Qop>)>, String> {
        let Some(principal) = &self.kerberos_principal else {
            return Ok(None);
        };
        let protection = self
            .kerberos_protection
            .iter()
            .map(|name| Qop::try_from(name.clone()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("--kerberos-protection: {e}"))?;
        if !basalt_kerberos::gss::built() {
            return Err(basalt_kerberos::KerberosError::NotBuilt.to_string());
        }
        Ok(Some((principal.clone(), protection)))
    }
}
