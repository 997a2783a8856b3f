//! What the integration tests of every crate share. Each crate has one integration test
//! binary (`tests/all.rs`, with its tests in `tests/suite/`): a binary per test file was a
//! link of the whole engine each, and minutes of CI.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code fails by panicking"
)]

pub mod raw_http;
pub mod rss;
pub mod x11;

use std::path::Path;
use std::time::{Duration, Instant};

/// Fails when a generated file kept in the repository (the OpenAPI document, the window's
/// TypeScript) differs from what its generator makes now. With the environment variable
/// `bless` set it rewrites the file first; the message names `rerun`, the test command.
pub fn assert_generated(path: &Path, generated: &str, bless: &str, rerun: &str) {
    if std::env::var_os(bless).is_some() {
        std::fs::write(path, generated).unwrap();
    }
    let current = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        current == generated,
        "{} is stale: run `{bless}=1 {rerun}` and commit it",
        path.display()
    );
}

/// A real 1×1 PNG, base64-encoded, for attachments.
pub const PNG_1X1: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

/// PNG-framed bytes of a `width` × `height` screenshot: a real header (what token estimates
/// read) and a payload unique to `seed`, about the size of a real 1280×800 screenshot.
pub fn fake_screenshot_png(width: u32, height: u32, seed: u64) -> Vec<u8> {
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend(width.to_be_bytes());
    png.extend(height.to_be_bytes());
    png.extend([8, 2, 0, 0, 0, 0, 0, 0, 0]);
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    png.extend((0..60_000).map(|_| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state as u8
    }));
    png
}

/// Polls `ready` every 20 ms until it holds or `limit` passes; says whether it held. What a
/// test waits for is a condition, never a guess at how long it takes.
pub fn wait_until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if ready() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A process is gone once it no longer exists or is only a zombie waiting to be reaped.
pub fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Waits up to 5 s for [`gone`].
pub async fn wait_until_gone(pid: &str) -> bool {
    for _ in 0..100 {
        if gone(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// A property test's config with `default` cases, unless `PROPTEST_CASES` says how many (as
/// `scripts/test.sh`'s fuzz pass does): proptest's own default is 256, too many for the
/// slower properties.
pub fn proptest_cases(default: u32) -> proptest::prelude::ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default);
    proptest::prelude::ProptestConfig {
        cases,
        ..proptest::prelude::ProptestConfig::default()
    }
}
