//! SASL's GSSAPI mechanism (RFC 4752) over a [`Context`]: what HBase's
//! RPC and Thrift servers speak with their Kerberos clients.
//!
//! Server side, after the client's first token:
//! 1. context tokens go back and forth until the context is established
//!    (with mutual authentication the last is the server's AP-REP, then
//!    the client sends an empty token);
//! 2. the server sends, wrapped without encryption, 4 bytes: the security
//!    layers it offers (bit 1 none, 2 integrity, 4 privacy) and the
//!    largest message it takes;
//! 3. the client answers, wrapped, the one layer it chose, its own
//!    largest message, and optionally an authorization id. The exchange
//!    is complete; the server sends nothing more.
//!
//! An authorization id other than the authenticated principal is refused
//! (HBase's GSSAPI callback allows only equal ones); acting for another
//! user is the proxy-user rules' business, one layer up.

use serde::{Deserialize, Serialize};

use crate::gss::Context;
use crate::KerberosError;

/// A SASL quality of protection: what wraps the bytes after
/// authentication (HBase's `hbase.rpc.protection`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Qop {
    /// `authentication` (`auth`): authentication only; bytes go as they are.
    Authentication,
    /// `integrity` (`auth-int`): every message signed.
    Integrity,
    /// `privacy` (`auth-conf`): every message signed and encrypted.
    Privacy,
}

impl Qop {
    /// The layer's bit in RFC 4752's offer and choice.
    pub fn bit(self) -> u8 {
        match self {
            Qop::Authentication => 1,
            Qop::Integrity => 2,
            Qop::Privacy => 4,
        }
    }

    /// HBase's name (`hbase.rpc.protection`).
    pub fn name(self) -> &'static str {
        match self {
            Qop::Authentication => "authentication",
            Qop::Integrity => "integrity",
            Qop::Privacy => "privacy",
        }
    }

    /// Whether bytes after the exchange are wrapped.
    pub fn wraps(self) -> bool {
        self != Qop::Authentication
    }

    fn from_bit(bit: u8) -> Option<Qop> {
        match bit {
            1 => Some(Qop::Authentication),
            2 => Some(Qop::Integrity),
            4 => Some(Qop::Privacy),
            _ => None,
        }
    }
}

impl TryFrom<String> for Qop {
    type Error = String;

    /// HBase's names, and SASL's (`auth`, `auth-int`, `auth-conf`), which
    /// HBase also accepts.
    fn try_from(name: String) -> Result<Qop, String> {
        match name.trim().to_ascii_lowercase().as_str() {
            "authentication" | "auth" => Ok(Qop::Authentication),
            "integrity" | "auth-int" => Ok(Qop::Integrity),
            "privacy" | "auth-conf" => Ok(Qop::Privacy),
            other => Err(format!(
                "unknown protection {other:?}: authentication, integrity or privacy"
            )),
        }
    }
}

impl From<Qop> for String {
    fn from(qop: Qop) -> String {
        qop.name().to_string()
    }
}

/// The largest wrapped message this side takes, offered in the exchange.
/// Informational: HBase's clients wrap whole flushes whatever is offered,
/// and so the streams here take any size up to the frame limits.
const MAX_MESSAGE: u32 = 0x01_0000;

/// The bytes' protection once the exchange is complete.
#[derive(Debug)]
pub struct SecurityLayer {
    context: Context,
    qop: Qop,
}

impl SecurityLayer {
    /// The negotiated protection.
    pub fn qop(&self) -> Qop {
        self.qop
    }

    /// `plain` as the peer must receive it (itself with `authentication`).
    pub fn wrap(&mut self, plain: &[u8]) -> Result<Vec<u8>, KerberosError> {
        match self.qop {
            Qop::Authentication => Ok(plain.to_vec()),
            Qop::Integrity => self.context.wrap(false, plain),
            Qop::Privacy => self.context.wrap(true, plain),
        }
    }

    /// What the peer sent, unwrapped and checked.
    pub fn unwrap(&mut self, token: &[u8]) -> Result<Vec<u8>, KerberosError> {
        match self.qop {
            Qop::Authentication => Ok(token.to_vec()),
            Qop::Integrity | Qop::Privacy => self.context.unwrap(token),
        }
    }
}

/// A completed exchange.
#[derive(Debug)]
pub struct Negotiated {
    /// The authenticated principal (`alice@REALM`).
    pub principal: String,
    /// What protects the bytes from now on.
    pub layer: SecurityLayer,
}

/// What a side does after a step.
#[derive(Debug)]
pub enum SaslStep {
    /// Send this token and wait for the peer's next.
    Send(Vec<u8>),
    /// Send nothing and wait for the peer's next token.
    Wait,
    /// Complete: send `last` first if there is one (the client's
    /// choice); the peer sends nothing more for the exchange.
    Complete {
        last: Option<Vec<u8>>,
        negotiated: Negotiated,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ServerState {
    Establishing,
    AwaitingEmpty,
    OfferSent,
    Done,
}

/// The server side of the exchange.
#[derive(Debug)]
pub struct SaslServer {
    context: Option<Context>,
    offered: Vec<Qop>,
    state: ServerState,
}

impl SaslServer {
    /// A server offering `offered` (at least one) over a fresh acceptor
    /// context.
    pub fn new(context: Context, offered: &[Qop]) -> Result<SaslServer, KerberosError> {
        if offered.is_empty() {
            return Err(KerberosError::Config(
                "no protection offered: name at least one of authentication, integrity, privacy"
                    .into(),
            ));
        }
        Ok(SaslServer {
            context: Some(context),
            offered: offered.to_vec(),
            state: ServerState::Establishing,
        })
    }

    fn offer(&mut self, context: &mut Context) -> Result<Vec<u8>, KerberosError> {
        let bits = self.offered.iter().fold(0u8, |bits, q| bits | q.bit());
        let max = if self.offered.iter().any(|q| q.wraps()) {
            MAX_MESSAGE
        } else {
            0
        };
        let mut offer = vec![bits];
        offer.extend_from_slice(&max.to_be_bytes()[1..]);
        self.state = ServerState::OfferSent;
        context.wrap(false, &offer)
    }

    /// Takes the client's next token.
    pub fn step(&mut self, token: &[u8]) -> Result<SaslStep, KerberosError> {
        let mut context = self
            .context
            .take()
            .ok_or_else(|| KerberosError::Sasl("the SASL exchange already ended".into()))?;
        match self.step_with(&mut context, token) {
            Ok(ServerStep::Send(token)) => {
                self.context = Some(context);
                Ok(SaslStep::Send(token))
            }
            Ok(ServerStep::Wait) => {
                self.context = Some(context);
                Ok(SaslStep::Wait)
            }
            Ok(ServerStep::Complete { principal, qop }) => Ok(SaslStep::Complete {
                last: None,
                negotiated: Negotiated {
                    principal,
                    layer: SecurityLayer { context, qop },
                },
            }),
            Err(e) => {
                self.state = ServerState::Done;
                Err(e)
            }
        }
    }

    fn step_with(
        &mut self,
        context: &mut Context,
        token: &[u8],
    ) -> Result<ServerStep, KerberosError> {
        match self.state {
            ServerState::Establishing => {
                let reply = context.step(token)?;
                if !context.is_complete() {
                    return Ok(match reply {
                        Some(reply) => ServerStep::Send(reply),
                        None => ServerStep::Wait,
                    });
                }
                match reply {
                    // Mutual authentication: the AP-REP, then the
                    // client's empty token.
                    Some(reply) if !reply.is_empty() => {
                        self.state = ServerState::AwaitingEmpty;
                        Ok(ServerStep::Send(reply))
                    }
                    _ => Ok(ServerStep::Send(self.offer(context)?)),
                }
            }
            ServerState::AwaitingEmpty => Ok(ServerStep::Send(self.offer(context)?)),
            ServerState::OfferSent => {
                let choice = context.unwrap(token)?;
                if choice.len() < 4 {
                    return Err(KerberosError::Sasl(format!(
                        "the client's choice of protection is {} bytes; 4 at least",
                        choice.len()
                    )));
                }
                let qop = Qop::from_bit(choice[0])
                    .filter(|q| self.offered.contains(q))
                    .ok_or_else(|| {
                        KerberosError::Sasl(format!(
                            "the client chose protection bits {:#04x}; offered: {}",
                            choice[0],
                            names(&self.offered)
                        ))
                    })?;
                let principal = context.peer()?;
                let authzid = std::str::from_utf8(&choice[4..]).map_err(|_| {
                    KerberosError::Sasl("the client's authorization id is not UTF-8".into())
                })?;
                if !authzid.is_empty() && authzid != principal {
                    return Err(KerberosError::Sasl(format!(
                        "{principal} asked to be authorized as {authzid}; only its own name is allowed"
                    )));
                }
                self.state = ServerState::Done;
                Ok(ServerStep::Complete { principal, qop })
            }
            ServerState::Done => Err(KerberosError::Sasl(
                "the SASL exchange already ended".into(),
            )),
        }
    }
}

/// A server step, before the context goes into the security layer.
enum ServerStep {
    Send(Vec<u8>),
    Wait,
    Complete { principal: String, qop: Qop },
}

fn names(qops: &[Qop]) -> String {
    qops.iter().map(|q| q.name()).collect::<Vec<_>>().join(", ")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ClientState {
    Establishing,
    AwaitingOffer,
    Done,
}

/// The client side of the exchange: Basalt's own native RPC client (the
/// cluster's calls under Kerberos) and the tests.
#[derive(Debug)]
pub struct SaslClient {
    context: Option<Context>,
    wanted: Vec<Qop>,
    state: ClientState,
}

impl SaslClient {
    /// A client that takes the first of `wanted` the server offers.
    pub fn new(context: Context, wanted: &[Qop]) -> SaslClient {
        SaslClient {
            context: Some(context),
            wanted: wanted.to_vec(),
            state: ClientState::Establishing,
        }
    }

    /// The first token, sent right after the preamble.
    pub fn start(&mut self) -> Result<Vec<u8>, KerberosError> {
        let context = self
            .context
            .as_mut()
            .ok_or_else(|| KerberosError::Sasl("the SASL exchange already ended".into()))?;
        let token = context.step(&[])?.unwrap_or_default();
        if context.is_complete() {
            self.state = ClientState::AwaitingOffer;
        }
        Ok(token)
    }

    /// Takes the server's next token.
    pub fn step(&mut self, token: &[u8]) -> Result<SaslStep, KerberosError> {
        let mut context = self
            .context
            .take()
            .ok_or_else(|| KerberosError::Sasl("the SASL exchange already ended".into()))?;
        match self.state {
            ClientState::Establishing => {
                let reply = context.step(token)?;
                if context.is_complete() {
                    self.state = ClientState::AwaitingOffer;
                }
                self.context = Some(context);
                Ok(SaslStep::Send(reply.unwrap_or_default()))
            }
            ClientState::AwaitingOffer => {
                let offer = context.unwrap(token)?;
                let Some(&bits) = offer.first() else {
                    return Err(KerberosError::Sasl("the server's offer is empty".into()));
                };
                let qop = self
                    .wanted
                    .iter()
                    .copied()
                    .find(|q| bits & q.bit() != 0)
                    .ok_or_else(|| {
                        KerberosError::Sasl(format!(
                            "the server offers protection bits {bits:#04x}, none of {}",
                            names(&self.wanted)
                        ))
                    })?;
                let mut choice = vec![qop.bit()];
                choice.extend_from_slice(&MAX_MESSAGE.to_be_bytes()[1..]);
                let last = context.wrap(false, &choice)?;
                let principal = context.peer()?;
                self.state = ClientState::Done;
                Ok(SaslStep::Complete {
                    last: Some(last),
                    negotiated: Negotiated {
                        principal,
                        layer: SecurityLayer { context, qop },
                    },
                })
            }
            ClientState::Done => Err(KerberosError::Sasl(
                "the SASL exchange already ended".into(),
            )),
        }
    }
}
