//! HBase's snapshot manifest (`Snapshot.proto`, `FS.proto`): what an
//! HBase snapshot directory's `data.manifest` holds, read by
//! `basalt import hbase-snapshot`. The description (`.snapshotinfo`) is
//! [`super::master::SnapshotDescription`].

use super::hbase::{RegionInfo, TableSchema};

/// `data.manifest`: the table's schema and one entry per region.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SnapshotDataManifest {
    /// The table's descriptor when the snapshot was taken.
    #[prost(message, optional, tag = "1")]
    pub table_schema: Option<TableSchema>,
    /// Each region's store files.
    #[prost(message, repeated, tag = "2")]
    pub region_manifests: Vec<SnapshotRegionManifest>,
}

/// One region of a snapshot: its identity and its store files by family.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SnapshotRegionManifest {
    /// The manifest format of this entry.
    #[prost(int32, optional, tag = "1")]
    pub version: Option<i32>,
    /// The region (table, key range, id).
    #[prost(message, optional, tag = "2")]
    pub region_info: Option<RegionInfo>,
    /// Its families' files.
    #[prost(message, repeated, tag = "3")]
    pub family_files: Vec<FamilyFiles>,
}

/// The store files of one family of a snapshot region.
#[derive(Clone, PartialEq, prost::Message)]
pub struct FamilyFiles {
    /// The family.
    #[prost(bytes = "vec", required, tag = "1")]
    pub family_name: Vec<u8>,
    /// Its files.
    #[prost(message, repeated, tag = "2")]
    pub store_files: Vec<SnapshotStoreFile>,
}

/// One store file a snapshot region names.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SnapshotStoreFile {
    /// The file's name in the region's family directory: an HFile, an
    /// HFileLink (`[ns=]table=region-hfile`) or, with `reference`, a split
    /// daughter's reference (`hfile.parentregion`).
    #[prost(string, required, tag = "1")]
    pub name: String,
    /// Set for a reference: which half of the parent's file it reads.
    #[prost(message, optional, tag = "2")]
    pub reference: Option<Reference>,
    /// The file's size in bytes.
    #[prost(uint64, optional, tag = "3")]
    pub file_size: Option<u64>,
}

/// A split daughter's reference to half of its parent's file.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Reference {
    /// The split point: a serialized key (the first key on the split row).
    #[prost(bytes = "vec", required, tag = "1")]
    pub splitkey: Vec<u8>,
    /// Which half: [`reference::Range`].
    #[prost(enumeration = "reference::Range", required, tag = "2")]
    pub range: i32,
}

/// Nested types of [`Reference`].
pub mod reference {
    /// The half of the parent's file a reference reads.
    #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
    #[repr(i32)]
    pub enum Range {
        /// Rows at and after the split key.
        Top = 0,
        /// Rows before the split key.
        Bottom = 1,
    }
}
