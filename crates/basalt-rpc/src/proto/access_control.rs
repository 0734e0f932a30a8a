//! HBase's access control messages (`AccessControl.proto` facts: names,
//! field numbers, enum values), and the security capabilities answer of
//! `Master.proto`. Written for Basalt; fields Basalt never reads are left
//! out. Required fields are `Option`s always set in answers (see
//! `master.rs`).

use super::hbase::TableName;

/// HBase's `Permission.Action`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum Action {
    /// `R`.
    Read = 0,
    /// `W`.
    Write = 1,
    /// `X`.
    Exec = 2,
    /// `C`.
    Create = 3,
    /// `A`.
    Admin = 4,
}

/// HBase's `Permission.Type`: which of the scope messages is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum PermissionType {
    /// The whole cluster.
    Global = 1,
    /// A namespace.
    Namespace = 2,
    /// A table, family or column.
    Table = 3,
}

/// Actions at a scope.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Permission {
    /// The scope's kind (required).
    #[prost(enumeration = "PermissionType", optional, tag = "1")]
    pub r#type: Option<i32>,
    /// Set for a global permission.
    #[prost(message, optional, tag = "2")]
    pub global_permission: Option<GlobalPermission>,
    /// Set for a namespace permission.
    #[prost(message, optional, tag = "3")]
    pub namespace_permission: Option<NamespacePermission>,
    /// Set for a table permission.
    #[prost(message, optional, tag = "4")]
    pub table_permission: Option<TablePermission>,
}

/// Actions on a table, one family of it, or one column.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TablePermission {
    /// The table.
    #[prost(message, optional, tag = "1")]
    pub table_name: Option<TableName>,
    /// The family, if the permission is narrower than the table.
    #[prost(bytes = "vec", optional, tag = "2")]
    pub family: Option<Vec<u8>>,
    /// The qualifier, if it is one column of `family`.
    #[prost(bytes = "vec", optional, tag = "3")]
    pub qualifier: Option<Vec<u8>>,
    /// The actions.
    #[prost(enumeration = "Action", repeated, packed = "false", tag = "4")]
    pub action: Vec<i32>,
}

/// Actions on a namespace.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NamespacePermission {
    /// The namespace.
    #[prost(bytes = "vec", optional, tag = "1")]
    pub namespace_name: Option<Vec<u8>>,
    /// The actions.
    #[prost(enumeration = "Action", repeated, packed = "false", tag = "2")]
    pub action: Vec<i32>,
}

/// Actions on the whole cluster.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GlobalPermission {
    /// The actions.
    #[prost(enumeration = "Action", repeated, packed = "false", tag = "1")]
    pub action: Vec<i32>,
}

/// A user's (or `@group`'s) permission.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UserPermission {
    /// The user or `@group` (required).
    #[prost(bytes = "vec", optional, tag = "1")]
    pub user: Option<Vec<u8>>,
    /// The permission (required).
    #[prost(message, optional, tag = "3")]
    pub permission: Option<Permission>,
}

/// `Grant`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GrantRequest {
    /// What to grant (required).
    #[prost(message, optional, tag = "1")]
    pub user_permission: Option<UserPermission>,
    /// Add to the actions held rather than replace them (default false).
    #[prost(bool, optional, tag = "2")]
    pub merge_existing_permissions: Option<bool>,
}

/// `Revoke`'s parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RevokeRequest {
    /// What to take away (required).
    #[prost(message, optional, tag = "1")]
    pub user_permission: Option<UserPermission>,
}

/// `GetUserPermissions`' parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetUserPermissionsRequest {
    /// Which scope's grants (unset: global).
    #[prost(enumeration = "PermissionType", optional, tag = "1")]
    pub r#type: Option<i32>,
    /// The table, for a table request.
    #[prost(message, optional, tag = "2")]
    pub table_name: Option<TableName>,
    /// The namespace, for a namespace request.
    #[prost(bytes = "vec", optional, tag = "3")]
    pub namespace_name: Option<Vec<u8>>,
    /// Only grants on this family.
    #[prost(bytes = "vec", optional, tag = "4")]
    pub column_family: Option<Vec<u8>>,
    /// Only grants on this column of the family.
    #[prost(bytes = "vec", optional, tag = "5")]
    pub column_qualifier: Option<Vec<u8>>,
    /// Only this user's (and its groups') grants.
    #[prost(bytes = "vec", optional, tag = "6")]
    pub user_name: Option<Vec<u8>>,
}

/// `GetUserPermissions`' answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct GetUserPermissionsResponse {
    /// The grants.
    #[prost(message, repeated, tag = "1")]
    pub user_permission: Vec<UserPermission>,
}

/// `HasUserPermissions`' parameter.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HasUserPermissionsRequest {
    /// Whose permissions (unset: the caller's).
    #[prost(bytes = "vec", optional, tag = "1")]
    pub user_name: Option<Vec<u8>>,
    /// The permissions asked about.
    #[prost(message, repeated, tag = "2")]
    pub permission: Vec<Permission>,
}

/// `HasUserPermissions`' answer: one flag per permission asked about.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HasUserPermissionsResponse {
    /// Whether the user holds each permission.
    #[prost(bool, repeated, packed = "false", tag = "1")]
    pub has_user_permission: Vec<bool>,
}

/// `Master.proto`'s security capability.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum Capability {
    /// Clients say who they are.
    SimpleAuthentication = 0,
    /// Kerberos.
    SecureAuthentication = 1,
    /// Grants are checked.
    Authorization = 2,
    /// Per-cell ACLs.
    CellAuthorization = 3,
    /// Visibility labels.
    CellVisibility = 4,
}

/// `getSecurityCapabilities`' answer.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SecurityCapabilitiesResponse {
    /// What the cluster enforces.
    #[prost(enumeration = "Capability", repeated, packed = "false", tag = "1")]
    pub capabilities: Vec<i32>,
}
