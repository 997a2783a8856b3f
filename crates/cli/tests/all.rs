//! The CLI crate's one integration test binary (a binary per test file linked the whole
//! engine each time). Run one part with a filter: `cargo test -p deskhand --test all serve::`.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod suite;
mod support;
