//! `basalt-bench-peers`: the YCSB workloads of basalt-bench against the
//! peers, outside the default workspace so `cargo test` never builds them.
//! fjall is a crates.io dependency; RocksDB is the system's librocksdb (the
//! same 7.8 build as Debian's db_bench) through its C API.

mod rocks;

use std::path::Path;
use std::process::ExitCode;

use basalt_bench::cli::{run_ycsb, YcsbArgs};
use basalt_bench::workload::TABLE;
use basalt_bench::ycsb::{record, YcsbSession, YcsbStore};
use basalt_bench::{BenchError, BenchResult};
use clap::{Parser, Subcommand};
use fjall::{Database, Keyspace, KeyspaceCreateOptions, PersistMode};

#[derive(Debug, Parser)]
#[command(
    name = "basalt-bench-peers",
    about = "YCSB workloads against Basalt's peers"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Debug, Subcommand)]
enum Cmd {
    /// YCSB core workloads (`--target fjall` or `--target rocksdb`).
    Ycsb {
        #[command(flatten)]
        args: YcsbArgs,
        /// Leave journal writes in fjall's user-space buffer instead of
        /// handing each one to the OS (weaker than Basalt's SYNC_WAL).
        #[arg(long)]
        no_persist: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Cmd::Ycsb { args, no_persist } => match args.target.as_str() {
            "fjall" => Fjall::open(&args.db, args.cache_bytes, !no_persist)
                .and_then(|store| run_ycsb(&args, &store).map(|_| ())),
            "rocksdb" => rocks::Rocks::open(&args.db, args.cache_bytes).and_then(|db| {
                run_ycsb(&args, &rocks::RocksStore(std::sync::Arc::new(db))).map(|_| ())
            }),
            other => Err(BenchError::new(format!(
                "unknown target '{other}' (this binary runs: fjall, rocksdb)"
            ))),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("basalt-bench-peers: {e}");
            ExitCode::FAILURE
        }
    }
}

fn fjall_err(e: fjall::Error) -> BenchError {
    BenchError::new(format!("fjall: {e}"))
}

/// fjall (3.x) with the YCSB records: one keyspace (fjall 3's name for
/// what 2.x called a partition), one value per record.
struct Fjall {
    db: Database,
    keyspace: Keyspace,
    persist: bool,
}

impl Fjall {
    fn open(dir: &Path, cache_bytes: Option<usize>, persist: bool) -> BenchResult<Self> {
        let mut builder = Database::builder(dir);
        if let Some(bytes) = cache_bytes {
            builder = builder.cache_size(bytes as u64);
        }
        let db = builder.open().map_err(fjall_err)?;
        let keyspace = db
            .keyspace(TABLE, KeyspaceCreateOptions::default)
            .map_err(fjall_err)?;
        Ok(Fjall {
            db,
            keyspace,
            persist,
        })
    }
}

impl YcsbStore for Fjall {
    fn name(&self) -> String {
        "fjall".into()
    }

    fn prepare(&self) -> BenchResult<()> {
        Ok(())
    }

    fn session(&self) -> BenchResult<Box<dyn YcsbSession>> {
        Ok(Box::new(FjallSession {
            db: self.db.clone(),
            keyspace: self.keyspace.clone(),
            persist: self.persist,
        }))
    }

    fn finish(&self) -> BenchResult<()> {
        self.db.persist(PersistMode::SyncAll).map_err(fjall_err)
    }
}

struct FjallSession {
    db: Database,
    keyspace: Keyspace,
    persist: bool,
}

impl FjallSession {
    fn write(&self, key: &[u8], value: Vec<u8>) -> BenchResult<()> {
        self.keyspace.insert(key, value).map_err(fjall_err)?;
        if self.persist {
            self.db.persist(PersistMode::Buffer).map_err(fjall_err)?;
        }
        Ok(())
    }
}

impl YcsbSession for FjallSession {
    fn insert(&mut self, key: &[u8], fields: &[(&str, &[u8])]) -> BenchResult<()> {
        self.write(key, record::encode(fields))
    }

    fn read(&mut self, key: &[u8]) -> BenchResult<usize> {
        match self.keyspace.get(key).map_err(fjall_err)? {
            Some(v) => Ok(record::decode(&v)?.len()),
            None => Ok(0),
        }
    }

    fn update(&mut self, key: &[u8], fields: &[(&str, &[u8])]) -> BenchResult<()> {
        // One value per record: an update merges into the stored record, as
        // YCSB's RocksDB binding does.
        let merged = match self.keyspace.get(key).map_err(fjall_err)? {
            Some(v) => record::merge(&v, fields)?,
            None => record::encode(fields),
        };
        self.write(key, merged)
    }

    fn scan(&mut self, start: &[u8], count: usize) -> BenchResult<usize> {
        let mut rows = 0;
        for item in self.keyspace.range(start..).take(count) {
            let v = item.value().map_err(fjall_err)?;
            record::decode(&v)?;
            rows += 1;
        }
        Ok(rows)
    }
}
