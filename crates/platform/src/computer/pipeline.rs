//! A frame as the model gets it: scaled to the model's size, encoded, timed per stage.

use std::cell::RefCell;
use std::time::{Duration, Instant};

use fast_image_resize::images::{Image, ImageRef};
use fast_image_resize::{FilterType, PixelType, ResizeAlg, ResizeOptions, Resizer};
use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::{CompressionType, FilterType as PngFilter, PngEncoder};
use image::{ExtendedColorType, ImageEncoder};

use super::screen::{Frame, Monitor, Screen, ScreenError};
use deskhand_protocol::scaling::Size;

/// How screenshots are encoded. PNG keeps text crisp; JPEG is smaller for photos and video.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Format {
    #[default]
    Png,
    Jpeg {
        quality: u8,
    },
}

impl Format {
    pub fn media_type(self) -> &'static str {
        match self {
            Self::Png => "image/png",
            Self::Jpeg { .. } => "image/jpeg",
        }
    }
}

/// Time spent in each stage of one screenshot.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timings {
    pub capture: Duration,
    pub scale: Duration,
    pub encode: Duration,
}

/// An encoded screenshot with the sizes it was made from.
#[derive(Clone, Debug, PartialEq)]
pub struct Screenshot {
    pub bytes: Vec<u8>,
    pub media_type: &'static str,
    /// The captured frame's size.
    pub screen: Size,
    /// The encoded image's size.
    pub model: Size,
    pub timings: Timings,
}

thread_local! {
    /// Kept for the next frame: a resizer's scratch buffer for a 1080p frame is 6 MB, and
    /// fresh memory costs more here than the resize itself, in page faults
    /// (docs/benchmarks.md, "The computer tool").
    static RESIZER: RefCell<Resizer> = RefCell::new(Resizer::new());
}

/// `frame` resized to `to` (bilinear), or its `crop` (left, top, width, height) resized.
pub fn resize(
    frame: &Frame,
    crop: Option<(u32, u32, u32, u32)>,
    to: Size,
) -> Result<Frame, ScreenError> {
    let whole = (0, 0, frame.size.width, frame.size.height);
    if crop.is_none_or(|c| c == whole) && to == frame.size {
        return Ok(frame.clone());
    }
    let src = ImageRef::new(
        frame.size.width,
        frame.size.height,
        &frame.rgba,
        PixelType::U8x4,
    )
    .map_err(|e| ScreenError::Image(e.to_string()))?;
    let mut dst = Image::new(to.width, to.height, PixelType::U8x4);
    // Screens are opaque: skipping alpha weighting saves time and changes nothing.
    let mut options = ResizeOptions::new()
        .resize_alg(ResizeAlg::Convolution(FilterType::Bilinear))
        .use_alpha(false);
    if let Some((l, t, w, h)) = crop {
        options = options.crop(f64::from(l), f64::from(t), f64::from(w), f64::from(h));
    }
    RESIZER
        .with_borrow_mut(|resizer| resizer.resize(&src, &mut dst, &options))
        .map_err(|e| ScreenError::Image(e.to_string()))?;
    Ok(Frame {
        size: to,
        rgba: dst.into_vec(),
    })
}

/// Encodes an opaque frame (its alpha is dropped).
pub fn encode(frame: &Frame, format: Format) -> Result<Vec<u8>, ScreenError> {
    // The encoders panic on a buffer that is not the image's size: say so instead.
    let pixels = frame.size.width as usize * frame.size.height as usize;
    if frame.rgba.len() != pixels * 4 {
        return Err(ScreenError::Image(format!(
            "a {}x{} frame holds {} bytes, not {}",
            frame.size.width,
            frame.size.height,
            frame.rgba.len(),
            pixels * 4
        )));
    }
    let mut rgb = vec![0; frame.rgba.len() / 4 * 3];
    for (out, pixel) in rgb.chunks_exact_mut(3).zip(frame.rgba.chunks_exact(4)) {
        out.copy_from_slice(&pixel[..3]);
    }
    let mut out = Vec::with_capacity(rgb.len() / 8);
    let Size { width, height } = frame.size;
    let result =
        match format {
            // zlib level 1: a third smaller than the fastest mode for a few ms more
            // (docs/benchmarks.md, "The computer tool"), and bytes are what an upload waits on.
            Format::Png => PngEncoder::new_with_quality(
                &mut out,
                CompressionType::Level(1),
                PngFilter::Adaptive,
            )
            .write_image(&rgb, width, height, ExtendedColorType::Rgb8),
            Format::Jpeg { quality } => JpegEncoder::new_with_quality(&mut out, quality)
                .write_image(&rgb, width, height, ExtendedColorType::Rgb8),
        };
    result.map_err(|e| ScreenError::Image(e.to_string()))?;
    Ok(out)
}

/// Scales an already captured frame to `model` and encodes it.
pub fn finish(
    frame: &Frame,
    model: Size,
    format: Format,
    capture: Duration,
) -> Result<Screenshot, ScreenError> {
    let started = Instant::now();
    let scaled = resize(frame, None, model)?;
    let scale = started.elapsed();
    let started = Instant::now();
    let bytes = encode(&scaled, format)?;
    Ok(Screenshot {
        bytes,
        media_type: format.media_type(),
        screen: frame.size,
        model,
        timings: Timings {
            capture,
            scale,
            encode: started.elapsed(),
        },
    })
}

/// Captures `monitor` and returns it as the model would see it: what the CLI's `screenshot`
/// and the window's "attach a screenshot" use.
pub fn screenshot(
    screen: &dyn Screen,
    monitor: &Monitor,
    format: Format,
) -> Result<Screenshot, ScreenError> {
    let started = Instant::now();
    let frame = screen.capture(monitor)?;
    let capture = started.elapsed();
    finish(
        &frame,
        deskhand_protocol::scaling::model_size(frame.size),
        format,
        capture,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use deskhand_protocol::images::media_type_of;

    fn gradient(size: Size) -> Frame {
        let mut rgba = Vec::new();
        for y in 0..size.height {
            for x in 0..size.width {
                rgba.extend([(x % 256) as u8, (y % 256) as u8, 0x80, 0xff]);
            }
        }
        Frame { size, rgba }
    }

    #[test]
    fn scaled_images_have_exactly_the_model_size() {
        let frame = gradient(Size::new(1920, 1080));
        let shot = finish(&frame, Size::new(1366, 768), Format::Png, Duration::ZERO).unwrap();
        assert_eq!(media_type_of(&shot.bytes), Some("image/png"));
        let size = imagesize::blob_size(&shot.bytes).unwrap();
        assert_eq!((size.width, size.height), (1366, 768));
        let jpeg = finish(
            &frame,
            Size::new(1366, 768),
            Format::Jpeg { quality: 80 },
            Duration::ZERO,
        )
        .unwrap();
        assert_eq!(media_type_of(&jpeg.bytes), Some("image/jpeg"));
        let size = imagesize::blob_size(&jpeg.bytes).unwrap();
        assert_eq!((size.width, size.height), (1366, 768));
    }

    #[test]
    fn crops_take_the_region_asked_for() {
        let frame = gradient(Size::new(200, 100));
        let crop = resize(&frame, Some((50, 20, 10, 10)), Size::new(10, 10)).unwrap();
        // Pixel (0, 0) of the crop is pixel (50, 20) of the frame.
        assert_eq!(&crop.rgba[..3], &[50, 20, 0x80]);
        let same = resize(&frame, None, frame.size).unwrap();
        assert_eq!(same, frame);
    }

    /// A frame whose buffer is not its size, or a crop outside it, is an error, not a crash.
    #[test]
    fn a_frame_that_is_not_its_size_is_an_error() {
        let mut frame = gradient(Size::new(200, 100));
        let outside = resize(&frame, Some((150, 50, 100, 100)), Size::new(10, 10));
        assert!(matches!(outside, Err(ScreenError::Image(_))), "{outside:?}");
        frame.rgba.truncate(100);
        let short = resize(&frame, None, Size::new(10, 10));
        assert!(matches!(short, Err(ScreenError::Image(_))), "{short:?}");
        let encoded = encode(&frame, Format::Png);
        assert!(matches!(encoded, Err(ScreenError::Image(_))), "{encoded:?}");
    }
}
