//! Basalt's data model, shared by the engine, the embedded API and the
//! protocol gateways.
//!
//! The model is HBase's: a sparse, sorted map of
//! `row -> family -> qualifier -> timestamp -> value`, all untyped bytes.
//! The pieces live where an HBase user looks for them:
//!
//! - [`cell`]: cells, their type codes and the KeyValue sort order;
//! - [`column`](mod@column): `family:qualifier` column names as text interfaces write them;
//! - [`descriptor`]: table and column-family descriptors with validation;
//! - [`mutation`]: puts, deletes, increments, appends, row mutations;
//! - [`query`]: gets, scans, time ranges and results;
//! - [`filter`]: server-side filters, comparators and the filter language;
//! - [`index`]: secondary index descriptors and their index row keys.

// No crate of the workspace needs unsafe code; the compiler keeps it so.
#![forbid(unsafe_code)]
// Every public item is documented: this crate is a library others read.
#![warn(missing_docs)]

pub mod cell;
pub mod column;
pub mod descriptor;
pub mod error;
pub mod filter;
pub mod index;
pub mod mutation;
pub mod query;

pub use cell::{Cell, CellType, LATEST_TIMESTAMP};
pub use column::{parse_column, Column};
pub use descriptor::{
    BloomType, ColumnFamilyDescriptor, Compression, DataBlockEncoding, KeepDeletedCells,
    NamespaceDescriptor, TableDescriptor,
};
pub use error::{Error, ErrorKind, Result};
pub use filter::{Comparator, CompareOp, Filter};
pub use index::{IndexColumn, IndexDescriptor, IndexState, IndexTransform};
pub use mutation::{
    Append, CheckAndMutate, Condition, Delete, Durability, Increment, Mutation, Nonce, Put,
    RowMutations,
};
pub use query::{Get, RowResult, Scan, TimeRange};
