//! `THBaseService`: each Thrift2 method mapped onto the embedded API
//! (`Database`, `Table`) and the admin API (`basalt::admin`), with HBase's
//! semantics: half-open time ranges, a missing row as an empty result,
//! `deleteMultiple` answering the deletes that failed, exceptions as
//! `TIOError` with HBase's exception class in the message.
//!
//! Calls block, so the server runs them on its blocking pool (see
//! `server.rs`), exactly as it does Thrift1's.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;

use basalt::admin::{Admin, AdminRequest, AlterChange, FamilySpec};
use basalt::gateways::scanners::Owner;
use basalt::{
    Append, CheckAndMutate, ColumnFamilyDescriptor, Comparator, CompareOp, Database, Delete,
    Durability, Error, ErrorKind, FamilyChange, Filter, Get, Increment, Mutation,
    NamespaceDescriptor, Put, RowMutations, RowResult, Scan, Table, TimeRange,
};

use crate::exception;
use crate::handler::{Advertised, Outcome};
use crate::protocol::Value;
use crate::scanners::{AnswerLimits, Scanners, ThriftScan};
use crate::types::{app_error, Thrift};

use super::types::{
    args, compare_op, delete_type, durability, TAppend, TColumn, TColumnFamilyDescriptor,
    TColumnValue, TDelete, TGet, THRegionInfo, THRegionLocation, TIOError, TIllegalArgument,
    TIncrement, TNamespaceDescriptor, TPut, TResult, TRowMutations, TScan, TServerName,
    TTableDescriptor, TTableName, SERVER_TYPE_TWO,
};

const UNSUPPORTED: &str = "java.lang.UnsupportedOperationException";

/// Why a call failed.
#[derive(Debug)]
enum Failure {
    /// `TIOError` with this message.
    Io(String),
    /// `TIllegalArgument` where the method declares it (the scanner
    /// methods), else a `TIOError` naming `IllegalArgumentException`.
    IllegalArgument(String),
    /// The arguments do not fit the method: `TApplicationException`
    /// PROTOCOL_ERROR, as a generated server answers.
    Protocol(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Io(exception::io_message(&e))
    }
}

type Answer = Result<Option<Value>, Failure>;

/// An invalid argument as HBase's handler reports it (a `TIOError` whose
/// message names the Java class).
fn invalid(message: impl std::fmt::Display) -> Failure {
    Failure::Io(format!(
        "{}: {message}",
        ErrorKind::InvalidArgument.java_class()
    ))
}

fn unsupported(what: &str, why: &str) -> Failure {
    Failure::Io(format!(
        "{UNSUPPORTED}: {what} is not supported by Basalt: {why}"
    ))
}

/// The Thrift2 service state shared by every connection.
#[derive(Debug)]
pub(crate) struct Service2 {
    db: Database,
    scanners: Arc<Scanners>,
    advertised: Advertised,
    /// How large one scanner answer may grow.
    answer_limits: AnswerLimits,
    /// The server's start code (`TServerName.startCode`): when it started.
    start_code: i64,
}

impl crate::server::Dispatch for Service2 {
    fn is_read_only(&self, method: &str) -> bool {
        matches!(method, "get" | "getMultiple" | "exists" | "existsAll")
    }

    fn acting_as_user(
        &self,
        user: &str,
        address: Option<String>,
    ) -> Arc<dyn crate::server::Dispatch> {
        let mut caller = self.db.security().caller(user);
        caller.address = address;
        Arc::new(Service2 {
            db: self.db.acting_as(caller),
            scanners: Arc::clone(&self.scanners),
            advertised: self.advertised.clone(),
            answer_limits: self.answer_limits,
            start_code: self.start_code,
        })
    }

    fn call(&self, conn: u64, method: &str, body: Value) -> Outcome {
        let Some(result) = self.dispatch(conn, method, body) else {
            return Outcome::Application(
                app_error::UNKNOWN_METHOD,
                format!("Invalid method name: '{method}'"),
            );
        };
        // Only the scanner methods declare TIllegalArgument.
        let declares_ia = matches!(method, "getScannerRows" | "closeScanner");
        let field = match result {
            Ok(success) => {
                return Outcome::Reply(Value::Struct(success.map(|v| (0, v)).into_iter().collect()))
            }
            Err(Failure::Protocol(m)) => {
                return Outcome::Application(app_error::PROTOCOL_ERROR, format!("{method}: {m}"))
            }
            Err(Failure::IllegalArgument(m)) if declares_ia => {
                (2, TIllegalArgument { message: Some(m) }.to_value())
            }
            Err(Failure::IllegalArgument(m)) => (
                1,
                io_error(format!("{}: {m}", ErrorKind::InvalidArgument.java_class())),
            ),
            Err(Failure::Io(m)) => (1, io_error(m)),
        };
        Outcome::Reply(Value::Struct(vec![field]))
    }
}

fn io_error(message: String) -> Value {
    TIOError {
        message: Some(message),
        can_retry: Some(false),
    }
    .to_value()
}

/// Decodes a method's argument struct; a type mismatch is a protocol error.
fn parse<T: Thrift>(body: Value) -> Result<T, Failure> {
    T::from_value(body).map_err(Failure::Protocol)
}

fn required<T>(value: Option<T>, name: &str) -> Result<T, Failure> {
    value.ok_or_else(|| Failure::Protocol(format!("required argument {name} is missing")))
}

impl Service2 {
    pub(crate) fn new(
        db: Database,
        scanners: Arc<Scanners>,
        advertised: Advertised,
        answer_limits: AnswerLimits,
    ) -> Self {
        let start_code = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        Service2 {
            db,
            scanners,
            advertised,
            answer_limits,
            start_code,
        }
    }

    fn dispatch(&self, conn: u64, method: &str, b: Value) -> Option<Answer> {
        Some(match method {
            "exists" => parse(b).and_then(|a| self.exists(a)),
            "existsAll" => parse(b).and_then(|a| self.exists_all(a)),
            "get" => parse(b).and_then(|a| self.get(a)),
            "getMultiple" => parse(b).and_then(|a| self.get_multiple(a)),
            "put" => parse(b).and_then(|a| self.put(a)),
            "putMultiple" => parse(b).and_then(|a| self.put_multiple(a)),
            "deleteSingle" => parse(b).and_then(|a| self.delete_single(a)),
            "deleteMultiple" => parse(b).and_then(|a| self.delete_multiple(a)),
            "checkAndPut" => parse(b).and_then(|a| self.check_and_put(a)),
            "checkAndDelete" => parse(b).and_then(|a| self.check_and_delete(a)),
            "checkAndMutate" => parse(b).and_then(|a| self.check_and_mutate(a)),
            "increment" => parse(b).and_then(|a| self.increment(a)),
            "append" => parse(b).and_then(|a| self.append(a)),
            "mutateRow" => parse(b).and_then(|a| self.mutate_row(a)),
            "openScanner" => parse(b).and_then(|a| self.open_scanner(conn, a)),
            "getScannerRows" => parse(b).and_then(|a| self.get_scanner_rows(conn, a)),
            "closeScanner" => parse(b).and_then(|a| self.close_scanner(conn, a)),
            "getScannerResults" => parse(b).and_then(|a| self.get_scanner_results(a)),
            "getRegionLocation" => parse(b).and_then(|a| self.get_region_location(a)),
            "getAllRegionLocations" => parse(b).and_then(|a| self.get_all_region_locations(a)),
            "getTableDescriptor" => parse(b).and_then(|a| self.get_table_descriptor(a)),
            "getTableDescriptors" => parse(b).and_then(|a| self.get_table_descriptors(a)),
            "tableExists" => parse(b).and_then(|a| self.table_exists(a)),
            "getTableDescriptorsByPattern" => {
                parse(b).and_then(|a| self.tables_by_pattern(a, true))
            }
            "getTableNamesByPattern" => parse(b).and_then(|a| self.tables_by_pattern(a, false)),
            "getTableDescriptorsByNamespace" => {
                parse(b).and_then(|a| self.tables_by_namespace(a, true))
            }
            "getTableNamesByNamespace" => parse(b).and_then(|a| self.tables_by_namespace(a, false)),
            "createTable" => parse(b).and_then(|a| self.create_table(a)),
            "deleteTable" => parse(b).and_then(|a| self.delete_table(a)),
            "truncateTable" => parse(b).and_then(|a| self.truncate_table(a)),
            "enableTable" => parse(b).and_then(|a| self.set_enabled(a, true)),
            "disableTable" => parse(b).and_then(|a| self.set_enabled(a, false)),
            "isTableEnabled" => parse(b).and_then(|a| self.is_enabled(a, true)),
            "isTableDisabled" => parse(b).and_then(|a| self.is_enabled(a, false)),
            "isTableAvailable" => parse(b).and_then(|a| self.is_available(a)),
            "isTableAvailableWithSplit" => parse(b).and_then(|a| self.is_available_with_split(a)),
            "addColumnFamily" => parse(b).and_then(|a| self.add_family(a)),
            "deleteColumnFamily" => parse(b).and_then(|a| self.delete_family(a)),
            "modifyColumnFamily" => parse(b).and_then(|a| self.modify_family(a)),
            "modifyTable" => parse(b).and_then(|a| self.modify_table(a)),
            "createNamespace" => parse(b).and_then(|a| self.create_namespace(a)),
            "modifyNamespace" => parse(b).and_then(|a| self.modify_namespace(a)),
            "deleteNamespace" => parse(b).and_then(|a| self.delete_namespace(a)),
            "getNamespaceDescriptor" => parse(b).and_then(|a| self.get_namespace(a)),
            "listNamespaceDescriptors" => parse::<args::Nothing>(b).map(|_| {
                let list: Vec<TNamespaceDescriptor> = self
                    .db
                    .list_namespaces()
                    .into_iter()
                    .map(namespace_descriptor)
                    .collect();
                Some(list.to_value())
            }),
            "listNamespaces" => parse::<args::Nothing>(b).map(|_| {
                let names: Vec<String> = self
                    .db
                    .list_namespaces()
                    .into_iter()
                    .map(|n| n.name)
                    .collect();
                Some(names.to_value())
            }),
            "getThriftServerType" => Ok(Some(Value::I32(SERVER_TYPE_TWO))),
            // The same answer as Thrift1's getClusterId: one embedded
            // database, named by the product.
            "getClusterId" => Ok(Some("basalt".to_string().to_value())),
            "getSlowLogResponses" | "clearSlowLogResponses" => Err(unsupported(
                method,
                "Basalt keeps no slow-request log (slow calls are in the server's own log)",
            )),
            "grant" | "revoke" => Err(unsupported(
                method,
                "Basalt has no access control: a gateway's clients can do everything",
            )),
            _ => return None,
        })
    }

    fn table(&self, name: Option<Bytes>) -> Result<Table, Failure> {
        let name = utf8_name(required(name, "table")?)?;
        Ok(self.db.table(&name)?)
    }

    // ---- reads ----

    fn exists(&self, a: args::TableGet) -> Answer {
        let table = self.table(a.table)?;
        let get = get_of(required(a.tget, "tget")?)?;
        Ok(Some(Value::Bool(table.exists(&get.get)?)))
    }

    fn exists_all(&self, a: args::TableGets) -> Answer {
        let table = self.table(a.table)?;
        let mut out = Vec::new();
        for tget in required(a.tgets, "tgets")? {
            out.push(table.exists(&get_of(tget)?.get)?);
        }
        Ok(Some(out.to_value()))
    }

    fn get(&self, a: args::TableGet) -> Answer {
        let table = self.table(a.table)?;
        let result = read(&table, get_of(required(a.tget, "tget")?)?)?;
        Ok(Some(result.to_value()))
    }

    fn get_multiple(&self, a: args::TableGets) -> Answer {
        let table = self.table(a.table)?;
        let tgets = required(a.tgets, "tgets")?;
        if tgets.len() > 1 {
            crate::scanners::room_for_rows(self.answer_limits)?;
        }
        let mut out = Vec::new();
        for tget in tgets {
            out.push(read(&table, get_of(tget)?)?);
        }
        Ok(Some(out.to_value()))
    }

    // ---- writes ----

    fn put(&self, a: args::Put) -> Answer {
        let table = self.table(a.table)?;
        table.put(&put_of(required(a.tput, "tput")?)?)?;
        Ok(None)
    }

    fn put_multiple(&self, a: args::PutMultiple) -> Answer {
        let table = self.table(a.table)?;
        let puts = required(a.tputs, "tputs")?
            .into_iter()
            .map(|p| put_of(p).map(Mutation::Put))
            .collect::<Result<Vec<_>, _>>()?;
        let results = table.batch(&puts);
        let failed: Vec<Error> = results.into_iter().filter_map(Result::err).collect();
        if let Some(first) = failed.first() {
            return Err(Failure::Io(format!(
                "{} of {} puts failed; the first: {}",
                failed.len(),
                puts.len(),
                exception::io_message(first)
            )));
        }
        Ok(None)
    }

    fn delete_single(&self, a: args::DeleteSingle) -> Answer {
        let table = self.table(a.table)?;
        table.delete(&delete_of(required(a.tdelete, "tdelete")?)?)?;
        Ok(None)
    }

    fn delete_multiple(&self, a: args::DeleteMultiple) -> Answer {
        let table = self.table(a.table)?;
        let tdeletes = required(a.tdeletes, "tdeletes")?;
        // A delete that cannot even be built fails alone, like one the
        // engine refuses: both come back in the answer.
        let mut failed: Vec<TDelete> = Vec::new();
        let mut sent = Vec::new();
        let mut deletes = Vec::new();
        for t in tdeletes {
            match delete_of(t.clone()) {
                Ok(d) => {
                    deletes.push(Mutation::Delete(d));
                    sent.push(t);
                }
                Err(_) => failed.push(t),
            }
        }
        for (t, result) in sent.into_iter().zip(table.batch(&deletes)) {
            if let Err(e) = result {
                // The whole table failing is the caller's error, not a row's.
                if matches!(
                    e.kind(),
                    ErrorKind::TableNotFound | ErrorKind::TableDisabled
                ) {
                    return Err(e.into());
                }
                failed.push(t);
            }
        }
        Ok(Some(failed.to_value()))
    }

    /// `cell` is the checked (row, family, qualifier).
    fn check(
        &self,
        table: Option<Bytes>,
        cell: (Option<Bytes>, Option<Bytes>, Option<Bytes>),
        op: CompareOp,
        value: Option<Bytes>,
        mutations: RowMutations,
    ) -> Answer {
        let (row, family, qualifier) = cell;
        let table = self.table(table)?;
        let mut check = CheckAndMutate::new(
            required(row, "row")?,
            required(family, "family")?,
            required(qualifier, "qualifier")?,
        );
        check = match value {
            // No value: the check is that the column has none.
            None => check.if_absent(),
            Some(v) => check.if_matches(op, Comparator::Binary(v)),
        };
        check.mutations = mutations;
        Ok(Some(Value::Bool(table.check_and_mutate(&check)?)))
    }

    fn check_and_put(&self, a: args::CheckAndPut) -> Answer {
        let put = put_of(required(a.tput, "tput")?)?;
        let mutations = RowMutations::new(put.row().clone()).add(put)?;
        self.check(
            a.table,
            (a.row, a.family, a.qualifier),
            CompareOp::Equal,
            a.value,
            mutations,
        )
    }

    fn check_and_delete(&self, a: args::CheckAndDelete) -> Answer {
        let delete = delete_of(required(a.tdelete, "tdelete")?)?;
        let mutations = RowMutations::new(delete.row().clone()).add(delete)?;
        self.check(
            a.table,
            (a.row, a.family, a.qualifier),
            CompareOp::Equal,
            a.value,
            mutations,
        )
    }

    fn check_and_mutate(&self, a: args::CheckAndMutate) -> Answer {
        let op = match required(a.compare_operator, "compareOperator")? {
            compare_op::LESS => CompareOp::Less,
            compare_op::LESS_OR_EQUAL => CompareOp::LessOrEqual,
            compare_op::EQUAL => CompareOp::Equal,
            compare_op::NOT_EQUAL => CompareOp::NotEqual,
            compare_op::GREATER_OR_EQUAL => CompareOp::GreaterOrEqual,
            compare_op::GREATER => CompareOp::Greater,
            compare_op::NO_OP => {
                return Err(unsupported(
                    "compare operator NO_OP",
                    "a check must compare the value with something",
                ))
            }
            other => return Err(invalid(format!("unknown TCompareOperator {other}"))),
        };
        let mutations = row_mutations_of(required(a.row_mutations, "rowMutations")?)?;
        self.check(
            a.table,
            (a.row, a.family, a.qualifier),
            op,
            a.value,
            mutations,
        )
    }

    fn increment(&self, a: args::Increment) -> Answer {
        let table = self.table(a.table)?;
        let t: TIncrement = required(a.tincrement, "tincrement")?;
        reject_visibility(
            t.cell_visibility
                .as_ref()
                .and_then(|v| v.expression.as_ref()),
        )?;
        let mut inc =
            Increment::new(required(t.row, "row")?).durability(durability_of(t.durability)?);
        for c in required(t.columns, "columns")? {
            inc = inc.add(
                required(c.family, "family")?,
                required(c.qualifier, "qualifier")?,
                c.amount.unwrap_or(1),
            );
        }
        let result = table.increment(&inc)?;
        Ok(Some(answer_of(&result, t.return_results).to_value()))
    }

    fn append(&self, a: args::Append) -> Answer {
        let table = self.table(a.table)?;
        let t: TAppend = required(a.tappend, "tappend")?;
        reject_visibility(
            t.cell_visibility
                .as_ref()
                .and_then(|v| v.expression.as_ref()),
        )?;
        let mut append =
            Append::new(required(t.row, "row")?).durability(durability_of(t.durability)?);
        for c in required(t.columns, "columns")? {
            append = append.add(
                required(c.family, "family")?,
                required(c.qualifier, "qualifier")?,
                required(c.value, "value")?,
            );
        }
        let result = table.append(&append)?;
        Ok(Some(answer_of(&result, t.return_results).to_value()))
    }

    fn mutate_row(&self, a: args::MutateRow) -> Answer {
        let table = self.table(a.table)?;
        let mutations = row_mutations_of(required(a.trow_mutations, "trowMutations")?)?;
        table.mutate_row(&mutations)?;
        Ok(None)
    }

    // ---- scanners ----

    fn open_scanner(&self, conn: u64, a: args::OpenScanner) -> Answer {
        let table = self.table(a.table)?;
        let scan = scan_of(required(a.tscan, "tscan")?)?;
        let scanner = table.scan(&scan)?;
        let (id, _) = self
            .scanners
            .open(Owner::Connection(conn), ThriftScan::new(scanner, false))
            .map_err(|refused| Failure::Io(refused.message("closeScanner")))?;
        Ok(Some(Value::I32(id)))
    }

    fn get_scanner_rows(&self, conn: u64, a: args::GetScannerRows) -> Answer {
        let id = required(a.scanner_id, "scannerId")?;
        let Some(entry) = self.scanners.get(&id, Owner::Connection(conn)) else {
            return Err(Failure::IllegalArgument(format!(
                "Invalid scanner Id: {id}"
            )));
        };
        let rows = usize::try_from(a.num_rows.unwrap_or(1)).unwrap_or(0);
        let results = entry.lock().next_rows(rows, self.answer_limits)?;
        let out: Vec<TResult> = results.iter().map(result_of).collect();
        Ok(Some(out.to_value()))
    }

    fn close_scanner(&self, conn: u64, a: args::CloseScanner) -> Answer {
        let id = required(a.scanner_id, "scannerId")?;
        if !self.scanners.close(&id, Owner::Connection(conn)) {
            return Err(Failure::IllegalArgument(format!(
                "Invalid scanner Id: {id}"
            )));
        }
        Ok(None)
    }

    fn get_scanner_results(&self, a: args::GetScannerResults) -> Answer {
        let table = self.table(a.table)?;
        let scan = scan_of(required(a.tscan, "tscan")?)?;
        let rows = usize::try_from(a.num_rows.unwrap_or(1)).unwrap_or(0);
        // The scanner lives for this call only, so it is never registered.
        let mut scanner = Some(table.scan(&scan)?);
        let results = crate::scanners::take_rows(&mut scanner, rows, self.answer_limits)?;
        let out: Vec<TResult> = results.iter().map(result_of).collect();
        Ok(Some(out.to_value()))
    }

    // ---- regions ----

    fn location(&self, table: &str, info: &basalt::RegionInfo) -> THRegionLocation {
        THRegionLocation {
            server_name: Some(TServerName {
                host_name: Some(self.advertised.host.clone()),
                port: Some(i32::from(self.advertised.port)),
                start_code: Some(self.start_code),
            }),
            region_info: Some(THRegionInfo {
                region_id: Some(i64::try_from(info.id).unwrap_or(i64::MAX)),
                table_name: Some(Bytes::copy_from_slice(table.as_bytes())),
                start_key: Some(info.start_key.clone()),
                end_key: Some(info.end_key.clone()),
                offline: Some(false),
                split: Some(false),
                replica_id: Some(0),
            }),
        }
    }

    fn get_region_location(&self, a: args::GetRegionLocation) -> Answer {
        let name = utf8_name(required(a.table, "table")?)?;
        let row = required(a.row, "row")?;
        let info = self.db.describe_table(&name)?;
        let region = info
            .regions
            .iter()
            .find(|r| r.info.contains(&row))
            .ok_or_else(|| {
                Failure::Io(format!(
                    "{}: no region of {name} holds the row",
                    ErrorKind::NotServingRegion.java_class()
                ))
            })?;
        Ok(Some(self.location(&name, &region.info).to_value()))
    }

    fn get_all_region_locations(&self, a: args::Table) -> Answer {
        let name = utf8_name(required(a.table, "table")?)?;
        let info = self.db.describe_table(&name)?;
        let out: Vec<THRegionLocation> = info
            .regions
            .iter()
            .map(|r| self.location(&name, &r.info))
            .collect();
        Ok(Some(out.to_value()))
    }

    // ---- tables ----

    fn descriptor(&self, name: &str) -> Result<TTableDescriptor, Failure> {
        let info = self.db.describe_table(name)?;
        Ok(TTableDescriptor {
            table_name: Some(TTableName::of(name)),
            columns: Some(
                info.descriptor
                    .families()
                    .iter()
                    .map(family_to_thrift)
                    .collect(),
            ),
            attributes: None,
            durability: Some(durability::USE_DEFAULT),
        })
    }

    fn get_table_descriptor(&self, a: args::TableName) -> Answer {
        let name = table_name(a.table_name)?;
        Ok(Some(self.descriptor(&name)?.to_value()))
    }

    fn get_table_descriptors(&self, a: args::TableNames) -> Answer {
        let mut out = Vec::new();
        for t in required(a.tables, "tables")? {
            out.push(self.descriptor(&table_name(Some(t))?)?);
        }
        Ok(Some(out.to_value()))
    }

    fn table_exists(&self, a: args::TableName) -> Answer {
        let name = table_name(a.table_name)?;
        Ok(Some(Value::Bool(self.db.table_exists(&name))))
    }

    fn answer_tables(&self, names: Vec<String>, descriptors: bool) -> Answer {
        if descriptors {
            let mut out = Vec::new();
            for name in names {
                match self.descriptor(&name) {
                    Ok(d) => out.push(d),
                    // Dropped since it was listed: not part of the answer.
                    Err(Failure::Io(_)) if !self.db.table_exists(&name) => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(Some(out.to_value()))
        } else {
            let out: Vec<TTableName> = names.iter().map(|n| TTableName::of(n)).collect();
            Ok(Some(out.to_value()))
        }
    }

    fn tables_by_pattern(&self, a: args::Pattern, descriptors: bool) -> Answer {
        // Java's `matches`: the whole name must match.
        let pattern = match a.regex.as_deref().filter(|r| !r.is_empty()) {
            None => None,
            Some(r) => Some(
                regex::Regex::new(&format!("^(?:{r})$"))
                    .map_err(|e| invalid(format!("invalid table name pattern '{r}': {e}")))?,
            ),
        };
        let names = self
            .db
            .list_tables()
            .into_iter()
            .filter(|n| pattern.as_ref().is_none_or(|p| p.is_match(n)))
            .collect();
        self.answer_tables(names, descriptors)
    }

    fn tables_by_namespace(&self, a: args::Name, descriptors: bool) -> Answer {
        let ns = required(a.name, "name")?;
        let names = self.db.list_namespace_tables(&ns)?;
        self.answer_tables(names, descriptors)
    }

    fn create_table(&self, a: args::CreateTable) -> Answer {
        let desc = required(a.desc, "desc")?;
        let table = table_name(desc.table_name)?;
        reject_table_durability(desc.durability)?;
        let families = desc
            .columns
            .unwrap_or_default()
            .iter()
            .map(family_spec)
            .collect::<Result<Vec<_>, _>>()?;
        self.db.execute(AdminRequest::Create {
            table,
            families,
            splits: a.split_keys.unwrap_or_default(),
            num_regions: None,
            split_algo: None,
        })?;
        Ok(None)
    }

    fn delete_table(&self, a: args::TableName) -> Answer {
        self.db.drop_table(&table_name(a.table_name)?)?;
        Ok(None)
    }

    /// HBase's truncate: the core's `AdminRequest::Truncate` (a disabled
    /// table emptied and left enabled, in one region unless
    /// `preserveSplits`), the same for every gateway.
    fn truncate_table(&self, a: args::TruncateTable) -> Answer {
        self.db.execute(basalt::AdminRequest::Truncate {
            table: table_name(a.table_name)?,
            preserve_splits: required(a.preserve_splits, "preserveSplits")?,
        })?;
        Ok(None)
    }

    fn set_enabled(&self, a: args::TableName, enable: bool) -> Answer {
        let name = table_name(a.table_name)?;
        if enable {
            self.db.enable_table(&name)?;
        } else {
            self.db.disable_table(&name)?;
        }
        Ok(None)
    }

    fn is_enabled(&self, a: args::TableName, enabled: bool) -> Answer {
        let name = table_name(a.table_name)?;
        Ok(Some(Value::Bool(
            self.db.is_table_enabled(&name)? == enabled,
        )))
    }

    /// Available: it exists and every region is open (none failed to).
    fn is_available(&self, a: args::TableName) -> Answer {
        let name = table_name(a.table_name)?;
        Ok(Some(Value::Bool(self.available(&name)?)))
    }

    fn available(&self, name: &str) -> Result<bool, Failure> {
        match self.db.describe_table(name) {
            Ok(info) => Ok(info.enabled
                && info
                    .regions
                    .iter()
                    .all(|r| matches!(r.state, basalt::RegionState::Open))),
            Err(Error::TableNotFound(_)) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    fn is_available_with_split(&self, a: args::TableWithSplits) -> Answer {
        let name = table_name(a.table_name)?;
        if !self.available(&name)? {
            return Ok(Some(Value::Bool(false)));
        }
        // Every given key starts a region, as HBase checks it.
        let starts: BTreeSet<Bytes> = self
            .db
            .list_regions(&name)?
            .iter()
            .map(|r| r.info.start_key.clone())
            .collect();
        let all = a
            .split_keys
            .unwrap_or_default()
            .iter()
            .all(|k| starts.contains(k));
        Ok(Some(Value::Bool(all)))
    }

    fn add_family(&self, a: args::Family) -> Answer {
        let name = table_name(a.table_name)?;
        let spec = family_spec(&required(a.column, "column")?)?;
        let current = self.db.describe_table(&name)?.descriptor;
        if current.get_family(spec.name.as_bytes()).is_some() {
            return Err(invalid(format!(
                "Column family '{}' in table '{name}' already exists so cannot be added",
                spec.name
            )));
        }
        self.db.execute(AdminRequest::Alter {
            table: name,
            changes: vec![AlterChange::Set { family: spec }],
        })?;
        Ok(None)
    }

    fn delete_family(&self, a: args::FamilyName) -> Answer {
        let name = table_name(a.table_name)?;
        let family = utf8_name(required(a.column, "column")?)?;
        self.db.execute(AdminRequest::Alter {
            table: name,
            changes: vec![AlterChange::Delete { name: family }],
        })?;
        Ok(None)
    }

    /// The family as given replaces the old one: options left out take
    /// their defaults (HBase builds the new descriptor from the Thrift one
    /// alone).
    fn modify_family(&self, a: args::Family) -> Answer {
        let name = table_name(a.table_name)?;
        let family = family_descriptor(&required(a.column, "column")?)?;
        self.db
            .alter_table(&name, &[FamilyChange::Modify(family)])?;
        Ok(None)
    }

    /// The table's families become exactly those given: new ones added,
    /// missing ones deleted (with their data), the rest replaced.
    fn modify_table(&self, a: args::ModifyTable) -> Answer {
        let desc = required(a.desc, "desc")?;
        let name = table_name(desc.table_name)?;
        reject_table_durability(desc.durability)?;
        let current = self.db.describe_table(&name)?.descriptor;
        let wanted = desc
            .columns
            .unwrap_or_default()
            .iter()
            .map(family_descriptor)
            .collect::<Result<Vec<_>, _>>()?;
        if wanted.is_empty() {
            return Err(invalid("a table needs at least one column family"));
        }
        let mut changes = Vec::new();
        for f in current.families() {
            if !wanted.iter().any(|w| w.name() == f.name()) {
                changes.push(FamilyChange::Delete(f.name().to_string()));
            }
        }
        for w in wanted {
            changes.push(match current.get_family(w.name().as_bytes()) {
                Some(_) => FamilyChange::Modify(w),
                None => FamilyChange::Add(w),
            });
        }
        self.db.alter_table(&name, &changes)?;
        Ok(None)
    }

    // ---- namespaces ----

    fn create_namespace(&self, a: args::Namespace) -> Answer {
        let desc = required(a.namespace_desc, "namespaceDesc")?;
        let name = required(desc.name, "name")?;
        let mut namespace = NamespaceDescriptor::new(name);
        namespace.properties = desc.configuration.unwrap_or_default();
        self.db.create_namespace(namespace)?;
        Ok(None)
    }

    /// HBase replaces the namespace's configuration with the one given:
    /// keys it no longer names are removed (the core's `modifyNamespace`
    /// request, as REST's PUT and native RPC send it).
    fn modify_namespace(&self, a: args::Namespace) -> Answer {
        let desc = required(a.namespace_desc, "namespaceDesc")?;
        let mut wanted = NamespaceDescriptor::new(required(desc.name, "name")?);
        wanted.properties = desc.configuration.unwrap_or_default();
        let current = self.db.describe_namespace(&wanted.name)?;
        self.db
            .execute(AdminRequest::modify_namespace(&current, wanted))?;
        Ok(None)
    }

    fn delete_namespace(&self, a: args::Name) -> Answer {
        let ns = required(a.name, "name")?;
        self.db.drop_namespace(&ns)?;
        Ok(None)
    }

    fn get_namespace(&self, a: args::Name) -> Answer {
        let ns = required(a.name, "name")?;
        Ok(Some(
            namespace_descriptor(self.db.describe_namespace(&ns)?).to_value(),
        ))
    }
}

fn namespace_descriptor(namespace: NamespaceDescriptor) -> TNamespaceDescriptor {
    TNamespaceDescriptor {
        name: Some(namespace.name),
        configuration: Some(namespace.properties),
    }
}

fn utf8_name(bytes: Bytes) -> Result<String, Failure> {
    String::from_utf8(bytes.to_vec()).map_err(|_| invalid(format!("name {:?} is not UTF-8", bytes)))
}

/// `ns:qualifier`, or the qualifier alone for the default namespace.
fn table_name(name: Option<TTableName>) -> Result<String, Failure> {
    let name = required(name, "tableName")?;
    let qualifier = utf8_name(required(name.qualifier, "qualifier")?)?;
    match name.ns {
        None => Ok(qualifier),
        Some(ns) if ns.is_empty() || &ns[..] == b"default" => Ok(qualifier),
        Some(ns) => Ok(format!("{}:{qualifier}", utf8_name(ns)?)),
    }
}

fn durability_of(d: Option<i32>) -> Result<Durability, Failure> {
    Ok(match d.unwrap_or(durability::USE_DEFAULT) {
        durability::USE_DEFAULT => Durability::default(),
        durability::SKIP_WAL => Durability::SkipWal,
        durability::ASYNC_WAL => Durability::AsyncWal,
        durability::SYNC_WAL => Durability::SyncWal,
        durability::FSYNC_WAL => Durability::FsyncWal,
        other => return Err(invalid(format!("unknown TDurability {other}"))),
    })
}

/// Basalt's tables have no durability of their own (each write says its
/// own): only the default is accepted, so no setting is silently dropped.
fn reject_table_durability(d: Option<i32>) -> Result<(), Failure> {
    match d {
        None | Some(durability::USE_DEFAULT) => Ok(()),
        Some(_) => Err(unsupported(
            "a table-wide durability",
            "durability is chosen per write (TPut.durability and the like)",
        )),
    }
}

/// Writing cells visible only to some would write them visible to all:
/// refused rather than done silently.
fn reject_visibility(expression: Option<&String>) -> Result<(), Failure> {
    match expression {
        Some(e) if !e.is_empty() => Err(unsupported(
            "cell visibility",
            "Basalt has no visibility labels; every cell is visible to every reader",
        )),
        _ => Ok(()),
    }
}

fn time_range(min: Option<i64>, max: Option<i64>) -> Result<TimeRange, Failure> {
    Ok(TimeRange::new(min.unwrap_or(0), max.unwrap_or(i64::MAX))?)
}

fn filter_of(text: Option<Bytes>, bytes: Option<Bytes>) -> Result<Option<Filter>, Failure> {
    if bytes.is_some_and(|b| !b.is_empty()) {
        return Err(unsupported(
            "filterBytes",
            "it carries a serialized Java filter; send the filter in filterString",
        ));
    }
    match text.filter(|t| !t.is_empty()) {
        None => Ok(None),
        Some(t) => {
            let text = std::str::from_utf8(&t).map_err(|_| invalid("filterString is not UTF-8"))?;
            Ok(Some(Filter::parse(text)?))
        }
    }
}

fn versions(n: i32, what: &str) -> Result<u32, Failure> {
    u32::try_from(n)
        .ok()
        .filter(|&v| v > 0)
        .ok_or_else(|| invalid(format!("{what} must be positive, got {n}")))
}

fn replica(id: Option<i32>) -> Result<(), Failure> {
    match id {
        Some(r) if r > 0 => Err(unsupported(
            "reading a region replica",
            "Basalt serves each region once (replica 0)",
        )),
        _ => Ok(()),
    }
}

/// A `TGet` as a `Get`, with what the engine's `Get` has no field for.
struct GetPlan {
    get: Get,
    store_limit: Option<usize>,
    store_offset: usize,
    existence_only: bool,
}

fn get_of(t: TGet) -> Result<GetPlan, Failure> {
    replica(t.target_replica_id)?;
    let mut get = Get::new(required(t.row, "row")?);
    for c in t.columns.into_iter().flatten() {
        get = select(get, c, |g, f| g.family(f), |g, f, q| g.column(f, q))?;
    }
    // A timestamp wins over a time range, as in HBase.
    if let Some(ts) = t.timestamp {
        get = get.timestamp(ts)?;
    } else if let Some(r) = t.time_range {
        get = get.time_range(time_range(r.min_stamp, r.max_stamp)?);
    }
    if let Some(n) = t.max_versions {
        get = get.max_versions(versions(n, "maxVersions")?);
    }
    if let Some(f) = filter_of(t.filter_string, t.filter_bytes)? {
        get = get.filter(f);
    }
    let count = |n: Option<i32>, what: &str| -> Result<Option<usize>, Failure> {
        n.map(|n| usize::try_from(n).map_err(|_| invalid(format!("{what} must not be negative"))))
            .transpose()
    };
    Ok(GetPlan {
        get,
        store_limit: count(t.store_limit, "storeLimit")?,
        store_offset: count(t.store_offset, "storeOffset")?.unwrap_or(0),
        existence_only: t.existence_only.unwrap_or(false),
    })
}

/// Adds a `TColumn` to a read: a family, or one column. Timestamps on
/// columns are ignored by reads, as HBase documents.
fn select<T>(
    target: T,
    c: TColumn,
    family: impl FnOnce(T, Bytes) -> T,
    column: impl FnOnce(T, Bytes, Bytes) -> T,
) -> Result<T, Failure> {
    let f = required(c.family, "family")?;
    Ok(match c.qualifier {
        None => family(target, f),
        Some(q) => column(target, f, q),
    })
}

fn read(table: &Table, plan: GetPlan) -> Result<TResult, Failure> {
    if plan.existence_only {
        // HBase answers with a flag TResult has no field for; a row that
        // exists comes back with its key and no cells, one that does not
        // as the empty result.
        let exists = table.exists(&plan.get)?;
        return Ok(TResult {
            row: exists.then(|| plan.get.row.clone()),
            column_values: Some(Vec::new()),
            ..TResult::default()
        });
    }
    let mut result = table.get(&plan.get)?;
    crate::scanners::count_row(&result);
    if plan.store_limit.is_some() || plan.store_offset > 0 {
        // Per family, skip `offset` cells and keep `limit` (HBase's
        // storeOffset and storeLimit count cells of a store).
        let mut kept = Vec::new();
        let mut seen: Option<(Bytes, usize)> = None;
        for cell in result.cells.drain(..) {
            let n = match &mut seen {
                Some((f, n)) if *f == cell.family => {
                    *n += 1;
                    *n
                }
                _ => {
                    seen = Some((cell.family.clone(), 0));
                    0
                }
            };
            let within = n >= plan.store_offset
                && plan.store_limit.is_none_or(|l| n - plan.store_offset < l);
            if within {
                kept.push(cell);
            }
        }
        result.cells = kept;
    }
    Ok(result_of(&result))
}

fn put_of(t: TPut) -> Result<Put, Failure> {
    reject_visibility(
        t.cell_visibility
            .as_ref()
            .and_then(|v| v.expression.as_ref()),
    )?;
    let row = required(t.row, "row")?;
    let mut put = match t.timestamp {
        Some(ts) => Put::with_timestamp(row, ts),
        None => Put::new(row),
    };
    for cv in required(t.column_values, "columnValues")? {
        if cv.tags.as_ref().is_some_and(|t| !t.is_empty()) {
            return Err(unsupported("cell tags", "cells carry no tags in Basalt"));
        }
        let family = required(cv.family, "family")?;
        let qualifier = required(cv.qualifier, "qualifier")?;
        let value = required(cv.value, "value")?;
        put = match cv.timestamp {
            Some(ts) => put.add_at(family, qualifier, ts, value),
            None => put.add(family, qualifier, value),
        };
    }
    Ok(put.durability(durability_of(t.durability)?))
}

fn delete_of(t: TDelete) -> Result<Delete, Failure> {
    let row = required(t.row, "row")?;
    let mut delete = match t.timestamp {
        Some(ts) => Delete::with_timestamp(row, ts),
        None => Delete::new(row),
    };
    let kind = t.delete_type.unwrap_or(delete_type::DELETE_COLUMNS);
    if !(delete_type::DELETE_COLUMN..=delete_type::DELETE_FAMILY_VERSION).contains(&kind) {
        return Err(invalid(format!("unknown TDeleteType {kind}")));
    }
    // No columns: the whole row, up to the timestamp.
    for c in t.columns.into_iter().flatten() {
        let family = required(c.family, "family")?;
        delete = match (c.qualifier, c.timestamp) {
            (None, Some(ts)) if kind == delete_type::DELETE_FAMILY_VERSION => {
                delete.family_version(family, ts)
            }
            (None, Some(ts)) => delete.family_at(family, ts),
            (None, None) if kind == delete_type::DELETE_FAMILY_VERSION => {
                let ts = delete.timestamp();
                delete.family_version(family, ts)
            }
            (None, None) => delete.family(family),
            (Some(q), Some(ts)) if kind == delete_type::DELETE_COLUMN => {
                delete.column_at(family, q, ts)
            }
            (Some(q), None) if kind == delete_type::DELETE_COLUMN => delete.column(family, q),
            (Some(q), Some(ts)) => delete.columns_at(family, q, ts),
            (Some(q), None) => delete.columns(family, q),
        };
    }
    Ok(delete.durability(durability_of(t.durability)?))
}

fn row_mutations_of(t: TRowMutations) -> Result<RowMutations, Failure> {
    let mut out = RowMutations::new(required(t.row, "row")?);
    for (i, m) in required(t.mutations, "mutations")?.into_iter().enumerate() {
        out = match (m.put, m.delete_single) {
            (Some(p), None) => out.add(put_of(p)?)?,
            (None, Some(d)) => out.add(delete_of(d)?)?,
            _ => {
                return Err(Failure::Protocol(format!(
                    "mutation {i}: a TMutation must set exactly one of put and deleteSingle"
                )))
            }
        };
    }
    Ok(out)
}

fn scan_of(t: TScan) -> Result<Scan, Failure> {
    replica(t.target_replica_id)?;
    if t.col_fam_time_range_map
        .as_ref()
        .is_some_and(|m| !m.is_empty())
    {
        return Err(unsupported(
            "colFamTimeRangeMap",
            "a scan has one time range for every family; use timeRange",
        ));
    }
    let mut scan = Scan::new();
    if let Some(start) = t.start_row {
        scan = scan.start_row(start);
    }
    if let Some(stop) = t.stop_row {
        scan = scan.stop_row(stop);
    }
    for c in t.columns.into_iter().flatten() {
        scan = select(scan, c, |s, f| s.family(f), |s, f, q| s.column(f, q))?;
    }
    if let Some(r) = t.time_range {
        scan = scan.time_range(time_range(r.min_stamp, r.max_stamp)?);
    }
    if let Some(n) = t.max_versions {
        scan = scan.max_versions(versions(n, "maxVersions")?);
    }
    if let Some(c) = t.caching.filter(|&c| c > 0) {
        scan = scan.caching(c as usize);
    }
    if let Some(b) = t.batch_size.filter(|&b| b > 0) {
        scan = scan.batch(b as usize);
    }
    if let Some(l) = t.limit.filter(|&l| l > 0) {
        scan = scan.limit(l as usize);
    }
    if let Some(f) = filter_of(t.filter_string, t.filter_bytes)? {
        scan = scan.filter(f);
    }
    // cacheBlocks and readType are I/O hints; consistency and
    // authorizations change nothing where every region has one replica
    // and no cell carries labels.
    scan = scan.reversed(t.reversed.unwrap_or(false));
    scan.validate()?;
    Ok(scan)
}

fn result_of(r: &RowResult) -> TResult {
    if r.is_empty() {
        return TResult {
            column_values: Some(Vec::new()),
            ..TResult::default()
        };
    }
    TResult {
        row: Some(r.row.clone()),
        column_values: Some(
            r.cells
                .iter()
                .map(|c| TColumnValue {
                    family: Some(c.family.clone()),
                    qualifier: Some(c.qualifier.clone()),
                    value: Some(c.value.clone()),
                    timestamp: Some(c.timestamp),
                    tags: None,
                    cell_type: Some(c.cell_type.code() as i8),
                })
                .collect(),
        ),
        stale: Some(false),
        partial: Some(false),
    }
}

/// `returnResults` false: HBase answers an empty result.
fn answer_of(r: &RowResult, return_results: Option<bool>) -> TResult {
    if return_results == Some(false) {
        return result_of(&RowResult::default());
    }
    result_of(r)
}

// ---- column families ----

fn bloom_name(code: i32) -> Result<&'static str, Failure> {
    Ok(match code {
        0 => "NONE",
        1 => "ROW",
        2 => "ROWCOL",
        3 => "ROWPREFIX_FIXED_LENGTH",
        other => return Err(invalid(format!("unknown TBloomFilterType {other}"))),
    })
}

const COMPRESSION_NAMES: [(i32, &str); 7] = [
    (0, "LZO"),
    (1, "GZ"),
    (2, "NONE"),
    (3, "SNAPPY"),
    (4, "LZ4"),
    (5, "BZIP2"),
    (6, "ZSTD"),
];

const ENCODING_NAMES: [(i32, &str); 5] = [
    (0, "NONE"),
    (2, "PREFIX"),
    (3, "DIFF"),
    (4, "FAST_DIFF"),
    (7, "ROW_INDEX_V1"),
];

const KEEP_DELETED_NAMES: [(i32, &str); 3] = [(0, "FALSE"), (1, "TRUE"), (2, "TTL")];

fn name_of(table: &[(i32, &'static str)], code: i32, what: &str) -> Result<&'static str, Failure> {
    table
        .iter()
        .find(|(c, _)| *c == code)
        .map(|(_, n)| *n)
        .ok_or_else(|| invalid(format!("unknown {what} {code}")))
}

fn code_of(table: &[(i32, &'static str)], name: &str) -> Option<i32> {
    table
        .iter()
        .find(|(_, n)| n.eq_ignore_ascii_case(name))
        .map(|(c, _)| *c)
}

/// A Thrift family as the admin API's spec: options by their HBase names,
/// so the admin API checks them as it checks the shell's. Settings with no
/// meaning in Basalt (replication scope, DFS replication, cache-on-write
/// hints, configuration maps) are accepted and not kept.
fn family_spec(t: &TColumnFamilyDescriptor) -> Result<FamilySpec, Failure> {
    let name = utf8_name(t.name.clone().unwrap_or_default())?;
    if name.is_empty() {
        return Err(invalid("column family name is empty"));
    }
    let mut options = std::collections::BTreeMap::new();
    let mut set = |k: &str, v: String| {
        options.insert(k.to_string(), v);
    };
    if let Some(v) = t.max_versions {
        set("VERSIONS", v.to_string());
    }
    if let Some(v) = t.min_versions {
        set("MIN_VERSIONS", v.to_string());
    }
    if let Some(v) = t.time_to_live {
        set(
            "TTL",
            if v == i32::MAX {
                "FOREVER".to_string()
            } else {
                v.to_string()
            },
        );
    }
    if let Some(v) = t.block_size {
        set("BLOCKSIZE", v.to_string());
    }
    if let Some(v) = t.bloomn_filter_type {
        set("BLOOMFILTER", bloom_name(v)?.to_string());
    }
    if let Some(v) = t.compression_type {
        set(
            "COMPRESSION",
            name_of(&COMPRESSION_NAMES, v, "TCompressionAlgorithm")?.to_string(),
        );
    }
    if let Some(v) = t.data_block_encoding {
        set(
            "DATA_BLOCK_ENCODING",
            name_of(&ENCODING_NAMES, v, "TDataBlockEncoding")?.to_string(),
        );
    }
    if let Some(v) = t.keep_deleted_cells {
        set(
            "KEEP_DELETED_CELLS",
            name_of(&KEEP_DELETED_NAMES, v, "TKeepDeletedCells")?.to_string(),
        );
    }
    if let Some(v) = t.block_cache_enabled {
        set("BLOCKCACHE", v.to_string());
    }
    if let Some(v) = t.in_memory {
        set("IN_MEMORY", v.to_string());
    }
    Ok(FamilySpec { name, options })
}

/// A Thrift family as a whole descriptor: defaults, then what was given.
fn family_descriptor(t: &TColumnFamilyDescriptor) -> Result<ColumnFamilyDescriptor, Failure> {
    let spec = family_spec(t)?;
    let mut d = ColumnFamilyDescriptor::new(spec.name);
    for (k, v) in &spec.options {
        d.set_option(k, v)?;
    }
    d.validate()?;
    Ok(d)
}

fn family_to_thrift(f: &ColumnFamilyDescriptor) -> TColumnFamilyDescriptor {
    let bloom = match f.bloom_filter.as_str() {
        "ROW" => 1,
        "ROWCOL" => 2,
        "ROWPREFIX_FIXED_LENGTH" => 3,
        _ => 0,
    };
    TColumnFamilyDescriptor {
        name: Some(Bytes::copy_from_slice(f.name().as_bytes())),
        block_size: Some(i32::try_from(f.block_size).unwrap_or(i32::MAX)),
        bloomn_filter_type: Some(bloom),
        compression_type: code_of(&COMPRESSION_NAMES, f.compression.as_str()),
        data_block_encoding: code_of(&ENCODING_NAMES, &f.data_block_encoding.to_string()),
        keep_deleted_cells: code_of(&KEEP_DELETED_NAMES, &f.keep_deleted_cells.to_string()),
        max_versions: Some(i32::try_from(f.max_versions).unwrap_or(i32::MAX)),
        min_versions: Some(i32::try_from(f.min_versions).unwrap_or(i32::MAX)),
        // HBase's FOREVER is Integer.MAX_VALUE seconds.
        time_to_live: Some(
            f.ttl_seconds
                .map_or(i32::MAX, |s| i32::try_from(s).unwrap_or(i32::MAX)),
        ),
        block_cache_enabled: Some(f.block_cache),
        in_memory: Some(f.in_memory),
        ..TColumnFamilyDescriptor::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn family_options_map_both_ways_through_hbase_codes() {
        let t = TColumnFamilyDescriptor {
            name: Some(Bytes::from_static(b"f")),
            max_versions: Some(5),
            compression_type: Some(1),
            bloomn_filter_type: Some(2),
            keep_deleted_cells: Some(1),
            ..TColumnFamilyDescriptor::default()
        };
        let d = family_descriptor(&t).unwrap();
        assert_eq!(d.max_versions, 5);
        let back = family_to_thrift(&d);
        assert_eq!(back.compression_type, Some(1));
        assert_eq!(back.bloomn_filter_type, Some(2));
        assert_eq!(back.keep_deleted_cells, Some(1));
    }

    #[test]
    fn unknown_enum_codes_are_refused_with_their_name() {
        let t = TColumnFamilyDescriptor {
            name: Some(Bytes::from_static(b"f")),
            compression_type: Some(42),
            ..TColumnFamilyDescriptor::default()
        };
        let Err(Failure::Io(m)) = family_spec(&t) else {
            panic!("accepted an unknown compression code");
        };
        assert!(m.contains("TCompressionAlgorithm 42"), "{m}");
    }
}
