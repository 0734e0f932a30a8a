//! Work in progress in this change.
