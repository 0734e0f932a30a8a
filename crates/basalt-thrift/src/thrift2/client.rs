//! A blocking Thrift2 client: the Thrift1 [`Client`]'s connection (every
//! transport and protocol, sequence ids, reply framing) with
//! `THBaseService`'s methods and exceptions on top.

use std::collections::BTreeMap;
use std::io;
use std::net::ToSocketAddrs;

use bytes::Bytes;

use crate::client::{result_or_exception, Client, ClientError, ClientResult};
use crate::protocol::{Protocol, Value};
use crate::types::{app_error, Thrift};

use super::types::{
    args, TAppend, TColumnFamilyDescriptor, TDelete, TGet, THRegionLocation, TIOError,
    TIllegalArgument, TIncrement, TNamespaceDescriptor, TPut, TResult, TRowMutations, TScan,
    TTableDescriptor, TTableName,
};

/// A connection to a Thrift2 server.
#[derive(Debug)]
pub struct Client2 {
    inner: Client,
}

fn b(bytes: &[u8]) -> Option<Bytes> {
    Some(Bytes::copy_from_slice(bytes))
}

impl Client2 {
    /// Connects with the given transport (`framed` or buffered) and protocol.
    pub fn connect(addr: impl ToSocketAddrs, framed: bool, protocol: Protocol) -> io::Result<Self> {
        Ok(Client2 {
            inner: Client::connect(addr, framed, protocol)?,
        })
    }

    /// Connects over TLS (see [`Client::connect_tls`]).
    pub fn connect_tls(
        addr: impl ToSocketAddrs,
        framed: bool,
        protocol: Protocol,
        config: std::sync::Arc<rustls::ClientConfig>,
        server_name: &str,
    ) -> io::Result<Self> {
        Ok(Client2 {
            inner: Client::connect_tls(addr, framed, protocol, config, server_name)?,
        })
    }

    /// Connects to a server with Kerberos on (see
    /// [`Client::connect_kerberos`]).
    pub fn connect_kerberos(
        addr: impl ToSocketAddrs,
        framed: bool,
        protocol: Protocol,
        kerberos: &crate::client::KerberosClient,
    ) -> io::Result<Self> {
        Ok(Client2 {
            inner: Client::connect_kerberos(addr, framed, protocol, kerberos)?,
        })
    }

    /// The underlying connection (raw calls, timeouts, the socket).
    pub fn connection(&mut self) -> &mut Client {
        &mut self.inner
    }

    /// Calls a method; its result (field 0) if any, or its exception.
    pub fn call_result(&mut self, method: &str, args: Value) -> ClientResult<Option<Value>> {
        let reply = self.inner.call_raw(method, args)?;
        result_or_exception(reply, |id, value| match id {
            1 => Some(
                TIOError::from_value(value).map(|e| ClientError::Io(e.message.unwrap_or_default())),
            ),
            2 => Some(
                TIllegalArgument::from_value(value)
                    .map(|e| ClientError::IllegalArgument(e.message.unwrap_or_default())),
            ),
            _ => None,
        })
    }

    /// Calls a method and decodes its result.
    pub fn call<T: Thrift>(&mut self, method: &str, args: Value) -> ClientResult<T> {
        match self.call_result(method, args)? {
            Some(v) => T::from_value(v).map_err(ClientError::Protocol),
            None => Err(ClientError::Application {
                kind: app_error::MISSING_RESULT,
                message: format!("{method} returned no result"),
            }),
        }
    }

    /// Calls a method that returns nothing.
    pub fn call_void(&mut self, method: &str, args: Value) -> ClientResult<()> {
        self.call_result(method, args).map(|_| ())
    }

    // ---- data ----

    /// `get`.
    pub fn get(&mut self, table: &[u8], tget: TGet) -> ClientResult<TResult> {
        let a = args::TableGet {
            table: b(table),
            tget: Some(tget),
        };
        self.call("get", a.to_value())
    }

    /// `getMultiple`.
    pub fn get_multiple(&mut self, table: &[u8], tgets: Vec<TGet>) -> ClientResult<Vec<TResult>> {
        let a = args::TableGets {
            table: b(table),
            tgets: Some(tgets),
        };
        self.call("getMultiple", a.to_value())
    }

    /// `exists`.
    pub fn exists(&mut self, table: &[u8], tget: TGet) -> ClientResult<bool> {
        let a = args::TableGet {
            table: b(table),
            tget: Some(tget),
        };
        self.call("exists", a.to_value())
    }

    /// `existsAll`.
    pub fn exists_all(&mut self, table: &[u8], tgets: Vec<TGet>) -> ClientResult<Vec<bool>> {
        let a = args::TableGets {
            table: b(table),
            tgets: Some(tgets),
        };
        self.call("existsAll", a.to_value())
    }

    /// `put`.
    pub fn put(&mut self, table: &[u8], tput: TPut) -> ClientResult<()> {
        let a = args::Put {
            table: b(table),
            tput: Some(tput),
        };
        self.call_void("put", a.to_value())
    }

    /// `putMultiple`.
    pub fn put_multiple(&mut self, table: &[u8], tputs: Vec<TPut>) -> ClientResult<()> {
        let a = args::PutMultiple {
            table: b(table),
            tputs: Some(tputs),
        };
        self.call_void("putMultiple", a.to_value())
    }

    /// `deleteSingle`.
    pub fn delete_single(&mut self, table: &[u8], tdelete: TDelete) -> ClientResult<()> {
        let a = args::DeleteSingle {
            table: b(table),
            tdelete: Some(tdelete),
        };
        self.call_void("deleteSingle", a.to_value())
    }

    /// `deleteMultiple`: the deletes that failed.
    pub fn delete_multiple(
        &mut self,
        table: &[u8],
        tdeletes: Vec<TDelete>,
    ) -> ClientResult<Vec<TDelete>> {
        let a = args::DeleteMultiple {
            table: b(table),
            tdeletes: Some(tdeletes),
        };
        self.call("deleteMultiple", a.to_value())
    }

    /// `checkAndPut`; `value` `None` checks that the column is absent.
    pub fn check_and_put(
        &mut self,
        table: &[u8],
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        value: Option<&[u8]>,
        tput: TPut,
    ) -> ClientResult<bool> {
        let a = args::CheckAndPut {
            table: b(table),
            row: b(row),
            family: b(family),
            qualifier: b(qualifier),
            value: value.and_then(b),
            tput: Some(tput),
        };
        self.call("checkAndPut", a.to_value())
    }

    /// `checkAndDelete`.
    pub fn check_and_delete(
        &mut self,
        table: &[u8],
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        value: Option<&[u8]>,
        tdelete: TDelete,
    ) -> ClientResult<bool> {
        let a = args::CheckAndDelete {
            table: b(table),
            row: b(row),
            family: b(family),
            qualifier: b(qualifier),
            value: value.and_then(b),
            tdelete: Some(tdelete),
        };
        self.call("checkAndDelete", a.to_value())
    }

    /// `checkAndMutate` with a `TCompareOperator` code.
    #[allow(clippy::too_many_arguments)]
    pub fn check_and_mutate(
        &mut self,
        table: &[u8],
        row: &[u8],
        family: &[u8],
        qualifier: &[u8],
        op: i32,
        value: Option<&[u8]>,
        mutations: TRowMutations,
    ) -> ClientResult<bool> {
        let a = args::CheckAndMutate {
            table: b(table),
            row: b(row),
            family: b(family),
            qualifier: b(qualifier),
            compare_operator: Some(op),
            value: value.and_then(b),
            row_mutations: Some(mutations),
        };
        self.call("checkAndMutate", a.to_value())
    }

    /// `increment`.
    pub fn increment(&mut self, table: &[u8], t: TIncrement) -> ClientResult<TResult> {
        let a = args::Increment {
            table: b(table),
            tincrement: Some(t),
        };
        self.call("increment", a.to_value())
    }

    /// `append`.
    pub fn append(&mut self, table: &[u8], t: TAppend) -> ClientResult<TResult> {
        let a = args::Append {
            table: b(table),
            tappend: Some(t),
        };
        self.call("append", a.to_value())
    }

    /// `mutateRow`.
    pub fn mutate_row(&mut self, table: &[u8], t: TRowMutations) -> ClientResult<()> {
        let a = args::MutateRow {
            table: b(table),
            trow_mutations: Some(t),
        };
        self.call_void("mutateRow", a.to_value())
    }

    // ---- scanners ----

    /// `openScanner`.
    pub fn open_scanner(&mut self, table: &[u8], scan: TScan) -> ClientResult<i32> {
        let a = args::OpenScanner {
            table: b(table),
            tscan: Some(scan),
        };
        self.call("openScanner", a.to_value())
    }

    /// `getScannerRows`.
    pub fn get_scanner_rows(&mut self, id: i32, rows: i32) -> ClientResult<Vec<TResult>> {
        let a = args::GetScannerRows {
            scanner_id: Some(id),
            num_rows: Some(rows),
        };
        self.call("getScannerRows", a.to_value())
    }

    /// `closeScanner`.
    pub fn close_scanner(&mut self, id: i32) -> ClientResult<()> {
        let a = args::CloseScanner {
            scanner_id: Some(id),
        };
        self.call_void("closeScanner", a.to_value())
    }

    /// `getScannerResults`.
    pub fn get_scanner_results(
        &mut self,
        table: &[u8],
        scan: TScan,
        rows: i32,
    ) -> ClientResult<Vec<TResult>> {
        let a = args::GetScannerResults {
            table: b(table),
            tscan: Some(scan),
            num_rows: Some(rows),
        };
        self.call("getScannerResults", a.to_value())
    }

    /// Every row of a scan, `page` rows per call; closes the scanner.
    pub fn scan_all(&mut self, table: &[u8], scan: TScan, page: i32) -> ClientResult<Vec<TResult>> {
        let id = self.open_scanner(table, scan)?;
        let mut out = Vec::new();
        loop {
            let rows = self.get_scanner_rows(id, page)?;
            if rows.is_empty() {
                break;
            }
            out.extend(rows);
        }
        self.close_scanner(id)?;
        Ok(out)
    }

    // ---- regions ----

    /// `getRegionLocation`.
    pub fn get_region_location(
        &mut self,
        table: &[u8],
        row: &[u8],
    ) -> ClientResult<THRegionLocation> {
        let a = args::GetRegionLocation {
            table: b(table),
            row: b(row),
            reload: Some(false),
        };
        self.call("getRegionLocation", a.to_value())
    }

    /// `getAllRegionLocations`.
    pub fn get_all_region_locations(
        &mut self,
        table: &[u8],
    ) -> ClientResult<Vec<THRegionLocation>> {
        let a = args::Table { table: b(table) };
        self.call("getAllRegionLocations", a.to_value())
    }

    // ---- administration ----

    fn name_arg(table: &str) -> Value {
        args::TableName {
            table_name: Some(TTableName::of(table)),
        }
        .to_value()
    }

    /// `createTable` with split keys.
    pub fn create_table(&mut self, desc: TTableDescriptor, splits: Vec<Bytes>) -> ClientResult<()> {
        let a = args::CreateTable {
            desc: Some(desc),
            split_keys: Some(splits),
        };
        self.call_void("createTable", a.to_value())
    }

    /// `deleteTable`.
    pub fn delete_table(&mut self, table: &str) -> ClientResult<()> {
        self.call_void("deleteTable", Self::name_arg(table))
    }

    /// `truncateTable`.
    pub fn truncate_table(&mut self, table: &str, preserve_splits: bool) -> ClientResult<()> {
        let a = args::TruncateTable {
            table_name: Some(TTableName::of(table)),
            preserve_splits: Some(preserve_splits),
        };
        self.call_void("truncateTable", a.to_value())
    }

    /// `enableTable`.
    pub fn enable_table(&mut self, table: &str) -> ClientResult<()> {
        self.call_void("enableTable", Self::name_arg(table))
    }

    /// `disableTable`.
    pub fn disable_table(&mut self, table: &str) -> ClientResult<()> {
        self.call_void("disableTable", Self::name_arg(table))
    }

    /// `isTableEnabled`.
    pub fn is_table_enabled(&mut self, table: &str) -> ClientResult<bool> {
        self.call("isTableEnabled", Self::name_arg(table))
    }

    /// `isTableDisabled`.
    pub fn is_table_disabled(&mut self, table: &str) -> ClientResult<bool> {
        self.call("isTableDisabled", Self::name_arg(table))
    }

    /// `isTableAvailable`.
    pub fn is_table_available(&mut self, table: &str) -> ClientResult<bool> {
        self.call("isTableAvailable", Self::name_arg(table))
    }

    /// `isTableAvailableWithSplit`.
    pub fn is_table_available_with_split(
        &mut self,
        table: &str,
        splits: Vec<Bytes>,
    ) -> ClientResult<bool> {
        let a = args::TableWithSplits {
            table_name: Some(TTableName::of(table)),
            split_keys: Some(splits),
        };
        self.call("isTableAvailableWithSplit", a.to_value())
    }

    /// `tableExists`.
    pub fn table_exists(&mut self, table: &str) -> ClientResult<bool> {
        self.call("tableExists", Self::name_arg(table))
    }

    /// `getTableDescriptor`.
    pub fn get_table_descriptor(&mut self, table: &str) -> ClientResult<TTableDescriptor> {
        self.call("getTableDescriptor", Self::name_arg(table))
    }

    /// `getTableDescriptors`.
    pub fn get_table_descriptors(
        &mut self,
        tables: &[&str],
    ) -> ClientResult<Vec<TTableDescriptor>> {
        let a = args::TableNames {
            tables: Some(tables.iter().map(|t| TTableName::of(t)).collect()),
        };
        self.call("getTableDescriptors", a.to_value())
    }

    /// `getTableNamesByPattern`.
    pub fn get_table_names_by_pattern(
        &mut self,
        regex: Option<&str>,
        include_sys_tables: bool,
    ) -> ClientResult<Vec<TTableName>> {
        let a = args::Pattern {
            regex: regex.map(str::to_string),
            include_sys_tables: Some(include_sys_tables),
        };
        self.call("getTableNamesByPattern", a.to_value())
    }

    /// `getTableDescriptorsByPattern`.
    pub fn get_table_descriptors_by_pattern(
        &mut self,
        regex: Option<&str>,
        include_sys_tables: bool,
    ) -> ClientResult<Vec<TTableDescriptor>> {
        let a = args::Pattern {
            regex: regex.map(str::to_string),
            include_sys_tables: Some(include_sys_tables),
        };
        self.call("getTableDescriptorsByPattern", a.to_value())
    }

    /// `getTableNamesByNamespace`.
    pub fn get_table_names_by_namespace(&mut self, ns: &str) -> ClientResult<Vec<TTableName>> {
        let a = args::Name {
            name: Some(ns.to_string()),
        };
        self.call("getTableNamesByNamespace", a.to_value())
    }

    /// `getTableDescriptorsByNamespace`.
    pub fn get_table_descriptors_by_namespace(
        &mut self,
        ns: &str,
    ) -> ClientResult<Vec<TTableDescriptor>> {
        let a = args::Name {
            name: Some(ns.to_string()),
        };
        self.call("getTableDescriptorsByNamespace", a.to_value())
    }

    /// `modifyTable`.
    pub fn modify_table(&mut self, desc: TTableDescriptor) -> ClientResult<()> {
        let a = args::ModifyTable { desc: Some(desc) };
        self.call_void("modifyTable", a.to_value())
    }

    /// `addColumnFamily`.
    pub fn add_column_family(
        &mut self,
        table: &str,
        f: TColumnFamilyDescriptor,
    ) -> ClientResult<()> {
        let a = args::Family {
            table_name: Some(TTableName::of(table)),
            column: Some(f),
        };
        self.call_void("addColumnFamily", a.to_value())
    }

    /// `modifyColumnFamily`.
    pub fn modify_column_family(
        &mut self,
        table: &str,
        f: TColumnFamilyDescriptor,
    ) -> ClientResult<()> {
        let a = args::Family {
            table_name: Some(TTableName::of(table)),
            column: Some(f),
        };
        self.call_void("modifyColumnFamily", a.to_value())
    }

    /// `deleteColumnFamily`.
    pub fn delete_column_family(&mut self, table: &str, family: &[u8]) -> ClientResult<()> {
        let a = args::FamilyName {
            table_name: Some(TTableName::of(table)),
            column: b(family),
        };
        self.call_void("deleteColumnFamily", a.to_value())
    }

    /// `createNamespace`.
    pub fn create_namespace(
        &mut self,
        ns: &str,
        configuration: &BTreeMap<String, String>,
    ) -> ClientResult<()> {
        self.call_namespace("createNamespace", ns, configuration)
    }

    /// `modifyNamespace`: the namespace's configuration becomes this one.
    pub fn modify_namespace(
        &mut self,
        ns: &str,
        configuration: &BTreeMap<String, String>,
    ) -> ClientResult<()> {
        self.call_namespace("modifyNamespace", ns, configuration)
    }

    /// A method whose one argument is a namespace descriptor.
    fn call_namespace(
        &mut self,
        method: &str,
        ns: &str,
        configuration: &BTreeMap<String, String>,
    ) -> ClientResult<()> {
        let a = args::Namespace {
            namespace_desc: Some(TNamespaceDescriptor {
                name: Some(ns.to_string()),
                configuration: Some(configuration.clone()),
            }),
        };
        self.call_void(method, a.to_value())
    }

    /// `deleteNamespace`.
    pub fn delete_namespace(&mut self, ns: &str) -> ClientResult<()> {
        self.call_void(
            "deleteNamespace",
            args::Name {
                name: Some(ns.to_string()),
            }
            .to_value(),
        )
    }

    /// `getNamespaceDescriptor`.
    pub fn get_namespace_descriptor(&mut self, ns: &str) -> ClientResult<TNamespaceDescriptor> {
        self.call(
            "getNamespaceDescriptor",
            args::Name {
                name: Some(ns.to_string()),
            }
            .to_value(),
        )
    }

    /// `listNamespaceDescriptors`.
    pub fn list_namespace_descriptors(&mut self) -> ClientResult<Vec<TNamespaceDescriptor>> {
        self.call("listNamespaceDescriptors", args::Nothing {}.to_value())
    }

    /// `listNamespaces`.
    pub fn list_namespaces(&mut self) -> ClientResult<Vec<String>> {
        self.call("listNamespaces", args::Nothing {}.to_value())
    }

    /// `getThriftServerType`: 2 for Thrift2.
    pub fn get_thrift_server_type(&mut self) -> ClientResult<i32> {
        self.call("getThriftServerType", args::Nothing {}.to_value())
    }

    /// `getClusterId`.
    pub fn get_cluster_id(&mut self) -> ClientResult<String> {
        self.call("getClusterId", args::Nothing {}.to_value())
    }
}
