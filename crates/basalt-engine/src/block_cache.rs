//! TEMPORARY stand-in for the block cache being written on the `sst` branch.
#![allow(missing_docs)]
#[derive(Debug)]
pub struct BlockCache {
    pub capacity: usize,
}
impl BlockCache {
    pub fn new(capacity: usize) -> Self {
        BlockCache { capacity }
    }
}
