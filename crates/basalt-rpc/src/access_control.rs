//! `MasterService`'s access control methods, as HBase 2.x clients call
//! them (`Admin.grant`, `revoke`, `getUserPermissions`,
//! `hasUserPermissions`, `getSecurityCapabilities`; Java's
//! `AccessControlClient` and HBase's shell use these): each decodes its
//! message into `basalt::access` terms and asks the core, which checks
//! the caller (`docs/security.md`).
//!
//! With authorization off, HBase has no `AccessController` loaded and
//! refuses the permission calls; so does Basalt's core, with a message
//! naming the setting that turns it on.

use bytes::Bytes;

use basalt::{Action, Actions, Grant, PermissionChange, PermissionQuery, Scope};

use crate::call::{encode, Call};
use crate::error::RpcError;
use crate::meta::{table_name_proto, table_name_text};
use crate::proto::access_control as pb;
use crate::proto::hbase::TableName;
use crate::proto::master::Empty;

type Answer = Result<Vec<u8>, RpcError>;

/// HBase numbers the actions in the order `Action::ALL` lists them
/// (READ 0 to ADMIN 4).
fn action_of(code: i32) -> Result<Action, RpcError> {
    usize::try_from(code)
        .ok()
        .and_then(|i| Action::ALL.get(i).copied())
        .ok_or_else(|| {
            RpcError::do_not_retry(format!(
                "{code} is not a permission action (0-4: READ, WRITE, EXEC, CREATE, ADMIN)"
            ))
        })
}

fn action_code(action: Action) -> i32 {
    Action::ALL
        .iter()
        .position(|a| *a == action)
        .map_or(0, |i| i as i32)
}

fn actions_of(codes: &[i32]) -> Result<Actions, RpcError> {
    let actions = codes
        .iter()
        .map(|code| action_of(*code))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Actions::of(&actions))
}

fn text(bytes: &[u8], what: &str) -> Result<String, RpcError> {
    String::from_utf8(bytes.to_vec())
        .map_err(|_| RpcError::do_not_retry(format!("the {what} is not UTF-8")))
}

/// A permission type code, or an error naming it.
fn permission_type(kind: i32) -> Result<pb::PermissionType, RpcError> {
    pb::PermissionType::try_from(kind).map_err(|_| {
        RpcError::do_not_retry(format!(
            "{kind} is not a permission type (1: Global, 2: Namespace, 3: Table)"
        ))
    })
}

/// A table scope from its wire parts: an empty family or qualifier is
/// absent, and HBase ignores a qualifier without its family.
fn table_scope(
    name: Option<&TableName>,
    what: &str,
    family: Option<&[u8]>,
    qualifier: Option<&[u8]>,
) -> Result<Scope, RpcError> {
    let present = |b: Option<&[u8]>| b.filter(|b| !b.is_empty()).map(Bytes::copy_from_slice);
    let family = present(family);
    Ok(Scope::Table {
        table: table_name_text(name.ok_or_else(|| RpcError::missing(what))?)?,
        qualifier: family.as_ref().and(present(qualifier)),
        family,
    })
}

/// An optional user name: absent when empty.
fn user_of(name: Option<&[u8]>) -> Result<Option<String>, RpcError> {
    name.filter(|u| !u.is_empty())
        .map(|u| text(u, "user name"))
        .transpose()
}

/// A permission message's scope and actions.
fn scope_of(permission: &pb::Permission) -> Result<(Scope, Actions), RpcError> {
    let kind = permission
        .r#type
        .ok_or_else(|| RpcError::missing("Permission.type"))?;
    match permission_type(kind)? {
        pb::PermissionType::Global => {
            let global = permission.global_permission.clone().unwrap_or_default();
            Ok((Scope::Global, actions_of(&global.action)?))
        }
        pb::PermissionType::Namespace => {
            let namespace = permission
                .namespace_permission
                .as_ref()
                .ok_or_else(|| RpcError::missing("Permission.namespace_permission"))?;
            let name = namespace
                .namespace_name
                .as_deref()
                .ok_or_else(|| RpcError::missing("NamespacePermission.namespace_name"))?;
            Ok((
                Scope::namespace(&text(name, "namespace name")?),
                actions_of(&namespace.action)?,
            ))
        }
        pb::PermissionType::Table => {
            let table = permission
                .table_permission
                .as_ref()
                .ok_or_else(|| RpcError::missing("Permission.table_permission"))?;
            let scope = table_scope(
                table.table_name.as_ref(),
                "TablePermission.table_name",
                table.family.as_deref(),
                table.qualifier.as_deref(),
            )?;
            Ok((scope, actions_of(&table.action)?))
        }
    }
}

fn grant_of(message: Option<&pb::UserPermission>) -> Result<Grant, RpcError> {
    let message = message.ok_or_else(|| RpcError::missing("user_permission"))?;
    let user = message
        .user
        .as_deref()
        .ok_or_else(|| RpcError::missing("UserPermission.user"))?;
    let permission = message
        .permission
        .as_ref()
        .ok_or_else(|| RpcError::missing("UserPermission.permission"))?;
    let (scope, actions) = scope_of(permission)?;
    Ok(Grant {
        principal: text(user, "user name")?,
        scope,
        actions,
    })
}

/// A permission message for `actions` at `scope`.
fn permission_message(scope: &Scope, actions: Actions) -> pb::Permission {
    let codes: Vec<i32> = actions.iter().map(action_code).collect();
    let mut message = pb::Permission::default();
    match scope {
        Scope::Global => {
            message.r#type = Some(pb::PermissionType::Global as i32);
            message.global_permission = Some(pb::GlobalPermission { action: codes });
        }
        Scope::Namespace { namespace } => {
            message.r#type = Some(pb::PermissionType::Namespace as i32);
            message.namespace_permission = Some(pb::NamespacePermission {
                namespace_name: Some(namespace.as_bytes().to_vec()),
                action: codes,
            });
        }
        Scope::Table {
            table,
            family,
            qualifier,
        } => {
            message.r#type = Some(pb::PermissionType::Table as i32);
            message.table_permission = Some(pb::TablePermission {
                table_name: Some(table_name_proto(table)),
                family: family.as_ref().map(|f| f.to_vec()),
                qualifier: qualifier.as_ref().map(|q| q.to_vec()),
                action: codes,
            });
        }
    }
    message
}

fn user_permission_message(grant: &Grant) -> pb::UserPermission {
    pb::UserPermission {
        user: Some(grant.principal.as_bytes().to_vec()),
        permission: Some(permission_message(&grant.scope, grant.actions)),
    }
}

/// `Grant`: gives a user or group actions at a scope.
pub fn grant(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<pb::GrantRequest>(param, "GrantRequest")?;
    let grant = grant_of(request.user_permission.as_ref())?;
    call.db.change_permission(PermissionChange::Grant {
        grant,
        merge: request.merge_existing_permissions.unwrap_or(false),
    })?;
    Ok(encode(&Empty {}))
}

/// `Revoke`: takes actions away (all of them when none is named).
pub fn revoke(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request = Call::decode::<pb::RevokeRequest>(param, "RevokeRequest")?;
    let grant = grant_of(request.user_permission.as_ref())?;
    call.db
        .change_permission(PermissionChange::Revoke { grant })?;
    Ok(encode(&Empty {}))
}

/// `GetUserPermissions`: the grants of one scope, optionally of one user.
pub fn get_user_permissions(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request =
        Call::decode::<pb::GetUserPermissionsRequest>(param, "GetUserPermissionsRequest")?;
    let user = user_of(request.user_name.as_deref())?;
    let kind = request.r#type.unwrap_or(pb::PermissionType::Global as i32);
    let scope = match permission_type(kind)? {
        pb::PermissionType::Global => Scope::Global,
        pb::PermissionType::Namespace => Scope::namespace(&text(
            request
                .namespace_name
                .as_deref()
                .ok_or_else(|| RpcError::missing("namespace_name"))?,
            "namespace name",
        )?),
        pb::PermissionType::Table => table_scope(
            request.table_name.as_ref(),
            "table_name",
            request.column_family.as_deref(),
            request.column_qualifier.as_deref(),
        )?,
    };
    let grants = call.db.user_permissions(&PermissionQuery { scope, user })?;
    Ok(encode(&pb::GetUserPermissionsResponse {
        user_permission: grants.iter().map(user_permission_message).collect(),
    }))
}

/// `HasUserPermissions`: whether a user (the caller by default) holds
/// each permission asked about.
pub fn has_user_permissions(call: &mut Call<'_>, param: &[u8]) -> Answer {
    let request =
        Call::decode::<pb::HasUserPermissionsRequest>(param, "HasUserPermissionsRequest")?;
    let user = user_of(request.user_name.as_deref())?;
    let asked = request
        .permission
        .iter()
        .map(scope_of)
        .collect::<Result<Vec<_>, _>>()?;
    let answers = call.db.has_user_permissions(user.as_deref(), &asked)?;
    Ok(encode(&pb::HasUserPermissionsResponse {
        has_user_permission: answers,
    }))
}

/// `getSecurityCapabilities`: clients say who they are (simple
/// authentication), and grants are checked when authorization is on.
/// HBase's shell asks this before `grant` and refuses without
/// AUTHORIZATION.
pub fn get_security_capabilities(call: &mut Call<'_>, param: &[u8]) -> Answer {
    Call::decode::<Empty>(param, "SecurityCapabilitiesRequest")?;
    // HBase names one authentication: Kerberos when security is on.
    let authentication = match call.db.security().authentication {
        basalt::Authentication::Kerberos => pb::Capability::SecureAuthentication,
        basalt::Authentication::Simple => pb::Capability::SimpleAuthentication,
    };
    let mut capabilities = vec![authentication as i32];
    if call.db.security().authorization {
        capabilities.push(pb::Capability::Authorization as i32);
    }
    Ok(encode(&pb::SecurityCapabilitiesResponse { capabilities }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn a_permission_message_reads_back_as_the_scope_and_actions_it_was_made_from() {
        let scopes = [
            Scope::Global,
            Scope::namespace("ns"),
            Scope::table("t"),
            Scope::column("ns:t", b"f", b"q"),
        ];
        for scope in scopes {
            let actions = Actions::parse("RWA").unwrap();
            let bytes = permission_message(&scope, actions).encode_to_vec();
            let decoded = pb::Permission::decode(&bytes[..]).unwrap();
            assert_eq!(scope_of(&decoded).unwrap(), (scope, actions));
        }
    }

    #[test]
    fn garbage_permission_messages_get_errors_that_say_what_is_wrong() {
        let missing_type = pb::Permission::default();
        let error = scope_of(&missing_type).unwrap_err().to_string();
        assert!(error.contains("Permission.type"), "{error}");
        let bad_action = pb::Permission {
            r#type: Some(pb::PermissionType::Global as i32),
            global_permission: Some(pb::GlobalPermission { action: vec![9] }),
            ..Default::default()
        };
        let error = scope_of(&bad_action).unwrap_err().to_string();
        assert!(error.contains("9 is not a permission action"), "{error}");
        let bad_type = pb::Permission {
            r#type: Some(7),
            ..Default::default()
        };
        assert!(scope_of(&bad_type).is_err());
        let no_table = pb::Permission {
            r#type: Some(pb::PermissionType::Table as i32),
            table_permission: Some(pb::TablePermission::default()),
            ..Default::default()
        };
        let error = scope_of(&no_table).unwrap_err().to_string();
        assert!(error.contains("table_name"), "{error}");
        assert!(grant_of(None).is_err());
        for garbage in [&b"\xff\xff\xff"[..], b"\x0a\x05ab", b"\x08\x80"] {
            // Undecodable bytes are an error, never a panic.
            let _ = pb::GrantRequest::decode(garbage);
        }
    }
}
