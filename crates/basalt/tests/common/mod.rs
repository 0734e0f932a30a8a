//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use basalt::{ColumnFamilyDescriptor, Database, ManualClock, Options, RowResult, TableDescriptor};

/// A database in a temporary directory with a manual clock at t = 1_000_000.
pub struct TestDb {
    pub dir: tempfile::TempDir,
    pub clock: ManualClock,
    pub db: Database,
}

impl TestDb {
    pub fn new() -> TestDb {
        let dir = tempfile::tempdir().unwrap();
        let clock = ManualClock::new(1_000_000);
        let db = open(dir.path(), &clock);
        TestDb { dir, clock, db }
    }

    /// Opens the database in an existing directory.
    pub fn open_at(dir: tempfile::TempDir, clock: ManualClock) -> TestDb {
        let db = open(dir.path(), &clock);
        TestDb { dir, clock, db }
    }

    /// Drops the database without `close()`: memstores are not flushed, as
    /// after a crash (the WAL's own buffers still reach the OS).
    pub fn crash(self) -> (tempfile::TempDir, ManualClock) {
        drop(self.db);
        (self.dir, self.clock)
    }

    /// Closes and reopens the database from its directory (WAL replay).
    pub fn reopen(&mut self) {
        self.db.close().unwrap();
        self.db = open(self.dir.path(), &self.clock);
    }

    /// Creates table `name` with the given families.
    pub fn table(&self, name: &str, families: Vec<ColumnFamilyDescriptor>) -> basalt::Table {
        let mut desc = TableDescriptor::new(name);
        for f in families {
            desc = desc.family(f);
        }
        self.db.create_table(desc).unwrap();
        self.db.table(name).unwrap()
    }
}

/// Opens the database in `dir` with default options and `clock`.
pub fn open(dir: &std::path::Path, clock: &ManualClock) -> Database {
    Database::builder(Options::new(dir))
        .clock(Arc::new(clock.clone()))
        .open()
        .unwrap()
}

/// The newest committed catalog of the data set at `root` (its checkpoint
/// with the deltas after it applied), as JSON text (empty when none was
/// written yet).
pub fn catalog_text(root: &std::path::Path) -> String {
    basalt::catalog_document(&basalt::fs::LocalFileStore::new(), root)
        .unwrap()
        .map(|bytes| String::from_utf8(bytes).unwrap())
        .unwrap_or_default()
}

/// `family:qualifier=value@ts` strings of a result, for compact assertions.
pub fn cells(result: &RowResult) -> Vec<String> {
    result
        .cells
        .iter()
        .map(|c| {
            format!(
                "{}:{}={}@{}",
                String::from_utf8_lossy(&c.family),
                String::from_utf8_lossy(&c.qualifier),
                String::from_utf8_lossy(&c.value),
                c.timestamp
            )
        })
        .collect()
}

/// Row keys of a scan, as strings.
pub fn rows(scanner: basalt::Scanner) -> Vec<String> {
    scanner
        .map(|r| String::from_utf8_lossy(&r.unwrap().row).into_owned())
        .collect()
}

/// Every cell of a table (all versions, up to 10), one line each, in scan
/// order: `row/family:qualifier@timestamp=value`.
pub fn dump(table: &basalt::Table) -> Vec<String> {
    table
        .scan(&basalt::Scan::new().max_versions(10))
        .unwrap()
        .flat_map(|r| {
            r.unwrap()
                .cells
                .iter()
                .map(|c| {
                    format!(
                        "{}/{}:{}@{}={}",
                        String::from_utf8_lossy(&c.row),
                        String::from_utf8_lossy(&c.family),
                        String::from_utf8_lossy(&c.qualifier),
                        c.timestamp,
                        String::from_utf8_lossy(&c.value)
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Every store file (`.sst`) below `dir`, at any depth, with its size,
/// sorted by path.
pub fn store_files_below(dir: &std::path::Path) -> Vec<(std::path::PathBuf, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "sst") {
                out.push((p.clone(), e.metadata().unwrap().len()));
            }
        }
    }
    out.sort();
    out
}

/// An index row as `index_and_rebuild` lists it: key, verified, covered
/// cells.
pub type IndexRow = (Vec<u8>, bool, Vec<String>);

/// Index `index` of `table` as it is, and as a rebuild from the data
/// would make it: each row's key, whether it is verified, and its covered
/// cells (`qualifier=value`). Equal lists prove the index consistent.
pub fn index_and_rebuild(
    db: &Database,
    table: &str,
    index: &str,
) -> (Vec<IndexRow>, Vec<IndexRow>) {
    use basalt::index_types::*;
    let data = db.table(table).unwrap();
    let descriptor = data.descriptor().get_index(index).cloned().unwrap();
    let value = |row: &RowResult, family: &[u8], qualifier: &[u8]| {
        row.cells
            .iter()
            .find(|c| c.family == family && c.qualifier == qualifier)
            .map(|c| c.value.clone())
    };
    let mut rebuilt = Vec::new();
    for row in data.scan(&basalt::Scan::new()).unwrap() {
        let row = row.unwrap();
        let values: Vec<_> = descriptor
            .columns
            .iter()
            .map(|c| value(&row, &c.family, &c.qualifier))
            .collect();
        let borrowed: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
        if let Some(key) = descriptor.key(&borrowed, &row.row) {
            let covered = descriptor
                .covered
                .iter()
                .filter_map(|(f, q)| {
                    value(&row, f, q).map(|v| {
                        format!(
                            "{}={}",
                            String::from_utf8_lossy(&covered_qualifier(f, q)),
                            String::from_utf8_lossy(&v)
                        )
                    })
                })
                .collect::<Vec<_>>();
            let mut covered = covered;
            covered.sort();
            rebuilt.push((key.to_vec(), true, covered));
        }
    }
    rebuilt.sort();
    let mut actual = Vec::new();
    let index_table = db.table(&index_table_name(table, index)).unwrap();
    for row in index_table.scan(&basalt::Scan::new()).unwrap() {
        let row = row.unwrap();
        let verified = value(&row, INDEX_FAMILY, VERIFIED_QUALIFIER).as_deref() == Some(VERIFIED);
        let covered = row
            .cells
            .iter()
            .filter(|c| c.qualifier != VERIFIED_QUALIFIER)
            .map(|c| {
                format!(
                    "{}={}",
                    String::from_utf8_lossy(&c.qualifier),
                    String::from_utf8_lossy(&c.value)
                )
            })
            .collect::<Vec<_>>();
        let mut covered = covered;
        covered.sort();
        actual.push((row.row.to_vec(), verified, covered));
    }
    actual.sort();
    (actual, rebuilt)
}
