//! Who may do what: HBase's access control model (`docs/security.md`).
//!
//! A [`Grant`] gives a principal (a user, or a group written `@group`)
//! some of the five [`Action`]s at a [`Scope`]: the whole cluster, a
//! namespace, a table, one family of a table or one column. Grants are
//! durable data: they live in the catalog ([`Permissions`]), so they carry
//! its fencing, every process of a cluster reads the same ones, and a
//! change reaches every server with the catalog's next version.
//!
//! Checks happen once, in the core: a [`crate::Database`] handle bound to
//! a [`Caller`] ([`crate::Database::acting_as`]) asks [`AccessCheck`]
//! before every operation, whichever gateway the request came through. A
//! handle with no caller (the embedded API, the cluster's own calls) is
//! trusted, as HBase's in-process callers are.
//!
//! The rules follow HBase 2.6's `AccessController` and `AuthManager`:
//! - a grant at a wider scope implies the narrower ones (global, then a
//!   namespace, then its tables; a table grant covers all its families, a
//!   family grant all its qualifiers), never the reverse;
//! - an operation that accepts several actions (deleting a table takes
//!   ADMIN or CREATE) passes with any one of them;
//! - superusers (configured users and groups, and the user the server
//!   runs as) pass every check;
//! - a read the caller may do only in part (some families or columns)
//!   sees only those cells, as HBase's `AccessControlFilter` makes it; a
//!   read of nothing the caller may read is refused.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;
use serde::{Deserialize, Serialize};

use basalt_types::descriptor::namespace_of;
use basalt_types::{Error, Result};

/// One of HBase's five actions, with the letter its shell and `hbase:acl`
/// use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Action {
    /// Read cells (`R`).
    Read,
    /// Write cells (`W`).
    Write,
    /// Run coprocessor endpoints (`X`).
    Exec,
    /// Create, alter and drop tables in the scope (`C`).
    Create,
    /// Administer the scope: regions, switches, grants (`A`).
    Admin,
}

impl Action {
    /// Every action, in HBase's order (`RWXCA`).
    pub const ALL: [Action; 5] = [
        Action::Read,
        Action::Write,
        Action::Exec,
        Action::Create,
        Action::Admin,
    ];

    /// The action's letter.
    pub fn code(self) -> char {
        match self {
            Action::Read => 'R',
            Action::Write => 'W',
            Action::Exec => 'X',
            Action::Create => 'C',
            Action::Admin => 'A',
        }
    }

    /// The action of a letter (either case, as HBase's shell accepts).
    pub fn from_code(code: char) -> Option<Action> {
        Action::ALL
            .into_iter()
            .find(|action| action.code() == code.to_ascii_uppercase())
    }

    /// The action's name as HBase's messages and protocol spell it.
    pub fn name(self) -> &'static str {
        match self {
            Action::Read => "READ",
            Action::Write => "WRITE",
            Action::Exec => "EXEC",
            Action::Create => "CREATE",
            Action::Admin => "ADMIN",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of actions. Written as HBase's shell writes it (`RWXCA`, in that
/// order), which is also its serde form.
#[derive(Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Actions(u8);

impl Actions {
    /// No action.
    pub const NONE: Actions = Actions(0);
    /// All five actions.
    pub const ALL: Actions = Actions(0b1_1111);

    /// The set of `actions`.
    pub fn of(actions: &[Action]) -> Actions {
        Actions(actions.iter().fold(0, |bits, action| bits | action.bit()))
    }

    /// Parses letters such as `"RW"` (either case, any order, repeats
    /// allowed); names the first letter that is not an action.
    pub fn parse(text: &str) -> Result<Actions> {
        let mut bits = 0;
        for (at, letter) in text.chars().enumerate() {
            let action = Action::from_code(letter).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "'{letter}' at {at} of permissions '{text}' is not one of R, W, X, C, A"
                ))
            })?;
            bits |= action.bit();
        }
        Ok(Actions(bits))
    }

    /// Whether `action` is in the set.
    pub fn contains(self, action: Action) -> bool {
        self.0 & action.bit() != 0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Both sets' actions.
    pub fn union(self, other: Actions) -> Actions {
        Actions(self.0 | other.0)
    }

    /// This set's actions that are not in `other`.
    pub fn without(self, other: Actions) -> Actions {
        Actions(self.0 & !other.0)
    }

    /// Whether every action of `other` is in this set.
    pub fn includes(self, other: Actions) -> bool {
        self.0 & other.0 == other.0
    }

    /// The actions, in HBase's order.
    pub fn iter(self) -> impl Iterator<Item = Action> {
        Action::ALL
            .into_iter()
            .filter(move |action| self.contains(*action))
    }
}

impl fmt::Display for Actions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.iter()
            .try_for_each(|action| write!(f, "{}", action.code()))
    }
}

impl fmt::Debug for Actions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Actions({self})")
    }
}

impl Serialize for Actions {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Actions {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        Actions::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// Where a grant applies, or where an operation asks for an action.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "scope", rename_all = "snake_case")]
pub enum Scope {
    /// The whole cluster.
    Global,
    /// One namespace and every table in it.
    Namespace {
        /// The namespace's name.
        namespace: String,
    },
    /// A table, or one family of it, or one column of that family.
    Table {
        /// The table's name (`ns:name`, or `name` in `default`).
        table: String,
        /// A family, or `None` for the whole table.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        family: Option<Bytes>,
        /// A qualifier of `family`, or `None` for the whole family.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        qualifier: Option<Bytes>,
    },
}

impl Scope {
    /// A whole table.
    pub fn table(table: &str) -> Scope {
        Scope::Table {
            table: table.to_string(),
            family: None,
            qualifier: None,
        }
    }

    /// One family of a table.
    pub fn family(table: &str, family: &[u8]) -> Scope {
        Scope::Table {
            table: table.to_string(),
            family: Some(Bytes::copy_from_slice(family)),
            qualifier: None,
        }
    }

    /// One column of a table.
    pub fn column(table: &str, family: &[u8], qualifier: &[u8]) -> Scope {
        Scope::Table {
            table: table.to_string(),
            family: Some(Bytes::copy_from_slice(family)),
            qualifier: Some(Bytes::copy_from_slice(qualifier)),
        }
    }

    /// A namespace.
    pub fn namespace(namespace: &str) -> Scope {
        Scope::Namespace {
            namespace: namespace.to_string(),
        }
    }

    /// Whether a grant at this scope covers a request at `requested`
    /// (HBase's `Permission.implies` with the wider scopes' rules of
    /// `AuthManager`): the global scope covers everything; a namespace
    /// covers itself and its tables; a table grant covers its families
    /// and columns, a family grant its columns. A narrower grant never
    /// covers a wider request.
    pub fn covers(&self, requested: &Scope) -> bool {
        match (self, requested) {
            (Scope::Global, _) => true,
            (Scope::Namespace { namespace }, Scope::Namespace { namespace: asked }) => {
                namespace == asked
            }
            (Scope::Namespace { namespace }, Scope::Table { table, .. }) => {
                namespace_of(table) == namespace.as_str()
            }
            (
                Scope::Table {
                    table,
                    family,
                    qualifier,
                },
                Scope::Table {
                    table: asked_table,
                    family: asked_family,
                    qualifier: asked_qualifier,
                },
            ) => {
                table == asked_table
                    && family
                        .as_ref()
                        .is_none_or(|f| asked_family.as_ref() == Some(f))
                    && qualifier
                        .as_ref()
                        .is_none_or(|q| asked_qualifier.as_ref() == Some(q))
            }
            _ => false,
        }
    }

    /// The table the scope is in, if it is a table scope.
    pub fn table_name(&self) -> Option<&str> {
        match self {
            Scope::Table { table, .. } => Some(table),
            _ => None,
        }
    }
}

impl fmt::Display for Scope {
    /// As HBase's denial messages name a scope.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Global => write!(f, "GLOBAL"),
            Scope::Namespace { namespace } => write!(f, "namespace={namespace}"),
            Scope::Table {
                table,
                family,
                qualifier,
            } => {
                write!(f, "table={table}")?;
                if let Some(family) = family {
                    write!(f, ", family={}", String::from_utf8_lossy(family))?;
                }
                if let Some(qualifier) = qualifier {
                    write!(f, ", qualifier={}", String::from_utf8_lossy(qualifier))?;
                }
                Ok(())
            }
        }
    }
}

/// A principal's actions at a scope. The principal is a user name, or a
/// group name prefixed with `@` (HBase's convention).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// A user, or `@group`.
    pub principal: String,
    /// Where the actions apply.
    #[serde(flatten)]
    pub scope: Scope,
    /// What the principal may do there.
    pub actions: Actions,
}

/// A change to the permissions, as the master applies it to the catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "change", rename_all = "snake_case")]
pub enum PermissionChange {
    /// Gives `grant.actions` at the scope: with `merge`, added to what
    /// the principal holds there; without, replacing it (HBase's
    /// `mergeExistingPermissions`, false from the shell).
    Grant {
        /// The grant.
        grant: Grant,
        /// Add to the actions held rather than replace them.
        merge: bool,
    },
    /// Takes `grant.actions` away at exactly that scope (grants at other
    /// scopes stay); all of them when the set is empty. The entry goes
    /// when no action is left.
    Revoke {
        /// What to take away.
        grant: Grant,
    },
}

/// Every grant, kept in the catalog: by principal, then scope.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "Vec<Grant>", into = "Vec<Grant>")]
pub struct Permissions {
    by_principal: BTreeMap<String, BTreeMap<Scope, Actions>>,
}

impl From<Vec<Grant>> for Permissions {
    fn from(grants: Vec<Grant>) -> Permissions {
        let mut permissions = Permissions::default();
        for grant in grants {
            permissions.set(grant.principal, grant.scope, grant.actions);
        }
        permissions
    }
}

impl From<Permissions> for Vec<Grant> {
    fn from(permissions: Permissions) -> Vec<Grant> {
        permissions.grants().collect()
    }
}

impl Permissions {
    /// Whether no grant exists.
    pub fn is_empty(&self) -> bool {
        self.by_principal.is_empty()
    }

    /// Every grant, by principal then scope.
    pub fn grants(&self) -> impl Iterator<Item = Grant> + '_ {
        self.by_principal.iter().flat_map(|(principal, scopes)| {
            scopes.iter().map(move |(scope, actions)| Grant {
                principal: principal.clone(),
                scope: scope.clone(),
                actions: *actions,
            })
        })
    }

    /// The actions `principal` holds at exactly `scope`.
    pub fn held(&self, principal: &str, scope: &Scope) -> Actions {
        self.by_principal
            .get(principal)
            .and_then(|scopes| scopes.get(scope))
            .copied()
            .unwrap_or(Actions::NONE)
    }

    fn set(&mut self, principal: String, scope: Scope, actions: Actions) {
        if actions.is_empty() {
            if let Some(scopes) = self.by_principal.get_mut(&principal) {
                scopes.remove(&scope);
                if scopes.is_empty() {
                    self.by_principal.remove(&principal);
                }
            }
        } else {
            self.by_principal
                .entry(principal)
                .or_default()
                .insert(scope, actions);
        }
    }

    /// Applies a change; refuses a malformed one (an empty principal, a
    /// qualifier without a family, a grant of no action) with nothing
    /// changed.
    pub fn apply(&mut self, change: &PermissionChange) -> Result<()> {
        let grant = match change {
            PermissionChange::Grant { grant, .. } | PermissionChange::Revoke { grant } => grant,
        };
        validate_grant(grant)?;
        let held = self.held(&grant.principal, &grant.scope);
        let after = match change {
            PermissionChange::Grant { grant, merge } => {
                if grant.actions.is_empty() {
                    return Err(Error::InvalidArgument(format!(
                        "a grant to '{}' names no action",
                        grant.principal
                    )));
                }
                if *merge {
                    held.union(grant.actions)
                } else {
                    grant.actions
                }
            }
            PermissionChange::Revoke { grant } if grant.actions.is_empty() => Actions::NONE,
            PermissionChange::Revoke { grant } => held.without(grant.actions),
        };
        self.set(grant.principal.clone(), grant.scope.clone(), after);
        Ok(())
    }

    /// Forgets every grant on `table` (the table was dropped), or on one
    /// family of it (the family was deleted).
    pub fn forget_table(&mut self, table: &str, family: Option<&[u8]>) {
        self.retain(|scope| match scope {
            Scope::Table {
                table: t,
                family: f,
                ..
            } => t != table || family.is_some_and(|family| f.as_deref() != Some(family)),
            _ => true,
        });
    }

    /// Forgets every grant on `namespace` itself (the namespace was
    /// dropped; its tables were dropped before it).
    pub fn forget_namespace(&mut self, namespace: &str) {
        self.retain(|scope| !matches!(scope, Scope::Namespace { namespace: n } if n == namespace));
    }

    fn retain(&mut self, mut keep: impl FnMut(&Scope) -> bool) {
        for scopes in self.by_principal.values_mut() {
            scopes.retain(|scope, _| keep(scope));
        }
        self.by_principal.retain(|_, scopes| !scopes.is_empty());
    }

    /// Whether one of `principals` holds `action` at a scope that covers
    /// `scope`.
    fn any_covers(&self, principals: &[String], action: Action, scope: &Scope) -> bool {
        principals.iter().any(|principal| {
            self.by_principal.get(principal).is_some_and(|scopes| {
                scopes
                    .iter()
                    .any(|(granted, actions)| actions.contains(action) && granted.covers(scope))
            })
        })
    }

    /// Whether one of `principals` holds `action` anywhere inside `table`
    /// (a family or a column of it; wider grants are asked separately).
    fn any_inside_table(&self, principals: &[String], action: Action, table: &str) -> bool {
        principals.iter().any(|principal| {
            self.by_principal.get(principal).is_some_and(|scopes| {
                scopes.iter().any(|(granted, actions)| {
                    actions.contains(action)
                        && matches!(granted, Scope::Table { table: t, .. } if t == table)
                })
            })
        })
    }
}

/// Where audit lines go (`docs/security.md`, "Audit"): a `tracing`
/// target of its own, so a deployment can route it to a file or turn it
/// off without touching other logs.
pub const AUDIT_TARGET: &str = "basalt::security::audit";

/// One audit line, in the shape of HBase's security logger: who, allowed
/// or denied, what was asked, and the context.
pub fn audit(caller: &Caller, allowed: bool, operation: &str, context: &str) {
    let verdict = if allowed { "allowed" } else { "denied" };
    let address = caller.address.as_deref().unwrap_or("");
    tracing::info!(
        target: AUDIT_TARGET,
        "Access {verdict} for user {}; remote address: {address}; request: {operation}; context: {context}",
        caller.user
    );
}

/// `ns:name`, with `default:` for a table of the default namespace (how
/// HBase's messages name a table's scope).
fn qualified_table_name(table: &str) -> String {
    if table.contains(':') {
        table.to_string()
    } else {
        format!("default:{table}")
    }
}

/// What HBase's `getUserPermissions` asks for: the grants at one scope
/// (a table's include those of its families and columns; a family's,
/// those of its columns), narrowed to a user (or group) when one is named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionQuery {
    /// Where: the global scope, a namespace, a table, a family or a column.
    #[serde(flatten)]
    pub scope: Scope,
    /// Only this user's (and its groups') or this `@group`'s grants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

impl PermissionQuery {
    /// The grants of `scope`, whoever holds them.
    pub fn of(scope: Scope) -> PermissionQuery {
        PermissionQuery { scope, user: None }
    }

    fn user(&self) -> Option<&str> {
        self.user.as_deref().filter(|u| !u.is_empty())
    }

    /// Whether a grant at `scope` is one the query asks for: the same
    /// scope, or one inside the table (family, column) asked for.
    fn wants_scope(&self, scope: &Scope) -> bool {
        match (&self.scope, scope) {
            (Scope::Global, Scope::Global) => true,
            (Scope::Namespace { namespace }, Scope::Namespace { namespace: n }) => namespace == n,
            (Scope::Table { .. }, Scope::Table { .. }) => self.scope.covers(scope),
            _ => false,
        }
    }
}

impl Permissions {
    /// The grants `query` asks for. A named user matches its own grants
    /// and those of its groups (`groups`, from the configuration); a
    /// named `@group` matches that group's only.
    pub fn query(&self, query: &PermissionQuery, options: &SecurityOptions) -> Vec<Grant> {
        let user = query.user();
        let principal_matches = |principal: &str| match user {
            None => true,
            Some(user) if user.starts_with('@') => principal == user,
            Some(user) => {
                principal == user
                    || principal.strip_prefix('@').is_some_and(|group| {
                        options
                            .groups
                            .get(user)
                            .is_some_and(|groups| groups.iter().any(|g| g == group))
                    })
            }
        };
        let mut found: Vec<Grant> = self
            .grants()
            .filter(|grant| principal_matches(&grant.principal) && query.wants_scope(&grant.scope))
            .collect();
        if let (Scope::Global, None) = (&query.scope, user) {
            // HBase lists every superuser (not the groups) as holding
            // every action globally.
            let mut superusers: Vec<String> = std::iter::once(options.server_user())
                .chain(options.superusers.iter().cloned())
                .filter(|name| !name.starts_with('@'))
                .collect();
            superusers.dedup();
            for name in superusers {
                found.push(Grant {
                    principal: name,
                    scope: Scope::Global,
                    actions: Actions::ALL,
                });
            }
        }
        found
    }
}

/// A grant must name a principal, and a qualifier only inside a family.
fn validate_grant(grant: &Grant) -> Result<()> {
    if grant.principal.is_empty() || grant.principal == "@" {
        return Err(Error::InvalidArgument(
            "a permission names no user or group".into(),
        ));
    }
    match &grant.scope {
        Scope::Table { table, .. } if table.is_empty() => Err(Error::InvalidArgument(
            "a table permission names no table".into(),
        )),
        Scope::Table {
            family: None,
            qualifier: Some(_),
            ..
        } => Err(Error::InvalidArgument(
            "a permission names a qualifier without its family".into(),
        )),
        Scope::Namespace { namespace } if namespace.is_empty() => Err(Error::InvalidArgument(
            "a namespace permission names no namespace".into(),
        )),
        _ => Ok(()),
    }
}

/// Access control settings (`[security]` of the server's configuration).
/// Off by default: every caller may do everything, as HBase without its
/// `AccessController`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SecurityOptions {
    /// Check every request against the grants (HBase's
    /// `hbase.security.authorization` with the `AccessController`).
    pub authorization: bool,
    /// Users and `@groups` that pass every check (`hbase.superuser`).
    /// The server's own user ([`SecurityOptions::server_user`]) is always
    /// one.
    pub superusers: Vec<String>,
    /// The user the server acts as: a superuser, and the caller of
    /// requests that come through a gateway with no authentication of its
    /// own (Thrift and REST today, as HBase's gateways act as their own
    /// login user). Default: the `USER` of the process, else `basalt`.
    pub server_user: Option<String>,
    /// Group membership by user name, the groups HBase would get from
    /// Hadoop's group mapping; a caller in a group gets the group's
    /// grants (`@group`) and, for a superuser group, every right.
    pub groups: BTreeMap<String, Vec<String>>,
    /// How clients prove who they are (HBase's
    /// `hbase.security.authentication`): `simple` (they say so) or
    /// `kerberos` (`[security.kerberos]`; native RPC by SASL GSSAPI).
    pub authentication: Authentication,
    /// The server's Kerberos principal, keytab and protections, with
    /// `authentication = "kerberos"`.
    pub kerberos: Option<basalt_kerberos::KerberosSettings>,
    /// Users that may act for others, and from where
    /// (`[security.proxy_users.<user>]`, Hadoop's
    /// `hadoop.proxyuser.<user>.hosts|users|groups`).
    pub proxy_users: basalt_kerberos::ProxyUserRules,
}

/// How clients prove who they are.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Authentication {
    /// A client names its user and is believed (HBase's default).
    #[default]
    Simple,
    /// Kerberos: SASL GSSAPI on native RPC.
    Kerberos,
}

impl SecurityOptions {
    /// The Kerberos settings when Kerberos is on; an error naming what is
    /// missing when it is asked for without them.
    pub fn kerberos(&self) -> Result<Option<&basalt_kerberos::KerberosSettings>> {
        match (self.authentication, &self.kerberos) {
            (Authentication::Simple, _) => Ok(None),
            (Authentication::Kerberos, Some(settings)) => Ok(Some(settings)),
            (Authentication::Kerberos, None) => Err(Error::InvalidArgument(
                "[security] authentication = \"kerberos\" needs [security.kerberos] (principal, keytab)".into(),
            )),
        }
    }

    /// The user the server acts as: the configured one, else with
    /// Kerberos the first component of the server's principal (`hbase` of
    /// `hbase/_HOST@R`, the name the servers' own calls authenticate as),
    /// else the process's `USER`, else `basalt`.
    pub fn server_user(&self) -> String {
        let kerberos_user = || {
            self.kerberos()
                .ok()
                .flatten()
                .and_then(|k| basalt_kerberos::KerberosName::parse(&k.principal).ok())
                .map(|name| name.service)
        };
        self.server_user
            .clone()
            .or_else(kerberos_user)
            .or_else(|| std::env::var("USER").ok().filter(|user| !user.is_empty()))
            .unwrap_or_else(|| "basalt".to_string())
    }

    /// A caller named `user`, with the groups the configuration gives it.
    pub fn caller(&self, user: &str) -> Caller {
        Caller {
            user: user.to_string(),
            groups: self.groups.get(user).cloned().unwrap_or_default(),
            address: None,
            principal: None,
        }
    }

    /// Whether grants to `principal` (a user or `@group`) would touch a
    /// superuser: HBase lets only superusers change those.
    pub fn is_superuser_principal(&self, principal: &str) -> bool {
        match principal.strip_prefix('@') {
            Some(_) => self.superusers.iter().any(|s| s == principal),
            None => self.is_superuser(&self.caller(principal)),
        }
    }

    /// Whether `caller` passes every check.
    pub fn is_superuser(&self, caller: &Caller) -> bool {
        caller.user == self.server_user()
            || self
                .superusers
                .iter()
                .any(|superuser| match superuser.strip_prefix('@') {
                    Some(group) => caller.groups.iter().any(|g| g == group),
                    None => *superuser == caller.user,
                })
    }
}

/// Who a request comes from: an (authenticated) user and its groups.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Caller {
    /// The user's short name.
    pub user: String,
    /// The groups the user is in, without `@`.
    pub groups: Vec<String>,
    /// Where the request came from (the client's address), for the
    /// audit log; `None` when unknown.
    pub address: Option<String>,
    /// The full name authentication proved (`bob@REALM`), when it is not
    /// the short name: HBase's refusals name it in their `(user=...)`
    /// forms, and the short name in their `for user '...'` forms.
    pub principal: Option<String>,
}

impl Caller {
    /// The caller's full name: the principal, else the user.
    pub fn full_name(&self) -> &str {
        self.principal.as_deref().unwrap_or(&self.user)
    }

    /// The principals whose grants apply to the caller: the user, then
    /// `@group` for each group.
    fn principals(&self) -> Vec<String> {
        std::iter::once(self.user.clone())
            .chain(self.groups.iter().map(|group| format!("@{group}")))
            .collect()
    }
}

/// What a read may see of what it asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadAccess {
    /// Everything asked for.
    All,
    /// Only these families (whole) and these columns; the read is
    /// narrowed to them, as HBase's `AccessControlFilter` drops the rest.
    Only {
        /// Families the caller may read whole.
        families: BTreeSet<Bytes>,
        /// Single columns the caller may read, by family.
        columns: BTreeMap<Bytes, BTreeSet<Bytes>>,
    },
}

/// A caller and the policy its requests are checked under: what a
/// [`crate::Database`] handle bound to a caller holds.
#[derive(Debug, Clone)]
pub struct AccessCheck {
    caller: Arc<Caller>,
    principals: Arc<[String]>,
    superuser: bool,
}

impl AccessCheck {
    /// Checks for `caller` under `options`.
    pub fn new(options: &SecurityOptions, caller: Caller) -> AccessCheck {
        AccessCheck {
            superuser: options.is_superuser(&caller),
            principals: caller.principals().into(),
            caller: Arc::new(caller),
        }
    }

    /// The caller.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// Whether the caller passes every check.
    pub fn is_superuser(&self) -> bool {
        self.superuser
    }

    /// Whether grants to `principal` are the caller's: its user name, or
    /// `@group` of one of its groups.
    pub fn is_principal(&self, principal: &str) -> bool {
        self.principals.iter().any(|p| p == principal)
    }

    /// Whether the caller holds one of `actions` at a scope covering
    /// `scope`.
    pub fn allows(&self, permissions: &Permissions, actions: &[Action], scope: &Scope) -> bool {
        self.superuser
            || actions
                .iter()
                .any(|action| permissions.any_covers(&self.principals, *action, scope))
    }

    /// Refuses, with HBase's message, unless the caller holds one of
    /// `actions` at `scope`. `operation` names what was asked.
    pub fn require(
        &self,
        permissions: &Permissions,
        operation: &str,
        actions: &[Action],
        scope: &Scope,
    ) -> Result<()> {
        if self.allows(permissions, actions, scope) {
            return Ok(());
        }
        Err(self.denied(operation, actions, scope))
    }

    /// The refusal of `operation` for want of `actions` at `scope`, in
    /// the words of HBase's `AccessDeniedException` (which names the
    /// last action it tried), written to the audit log.
    pub fn denied(&self, operation: &str, actions: &[Action], scope: &Scope) -> Error {
        let error = self.denial(actions, scope);
        audit(&self.caller, false, operation, &error.to_string());
        error
    }

    fn denial(&self, actions: &[Action], scope: &Scope) -> Error {
        let user = &self.caller.user;
        let full_name = self.caller.full_name();
        let action = actions.last().map_or("NONE", |action| action.name());
        Error::AccessDenied(match scope {
            Scope::Global => {
                format!("Insufficient permissions for user '{user}' (global, action={action})")
            }
            Scope::Table {
                table,
                family: None,
                ..
            } if actions == [Action::Read] => {
                format!("Insufficient permissions for user '{user}' (table={table}, action=READ)")
            }
            Scope::Namespace { namespace } => format!(
                "Insufficient permissions (user={full_name}, scope={namespace}, params=[namespace={namespace}],action={action})"
            ),
            Scope::Table {
                table,
                family,
                qualifier,
            } => {
                let qualified = qualified_table_name(table);
                let columns = match (family, qualifier) {
                    (Some(f), Some(q)) => Some(format!(
                        "{}:{}",
                        String::from_utf8_lossy(f),
                        String::from_utf8_lossy(q)
                    )),
                    (Some(f), None) => Some(String::from_utf8_lossy(f).into_owned()),
                    _ => None,
                };
                match columns {
                    Some(columns) => format!(
                        "Insufficient permissions (user={full_name}, scope={qualified}, family={columns}, params=[table={qualified},family={columns}],action={action})"
                    ),
                    None => format!(
                        "Insufficient permissions (user={full_name}, scope={qualified}, params=[table={qualified},],action={action})"
                    ),
                }
            }
        })
    }

    /// Whether the caller holds some action anywhere in `table`: on the
    /// table or wider, or on one of its families or columns (HBase's
    /// `accessUserTable`, what listing a table to a caller takes).
    pub fn any_in_table(&self, permissions: &Permissions, table: &str) -> bool {
        self.superuser
            || Action::ALL.into_iter().any(|action| {
                permissions.any_covers(&self.principals, action, &Scope::table(table))
                    || permissions.any_inside_table(&self.principals, action, table)
            })
    }

    /// Checks a write of cells in `families` (each with the qualifiers it
    /// names; an empty list means the whole family) of `table`, for
    /// `action` (WRITE; READ too for a check-and-mutate). An empty
    /// `families` is a whole-row operation and needs the table.
    pub fn require_columns(
        &self,
        permissions: &Permissions,
        operation: &str,
        action: Action,
        table: &str,
        families: &BTreeMap<Bytes, BTreeSet<Bytes>>,
    ) -> Result<()> {
        self.columns_allowed(permissions, action, table, families)
            .map_err(|scope| self.denied(operation, &[action], &scope))
    }

    /// [`AccessCheck::require_columns`]'s rule, without the refusal: the
    /// first scope found wanting.
    fn columns_allowed(
        &self,
        permissions: &Permissions,
        action: Action,
        table: &str,
        families: &BTreeMap<Bytes, BTreeSet<Bytes>>,
    ) -> std::result::Result<(), Scope> {
        if self.allows(permissions, &[action], &Scope::table(table)) {
            return Ok(());
        }
        if families.is_empty() {
            return Err(Scope::table(table));
        }
        for (family, qualifiers) in families {
            if self.allows(permissions, &[action], &Scope::family(table, family)) {
                continue;
            }
            if qualifiers.is_empty() {
                return Err(Scope::family(table, family));
            }
            for qualifier in qualifiers {
                let column = Scope::column(table, family, qualifier);
                if !self.allows(permissions, &[action], &column) {
                    return Err(column);
                }
            }
        }
        Ok(())
    }

    /// Whether the caller may do every one of `actions` at `scope`, as
    /// HBase's `hasUserPermissions` evaluates one permission: a table
    /// scope by the data operations' rule (a family or column named is
    /// asked as a request for it), the other scopes by their grants.
    pub fn holds(&self, permissions: &Permissions, actions: Actions, scope: &Scope) -> bool {
        actions.iter().all(|action| match scope {
            Scope::Table {
                table,
                family,
                qualifier,
            } => {
                let columns: BTreeMap<Bytes, BTreeSet<Bytes>> = family
                    .iter()
                    .map(|family| (family.clone(), qualifier.iter().cloned().collect()))
                    .collect();
                self.superuser
                    || self.allows(permissions, &[action], &Scope::table(table))
                    || (!columns.is_empty()
                        && self
                            .columns_allowed(permissions, action, table, &columns)
                            .is_ok())
            }
            _ => self.allows(permissions, &[action], scope),
        })
    }

    /// What a read of `families` of `table` may see: everything, a part
    /// (the families and columns readable among those asked for; every
    /// family of `all_families` when the read names none), or a refusal
    /// when nothing asked for is readable.
    pub fn read_access(
        &self,
        permissions: &Permissions,
        operation: &str,
        table: &str,
        families: &BTreeMap<Bytes, BTreeSet<Bytes>>,
        all_families: &[Bytes],
    ) -> Result<ReadAccess> {
        if self
            .columns_allowed(permissions, Action::Read, table, families)
            .is_ok()
        {
            return Ok(ReadAccess::All);
        }
        let asked: Vec<(Bytes, BTreeSet<Bytes>)> = if families.is_empty() {
            all_families
                .iter()
                .map(|family| (family.clone(), BTreeSet::new()))
                .collect()
        } else {
            families
                .iter()
                .map(|(family, qualifiers)| (family.clone(), qualifiers.clone()))
                .collect()
        };
        let mut readable_families = BTreeSet::new();
        let mut readable_columns: BTreeMap<Bytes, BTreeSet<Bytes>> = BTreeMap::new();
        for (family, qualifiers) in asked {
            if self.allows(permissions, &[Action::Read], &Scope::family(table, &family)) {
                // Readable whole: what was asked of it stays as asked.
                if qualifiers.is_empty() {
                    readable_families.insert(family);
                } else {
                    readable_columns
                        .entry(family)
                        .or_default()
                        .extend(qualifiers);
                }
            } else if qualifiers.is_empty() {
                // The whole family asked: the columns granted one by one.
                for qualifier in self.readable_qualifiers(permissions, table, &family) {
                    readable_columns
                        .entry(family.clone())
                        .or_default()
                        .insert(qualifier);
                }
            } else {
                for qualifier in qualifiers {
                    let column = Scope::column(table, &family, &qualifier);
                    if self.allows(permissions, &[Action::Read], &column) {
                        readable_columns
                            .entry(family.clone())
                            .or_default()
                            .insert(qualifier);
                    }
                }
            }
        }
        if readable_families.is_empty() && readable_columns.is_empty() {
            return Err(self.denied(operation, &[Action::Read], &Scope::table(table)));
        }
        Ok(ReadAccess::Only {
            families: readable_families,
            columns: readable_columns,
        })
    }

    /// The qualifiers of `family` the caller holds READ on one by one.
    fn readable_qualifiers(
        &self,
        permissions: &Permissions,
        table: &str,
        family: &[u8],
    ) -> BTreeSet<Bytes> {
        let mut qualifiers = BTreeSet::new();
        for principal in self.principals.iter() {
            let Some(scopes) = permissions.by_principal.get(principal) else {
                continue;
            };
            for (scope, actions) in scopes {
                if let Scope::Table {
                    table: t,
                    family: Some(f),
                    qualifier: Some(q),
                } = scope
                {
                    if t == table && f.as_ref() == family && actions.contains(Action::Read) {
                        qualifiers.insert(q.clone());
                    }
                }
            }
        }
        qualifiers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(principal: &str, scope: Scope, actions: &str) -> PermissionChange {
        PermissionChange::Grant {
            grant: Grant {
                principal: principal.into(),
                scope,
                actions: Actions::parse(actions).unwrap(),
            },
            merge: false,
        }
    }

    #[test]
    fn refusals_name_the_short_name_or_the_principal_as_hbase_does() {
        let options = SecurityOptions {
            authorization: true,
            ..SecurityOptions::default()
        };
        let mut bob = options.caller("bob");
        bob.principal = Some("bob@EXAMPLE.COM".into());
        let check = AccessCheck::new(&options, bob);
        let read = check
            .denial(&[Action::Read], &Scope::table("t"))
            .to_string();
        assert!(
            read.contains("for user 'bob' (table=t, action=READ)"),
            "{read}"
        );
        let write = check
            .denial(&[Action::Write], &Scope::column("t", b"cf", b"q"))
            .to_string();
        assert!(
            write.contains("(user=bob@EXAMPLE.COM, scope=default:t, family=cf:q"),
            "{write}"
        );
    }

    fn check(user: &str, groups: &[&str]) -> AccessCheck {
        let options = SecurityOptions {
            authorization: true,
            server_user: Some("hbase".into()),
            ..SecurityOptions::default()
        };
        AccessCheck::new(
            &options,
            Caller {
                user: user.into(),
                groups: groups.iter().map(|g| g.to_string()).collect(),
                address: None,
                principal: None,
            },
        )
    }

    #[test]
    fn actions_parse_either_case_print_in_hbase_order_and_name_a_bad_letter() {
        assert_eq!(Actions::parse("wr").unwrap().to_string(), "RW");
        assert_eq!(Actions::parse("ACXWR").unwrap(), Actions::ALL);
        let error = Actions::parse("RZ").unwrap_err().to_string();
        assert!(error.contains("'Z' at 1"), "{error}");
    }

    #[test]
    fn a_wider_grant_covers_narrower_scopes_and_never_the_reverse() {
        let family = Scope::family("ns:t", b"f");
        assert!(Scope::Global.covers(&family));
        assert!(Scope::namespace("ns").covers(&family));
        assert!(!Scope::namespace("default").covers(&family));
        assert!(Scope::table("ns:t").covers(&Scope::column("ns:t", b"f", b"q")));
        assert!(family.covers(&Scope::column("ns:t", b"f", b"q")));
        assert!(!family.covers(&Scope::table("ns:t")));
        assert!(!family.covers(&Scope::family("ns:t", b"g")));
        assert!(!Scope::table("ns:t").covers(&Scope::namespace("ns")));
        assert!(Scope::namespace("default").covers(&Scope::table("t")));
    }

    #[test]
    fn a_grant_without_merge_replaces_with_merge_adds_and_a_revoke_takes_away() {
        let mut permissions = Permissions::default();
        let scope = Scope::table("t");
        permissions
            .apply(&grant("bob", scope.clone(), "R"))
            .unwrap();
        permissions
            .apply(&grant("bob", scope.clone(), "W"))
            .unwrap();
        assert_eq!(permissions.held("bob", &scope).to_string(), "W");
        let mut merge = grant("bob", scope.clone(), "R");
        if let PermissionChange::Grant { merge, .. } = &mut merge {
            *merge = true;
        }
        permissions.apply(&merge).unwrap();
        assert_eq!(permissions.held("bob", &scope).to_string(), "RW");
        let revoke = PermissionChange::Revoke {
            grant: Grant {
                principal: "bob".into(),
                scope: scope.clone(),
                actions: Actions::parse("W").unwrap(),
            },
        };
        permissions.apply(&revoke).unwrap();
        assert_eq!(permissions.held("bob", &scope).to_string(), "R");
        let revoke_all = PermissionChange::Revoke {
            grant: Grant {
                principal: "bob".into(),
                scope: scope.clone(),
                actions: Actions::NONE,
            },
        };
        permissions.apply(&revoke_all).unwrap();
        assert!(permissions.is_empty());
    }

    #[test]
    fn malformed_grants_are_refused_and_change_nothing() {
        let mut permissions = Permissions::default();
        assert!(permissions.apply(&grant("", Scope::Global, "R")).is_err());
        assert!(permissions.apply(&grant("bob", Scope::Global, "")).is_err());
        let qualifier_only = Scope::Table {
            table: "t".into(),
            family: None,
            qualifier: Some(Bytes::from_static(b"q")),
        };
        assert!(permissions
            .apply(&grant("bob", qualifier_only, "R"))
            .is_err());
        assert!(permissions.is_empty());
    }

    #[test]
    fn group_grants_and_superuser_groups_apply_to_their_members() {
        let mut permissions = Permissions::default();
        permissions
            .apply(&grant("@readers", Scope::table("t"), "R"))
            .unwrap();
        let reader = check("carol", &["readers"]);
        assert!(reader.allows(&permissions, &[Action::Read], &Scope::table("t")));
        assert!(!reader.allows(&permissions, &[Action::Write], &Scope::table("t")));
        assert!(!check("dave", &[]).allows(&permissions, &[Action::Read], &Scope::table("t")));
        let options = SecurityOptions {
            superusers: vec!["@ops".into()],
            server_user: Some("hbase".into()),
            ..SecurityOptions::default()
        };
        assert!(options.is_superuser(&options.caller("hbase")));
        let operator = Caller {
            user: "erin".into(),
            groups: vec!["ops".into()],
            address: None,
            principal: None,
        };
        assert!(AccessCheck::new(&options, operator).allows(
            &permissions,
            &[Action::Admin],
            &Scope::Global
        ));
    }

    #[test]
    fn a_read_of_partly_readable_families_is_narrowed_and_of_nothing_readable_refused() {
        let mut permissions = Permissions::default();
        permissions
            .apply(&grant("bob", Scope::family("t", b"a"), "R"))
            .unwrap();
        permissions
            .apply(&grant("bob", Scope::column("t", b"b", b"q1"), "R"))
            .unwrap();
        let bob = check("bob", &[]);
        let all: Vec<Bytes> = [&b"a"[..], b"b", b"c"].map(Bytes::from_static).to_vec();
        let whole_row = BTreeMap::new();
        let access = bob
            .read_access(&permissions, "get", "t", &whole_row, &all)
            .unwrap();
        let ReadAccess::Only { families, columns } = access else {
            panic!("a partly readable row must be narrowed, got {access:?}");
        };
        assert_eq!(families, BTreeSet::from([Bytes::from_static(b"a")]));
        assert_eq!(
            columns,
            BTreeMap::from([(
                Bytes::from_static(b"b"),
                BTreeSet::from([Bytes::from_static(b"q1")])
            )])
        );
        let only_a = BTreeMap::from([(Bytes::from_static(b"a"), BTreeSet::new())]);
        assert_eq!(
            bob.read_access(&permissions, "get", "t", &only_a, &all)
                .unwrap(),
            ReadAccess::All
        );
        let only_c = BTreeMap::from([(Bytes::from_static(b"c"), BTreeSet::new())]);
        let refused = bob
            .read_access(&permissions, "get", "t", &only_c, &all)
            .unwrap_err();
        assert_eq!(refused.kind(), basalt_types::ErrorKind::AccessDenied);
        assert!(refused.to_string().contains("'bob'"), "{refused}");
    }

    #[test]
    fn a_whole_row_write_needs_the_table_and_a_family_write_its_family() {
        let mut permissions = Permissions::default();
        permissions
            .apply(&grant("bob", Scope::family("t", b"a"), "W"))
            .unwrap();
        let bob = check("bob", &[]);
        let family_a = BTreeMap::from([(Bytes::from_static(b"a"), BTreeSet::new())]);
        bob.require_columns(&permissions, "put", Action::Write, "t", &family_a)
            .unwrap();
        assert!(bob
            .require_columns(&permissions, "delete", Action::Write, "t", &BTreeMap::new())
            .is_err());
    }

    #[test]
    fn dropping_a_table_or_a_family_forgets_its_grants_only() {
        let mut permissions = Permissions::default();
        permissions
            .apply(&grant("bob", Scope::table("t"), "R"))
            .unwrap();
        permissions
            .apply(&grant("bob", Scope::family("t", b"f"), "W"))
            .unwrap();
        permissions
            .apply(&grant("bob", Scope::family("t", b"g"), "W"))
            .unwrap();
        permissions
            .apply(&grant("bob", Scope::table("u"), "R"))
            .unwrap();
        permissions.forget_table("t", Some(b"f"));
        assert_eq!(permissions.grants().count(), 3);
        permissions.forget_table("t", None);
        let left: Vec<Grant> = permissions.grants().collect();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].scope, Scope::table("u"));
    }

    #[test]
    fn permissions_survive_their_serde_form() {
        let mut permissions = Permissions::default();
        permissions
            .apply(&grant("@g", Scope::column("ns:t", b"f", b"q"), "RW"))
            .unwrap();
        permissions
            .apply(&grant("bob", Scope::Global, "A"))
            .unwrap();
        let text = serde_json::to_string(&permissions).unwrap();
        let back: Permissions = serde_json::from_str(&text).unwrap();
        assert_eq!(back, permissions);
        assert!(text.contains("\"actions\":\"RW\""), "{text}");
    }
}
