//! HTTP's `Negotiate` authentication (SPNEGO, RFC 4559) and the signed
//! `hadoop.auth` cookie, the way Hadoop's `AuthenticationFilter` with its
//! Kerberos handler runs them in front of HBase's REST server and web UI:
//!
//! 1. a request carrying a valid, unexpired `hadoop.auth` cookie this
//!    server (or one sharing its secret) signed is let through as the
//!    cookie's user, with no Kerberos work;
//! 2. otherwise, a request without `Authorization: Negotiate <token>` is
//!    answered `401` with `WWW-Authenticate: Negotiate` (the challenge
//!    every SPNEGO client waits for before it sends a token);
//! 3. a token is accepted for the HTTP principal (an SPNEGO token or a
//!    bare Kerberos one); once the context is established the request is
//!    served as the principal's short name (`auth_to_local`), the answer
//!    carries `WWW-Authenticate: Negotiate <reply>` when Kerberos has a
//!    reply (the mutual authentication clients check) and a fresh cookie;
//! 4. a token Kerberos refuses, or a principal no rule maps, is answered
//!    `403` with the reason, as Hadoop answers its
//!    `AuthenticationException`.
//!
//! The cookie is `u=<user>&p=<principal>&t=kerberos&e=<expiry, ms since
//! the epoch>&s=<base64 HMAC-SHA256 of the rest>`. Clients treat it as
//! opaque; only the signature makes it worth anything.

use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::hmac;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::DecodePaddingMode;
use base64::Engine;

use crate::gss::Acceptor;
use crate::names::AuthToLocal;
use crate::{KerberosError, KerberosSettings};

/// The cookie's name: Hadoop's, so tools that know HBase recognise it.
pub const COOKIE_NAME: &str = "hadoop.auth";

/// The authentication type the cookie records.
const TOKEN_TYPE: &str = "kerberos";

/// The shortest signature secret a file may hold: a short secret can be
/// found by trying, and with it anyone can forge a cookie for any user.
pub const MIN_SECRET_BYTES: usize = 16;

/// Base64 as clients send it: padded or not (Hadoop's decoder takes
/// both).
const LENIENT_BASE64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// What a request brings to prove who it is.
#[derive(Debug, Clone, Default)]
pub struct HttpCredentials {
    /// Every `Cookie` header of the request, joined with `; `.
    pub cookie: Option<String>,
    /// The `Authorization` header.
    pub authorization: Option<String>,
    /// Whether the request came over HTTPS (the cookie is then `Secure`).
    pub secure: bool,
}

/// Who a request proved to be, and what the answer must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpIdentity {
    /// The short name (`auth_to_local` of the principal).
    pub user: String,
    /// The authenticated principal (`alice@REALM`).
    pub principal: String,
    /// Headers for the answer: `WWW-Authenticate` with the mutual
    /// authentication token and `Set-Cookie` with a new cookie, after a
    /// `Negotiate` exchange; none when a cookie was enough.
    pub headers: Vec<(&'static str, String)>,
}

/// A request not let through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRefusal {
    /// 401 (authenticate, with `WWW-Authenticate: Negotiate`) or 403
    /// (Kerberos refused what was sent).
    pub status: u16,
    /// Why, in words for the answer's body and the audit log.
    pub reason: String,
    /// Headers for the answer (`WWW-Authenticate`, a `Set-Cookie` that
    /// clears a cookie that is no good).
    pub headers: Vec<(&'static str, String)>,
    /// Whether this is a refusal worth an audit line (a forged or broken
    /// credential) rather than the challenge that starts every exchange.
    pub audit: bool,
}

/// What to do with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpDecision {
    /// Serve it as this identity.
    Allowed(HttpIdentity),
    /// Answer the refusal.
    Refused(HttpRefusal),
}

/// The state of a request's cookie.
#[derive(Debug, Clone, PartialEq, Eq)]
enum CookieState {
    /// No `hadoop.auth` cookie.
    Missing,
    /// A valid one, for this user and principal.
    Valid { user: String, principal: String },
    /// One that was valid and has expired (not worth an audit line).
    Expired,
    /// One that is not ours or was altered.
    Invalid(String),
}

/// Authenticates HTTP requests for one HTTP principal.
#[derive(Debug, Clone)]
pub struct HttpAuthenticator {
    acceptor: Acceptor,
    rules: AuthToLocal,
    key: CookieKey,
    validity: Duration,
}

/// The cookie signing key (never printed).
#[derive(Clone)]
struct CookieKey(hmac::Key);

impl std::fmt::Debug for CookieKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CookieKey(..)")
    }
}

impl HttpAuthenticator {
    /// The authenticator for `settings`' HTTP principal on host `hostname`
    /// (`_HOST`). Fails when the principal's key is not in the keytab, the
    /// secret file cannot be used, or this build has no GSS-API.
    pub fn new(
        settings: &KerberosSettings,
        hostname: &str,
    ) -> Result<HttpAuthenticator, KerberosError> {
        let rules = settings.validate()?;
        let principal = settings.http_principal(hostname);
        let acceptor = Acceptor::new(&principal)?;
        let secret = signature_secret(settings.http_signature_secret_file.as_deref())?;
        Ok(HttpAuthenticator {
            acceptor,
            rules,
            key: CookieKey(hmac::Key::new(hmac::HMAC_SHA256, &secret)),
            validity: Duration::from_secs(settings.http_token_validity_secs),
        })
    }

    /// The HTTP principal tickets are accepted for.
    pub fn principal(&self) -> &str {
        self.acceptor.principal()
    }

    /// The short name of `principal`, by the server's `auth_to_local`.
    pub fn short_name(&self, principal: &str) -> Result<String, KerberosError> {
        self.rules.short_name(principal)
    }

    /// Whether deciding on `credentials` takes Kerberos work (reading the
    /// keytab and the replay cache): a caller on an async runtime runs
    /// [`HttpAuthenticator::authenticate`] off it then.
    pub fn needs_kerberos(&self, credentials: &HttpCredentials, now: SystemTime) -> bool {
        !matches!(
            self.cookie_state(credentials.cookie.as_deref(), now),
            CookieState::Valid { .. }
        ) && negotiate_token(credentials.authorization.as_deref()).is_some()
    }

    /// Decides on a request (see the module's steps).
    pub fn authenticate(&self, credentials: &HttpCredentials, now: SystemTime) -> HttpDecision {
        let cookie = self.cookie_state(credentials.cookie.as_deref(), now);
        let (cookie_reason, had_cookie) = match cookie {
            CookieState::Valid { user, principal } => {
                return HttpDecision::Allowed(HttpIdentity {
                    user,
                    principal,
                    headers: Vec::new(),
                })
            }
            CookieState::Missing => (None, false),
            CookieState::Expired => (None, true),
            CookieState::Invalid(why) => (Some(why), true),
        };
        // A cookie that is no good is cleared whatever happens next: a
        // browser would otherwise send it with every request.
        let mut headers = Vec::new();
        if had_cookie {
            headers.push(("Set-Cookie", clear_cookie(credentials.secure)));
        }
        let Some(token) = negotiate_token(credentials.authorization.as_deref()) else {
            headers.push(("WWW-Authenticate", "Negotiate".to_string()));
            let audit = cookie_reason.is_some();
            return HttpDecision::Refused(HttpRefusal {
                status: 401,
                reason: cookie_reason.unwrap_or_else(|| "Authentication required".to_string()),
                headers,
                audit,
            });
        };
        let forbidden = |reason: String, headers: Vec<(&'static str, String)>| {
            HttpDecision::Refused(HttpRefusal {
                status: 403,
                reason,
                headers,
                audit: true,
            })
        };
        let token = match LENIENT_BASE64.decode(token.trim()) {
            Ok(token) if !token.is_empty() => token,
            Ok(_) => return forbidden("the Negotiate token is empty".to_string(), headers),
            Err(e) => return forbidden(format!("the Negotiate token is not base64: {e}"), headers),
        };
        let mut context = self.acceptor.context();
        let reply = match context.step(&token) {
            Ok(reply) => reply.filter(|r| !r.is_empty()),
            Err(e) => return forbidden(e.to_string(), headers),
        };
        if let Some(reply) = &reply {
            headers.push((
                "WWW-Authenticate",
                format!("Negotiate {}", STANDARD.encode(reply)),
            ));
        }
        if !context.is_complete() {
            // A mechanism that needs another round: the client answers
            // the continuation token on its next request.
            if reply.is_none() {
                headers.push(("WWW-Authenticate", "Negotiate".to_string()));
            }
            return HttpDecision::Refused(HttpRefusal {
                status: 401,
                reason: "SPNEGO in progress".to_string(),
                headers,
                audit: false,
            });
        }
        let principal = match context.peer() {
            Ok(principal) => principal,
            Err(e) => return forbidden(e.to_string(), headers),
        };
        let user = match self.rules.short_name(&principal) {
            Ok(user) => user,
            Err(e) => {
                return forbidden(
                    format!("{principal} authenticated, and no user name maps to it: {e}"),
                    headers,
                )
            }
        };
        // The cleared cookie gives way to the new one.
        headers.retain(|(name, _)| *name != "Set-Cookie");
        if let Some(cookie) = self.issue_cookie(&user, &principal, credentials.secure, now) {
            headers.push(("Set-Cookie", cookie));
        }
        HttpDecision::Allowed(HttpIdentity {
            user,
            principal,
            headers,
        })
    }

    /// A `Set-Cookie` value for `user`, valid for the configured time;
    /// `None` for names that cannot go in the cookie's `&`-separated form
    /// (the client then negotiates on every request, which still works).
    fn issue_cookie(
        &self,
        user: &str,
        principal: &str,
        secure: bool,
        now: SystemTime,
    ) -> Option<String> {
        let expires = millis(now).saturating_add(self.validity.as_millis() as u64);
        let value = signed_token(&self.key, user, principal, expires)?;
        let mut cookie = format!("{COOKIE_NAME}=\"{value}\"; Path=/; HttpOnly");
        if secure {
            cookie.push_str("; Secure");
        }
        Some(cookie)
    }

    fn cookie_state(&self, header: Option<&str>, now: SystemTime) -> CookieState {
        cookie_state(&self.key, header.unwrap_or(""), now)
    }
}

/// The cookie's value: the token and its signature; `None` for names that
/// cannot go in its `&`-separated form.
fn signed_token(key: &CookieKey, user: &str, principal: &str, expires: u64) -> Option<String> {
    if [user, principal]
        .iter()
        .any(|s| s.contains(['&', '=', '"', ';', ',']) || s.chars().any(char::is_control))
    {
        return None;
    }
    let token = format!("u={user}&p={principal}&t={TOKEN_TYPE}&e={expires}");
    let signature = STANDARD.encode(hmac::sign(&key.0, token.as_bytes()).as_ref());
    Some(format!("{token}&s={signature}"))
}

/// The best of the `hadoop.auth` cookies in a `Cookie` header: a browser
/// may hold a cleared (empty) one beside a good one.
fn cookie_state(key: &CookieKey, header: &str, now: SystemTime) -> CookieState {
    let mut state = CookieState::Missing;
    for value in cookie_values(header) {
        match check_cookie(key, value, now) {
            valid @ CookieState::Valid { .. } => return valid,
            CookieState::Missing => {}
            other => {
                if !matches!(state, CookieState::Invalid(_)) {
                    state = other;
                }
            }
        }
    }
    state
}

fn check_cookie(key: &CookieKey, value: &str, now: SystemTime) -> CookieState {
    if value.is_empty() {
        return CookieState::Missing;
    }
    let invalid = |why: &str| CookieState::Invalid(format!("the {COOKIE_NAME} cookie {why}"));
    let Some((token, signature)) = value.rsplit_once("&s=") else {
        return invalid("is not signed");
    };
    let Ok(signature) = LENIENT_BASE64.decode(signature) else {
        return invalid("has a malformed signature");
    };
    // Constant-time comparison (aws-lc's verify): a forger learns nothing
    // from how long a refusal took.
    if hmac::verify(&key.0, token.as_bytes(), &signature).is_err() {
        return invalid(
            "has an invalid signature (forged, altered, or signed with another secret)",
        );
    }
    let mut user = None;
    let mut principal = None;
    let mut kind = None;
    let mut expires = None;
    for field in token.split('&') {
        match field.split_once('=') {
            Some(("u", v)) => user = Some(v),
            Some(("p", v)) => principal = Some(v),
            Some(("t", v)) => kind = Some(v),
            Some(("e", v)) => expires = v.parse::<u64>().ok(),
            _ => {}
        }
    }
    let (Some(user), Some(principal), Some(TOKEN_TYPE), Some(expires)) =
        (user, principal, kind, expires)
    else {
        return invalid("is signed and incomplete");
    };
    if expires <= millis(now) {
        return CookieState::Expired;
    }
    CookieState::Valid {
        user: user.to_string(),
        principal: principal.to_string(),
    }
}

/// The token of `Authorization: Negotiate <token>` (the scheme's case does
/// not matter, as HTTP says).
fn negotiate_token(header: Option<&str>) -> Option<&str> {
    let header = header?.trim();
    let (scheme, token) = header.split_once(' ').unwrap_or((header, ""));
    scheme
        .eq_ignore_ascii_case("Negotiate")
        .then_some(token.trim())
        .filter(|t| !t.is_empty())
}

/// The values of every `hadoop.auth` cookie in a `Cookie` header, without
/// the quotes the server put around them.
fn cookie_values(header: &str) -> impl Iterator<Item = &str> {
    header.split(';').filter_map(|pair| {
        let (name, value) = pair.split_once('=')?;
        if name.trim() != COOKIE_NAME {
            return None;
        }
        let value = value.trim();
        Some(
            value
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(value),
        )
    })
}

/// The `Set-Cookie` value that empties the cookie.
fn clear_cookie(secure: bool) -> String {
    let mut cookie = format!("{COOKIE_NAME}=; Path=/; HttpOnly; Max-Age=0");
    if secure {
        cookie.push_str("; Secure");
    }
    cookie
}

fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The secret that signs cookies: the file's bytes, or one random secret
/// for the whole process (so REST and the web UI of one process take each
/// other's cookies, as they would with a shared file).
fn signature_secret(file: Option<&Path>) -> Result<Vec<u8>, KerberosError> {
    match file {
        Some(path) => read_secret_file(path),
        None => process_secret(),
    }
}

fn read_secret_file(path: &Path) -> Result<Vec<u8>, KerberosError> {
    use std::os::unix::fs::PermissionsExt;
    let bad = |why: String| {
        KerberosError::Config(format!(
            "[security.kerberos] http_signature_secret_file {}: {why}",
            path.display()
        ))
    };
    let metadata = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if metadata.permissions().mode() & 0o004 != 0 {
        return Err(bad(
            "is readable by every user; whoever reads it can forge any user's cookie (chmod 600 it)"
                .into(),
        ));
    }
    let secret = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    if secret.len() < MIN_SECRET_BYTES {
        return Err(bad(format!(
            "holds {} bytes; at least {MIN_SECRET_BYTES} (random) are needed",
            secret.len()
        )));
    }
    Ok(secret)
}

fn process_secret() -> Result<Vec<u8>, KerberosError> {
    static SECRET: OnceLock<[u8; 32]> = OnceLock::new();
    if let Some(secret) = SECRET.get() {
        return Ok(secret.to_vec());
    }
    let mut fresh = [0u8; 32];
    aws_lc_rs::rand::fill(&mut fresh).map_err(|_| {
        KerberosError::Config("no random bytes for the cookie signing secret".into())
    })?;
    Ok(SECRET.get_or_init(|| fresh).to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(secret: &[u8]) -> CookieKey {
        CookieKey(hmac::Key::new(hmac::HMAC_SHA256, secret))
    }

    #[test]
    fn a_signed_cookie_names_its_user_until_it_expires() {
        let key = key(b"0123456789abcdef0123");
        let now = SystemTime::now();
        let value = signed_token(&key, "alice", "alice@R", millis(now) + 60_000).unwrap();
        let header = format!("other=1; {COOKIE_NAME}=\"{value}\"");
        assert_eq!(
            cookie_state(&key, &header, now),
            CookieState::Valid {
                user: "alice".into(),
                principal: "alice@R".into()
            }
        );
        // Without quotes too (some clients strip them).
        assert!(matches!(
            cookie_state(&key, &format!("{COOKIE_NAME}={value}"), now),
            CookieState::Valid { .. }
        ));
        let later = now + Duration::from_secs(61);
        assert_eq!(cookie_state(&key, &header, later), CookieState::Expired);
        // Names that would break the cookie's form get none.
        assert_eq!(signed_token(&key, "a&u=root", "a@R", 1), None);
    }

    #[test]
    fn an_altered_or_foreign_cookie_is_invalid() {
        let key = key(b"0123456789abcdef0123");
        let now = SystemTime::now();
        let value = signed_token(&key, "bob", "bob@R", millis(now) + 60_000).unwrap();
        let forged = value.replacen("u=bob", "u=hbase", 1);
        assert!(matches!(
            cookie_state(&key, &format!("{COOKIE_NAME}=\"{forged}\""), now),
            CookieState::Invalid(why) if why.contains("invalid signature")
        ));
        let other = super::tests::key(b"another secret, also long");
        assert!(matches!(
            cookie_state(&other, &format!("{COOKIE_NAME}=\"{value}\""), now),
            CookieState::Invalid(_)
        ));
        let unsigned = format!("{COOKIE_NAME}=\"u=x&p=y&t=kerberos&e=99999999999999\"");
        assert!(matches!(
            cookie_state(&key, &unsigned, now),
            CookieState::Invalid(why) if why.contains("not signed")
        ));
        assert_eq!(cookie_state(&key, "unrelated=1", now), CookieState::Missing);
        // An emptied cookie beside a good one: the good one counts.
        assert!(matches!(
            cookie_state(
                &key,
                &format!("{COOKIE_NAME}=; {COOKIE_NAME}=\"{value}\""),
                now
            ),
            CookieState::Valid { .. }
        ));
    }

    #[test]
    fn negotiate_tokens_are_read_whatever_the_schemes_case() {
        assert_eq!(negotiate_token(Some("Negotiate YWJj")), Some("YWJj"));
        assert_eq!(negotiate_token(Some("negotiate   YWJj ")), Some("YWJj"));
        assert_eq!(negotiate_token(Some("Negotiate")), None);
        assert_eq!(negotiate_token(Some("Basic YWJj")), None);
        assert_eq!(negotiate_token(None), None);
        assert_eq!(LENIENT_BASE64.decode("YWJj").unwrap(), b"abc");
        assert_eq!(LENIENT_BASE64.decode("YWI").unwrap(), b"ab");
    }

    #[test]
    fn a_secret_file_must_be_private_and_long_enough() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("secret");
        std::fs::write(&path, b"short").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let err = read_secret_file(&path).unwrap_err().to_string();
        assert!(err.contains("at least 16"), "{err}");
        std::fs::write(&path, b"a secret of more than sixteen bytes").unwrap();
        assert!(read_secret_file(&path).is_ok());
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let err = read_secret_file(&path).unwrap_err().to_string();
        assert!(err.contains("readable by every user"), "{err}");
        assert_eq!(process_secret().unwrap(), process_secret().unwrap());
    }
}
