//! RocksDB through its C API, linked against the system's librocksdb
//! (Debian's librocksdb-dev, the same 7.8 build as its db_bench). A handful
//! of declarations instead of the `rocksdb` crate, whose build needs
//! libclang for bindgen or a C++ build of RocksDB.

use std::ffi::{c_char, c_int, c_uchar, c_void, CStr, CString};
use std::path::Path;

use basalt_bench::ycsb::{record, YcsbSession, YcsbStore};
use basalt_bench::{BenchError, BenchResult};

type Db = c_void;
type Opts = c_void;
type WriteOpts = c_void;
type ReadOpts = c_void;
type TableOpts = c_void;
type Cache = c_void;
type Iter = c_void;

#[link(name = "rocksdb")]
extern "C" {
    fn rocksdb_options_create() -> *mut Opts;
    fn rocksdb_options_destroy(o: *mut Opts);
    fn rocksdb_options_set_create_if_missing(o: *mut Opts, v: c_uchar);
    fn rocksdb_options_set_compression(o: *mut Opts, v: c_int);
    fn rocksdb_options_set_block_based_table_factory(o: *mut Opts, t: *mut TableOpts);
    fn rocksdb_block_based_options_create() -> *mut TableOpts;
    fn rocksdb_block_based_options_destroy(t: *mut TableOpts);
    fn rocksdb_block_based_options_set_block_cache(t: *mut TableOpts, c: *mut Cache);
    fn rocksdb_cache_create_lru(capacity: usize) -> *mut Cache;
    fn rocksdb_cache_destroy(c: *mut Cache);
    fn rocksdb_open(o: *const Opts, name: *const c_char, err: *mut *mut c_char) -> *mut Db;
    fn rocksdb_close(db: *mut Db);
    fn rocksdb_writeoptions_create() -> *mut WriteOpts;
    fn rocksdb_writeoptions_destroy(w: *mut WriteOpts);
    fn rocksdb_readoptions_create() -> *mut ReadOpts;
    fn rocksdb_readoptions_destroy(r: *mut ReadOpts);
    fn rocksdb_put(
        db: *mut Db,
        w: *const WriteOpts,
        key: *const c_char,
        keylen: usize,
        val: *const c_char,
        vallen: usize,
        err: *mut *mut c_char,
    );
    fn rocksdb_get(
        db: *mut Db,
        r: *const ReadOpts,
        key: *const c_char,
        keylen: usize,
        vallen: *mut usize,
        err: *mut *mut c_char,
    ) -> *mut c_char;
    fn rocksdb_create_iterator(db: *mut Db, r: *const ReadOpts) -> *mut Iter;
    fn rocksdb_iter_destroy(it: *mut Iter);
    fn rocksdb_iter_seek(it: *mut Iter, key: *const c_char, keylen: usize);
    fn rocksdb_iter_valid(it: *const Iter) -> c_uchar;
    fn rocksdb_iter_next(it: *mut Iter);
    fn rocksdb_iter_value(it: *const Iter, len: *mut usize) -> *const c_char;
    fn rocksdb_iter_get_error(it: *const Iter, err: *mut *mut c_char);
    fn rocksdb_free(p: *mut c_void);
}

/// RocksDB's kNoCompression.
const NO_COMPRESSION: c_int = 0;

/// Turns a C API error out-parameter into a result (and frees it).
fn check(err: *mut c_char) -> BenchResult<()> {
    if err.is_null() {
        return Ok(());
    }
    // SAFETY: RocksDB sets `err` to a NUL-terminated string it allocated
    // with malloc; we read it once and free it with rocksdb_free.
    let msg = unsafe { CStr::from_ptr(err) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: see above; the pointer is not used afterwards.
    unsafe { rocksdb_free(err.cast()) };
    Err(BenchError::new(format!("rocksdb: {msg}")))
}

/// An open RocksDB with the YCSB records: one value per record, as YCSB's
/// RocksDB binding stores them.
pub struct Rocks {
    db: *mut Db,
    opts: *mut Opts,
    table: *mut TableOpts,
    cache: *mut Cache,
    write: *mut WriteOpts,
    read: *mut ReadOpts,
}

// SAFETY: a RocksDB handle is thread-safe (concurrent reads and writes are
// the documented use); the option objects are only read after `open`.
unsafe impl Send for Rocks {}
// SAFETY: as above.
unsafe impl Sync for Rocks {}

impl Rocks {
    /// Opens (creating) the database at `dir`: compression off, an LRU
    /// block cache of `cache_bytes`, RocksDB's defaults otherwise (WAL on,
    /// not synced per write).
    pub fn open(dir: &Path, cache_bytes: Option<usize>) -> BenchResult<Self> {
        let name = CString::new(dir.display().to_string())
            .map_err(|_| BenchError::new("database path contains a NUL byte"))?;
        // SAFETY: plain constructors and setters of the C API on objects we
        // own; every pointer is released in Drop (or below on failure).
        unsafe {
            let opts = rocksdb_options_create();
            rocksdb_options_set_create_if_missing(opts, 1);
            rocksdb_options_set_compression(opts, NO_COMPRESSION);
            let table = rocksdb_block_based_options_create();
            let cache = rocksdb_cache_create_lru(cache_bytes.unwrap_or(8 << 20));
            rocksdb_block_based_options_set_block_cache(table, cache);
            rocksdb_options_set_block_based_table_factory(opts, table);
            let mut err = std::ptr::null_mut();
            let db = rocksdb_open(opts, name.as_ptr(), &mut err);
            let rocks = Rocks {
                db,
                opts,
                table,
                cache,
                write: rocksdb_writeoptions_create(),
                read: rocksdb_readoptions_create(),
            };
            check(err)?;
            if db.is_null() {
                return Err(BenchError::new("rocksdb_open returned no database"));
            }
            Ok(rocks)
        }
    }

    fn put(&self, key: &[u8], value: &[u8]) -> BenchResult<()> {
        let mut err = std::ptr::null_mut();
        // SAFETY: the slices outlive the call; RocksDB copies them.
        unsafe {
            rocksdb_put(
                self.db,
                self.write,
                key.as_ptr().cast(),
                key.len(),
                value.as_ptr().cast(),
                value.len(),
                &mut err,
            );
        }
        check(err)
    }

    fn get(&self, key: &[u8]) -> BenchResult<Option<Vec<u8>>> {
        let mut err = std::ptr::null_mut();
        let mut len = 0usize;
        // SAFETY: the key outlives the call; a non-null result is a malloc'd
        // buffer of `len` bytes that we copy and free.
        unsafe {
            let p = rocksdb_get(
                self.db,
                self.read,
                key.as_ptr().cast(),
                key.len(),
                &mut len,
                &mut err,
            );
            check(err)?;
            if p.is_null() {
                return Ok(None);
            }
            let v = std::slice::from_raw_parts(p.cast::<u8>(), len).to_vec();
            rocksdb_free(p.cast());
            Ok(Some(v))
        }
    }

    fn scan(&self, start: &[u8], count: usize) -> BenchResult<usize> {
        let mut rows = 0;
        // SAFETY: the iterator is created, used and destroyed here; value
        // pointers are read before the next move of the iterator.
        unsafe {
            let it = rocksdb_create_iterator(self.db, self.read);
            rocksdb_iter_seek(it, start.as_ptr().cast(), start.len());
            let mut result = Ok(());
            while rows < count && rocksdb_iter_valid(it) != 0 {
                let mut len = 0usize;
                let v = rocksdb_iter_value(it, &mut len);
                let value = std::slice::from_raw_parts(v.cast::<u8>(), len);
                if let Err(e) = record::decode(value) {
                    result = Err(e);
                    break;
                }
                rows += 1;
                rocksdb_iter_next(it);
            }
            let mut err = std::ptr::null_mut();
            rocksdb_iter_get_error(it, &mut err);
            rocksdb_iter_destroy(it);
            result?;
            check(err)?;
        }
        Ok(rows)
    }
}

impl Drop for Rocks {
    fn drop(&mut self) {
        // SAFETY: each object was created in `open` and is released once;
        // the database closes before the options and cache it uses.
        unsafe {
            if !self.db.is_null() {
                rocksdb_close(self.db);
            }
            rocksdb_writeoptions_destroy(self.write);
            rocksdb_readoptions_destroy(self.read);
            rocksdb_options_destroy(self.opts);
            rocksdb_block_based_options_destroy(self.table);
            rocksdb_cache_destroy(self.cache);
        }
    }
}

/// The store for the YCSB runner.
pub struct RocksStore(pub std::sync::Arc<Rocks>);

impl YcsbStore for RocksStore {
    fn name(&self) -> String {
        "rocksdb".into()
    }

    fn prepare(&self) -> BenchResult<()> {
        Ok(())
    }

    fn session(&self) -> BenchResult<Box<dyn YcsbSession>> {
        Ok(Box::new(RocksSession(self.0.clone())))
    }

    fn finish(&self) -> BenchResult<()> {
        Ok(())
    }
}

struct RocksSession(std::sync::Arc<Rocks>);

impl YcsbSession for RocksSession {
    fn insert(&mut self, key: &[u8], fields: &[(&str, &[u8])]) -> BenchResult<()> {
        self.0.put(key, &record::encode(fields))
    }

    fn read(&mut self, key: &[u8]) -> BenchResult<usize> {
        match self.0.get(key)? {
            Some(v) => Ok(record::decode(&v)?.len()),
            None => Ok(0),
        }
    }

    fn update(&mut self, key: &[u8], fields: &[(&str, &[u8])]) -> BenchResult<()> {
        // One value per record: read, merge the fields, write back, as
        // YCSB's RocksDB binding does.
        let merged = match self.0.get(key)? {
            Some(v) => record::merge(&v, fields)?,
            None => record::encode(fields),
        };
        self.0.put(key, &merged)
    }

    fn scan(&mut self, start: &[u8], count: usize) -> BenchResult<usize> {
        self.0.scan(start, count)
    }
}
