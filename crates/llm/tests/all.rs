//! The providers' one integration test binary, linked without the engine so that an edit in
//! the providers is tested in seconds.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

mod suite;
