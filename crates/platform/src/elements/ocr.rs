//! OCR words where the tree has none: Tesseract's `tesseract` program, run on demand (never on
//! every frame). A child process, not the library linked in, keeps Tesseract and everything
//! behind it out of Deskhand's memory until OCR is wanted, and lets OpenMP be held to one
//! thread from the environment, the only place it reads that before its threads start (one
//! thread is several times faster on two cores; docs/benchmarks.md).
//!
//! The frame's blank edges are cut off first: rows and columns of one colour hold no words, but
//! Tesseract still spends time on them. What is left is made grey and twice as large and read
//! as sparse text (page segmentation mode 11): on a 1080p screen that finds about six times the
//! words of the raw frame, each box within 1–2 px. The doubled frame is cut into one horizontal
//! band per core, read side by side. Tesseract's time follows the text, so the bands hold equal
//! shares of it, not equal rows. Neighbouring bands share more rows than the tallest line of
//! text, and each word is kept from the band its centre belongs to. Words below confidence 60
//! are dropped. It misses light text on dark bars.

use std::io::{Read, Write};
use std::ops::Range;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::{Element, ElementError, ElementKey, Origin, Rect};
use crate::computer::pipeline;
use crate::computer::screen::Frame;
use deskhand_protocol::scaling::{Geometry, Size};

/// Words Tesseract is less sure of than this are left out.
const MIN_CONFIDENCE: f32 = 60.0;

/// Rows of the doubled frame that a band reads beyond its own, on each side: more than half
/// the height of the tallest word, so a word cut by one band is whole in the other.
const OVERLAP: u32 = 96;

/// At most this many bands (and `tesseract` processes) at once, however many cores.
const MAX_BANDS: usize = 4;

/// Reading one band may take this long; then its process is killed and OCR fails.
const DEADLINE: Duration = Duration::from_secs(20);

/// The program, found on `PATH`.
const TESSERACT: &str = "tesseract";

/// The words on `frame`, a capture of the monitor at `geometry`, with bounds on the desktop.
pub fn words(frame: &Frame, geometry: &Geometry) -> Result<Vec<Element>, ElementError> {
    let Some(content) = content(frame) else {
        return Ok(Vec::new());
    };
    let (width, height) = (content.width as u32, content.height as u32);
    let large = Size::new(width * 2, height * 2);
    let crop = (content.x as u32, content.y as u32, width, height);
    let large_frame =
        pipeline::resize(frame, Some(crop), large).map_err(|e| ElementError::Ocr(e.to_string()))?;
    let grey = grey(&large_frame);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let bands = bands(&ink(&grey, large.width), cores);
    let read: Vec<Result<Vec<Word>, ElementError>> = std::thread::scope(|scope| {
        let running: Vec<_> = bands
            .iter()
            .map(|band| scope.spawn(|| read_band(&grey, large.width, band)))
            .collect();
        running
            .into_iter()
            .map(|r| {
                r.join()
                    .unwrap_or_else(|_| Err(ElementError::Ocr("the OCR thread panicked".into())))
            })
            .collect()
    });
    let mut words = Vec::new();
    for (band, found) in bands.iter().zip(read) {
        words.extend(found?.into_iter().filter_map(|(text, [l, t, w, h])| {
            let top = t + band.rows.start as i32;
            let centre = u32::try_from(top + h / 2).ok()?;
            band.own.contains(&centre).then_some((text, [l, top, w, h]))
        }));
    }
    Ok(words
        .into_iter()
        .map(|(text, [l, t, w, h])| {
            let to_desktop = |px: i32, across: bool| {
                // 2x pixels of the content → 2x pixels of the frame → input units.
                let (input, pixels, origin, cut) = if across {
                    (
                        geometry.input.width,
                        frame.size.width,
                        geometry.x,
                        content.x,
                    )
                } else {
                    (
                        geometry.input.height,
                        frame.size.height,
                        geometry.y,
                        content.y,
                    )
                };
                let doubled = i64::from(2 * cut + px);
                origin + (doubled * i64::from(input) / (2 * i64::from(pixels.max(1)))) as i32
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

/// The part of `frame` left when rows and columns of one colour are cut off its edges, in
/// frame pixels; `None` when the whole frame is one colour.
fn content(frame: &Frame) -> Option<Rect> {
    let width = frame.size.width as usize;
    let pixel = |x: usize, y: usize| -> [u8; 3] {
        let i = (y * width + x) * 4;
        [frame.rgba[i], frame.rgba[i + 1], frame.rgba[i + 2]]
    };
    let row_blank = |y: usize| (1..width).all(|x| pixel(x, y) == pixel(0, y));
    let height = frame.size.height as usize;
    let top = (0..height).find(|&y| !row_blank(y))?;
    let bottom = (0..height).rev().find(|&y| !row_blank(y))?;
    let column_blank = |x: usize| (top..=bottom).all(|y| pixel(x, y) == pixel(x, top));
    let left = (0..width).find(|&x| !column_blank(x)).unwrap_or(0);
    let right = (0..width)
        .rev()
        .find(|&x| !column_blank(x))
        .unwrap_or(width - 1);
    Some(Rect {
        x: left as i32,
        y: top as i32,
        width: (right - left + 1) as i32,
        height: (bottom - top + 1) as i32,
    })
}

/// A word's text and its box `[left, top, width, height]` in pixels.
type Word = (String, [i32; 4]);

/// A horizontal band of the doubled frame: the rows read, and the rows whose words it keeps.
#[derive(Debug, PartialEq)]
struct Band {
    rows: Range<u32>,
    own: Range<u32>,
}

/// `count` bands (at most [`MAX_BANDS`]) whose own rows cover the image once, cut so that each
/// holds about the same share of `ink` (one weight per row): Tesseract's time follows the text,
/// not the rows, and a screen's text is rarely spread evenly down it.
fn bands(ink: &[u64], count: usize) -> Vec<Band> {
    let height = ink.len() as u32;
    let count = count.clamp(1, MAX_BANDS) as u64;
    // One more than the ink, so that rows with none still count and a blank image splits evenly.
    let total: u64 = ink.iter().map(|w| w + 1).sum();
    let mut cuts = vec![0];
    let mut sum = 0;
    for (row, weight) in ink.iter().enumerate() {
        sum += weight + 1;
        let next = cuts.len() as u64;
        if next < count && sum * count >= total * next {
            cuts.push(row as u32 + 1);
        }
    }
    cuts.push(height);
    cuts.dedup();
    cuts.windows(2)
        .map(|w| w[0]..w[1])
        .filter(|own| !own.is_empty())
        .map(|own| Band {
            rows: own.start.saturating_sub(OVERLAP)..(own.end + OVERLAP).min(height),
            own,
        })
        .collect()
}

/// Each row's ink: how many of its pixels differ from their left neighbour, which is where
/// text is.
fn ink(grey: &[u8], width: u32) -> Vec<u64> {
    grey.chunks_exact(width.max(1) as usize)
        .map(|row| row.windows(2).filter(|p| p[0] != p[1]).count() as u64)
        .collect()
}

/// The frame's pixels as grey bytes, one per pixel.
fn grey(frame: &Frame) -> Vec<u8> {
    frame
        .rgba
        .chunks_exact(4)
        .map(|p| {
            ((u32::from(p[0]) * 299 + u32::from(p[1]) * 587 + u32::from(p[2]) * 114) / 1000) as u8
        })
        .collect()
}

/// The rows `band.rows` of a grey image `width` wide, as a binary PGM, which Tesseract reads
/// from its standard input without a codec.
fn pgm(grey: &[u8], width: u32, band: &Band) -> Vec<u8> {
    let header = format!("P5\n{} {}\n255\n", width, band.rows.len());
    let pixels = &grey[(band.rows.start * width) as usize..(band.rows.end * width) as usize];
    let mut out = Vec::with_capacity(header.len() + pixels.len());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(pixels);
    out
}

/// The words `tesseract` reads in one band, with boxes relative to the band.
fn read_band(grey: &[u8], width: u32, band: &Band) -> Result<Vec<Word>, ElementError> {
    let mut child = Command::new(TESSERACT)
        .args(["stdin", "stdout", "-l", "eng", "--psm", "11", "tsv"])
        .env("OMP_THREAD_LIMIT", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ElementError::NoOcr(
                "the `tesseract` program is not installed (apt install tesseract-ocr tesseract-ocr-eng)"
                    .into(),
            ),
            _ => ElementError::Ocr(format!("cannot start `tesseract`: {e}")),
        })?;
    let image = pgm(grey, width, band);
    let (Some(mut stdin), Some(mut stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(ElementError::Ocr(
            "`tesseract` started without its pipes".into(),
        ));
    };
    let (tsv, errors, status) = std::thread::scope(|scope| {
        // Written and read beside each other, so that no full pipe stops either side.
        scope.spawn(move || stdin.write_all(&image));
        let tsv = scope.spawn(move || {
            let mut out = String::new();
            stdout.read_to_string(&mut out).map(|_| out)
        });
        let errors = scope.spawn(move || {
            let mut out = String::new();
            let _ = stderr.read_to_string(&mut out);
            out
        });
        let status = wait_within(&mut child, DEADLINE);
        (tsv.join(), errors.join(), status)
    });
    let status = status?;
    let errors = errors.unwrap_or_default();
    if !status.success() {
        let last = errors.lines().rev().find(|l| !l.trim().is_empty());
        return Err(ElementError::Ocr(match last {
            Some(line) if line.contains("eng.traineddata") || line.contains("language") => format!(
                "Tesseract has no English data ({}; apt install tesseract-ocr-eng)",
                line.trim()
            ),
            Some(line) => format!("`tesseract` failed: {}", line.trim()),
            None => format!("`tesseract` failed ({status})"),
        }));
    }
    let tsv = tsv
        .map_err(|_| ElementError::Ocr("the OCR reader panicked".into()))?
        .map_err(|e| ElementError::Ocr(format!("cannot read `tesseract`'s answer: {e}")))?;
    Ok(parse_tsv(&tsv))
}

/// Waits for `child` to end, killing it after `deadline`.
fn wait_within(
    child: &mut Child,
    deadline: Duration,
) -> Result<std::process::ExitStatus, ElementError> {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status),
            Ok(None) if start.elapsed() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(ElementError::Ocr(format!(
                    "`tesseract` gave no answer within {} s",
                    deadline.as_secs()
                )));
            }
            Err(e) => {
                return Err(ElementError::Ocr(format!(
                    "cannot wait for `tesseract`: {e}"
                )));
            }
        }
    }
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
    fn grey_then_pgm_keeps_the_band_rows() {
        let frame = Frame {
            size: Size::new(2, 2),
            rgba: vec![
                255, 255, 255, 255, 0, 0, 0, 255, // row 0: white, black
                255, 0, 0, 255, 0, 0, 255, 255, // row 1: red, blue
            ],
        };
        let grey = grey(&frame);
        assert_eq!(grey, vec![255, 0, 76, 29]);
        let band = Band {
            rows: 1..2,
            own: 1..2,
        };
        assert_eq!(pgm(&grey, 2, &band), b"P5\n2 1\n255\nL\x1d".to_vec());
    }

    #[test]
    fn content_cuts_blank_edges_only() {
        // 6x4, black but for one grey pixel at (2, 1) and a white one at (4, 2).
        let mut rgba = [0, 0, 0, 255].repeat(24);
        rgba[(6 + 2) * 4..(6 + 2) * 4 + 3].copy_from_slice(&[128; 3]);
        rgba[(12 + 4) * 4..(12 + 4) * 4 + 3].copy_from_slice(&[255; 3]);
        let frame = Frame {
            size: Size::new(6, 4),
            rgba,
        };
        let cut = content(&frame).unwrap();
        assert_eq!((cut.x, cut.y, cut.width, cut.height), (2, 1, 3, 2));
        let blank = Frame {
            size: Size::new(3, 3),
            rgba: [9, 9, 9, 255].repeat(9),
        };
        assert!(content(&blank).is_none());
    }

    #[test]
    fn bands_cover_every_row_once_and_overlap_their_neighbours() {
        let blank = vec![0; 2160];
        assert_eq!(
            bands(&blank[..100], 1),
            vec![Band {
                rows: 0..100,
                own: 0..100
            }]
        );
        let two = bands(&blank, 2);
        assert_eq!(
            two[0],
            Band {
                rows: 0..1080 + OVERLAP,
                own: 0..1080
            }
        );
        assert_eq!(
            two[1],
            Band {
                rows: 1080 - OVERLAP..2160,
                own: 1080..2160
            }
        );
        // Never more than MAX_BANDS, never an empty band.
        assert_eq!(bands(&blank, 64).len(), MAX_BANDS);
        assert_eq!(bands(&blank[..3], 4).len(), 3);
        let covered: u32 = bands(&[0; 2161], 3)
            .iter()
            .map(|b| b.own.len() as u32)
            .sum();
        assert_eq!(covered, 2161);
    }

    #[test]
    fn bands_share_the_ink_not_the_rows() {
        // Text only in the last quarter: the cut between two bands falls inside it.
        let mut weights = vec![0; 2000];
        weights[1500..].fill(100);
        let two = bands(&weights, 2);
        let cut = two[0].own.end;
        assert!((1700..1800).contains(&cut), "cut at row {cut}");
        assert_eq!(two[1].own, cut..2000);
        // Two rows of three pixels: one change in each.
        assert_eq!(ink(&[1, 1, 2, 2, 2, 3], 3), vec![1, 1]);
    }
}
