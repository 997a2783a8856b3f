//! OCR words where the tree has none: Tesseract through `leptess`, run on demand (never on
//! every frame). The frame is made grey and twice as large and read as sparse text (page
//! segmentation mode 11): on a 1080p screen that finds about six times the words of the raw
//! frame, each box within 1–2 px. OpenMP is held to one thread, which on two cores is 3–7x
//! faster than its default. Words below confidence 60 are dropped. It misses light text on
//! dark bars.

use std::sync::Mutex;

use leptess::{LepTess, Variable};

use super::{Element, ElementError, ElementKey, Origin, Rect};
use crate::tools::computer::pipeline;
use crate::tools::computer::scaling::{Geometry, Size};
use crate::tools::computer::screen::Frame;

/// Words Tesseract is less sure of than this are left out.
const MIN_CONFIDENCE: f32 = 60.0;

#[link(name = "gomp")]
unsafe extern "C" {
    /// OpenMP's thread count for parallel regions this thread starts next.
    fn omp_set_num_threads(n: std::ffi::c_int);
}

/// The engine, started once (57 ms) and kept; one recognition at a time.
static ENGINE: Mutex<Option<LepTess>> = Mutex::new(None);

/// The words on `frame`, a capture of the monitor at `geometry`, with bounds on the desktop.
pub fn words(frame: &Frame, geometry: &Geometry) -> Result<Vec<Element>, ElementError> {
    let mut engine = ENGINE.lock().unwrap_or_else(|e| e.into_inner());
    if engine.is_none() {
        let mut started = LepTess::new(None, "eng").map_err(|e| {
            ElementError::NoOcr(format!("{e} (install tesseract-ocr-eng and libtesseract5)"))
        })?;
        started
            .set_variable(Variable::TesseditPagesegMode, "11")
            .map_err(|_| ElementError::Ocr("cannot set the page segmentation mode".into()))?;
        *engine = Some(started);
    }
    let engine = engine.as_mut().expect("started above");
    let large = Size::new(frame.size.width * 2, frame.size.height * 2);
    let grey = pgm(&pipeline::resize(frame, None, large));
    engine
        .set_image_from_mem(&grey)
        .map_err(|e| ElementError::Ocr(e.to_string()))?;
    // SAFETY: a plain setter of this thread's OpenMP settings; Tesseract's parallel regions
    // start on this thread, in `get_tsv_text` below.
    unsafe { omp_set_num_threads(1) };
    let tsv = engine
        .get_tsv_text(0)
        .map_err(|e| ElementError::Ocr(e.to_string()))?;
    Ok(parse_tsv(&tsv)
        .into_iter()
        .map(|(text, [l, t, w, h])| {
            let to_desktop = |px: i32, across: bool| {
                // 2x pixels → frame pixels → input units.
                let (input, pixels, origin) = if across {
                    (geometry.input.width, frame.size.width, geometry.x)
                } else {
                    (geometry.input.height, frame.size.height, geometry.y)
                };
                origin + (i64::from(px) * i64::from(input) / (2 * i64::from(pixels.max(1)))) as i32
            };
            let (x0, y0) = (to_desktop(l, true), to_desktop(t, false));
            let (x1, y1) = (to_desktop(l + w, true), to_desktop(t + h, false));
            let bounds = Rect {
                x: x0,
                y: y0,
                width: (x1 - x0).max(1),
                height: (y1 - y0).max(1),
            };
            Element {
                key: ElementKey::Word {
                    text: text.clone(),
                    bounds,
                },
                role: "word".into(),
                name: text,
                text: None,
                states: Vec::new(),
                bounds,
                app: String::new(),
                window: String::new(),
                focused_window: true,
                origin: Origin::Ocr,
            }
        })
        .collect())
}

/// The frame as a binary greyscale PGM, which Leptonica reads without a codec.
fn pgm(frame: &Frame) -> Vec<u8> {
    let header = format!("P5\n{} {}\n255\n", frame.size.width, frame.size.height);
    let mut out = Vec::with_capacity(header.len() + frame.rgba.len() / 4);
    out.extend_from_slice(header.as_bytes());
    out.extend(frame.rgba.chunks_exact(4).map(|p| {
        ((u32::from(p[0]) * 299 + u32::from(p[1]) * 587 + u32::from(p[2]) * 114) / 1000) as u8
    }));
    out
}

/// Words of Tesseract's TSV (level 5 rows) with confidence ≥ [`MIN_CONFIDENCE`]:
/// `level page block par line word left top width height conf text`.
fn parse_tsv(tsv: &str) -> Vec<(String, [i32; 4])> {
    tsv.lines()
        .filter_map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            if cols.len() < 12 || cols[0] != "5" {
                return None;
            }
            let text = cols[11].trim();
            let conf: f32 = cols[10].parse().ok()?;
            if text.is_empty() || conf < MIN_CONFIDENCE {
                return None;
            }
            let n = |i: usize| cols[i].parse::<i32>().ok();
            Some((text.to_string(), [n(6)?, n(7)?, n(8)?, n(9)?]))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsv_keeps_confident_words_only() {
        let tsv = "level\tpage_num\tblock_num\tpar_num\tline_num\tword_num\tleft\ttop\twidth\theight\tconf\ttext\n\
                   4\t1\t1\t1\t1\t0\t10\t10\t100\t20\t-1\t\n\
                   5\t1\t1\t1\t1\t1\t10\t12\t40\t18\t91.5\tSave\n\
                   5\t1\t1\t1\t1\t2\t60\t12\t40\t18\t31.0\tfuzz\n\
                   5\t1\t1\t1\t1\t3\t60\t12\t40\t18\t95\t \n";
        assert_eq!(parse_tsv(tsv), vec![("Save".to_string(), [10, 12, 40, 18])]);
    }

    #[test]
    fn pgm_is_grey_bytes_after_a_header() {
        let frame = Frame {
            size: Size::new(2, 1),
            rgba: vec![255, 255, 255, 255, 0, 0, 0, 255],
        };
        assert_eq!(pgm(&frame), b"P5\n2 1\n255\n\xff\x00".to_vec());
    }
}
