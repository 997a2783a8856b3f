//! What the stall breaker needs to know about a screen: a perceptual hash (near-identical
//! screens get near-identical hashes, so a blinking cursor does not hide a loop) and whether
//! an action changed anything at all.

use serde::{Deserialize, Serialize};

use super::screen::Frame;

/// Hashes this many bits apart or fewer are the same screen to the stall breaker.
pub const SAME_SCREEN_BITS: u32 = 4;

/// What a computer action left on the screen, carried by its tool output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScreenState {
    /// The settled screen's perceptual hash ([`perceptual_hash`]).
    pub hash: u64,
    /// False when the settled screen is identical to the one the model saw before acting.
    pub changed: bool,
}

/// A difference hash: the frame reduced to 9 x 8 mean brightness cells (sampled every few
/// pixels, so a 1080p frame costs well under a millisecond), one bit per pair of
/// horizontal neighbours saying which is brighter.
pub fn perceptual_hash(frame: &Frame) -> u64 {
    const COLS: usize = 9;
    const ROWS: usize = 8;
    const STRIDE: usize = 8;
    let (w, h) = (frame.size.width as usize, frame.size.height as usize);
    if w == 0 || h == 0 {
        return 0;
    }
    let mut sums = [[0u64; COLS]; ROWS];
    let mut counts = [[0u64; COLS]; ROWS];
    for y in (0..h).step_by(STRIDE) {
        let row = y * ROWS / h;
        let line = &frame.rgba[y * w * 4..(y + 1) * w * 4];
        for x in (0..w).step_by(STRIDE) {
            let p = &line[x * 4..x * 4 + 3];
            let luma = 299 * u64::from(p[0]) + 587 * u64::from(p[1]) + 114 * u64::from(p[2]);
            let col = x * COLS / w;
            sums[row][col] += luma;
            counts[row][col] += 1;
        }
    }
    let mut hash = 0u64;
    for row in 0..ROWS {
        for col in 0..COLS - 1 {
            let mean = |c: usize| sums[row][c] / counts[row][c].max(1);
            hash = (hash << 1) | u64::from(mean(col) > mean(col + 1));
        }
    }
    hash
}

/// Whether two hashes are the same screen to the stall breaker.
pub fn same_screen(a: u64, b: u64) -> bool {
    (a ^ b).count_ones() <= SAME_SCREEN_BITS
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskhand_protocol::scaling::Size;

    fn halves(size: Size, left: u8, right: u8) -> Frame {
        let mut frame = Frame::filled(size, 0);
        let w = size.width as usize;
        for (i, px) in frame.rgba.chunks_exact_mut(4).enumerate() {
            let v = if i % w < w / 2 { left } else { right };
            px.copy_from_slice(&[v, v, v, 255]);
        }
        frame
    }

    #[test]
    fn a_small_change_keeps_the_hash_and_a_new_layout_changes_it() {
        let size = Size::new(640, 360);
        let base = halves(size, 200, 20);
        let mut cursor = base.clone();
        for px in cursor.rgba.chunks_exact_mut(4).skip(5000).take(3) {
            px.copy_from_slice(&[0, 0, 0, 255]);
        }
        assert!(same_screen(
            perceptual_hash(&base),
            perceptual_hash(&cursor)
        ));
        let flipped = halves(size, 20, 200);
        assert!(!same_screen(
            perceptual_hash(&base),
            perceptual_hash(&flipped)
        ));
    }
}
