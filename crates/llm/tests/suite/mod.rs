//! The providers' integration tests, one module per part.

mod fuzz_streams;
