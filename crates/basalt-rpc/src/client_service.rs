//! Placeholder replaced by the full service (work in progress in this change).

use crate::call::Method;

/// The methods served.
pub const METHODS: &[Method] = &[];
