//! Basalt as a YCSB store: embedded in this process, or over the network
//! through the Thrift1 gateway of `basalt serve`.

use std::path::PathBuf;
use std::time::Duration;

use basalt::{ColumnFamilyDescriptor, Database, Get, Options, Put, Scan, Table, TableDescriptor};
use basalt_thrift::client::{self, Client};
use basalt_thrift::types::TScan;
use basalt_thrift::Protocol;
use bytes::Bytes;

use crate::timeline::BackgroundSample;
use crate::workload::{FAMILY, TABLE};
use crate::ycsb::{YcsbSession, YcsbStore};
use crate::{BenchError, BenchResult};

/// The family descriptor of benchmark tables: one version kept, as a table
/// created in the HBase shell for YCSB has (RocksDB and fjall keep one).
pub fn bench_family(name: &str) -> ColumnFamilyDescriptor {
    ColumnFamilyDescriptor::new(name).max_versions(1)
}

/// Basalt embedded: the database opened in this process.
#[derive(Debug)]
pub struct BasaltEmbedded {
    db: Database,
    block_size: Option<u32>,
}

impl BasaltEmbedded {
    /// Opens the database at `dir` with a block cache of `cache_bytes`; the
    /// table it creates has data blocks of `block_size` (default: HBase's).
    pub fn open(
        dir: PathBuf,
        cache_bytes: Option<usize>,
        block_size: Option<u32>,
    ) -> BenchResult<Self> {
        Self::open_with_compaction_nice(dir, cache_bytes, block_size, None)
    }

    /// [`BasaltEmbedded::open`] with the database's `compaction_nice`
    /// (`None`: its default).
    pub fn open_with_compaction_nice(
        dir: PathBuf,
        cache_bytes: Option<usize>,
        block_size: Option<u32>,
        compaction_nice: Option<i32>,
    ) -> BenchResult<Self> {
        let mut options = Options::new(&dir);
        if let Some(bytes) = cache_bytes {
            options.block_cache_bytes = bytes;
        }
        if let Some(nice) = compaction_nice {
            options.compaction_nice = nice;
        }
        let db = Database::open_with(options)
            .map_err(|e| BenchError::new(format!("cannot open {}: {e}", dir.display())))?;
        Ok(BasaltEmbedded { db, block_size })
    }

    /// The database.
    pub fn database(&self) -> &Database {
        &self.db
    }
}

impl YcsbStore for BasaltEmbedded {
    fn name(&self) -> String {
        "basalt".into()
    }

    fn prepare(&self) -> BenchResult<()> {
        if !self.db.table_exists(TABLE) {
            let mut family = bench_family(FAMILY);
            if let Some(bytes) = self.block_size {
                family = family.block_size(bytes);
            }
            self.db
                .create_table(TableDescriptor::new(TABLE).family(family))?;
        }
        Ok(())
    }

    fn session(&self) -> BenchResult<Box<dyn YcsbSession>> {
        Ok(Box::new(EmbeddedSession {
            table: self.db.table(TABLE)?,
            family: Bytes::from_static(FAMILY.as_bytes()),
        }))
    }

    fn finish(&self) -> BenchResult<()> {
        Ok(self.db.close()?)
    }

    fn background(&self) -> Option<BackgroundSample> {
        let m = self.db.server_metrics();
        Some(BackgroundSample {
            queued_flushes: m.flush_queue_length as u64,
            queued_compactions: m.compaction_queue_length as u64,
            running_flushes: m.flushes_running as u64,
            running_compactions: m.compactions_running as u64,
            flushes_completed: m.flushes_completed,
            compactions_completed: m.compactions_completed,
        })
    }
}

struct EmbeddedSession {
    table: Table,
    family: Bytes,
}

impl EmbeddedSession {
    fn put(&self, key: &[u8], fields: &[(&str, &[u8])]) -> BenchResult<()> {
        let mut put = Put::new(Bytes::copy_from_slice(key));
        for (name, value) in fields {
            put = put.add(
                self.family.clone(),
                Bytes::copy_from_slice(name.as_bytes()),
                Bytes::copy_from_slice(value),
            );
        }
        Ok(self.table.put(&put)?)
    }
}

impl YcsbSession for EmbeddedSession {
    fn insert(&mut self, key: &[u8], fields: &[(&str, &[u8])]) -> BenchResult<()> {
        self.put(key, fields)
    }

    fn read(&mut self, key: &[u8]) -> BenchResult<usize> {
        let row = self
            .table
            .get(&Get::new(Bytes::copy_from_slice(key)).family(self.family.clone()))?;
        Ok(row.cells.len())
    }

    fn update(&mut self, key: &[u8], fields: &[(&str, &[u8])]) -> BenchResult<()> {
        self.put(key, fields)
    }

    fn scan(&mut self, start: &[u8], count: usize) -> BenchResult<usize> {
        let scan = Scan::new()
            .start_row(Bytes::copy_from_slice(start))
            .family(self.family.clone())
            .limit(count)
            .caching(count);
        let mut rows = 0;
        for row in self.table.scan(&scan)? {
            row?;
            rows += 1;
        }
        Ok(rows)
    }
}

/// Basalt over the network: one Thrift1 connection (binary protocol,
/// buffered transport, as happybase uses by default) per client thread,
/// to one gateway or, for a cluster, to its gateways in turn.
#[derive(Debug)]
pub struct BasaltNetwork {
    addrs: Vec<String>,
    /// The next session's gateway.
    next: std::sync::atomic::AtomicUsize,
}

impl BasaltNetwork {
    /// A target for the gateway at `host:port`.
    pub fn new(host: &str, port: u16) -> Self {
        BasaltNetwork {
            addrs: vec![format!("{host}:{port}")],
            next: std::sync::atomic::AtomicUsize::new(0),
        }
    }

    /// A target whose sessions connect to `addrs` (`host:port`) in turn.
    pub fn spread(addrs: Vec<String>) -> BenchResult<Self> {
        if addrs.is_empty() {
            return Err(BenchError::new("--gateways lists no gateway"));
        }
        Ok(BasaltNetwork {
            addrs,
            next: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    fn connect(&self) -> BenchResult<Client> {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let addr = &self.addrs[i % self.addrs.len()];
        let c = Client::connect(addr, false, Protocol::Binary { strict: true })
            .map_err(|e| BenchError::new(format!("cannot connect to {addr}: {e}")))?;
        // A hang guard: a stuck server fails the run instead of hanging it.
        c.set_timeout(Some(Duration::from_secs(60)))
            .map_err(|e| BenchError::new(format!("socket timeout: {e}")))?;
        Ok(c)
    }
}

impl YcsbStore for BasaltNetwork {
    fn name(&self) -> String {
        "basalt-net".into()
    }

    fn prepare(&self) -> BenchResult<()> {
        let mut c = self.connect()?;
        let tables = c.get_table_names()?;
        if !tables.iter().any(|t| t.as_ref() == TABLE.as_bytes()) {
            // Thrift's ColumnDescriptor defaults turn the block cache and
            // bloom filters off; YCSB tables are created with HBase's shell
            // defaults (block cache on, ROW bloom), like the embedded table.
            let mut family = client::family(FAMILY);
            family.max_versions = Some(1);
            family.block_cache_enabled = Some(true);
            family.bloom_filter_type = Some("ROW".into());
            c.create_table(TABLE.as_bytes(), vec![family])?;
        }
        Ok(())
    }

    fn session(&self) -> BenchResult<Box<dyn YcsbSession>> {
        Ok(Box::new(NetworkSession {
            client: self.connect()?,
            family_colon: format!("{FAMILY}:").into_bytes(),
            column: Vec::new(),
        }))
    }

    fn finish(&self) -> BenchResult<()> {
        Ok(())
    }
}

struct NetworkSession {
    client: Client,
    family_colon: Vec<u8>,
    column: Vec<u8>,
}

impl NetworkSession {
    fn mutate(&mut self, key: &[u8], fields: &[(&str, &[u8])]) -> BenchResult<()> {
        let mutations = fields
            .iter()
            .map(|(name, value)| {
                self.column.clear();
                self.column.extend_from_slice(&self.family_colon);
                self.column.extend_from_slice(name.as_bytes());
                client::put(&self.column, value)
            })
            .collect();
        Ok(self.client.mutate_row(TABLE.as_bytes(), key, mutations)?)
    }
}

impl YcsbSession for NetworkSession {
    fn insert(&mut self, key: &[u8], fields: &[(&str, &[u8])]) -> BenchResult<()> {
        self.mutate(key, fields)
    }

    fn read(&mut self, key: &[u8]) -> BenchResult<usize> {
        let rows = self.client.get_row(TABLE.as_bytes(), key)?;
        Ok(rows
            .first()
            .and_then(|r| r.columns.as_ref())
            .map_or(0, |c| c.len()))
    }

    fn update(&mut self, key: &[u8], fields: &[(&str, &[u8])]) -> BenchResult<()> {
        self.mutate(key, fields)
    }

    fn scan(&mut self, start: &[u8], count: usize) -> BenchResult<usize> {
        let rows = i32::try_from(count).unwrap_or(i32::MAX);
        let scan = TScan {
            start_row: Some(Bytes::copy_from_slice(start)),
            columns: Some(vec![Bytes::copy_from_slice(&self.family_colon)]),
            caching: Some(rows),
            ..TScan::default()
        };
        let id = self.client.scanner_open_with_scan(TABLE.as_bytes(), scan)?;
        let got = self.client.scanner_get_list(id, rows);
        // Close even when the read failed, so the server frees the scanner.
        let closed = self.client.scanner_close(id);
        let got = got?;
        closed?;
        Ok(got.len())
    }
}

impl From<basalt::Error> for BenchError {
    fn from(e: basalt::Error) -> Self {
        BenchError::new(e.to_string())
    }
}

impl From<basalt_thrift::ClientError> for BenchError {
    fn from(e: basalt_thrift::ClientError) -> Self {
        BenchError::new(e.to_string())
    }
}

/// The table of the db_bench-compatible benchmarks.
pub const DB_BENCH_TABLE: &str = "dbbench";
const DB_BENCH_FAMILY: &str = "f";
const DB_BENCH_QUALIFIER: &str = "v";

/// Basalt embedded as a key-value store for the db_bench workloads: one
/// row per key, the value in one cell.
#[derive(Debug)]
pub struct BasaltKv {
    db: Database,
    table: Table,
    compression: basalt::Compression,
    block_size: u32,
    family: Bytes,
    qualifier: Bytes,
    durability: basalt::Durability,
}

impl BasaltKv {
    /// Opens (creating the table if needed) the database at `dir`.
    /// `disable_wal` writes without the log (db_bench's `--disable_wal`).
    pub fn open(
        dir: PathBuf,
        cache_bytes: Option<usize>,
        compression: basalt::Compression,
        block_size: u32,
        disable_wal: bool,
    ) -> BenchResult<Self> {
        let mut options = Options::new(&dir);
        if let Some(bytes) = cache_bytes {
            options.block_cache_bytes = bytes;
        }
        let db = Database::open_with(options)
            .map_err(|e| BenchError::new(format!("cannot open {}: {e}", dir.display())))?;
        let table = Self::ensure_table(&db, compression, block_size)?;
        Ok(BasaltKv {
            db,
            table,
            compression,
            block_size,
            family: Bytes::from_static(DB_BENCH_FAMILY.as_bytes()),
            qualifier: Bytes::from_static(DB_BENCH_QUALIFIER.as_bytes()),
            durability: if disable_wal {
                basalt::Durability::SkipWal
            } else {
                basalt::Durability::SyncWal
            },
        })
    }

    fn ensure_table(
        db: &Database,
        compression: basalt::Compression,
        block_size: u32,
    ) -> BenchResult<Table> {
        if !db.table_exists(DB_BENCH_TABLE) {
            let family = bench_family(DB_BENCH_FAMILY)
                .compression(compression)
                .block_size(block_size);
            db.create_table(TableDescriptor::new(DB_BENCH_TABLE).family(family))?;
        }
        Ok(db.table(DB_BENCH_TABLE)?)
    }

    /// Closes the database (syncs the log).
    pub fn close(&self) -> BenchResult<()> {
        Ok(self.db.close()?)
    }
}

impl crate::dbbench::KvStore for BasaltKv {
    fn reset(&mut self) -> BenchResult<()> {
        if self.db.table_exists(DB_BENCH_TABLE) {
            self.db.disable_table(DB_BENCH_TABLE)?;
            self.db.drop_table(DB_BENCH_TABLE)?;
        }
        self.table = Self::ensure_table(&self.db, self.compression, self.block_size)?;
        Ok(())
    }

    fn put(&self, key: &[u8], value: &[u8], sync: bool) -> BenchResult<()> {
        let durability = if sync {
            basalt::Durability::FsyncWal
        } else {
            self.durability
        };
        let put = Put::new(Bytes::copy_from_slice(key))
            .add(
                self.family.clone(),
                self.qualifier.clone(),
                Bytes::copy_from_slice(value),
            )
            .durability(durability);
        Ok(self.table.put(&put)?)
    }

    fn get(&self, key: &[u8]) -> BenchResult<Option<usize>> {
        let row = self.table.get(&Get::new(Bytes::copy_from_slice(key)))?;
        Ok(row.cells.first().map(|c| c.value.len()))
    }

    fn seek(&self, key: &[u8], nexts: usize) -> BenchResult<(bool, u64)> {
        // The seek plus `nexts` steps visit nexts + 1 entries.
        let scan = Scan::new()
            .start_row(Bytes::copy_from_slice(key))
            .limit(nexts + 1)
            .caching(nexts + 1);
        let mut hit = false;
        let mut bytes = 0u64;
        for (i, row) in self.table.scan(&scan)?.enumerate() {
            let row = row?;
            if i == 0 {
                hit = row.row.as_ref() == key;
            }
            bytes += (row.row.len() + row.cells.first().map_or(0, |c| c.value.len())) as u64;
        }
        Ok((hit, bytes))
    }

    fn read_seq(&self, limit: u64) -> BenchResult<(u64, u64)> {
        let mut entries = 0u64;
        let mut bytes = 0u64;
        for row in self.table.scan(&Scan::new().caching(1000))? {
            if entries >= limit {
                break;
            }
            let row = row?;
            entries += 1;
            bytes += (row.row.len() + row.cells.first().map_or(0, |c| c.value.len())) as u64;
        }
        Ok((entries, bytes))
    }
}
