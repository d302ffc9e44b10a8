//! Live enforcement state.

pub mod table;
