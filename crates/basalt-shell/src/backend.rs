//! Where the shell's commands go: a server over Thrift1 plus Basalt's admin
//! extension ([`RemoteBackend`]), or a data directory opened in-process
//! ([`EmbeddedBackend`]). Both answer in the same shapes and with the same
//! [`ShellError`]s, so a script prints the same either way.

use bytes::Bytes;

use basalt::admin::{Admin, AdminReply, AdminRequest, CellReply, ReadSpec, RowReply};
use basalt::column::Column;
use basalt::{Database, Delete, Error, ErrorKind, Put};
use basalt_thrift::admin::{AdminCallError, AdminError};
use basalt_thrift::client::{self as tc, Client, ClientError};
use basalt_thrift::exception;
use basalt_thrift::types::{TAppend, TScan};
use basalt_thrift::Protocol;
use basalt_types::query::prefix_successor;

/// A failure the shell reports, classified the way the HBase shell words
/// its errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ShellError {
    /// The table does not exist.
    UnknownTable(String),
    /// The table exists already.
    TableExists(String),
    /// The table is disabled.
    TableDisabled(String),
    /// The table is enabled and must not be.
    TableEnabled(String),
    /// A family the table does not have.
    UnknownFamily {
        /// The table, when known.
        table: Option<String>,
        /// The family asked for.
        family: String,
    },
    /// The command's arguments are wrong (count, types, values).
    Usage(String),
    /// The connection to the server broke; the backend reconnects for the
    /// next command.
    Disconnected(String),
    /// Anything else, with its message.
    Other(String),
}

impl std::fmt::Display for ShellError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShellError::UnknownTable(t) => write!(f, "Unknown table {t}!"),
            ShellError::TableExists(t) => write!(f, "Table already exists: {t}!"),
            ShellError::TableDisabled(t) => write!(f, "Table {t} is disabled!"),
            ShellError::TableEnabled(t) => write!(f, "Table {t} is enabled. Disable it first."),
            ShellError::UnknownFamily { family, .. } => {
                write!(f, "Unknown column family {family}!")
            }
            ShellError::Disconnected(m) => write!(
                f,
                "lost the connection to the server ({m}); the next command reconnects"
            ),
            ShellError::Usage(m) | ShellError::Other(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for ShellError {}

/// Result alias of the backends and commands.
pub type ShellResult<T> = Result<T, ShellError>;

impl ShellError {
    /// The shell's wording of a classified failure. `subject` is the table
    /// for the table kinds and the family for a missing family (`table` is
    /// then its table); every other failure is shown by its `message`.
    fn classified(
        kind: Option<ErrorKind>,
        subject: Option<String>,
        table: Option<String>,
        message: String,
    ) -> ShellError {
        let subject = subject.unwrap_or_default();
        match kind {
            Some(ErrorKind::TableNotFound) => ShellError::UnknownTable(subject),
            Some(ErrorKind::TableExists) => ShellError::TableExists(subject),
            Some(ErrorKind::TableDisabled) => ShellError::TableDisabled(subject),
            Some(ErrorKind::TableEnabled) => ShellError::TableEnabled(subject),
            Some(ErrorKind::NoSuchFamily) => ShellError::UnknownFamily {
                table,
                family: subject,
            },
            _ => ShellError::Other(message),
        }
    }
}

impl From<Error> for ShellError {
    fn from(e: Error) -> Self {
        let table = match e.kind() {
            ErrorKind::NoSuchFamily => e.table().map(str::to_string),
            _ => None,
        };
        ShellError::classified(
            Some(e.kind()),
            e.subject().map(str::to_string),
            table,
            e.detail(),
        )
    }
}

impl From<AdminError> for ShellError {
    fn from(e: AdminError) -> Self {
        ShellError::classified(e.core_kind(), e.subject.clone(), e.table, e.message)
    }
}

impl From<AdminCallError> for ShellError {
    fn from(e: AdminCallError) -> Self {
        match e {
            AdminCallError::Admin(a) => a.into(),
            AdminCallError::Client(c) => c.into(),
        }
    }
}

impl From<ClientError> for ShellError {
    /// The gateway words errors as HBase's Java exceptions; the shell reads
    /// the kind back from the exception's class name through the one table
    /// of class names ([`exception::decode`]).
    fn from(e: ClientError) -> Self {
        match e {
            ClientError::Io(m) => {
                let d = exception::decode(&m);
                match (d.kind, &d.subject) {
                    // A missing family whose text could not be read is
                    // shown as it came.
                    (Some(ErrorKind::NoSuchFamily), None) => ShellError::Other(d.text),
                    _ => ShellError::classified(d.kind, d.subject, d.table, d.text),
                }
            }
            ClientError::IllegalArgument(m) => ShellError::Other(m),
            ClientError::AlreadyExists(m) => ShellError::TableExists(exception::table_in_use(&m)),
            ClientError::Transport(e) => ShellError::Disconnected(e.to_string()),
            other => ShellError::Other(other.to_string()),
        }
    }
}

/// What the shell's commands need from a database.
pub trait Backend {
    /// Runs one administration request (see [`basalt::admin`]).
    fn admin(&mut self, request: AdminRequest) -> ShellResult<AdminReply>;
    /// Table names, sorted.
    fn list_tables(&mut self) -> ShellResult<Vec<String>>;
    /// True when the table exists.
    fn exists(&mut self, table: &str) -> ShellResult<bool>;
    /// True when the table is enabled.
    fn is_enabled(&mut self, table: &str) -> ShellResult<bool>;
    /// Enables or disables a table.
    fn set_enabled(&mut self, table: &str, enabled: bool) -> ShellResult<()>;
    /// Drops a disabled table.
    fn drop_table(&mut self, table: &str) -> ShellResult<()>;
    /// Writes one cell (`family:qualifier`) at `ts` or now.
    fn put(
        &mut self,
        table: &str,
        row: &[u8],
        column: &[u8],
        value: &[u8],
        ts: Option<i64>,
    ) -> ShellResult<()>;
    /// Deletes every version at or before `ts` (or all) of a column
    /// (`family:qualifier`) or, for a bare family, of the family.
    fn delete_column(
        &mut self,
        table: &str,
        row: &[u8],
        column: &[u8],
        ts: Option<i64>,
    ) -> ShellResult<()>;
    /// Deletes a whole row, up to `ts` when given.
    fn delete_row(&mut self, table: &str, row: &[u8], ts: Option<i64>) -> ShellResult<()>;
    /// Adds `delta` to a counter and returns the new value.
    fn increment(&mut self, table: &str, row: &[u8], column: &[u8], delta: i64)
        -> ShellResult<i64>;
    /// Appends to a cell and returns the new value.
    fn append(
        &mut self,
        table: &str,
        row: &[u8],
        column: &[u8],
        value: &[u8],
    ) -> ShellResult<Bytes>;
    /// Reads rows in order, handing each to `on_row` until it returns false.
    /// `cache` is the rows fetched per round trip.
    fn read(
        &mut self,
        table: &str,
        spec: &ReadSpec,
        cache: usize,
        on_row: &mut dyn FnMut(RowReply) -> bool,
    ) -> ShellResult<()>;
    /// Where the backend is, for the banner and `status`.
    fn describe_location(&self) -> String;
    /// The principal Kerberos proved this shell to be, when it
    /// authenticated so (`whoami`).
    fn kerberos_principal(&self) -> Option<String> {
        None
    }
    /// Called after a command failed with `error`, so the backend can
    /// recover (a remote one reconnects after a broken connection).
    fn after_error(&mut self, error: &ShellError) {
        let _ = error;
    }
}

/// A data directory opened in this process.
#[derive(Debug)]
pub struct EmbeddedBackend {
    db: Database,
}

impl EmbeddedBackend {
    /// Opens the data directory (fails when a server holds it).
    pub fn open(dir: &std::path::Path) -> ShellResult<Self> {
        let db = Database::open(dir).map_err(|e| match e.kind() {
            ErrorKind::Locked => ShellError::Other(format!(
                "{e}: a server holds it; connect to that server with --host/--port instead"
            )),
            _ => e.into(),
        })?;
        Ok(EmbeddedBackend { db })
    }

    /// Closes the database cleanly (flushes, syncs the log).
    pub fn close(&self) -> ShellResult<()> {
        Ok(self.db.close()?)
    }
}

impl Drop for EmbeddedBackend {
    fn drop(&mut self) {
        if let Err(e) = self.db.close() {
            eprintln!("warning: closing the database failed: {e}");
        }
    }
}

impl Backend for EmbeddedBackend {
    fn admin(&mut self, request: AdminRequest) -> ShellResult<AdminReply> {
        Ok(self.db.execute(request)?)
    }

    fn list_tables(&mut self) -> ShellResult<Vec<String>> {
        Ok(self.db.list_tables())
    }

    fn exists(&mut self, table: &str) -> ShellResult<bool> {
        Ok(self.db.table_exists(table))
    }

    fn is_enabled(&mut self, table: &str) -> ShellResult<bool> {
        Ok(self.db.is_table_enabled(table)?)
    }

    fn set_enabled(&mut self, table: &str, enabled: bool) -> ShellResult<()> {
        if enabled {
            self.db.enable_table(table)?;
        } else {
            self.db.disable_table(table)?;
        }
        Ok(())
    }

    fn drop_table(&mut self, table: &str) -> ShellResult<()> {
        Ok(self.db.drop_table(table)?)
    }

    fn put(
        &mut self,
        table: &str,
        row: &[u8],
        column: &[u8],
        value: &[u8],
        ts: Option<i64>,
    ) -> ShellResult<()> {
        let (family, qualifier) = Column::parse(column).family_qualifier();
        let value = Bytes::copy_from_slice(value);
        let put = match ts {
            Some(ts) => Put::new(Bytes::copy_from_slice(row)).add_at(family, qualifier, ts, value),
            None => Put::new(Bytes::copy_from_slice(row)).add(family, qualifier, value),
        };
        Ok(self.db.table(table)?.put(&put)?)
    }

    fn delete_column(
        &mut self,
        table: &str,
        row: &[u8],
        column: &[u8],
        ts: Option<i64>,
    ) -> ShellResult<()> {
        let ts = ts.unwrap_or(basalt::LATEST_TIMESTAMP);
        let d = Delete::new(Bytes::copy_from_slice(row));
        let d = match Column::parse(column) {
            Column::Family(f) => d.family_at(f, ts),
            Column::Qualified(f, q) => d.columns_at(f, q, ts),
        };
        Ok(self.db.table(table)?.delete(&d)?)
    }

    fn delete_row(&mut self, table: &str, row: &[u8], ts: Option<i64>) -> ShellResult<()> {
        let d = Delete::with_timestamp(
            Bytes::copy_from_slice(row),
            ts.unwrap_or(basalt::LATEST_TIMESTAMP),
        );
        Ok(self.db.table(table)?.delete(&d)?)
    }

    fn increment(
        &mut self,
        table: &str,
        row: &[u8],
        column: &[u8],
        delta: i64,
    ) -> ShellResult<i64> {
        let (family, qualifier) = Column::parse(column).family_qualifier();
        Ok(self.db.table(table)?.increment_column(
            Bytes::copy_from_slice(row),
            family,
            qualifier,
            delta,
        )?)
    }

    fn append(
        &mut self,
        table: &str,
        row: &[u8],
        column: &[u8],
        value: &[u8],
    ) -> ShellResult<Bytes> {
        let (family, qualifier) = Column::parse(column).family_qualifier();
        let a = basalt::Append::new(Bytes::copy_from_slice(row)).add(
            family.clone(),
            qualifier.clone(),
            Bytes::copy_from_slice(value),
        );
        let result = self.db.table(table)?.append(&a)?;
        Ok(result
            .value(&family, &qualifier)
            .cloned()
            .unwrap_or_default())
    }

    fn read(
        &mut self,
        table: &str,
        spec: &ReadSpec,
        _cache: usize,
        on_row: &mut dyn FnMut(RowReply) -> bool,
    ) -> ShellResult<()> {
        let scan = spec.to_scan()?;
        if let Some(index) = &spec.index {
            for row in self.db.scan_index(table, index, &scan)? {
                if !on_row(RowReply::from(&row?)) {
                    break;
                }
            }
            return Ok(());
        }
        let t = self.db.table(table)?;
        for row in t.scan(&scan)? {
            if !on_row(RowReply::from(&row?)) {
                break;
            }
        }
        Ok(())
    }

    fn describe_location(&self) -> String {
        format!("data directory {}", self.db.path().display())
    }
}

/// A running `basalt serve` (or any server with Basalt's admin extension),
/// over Thrift1's buffered transport and binary protocol.
#[derive(Debug)]
pub struct RemoteBackend {
    client: Client,
    address: String,
    /// How the shell authenticates, with Kerberos, and as whom.
    kerberos: Option<(tc::KerberosClient, String)>,
}

impl RemoteBackend {
    /// Connects to `host:port`.
    pub fn connect(host: &str, port: u16) -> ShellResult<Self> {
        RemoteBackend::connect_as(host, port, None)
    }

    /// Connects to `host:port`, authenticated by Kerberos (Thrift's SASL
    /// GSSAPI) when `kerberos` is set: as its client principal, or the
    /// ticket cache's (`kinit`).
    pub fn connect_as(
        host: &str,
        port: u16,
        kerberos: Option<tc::KerberosClient>,
    ) -> ShellResult<Self> {
        let address = format!("{host}:{port}");
        let kerberos = match kerberos {
            None => None,
            Some(settings) => {
                let principal =
                    basalt_kerberos::Initiator::new(settings.client_principal.as_deref())
                        .and_then(|initiator| initiator.principal())
                        .map_err(|e| ShellError::Other(format!("Kerberos: {e} (kinit first)")))?;
                Some((settings, principal))
            }
        };
        let client = RemoteBackend::open(&address, kerberos.as_ref().map(|(k, _)| k))?;
        Ok(RemoteBackend {
            client,
            address,
            kerberos,
        })
    }

    fn open(address: &str, kerberos: Option<&tc::KerberosClient>) -> ShellResult<Client> {
        let protocol = Protocol::Binary { strict: true };
        match kerberos {
            None => Client::connect(address, false, protocol),
            Some(kerberos) => Client::connect_kerberos(address, false, protocol, kerberos),
        }
        .map_err(|e| {
            ShellError::Other(format!(
                "cannot connect to a Basalt server at {address}: {e}"
            ))
        })
    }

    /// Whether Thrift1's `scannerOpenWithScan` can express the read
    /// (its `TScan` has no versions, no lower time bound and no raw mode).
    fn thrift_can_read(spec: &ReadSpec) -> bool {
        !spec.raw
            && spec.versions.unwrap_or(1) == 1
            && spec.time_range.is_none_or(|(min, _)| min <= 0)
            && spec.after_row.is_none()
            && !(spec.reversed && spec.prefix.is_some())
            && spec.index.is_none()
    }
}

impl Backend for RemoteBackend {
    fn admin(&mut self, request: AdminRequest) -> ShellResult<AdminReply> {
        Ok(self.client.admin(request)?)
    }

    fn list_tables(&mut self) -> ShellResult<Vec<String>> {
        let mut names: Vec<String> = self
            .client
            .get_table_names()?
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    fn exists(&mut self, table: &str) -> ShellResult<bool> {
        Ok(self.list_tables()?.iter().any(|t| t == table))
    }

    fn is_enabled(&mut self, table: &str) -> ShellResult<bool> {
        Ok(self.client.is_table_enabled(table.as_bytes())?)
    }

    fn set_enabled(&mut self, table: &str, enabled: bool) -> ShellResult<()> {
        if enabled {
            self.client.enable_table(table.as_bytes())?;
        } else {
            self.client.disable_table(table.as_bytes())?;
        }
        Ok(())
    }

    fn drop_table(&mut self, table: &str) -> ShellResult<()> {
        Ok(self.client.delete_table(table.as_bytes())?)
    }

    fn put(
        &mut self,
        table: &str,
        row: &[u8],
        column: &[u8],
        value: &[u8],
        ts: Option<i64>,
    ) -> ShellResult<()> {
        // Thrift1 skips a put of a bare family; the shell means the empty
        // qualifier.
        let mut column = column.to_vec();
        if !column.contains(&b':') {
            column.push(b':');
        }
        let m = vec![tc::put(&column, value)];
        match ts {
            Some(ts) => self.client.mutate_row_ts(table.as_bytes(), row, m, ts)?,
            None => self.client.mutate_row(table.as_bytes(), row, m)?,
        }
        Ok(())
    }

    fn delete_column(
        &mut self,
        table: &str,
        row: &[u8],
        column: &[u8],
        ts: Option<i64>,
    ) -> ShellResult<()> {
        match ts {
            Some(ts) => self
                .client
                .delete_all_ts(table.as_bytes(), row, column, ts)?,
            None => self.client.delete_all(table.as_bytes(), row, column)?,
        }
        Ok(())
    }

    fn delete_row(&mut self, table: &str, row: &[u8], ts: Option<i64>) -> ShellResult<()> {
        match ts {
            Some(ts) => self.client.delete_all_row_ts(table.as_bytes(), row, ts)?,
            None => self.client.delete_all_row(table.as_bytes(), row)?,
        }
        Ok(())
    }

    fn increment(
        &mut self,
        table: &str,
        row: &[u8],
        column: &[u8],
        delta: i64,
    ) -> ShellResult<i64> {
        let mut column = column.to_vec();
        if !column.contains(&b':') {
            column.push(b':');
        }
        Ok(self
            .client
            .atomic_increment(table.as_bytes(), row, &column, delta)?)
    }

    fn append(
        &mut self,
        table: &str,
        row: &[u8],
        column: &[u8],
        value: &[u8],
    ) -> ShellResult<Bytes> {
        let mut column = column.to_vec();
        if !column.contains(&b':') {
            column.push(b':');
        }
        let cells = self.client.append(TAppend {
            table: Some(Bytes::copy_from_slice(table.as_bytes())),
            row: Some(Bytes::copy_from_slice(row)),
            columns: Some(vec![Bytes::from(column)]),
            values: Some(vec![Bytes::copy_from_slice(value)]),
        })?;
        Ok(cells
            .into_iter()
            .next()
            .and_then(|c| c.value)
            .unwrap_or_default())
    }

    fn read(
        &mut self,
        table: &str,
        spec: &ReadSpec,
        cache: usize,
        on_row: &mut dyn FnMut(RowReply) -> bool,
    ) -> ShellResult<()> {
        let mut remaining = spec.limit.unwrap_or(usize::MAX);
        if remaining == 0 {
            return Ok(());
        }
        if !Self::thrift_can_read(spec) {
            let mut page = spec.clone();
            loop {
                let AdminReply::Rows { rows, more, next } =
                    self.client.admin(AdminRequest::Read {
                        table: table.to_string(),
                        read: page.clone(),
                    })?
                else {
                    return Err(ShellError::Other("unexpected admin reply to read".into()));
                };
                let last = rows.last().map(|r| r.row.clone());
                for row in rows {
                    if !on_row(row) {
                        return Ok(());
                    }
                    remaining -= 1;
                    if remaining == 0 {
                        return Ok(());
                    }
                }
                match (more, next.or(last)) {
                    (true, Some(last)) => {
                        page.after_row = Some(last);
                        page.limit = spec.limit.map(|_| remaining);
                    }
                    _ => return Ok(()),
                }
            }
        }
        let (mut start, mut stop) = (spec.start_row.clone(), spec.stop_row.clone());
        if let Some(prefix) = &spec.prefix {
            start = prefix.clone();
            stop = prefix_successor(prefix);
        }
        let scan = TScan {
            start_row: Some(start),
            stop_row: Some(stop),
            timestamp: spec.time_range.map(|(_, max)| max),
            columns: (!spec.columns.is_empty()).then(|| spec.columns.clone()),
            caching: Some(i32::try_from(cache).unwrap_or(i32::MAX)),
            filter_string: spec
                .filter
                .as_ref()
                .map(|f| Bytes::copy_from_slice(f.as_bytes())),
            batch_size: None,
            sort_columns: Some(true),
            reversed: Some(spec.reversed),
            cache_blocks: None,
        };
        let id = self.client.scanner_open_with_scan(table.as_bytes(), scan)?;
        let page = i32::try_from(cache.max(1)).unwrap_or(i32::MAX);
        let outcome = (|| -> ShellResult<()> {
            loop {
                let rows = self.client.scanner_get_list(id, page)?;
                if rows.is_empty() {
                    return Ok(());
                }
                for r in rows {
                    let cells = r
                        .sorted_columns
                        .unwrap_or_default()
                        .into_iter()
                        .map(|c| {
                            let name = c.column_name.unwrap_or_default();
                            let (family, qualifier) =
                                basalt::column::parse_column(&name).family_qualifier();
                            let cell = c.cell.unwrap_or_default();
                            CellReply {
                                family,
                                qualifier,
                                timestamp: cell.timestamp.unwrap_or_default(),
                                cell_type: "Put".to_string(),
                                value: cell.value.unwrap_or_default(),
                            }
                        })
                        .collect();
                    let row = RowReply {
                        row: r.row.unwrap_or_default(),
                        cells,
                    };
                    if !on_row(row) {
                        return Ok(());
                    }
                    remaining -= 1;
                    if remaining == 0 {
                        return Ok(());
                    }
                }
            }
        })();
        let closed = self.client.scanner_close(id);
        outcome?;
        closed?;
        Ok(())
    }

    fn describe_location(&self) -> String {
        format!("server {}", self.address)
    }

    fn kerberos_principal(&self) -> Option<String> {
        self.kerberos
            .as_ref()
            .map(|(_, principal)| principal.clone())
    }

    fn after_error(&mut self, error: &ShellError) {
        if matches!(error, ShellError::Disconnected(_)) {
            // A server that is back gets a fresh connection; one that is
            // still down fails the next command the same way.
            if let Ok(client) =
                RemoteBackend::open(&self.address, self.kerberos.as_ref().map(|(k, _)| k))
            {
                self.client = client;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_exceptions_map_to_shell_errors() {
        let io = |m: &str| ShellError::from(ClientError::Io(m.to_string()));
        assert_eq!(
            io("org.apache.hadoop.hbase.TableNotFoundException: t1"),
            ShellError::UnknownTable("t1".into())
        );
        assert_eq!(
            io("org.apache.hadoop.hbase.TableNotEnabledException: t1 is disabled"),
            ShellError::TableDisabled("t1".into())
        );
        assert_eq!(
            io("org.apache.hadoop.hbase.TableNotDisabledException: t1 is enabled"),
            ShellError::TableEnabled("t1".into())
        );
        assert_eq!(
            io(
                "org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException: \
                Column family x does not exist in table t1"
            ),
            ShellError::UnknownFamily {
                table: Some("t1".into()),
                family: "x".into()
            }
        );
        assert_eq!(
            io("java.lang.IllegalArgumentException: bad: thing"),
            ShellError::Other("bad: thing".into())
        );
        assert_eq!(
            io("no class here: just text"),
            ShellError::Other("no class here: just text".into())
        );
        assert_eq!(
            ShellError::from(ClientError::AlreadyExists(
                "table name already in use: t1".into()
            )),
            ShellError::TableExists("t1".into())
        );
    }

    #[test]
    fn engine_errors_map_like_gateway_errors() {
        assert_eq!(
            ShellError::from(Error::TableNotFound("t".into())),
            ShellError::UnknownTable("t".into())
        );
        assert_eq!(
            ShellError::from(Error::invalid("x")),
            ShellError::Other("x".into())
        );
    }

    #[test]
    fn only_plain_reads_go_through_thrift1() {
        assert!(RemoteBackend::thrift_can_read(&ReadSpec::default()));
        let before = ReadSpec {
            time_range: Some((0, 10)),
            ..ReadSpec::default()
        };
        assert!(RemoteBackend::thrift_can_read(&before));
        for spec in [
            ReadSpec {
                versions: Some(2),
                ..ReadSpec::default()
            },
            ReadSpec {
                time_range: Some((5, 10)),
                ..ReadSpec::default()
            },
            ReadSpec {
                raw: true,
                ..ReadSpec::default()
            },
            ReadSpec {
                reversed: true,
                prefix: Some(Bytes::from_static(b"p")),
                ..ReadSpec::default()
            },
        ] {
            assert!(!RemoteBackend::thrift_can_read(&spec), "{spec:?}");
        }
        assert_eq!(prefix_successor(b"a\xff"), Bytes::from_static(b"b"));
        assert!(prefix_successor(b"\xff\xff").is_empty());
    }
}
