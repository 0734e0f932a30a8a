//! Kerberos in front of Basalt's HTTP servers (REST and the web UI): with
//! `[security] authentication = "kerberos"` every request proves who sent
//! it through HTTP's `Negotiate` (SPNEGO) or the signed `hadoop.auth`
//! cookie a `Negotiate` exchange earned, as Hadoop's
//! `AuthenticationFilter` makes HBase's REST server and info server do
//! (`basalt_kerberos::spnego` has the rules). Refusals are `401` (with
//! `WWW-Authenticate: Negotiate`) or `403`, with the reason in the body;
//! forged or broken credentials leave an audit line.

use std::io;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};

use basalt::SecurityOptions;
use basalt_kerberos::{HttpAuthenticator, HttpCredentials, HttpDecision, HttpIdentity};

use crate::http::{AnswerBody, ConnectionInfo, Response};

/// Where audit lines go (`basalt::access::AUDIT_TARGET`).
const AUDIT: &str = basalt::access::AUDIT_TARGET;

/// The Kerberos gate of one HTTP server.
#[derive(Debug)]
pub struct HttpKerberos {
    authenticator: Arc<HttpAuthenticator>,
    /// Names the server in log lines (`REST`, `info`).
    server: &'static str,
}

impl HttpKerberos {
    /// The gate for `security`, when Kerberos is on: the HTTP principal
    /// (`_HOST` = this machine's host name) must have its key in the
    /// keytab, or the server does not start.
    pub fn for_security(
        security: &SecurityOptions,
        server: &'static str,
    ) -> io::Result<Option<HttpKerberos>> {
        let invalid = |e: String| io::Error::new(io::ErrorKind::InvalidInput, e);
        let Some(settings) = security.kerberos().map_err(|e| invalid(e.to_string()))? else {
            return Ok(None);
        };
        let hostname = basalt_kerberos::local_hostname();
        let authenticator = HttpAuthenticator::new(settings, &hostname).map_err(|e| {
            invalid(format!(
                "{server}: Kerberos (SPNEGO) for HTTP principal {}: {e}",
                settings.http_principal(&hostname)
            ))
        })?;
        tracing::info!(
            principal = %authenticator.principal(),
            server,
            "HTTP clients authenticate with Kerberos (SPNEGO, then the hadoop.auth cookie)"
        );
        Ok(Some(HttpKerberos {
            authenticator: Arc::new(authenticator),
            server,
        }))
    }

    /// The HTTP principal.
    pub fn principal(&self) -> &str {
        self.authenticator.principal()
    }

    /// Who sent the request, or the answer that refuses it. The Kerberos
    /// work of a `Negotiate` token (the keytab, the replay cache) runs on
    /// the blocking pool; a cookie is checked here.
    pub async fn authenticate(
        &self,
        parts: &hyper::http::request::Parts,
    ) -> Result<HttpIdentity, Response> {
        let info = parts.extensions.get::<ConnectionInfo>().copied();
        let cookies: Vec<&str> = parts
            .headers
            .get_all(hyper::header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        let credentials = HttpCredentials {
            cookie: (!cookies.is_empty()).then(|| cookies.join("; ")),
            authorization: parts
                .headers
                .get(hyper::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            secure: info.is_some_and(|i| i.tls),
        };
        let now = SystemTime::now();
        let decision = if self.authenticator.needs_kerberos(&credentials, now) {
            let authenticator = Arc::clone(&self.authenticator);
            match tokio::task::spawn_blocking(move || authenticator.authenticate(&credentials, now))
                .await
            {
                Ok(decision) => decision,
                Err(e) => {
                    tracing::error!(error = %e, server = self.server, "the Kerberos step stopped");
                    return Err(refusal(500, "the Kerberos step stopped", &[]));
                }
            }
        } else {
            self.authenticator.authenticate(&credentials, now)
        };
        match decision {
            HttpDecision::Allowed(identity) => Ok(identity),
            HttpDecision::Refused(refused) => {
                let address = info.map(|i| i.peer.ip().to_string()).unwrap_or_default();
                if refused.audit {
                    // HBase's security logger words it "Auth failed for
                    // <address>".
                    tracing::info!(
                        target: AUDIT,
                        "Auth failed for {address}: {} {} {}: {}",
                        self.server,
                        parts.method,
                        parts.uri.path(),
                        refused.reason
                    );
                } else {
                    tracing::debug!(server = self.server, %address, reason = %refused.reason, "HTTP request challenged for Kerberos");
                }
                Err(refusal(refused.status, &refused.reason, &refused.headers))
            }
        }
    }
}

/// A plain-text refusal with `headers` (`WWW-Authenticate`, `Set-Cookie`).
pub fn refusal(status: u16, reason: &str, headers: &[(&'static str, String)]) -> Response {
    let word = match status {
        401 => "Unauthorized",
        403 => "Forbidden",
        _ => "Error",
    };
    let mut response = hyper::Response::new(AnswerBody::from(Bytes::from(format!(
        "{word}\r\n{reason}\r\n"
    ))));
    *response.status_mut() =
        hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::FORBIDDEN);
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain"),
    );
    add_headers(&mut response, headers);
    response
}

/// Adds the authentication's headers (a mutual-authentication token, a
/// cookie) to an answer.
pub fn add_headers(response: &mut Response, headers: &[(&'static str, String)]) {
    for (name, value) in headers {
        // The values are base64 and the cookie's own characters: always
        // valid; one that were not would be left out.
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            response.headers_mut().append(name, value);
        }
    }
}
