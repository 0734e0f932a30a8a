//! TEMPORARY: API stub of the WAL being written in parallel; replaced before commit.
#![allow(missing_docs, dead_code, clippy::all)]
use basalt_types::{Cell, Durability, Result};
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, Clone)]
pub struct WalOptions {
    pub segment_max_bytes: u64,
    pub async_flush_interval: std::time::Duration,
}
impl Default for WalOptions {
    fn default() -> Self {
        WalOptions {
            segment_max_bytes: 64 << 20,
            async_flush_interval: std::time::Duration::from_millis(100),
        }
    }
}
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalEdit {
    pub region_id: u64,
    pub sequence_id: u64,
    pub cells: Vec<Cell>,
}
#[derive(Debug, Default)]
pub struct ReplayReport {
    pub segments: usize,
    pub records: u64,
}
#[derive(Debug)]
pub struct Wal;
impl Wal {
    pub fn open(
        _dir: &Path,
        _o: WalOptions,
        _apply: impl FnMut(WalEdit) -> Result<()>,
    ) -> Result<(Arc<Wal>, ReplayReport)> {
        Ok((Arc::new(Wal), ReplayReport::default()))
    }
    pub fn append(&self, _e: &WalEdit) -> Result<u64> {
        Ok(0)
    }
    pub fn sync(&self, _lsn: u64, _d: Durability) -> Result<()> {
        Ok(())
    }
    pub fn log(&self, _e: &WalEdit, _d: Durability) -> Result<()> {
        Ok(())
    }
    pub fn close(&self) -> Result<()> {
        Ok(())
    }
}
