//! The store's integration tests, one module per part.

mod fuzz_import;
mod history_repair;
mod store;
