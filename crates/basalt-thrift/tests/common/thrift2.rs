//! Builders of Thrift2 structs for the `thrift2_*` tests.
#![allow(dead_code)]

use bytes::Bytes;

use basalt_thrift::thrift2::types::{
    TColumn, TColumnFamilyDescriptor, TColumnValue, TDelete, TGet, TPut, TResult, TTableDescriptor,
    TTableName,
};
use basalt_thrift::Client2;

pub fn b(s: &[u8]) -> Option<Bytes> {
    Some(Bytes::copy_from_slice(s))
}

pub fn cell(f: &[u8], q: &[u8], v: &[u8]) -> TColumnValue {
    TColumnValue {
        family: b(f),
        qualifier: b(q),
        value: b(v),
        ..TColumnValue::default()
    }
}

pub fn put(row: &[u8], cells: Vec<TColumnValue>) -> TPut {
    TPut {
        row: b(row),
        column_values: Some(cells),
        ..TPut::default()
    }
}

pub fn get(row: &[u8]) -> TGet {
    TGet {
        row: b(row),
        ..TGet::default()
    }
}

pub fn column(f: &[u8], q: Option<&[u8]>) -> TColumn {
    TColumn {
        family: b(f),
        qualifier: q.and_then(b),
        timestamp: None,
    }
}

pub fn delete(row: &[u8], columns: Vec<TColumn>) -> TDelete {
    TDelete {
        row: b(row),
        columns: Some(columns),
        ..TDelete::default()
    }
}

pub fn family(name: &str) -> TColumnFamilyDescriptor {
    TColumnFamilyDescriptor {
        name: b(name.as_bytes()),
        ..TColumnFamilyDescriptor::default()
    }
}

pub fn descriptor(table: &str, families: &[&str]) -> TTableDescriptor {
    TTableDescriptor {
        table_name: Some(TTableName::of(table)),
        columns: Some(families.iter().map(|f| family(f)).collect()),
        ..TTableDescriptor::default()
    }
}

pub fn create(c: &mut Client2, table: &str, families: &[&str]) {
    c.create_table(descriptor(table, families), Vec::new())
        .unwrap();
}

/// `(family:qualifier, value)` of each cell of a result.
pub fn cells(r: &TResult) -> Vec<(String, String)> {
    r.column_values
        .iter()
        .flatten()
        .map(|c| {
            let s = |b: &Option<Bytes>| {
                String::from_utf8_lossy(b.as_deref().unwrap_or(b"")).into_owned()
            };
            (format!("{}:{}", s(&c.family), s(&c.qualifier)), s(&c.value))
        })
        .collect()
}

pub fn value(r: &TResult) -> Option<Bytes> {
    r.column_values.as_ref()?.first()?.value.clone()
}
