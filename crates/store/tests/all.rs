//! The store's one integration test binary: a real SQLite file in a temporary directory,
//! linked without the engine so that an edit in the store is tested in seconds.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod suite;
