//! TEMPORARY stand-in for the narrow file interface being written on the
//! `sst` branch; replaced at merge.
#![allow(missing_docs)]
use std::fmt::Debug;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use basalt_types::{Error, Result};
use bytes::Bytes;

pub trait FileStore: Send + Sync + Debug {
    fn create(&self, path: &Path) -> Result<Box<dyn FileWriter>>;
    fn read_range(&self, path: &Path, offset: u64, len: usize) -> Result<Bytes>;
    fn size(&self, path: &Path) -> Result<u64>;
    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>>;
    fn delete(&self, path: &Path) -> Result<()>;
}
pub trait FileWriter: Send {
    fn write_all(&mut self, buf: &[u8]) -> Result<()>;
    fn finish(self: Box<Self>) -> Result<u64>;
}
#[derive(Debug, Default)]
pub struct LocalFileStore;
struct LocalWriter {
    file: File,
    path: PathBuf,
    len: u64,
}
impl FileWriter for LocalWriter {
    fn write_all(&mut self, buf: &[u8]) -> Result<()> {
        self.file
            .write_all(buf)
            .map_err(|e| Error::io(&self.path, e))?;
        self.len += buf.len() as u64;
        Ok(())
    }
    fn finish(self: Box<Self>) -> Result<u64> {
        self.file.sync_all().map_err(|e| Error::io(&self.path, e))?;
        Ok(self.len)
    }
}
impl FileStore for LocalFileStore {
    fn create(&self, path: &Path) -> Result<Box<dyn FileWriter>> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        Ok(Box::new(LocalWriter {
            file,
            path: path.to_path_buf(),
            len: 0,
        }))
    }
    fn read_range(&self, path: &Path, offset: u64, len: usize) -> Result<Bytes> {
        let file = File::open(path).map_err(|e| Error::io(path, e))?;
        let mut buf = vec![0u8; len];
        file.read_exact_at(&mut buf, offset)
            .map_err(|e| Error::io(path, e))?;
        Ok(Bytes::from(buf))
    }
    fn size(&self, path: &Path) -> Result<u64> {
        fs::metadata(path)
            .map(|m| m.len())
            .map_err(|e| Error::io(path, e))
    }
    fn list(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        match fs::read_dir(dir) {
            Ok(entries) => entries
                .map(|e| e.map(|e| e.path()).map_err(|err| Error::io(dir, err)))
                .collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(Error::io(dir, e)),
        }
    }
    fn delete(&self, path: &Path) -> Result<()> {
        fs::remove_file(path).map_err(|e| Error::io(path, e))
    }
}
