//! Filters and comparators arriving as Java class name + serialized
//! message, read into Basalt's declarative `Filter` and `Comparator`.

use basalt::{Comparator, Filter};

use crate::error::RpcError;
use crate::proto;

/// Reads a filter; a class Basalt does not have is a `DoNotRetryIOException`
/// naming it.
pub fn decode_filter(filter: &proto::filter::Filter) -> Result<Filter, RpcError> {
    Err(RpcError::do_not_retry(format!(
        "filter {} is not supported yet",
        filter.name
    )))
}

/// Reads a comparator; `None` for `NullComparator` (the column must be
/// absent or empty, as HBase's check-and-mutate reads it).
pub fn decode_comparator(
    comparator: &proto::filter::Comparator,
) -> Result<Option<Comparator>, RpcError> {
    Err(RpcError::do_not_retry(format!(
        "comparator {} is not supported yet",
        comparator.name
    )))
}
