//! The stand-in's tests, one binary: what it streams, the faults it injects, and the requests
//! it rejects as the real APIs do.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod common;
mod suite;
