//! basalt
