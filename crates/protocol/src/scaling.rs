//! The screenshot size the model sees, and the mapping between its pixels and the screen's.
//!
//! The model clicks in the screenshot's pixel space. Every coordinate it sends is mapped back
//! with the same factors that shrank the frame, and onto the monitor's own origin and units,
//! so that clicks land where the model aimed on HiDPI and multi-monitor desktops alike.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The API shrinks images above these (and clicks would then land wrong), so never send more.
pub const MAX_LONG_EDGE: u32 = 1568;
pub const MAX_PIXELS: u32 = 1_150_000;

/// Width × height in pixels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ts_rs::TS, JsonSchema)]
pub struct Size {
    pub width: u32,
    pub height: u32,
}

impl Size {
    pub const fn new(width: u32, height: u32) -> Self {
        Self { width, height }
    }

    fn aspect(self) -> f64 {
        f64::from(self.width) / f64::from(self.height)
    }

    fn pixels(self) -> u64 {
        u64::from(self.width) * u64::from(self.height)
    }
}

impl std::fmt::Display for Size {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

/// The reference implementation's targets: XGA (4:3), WXGA (16:10) and FWXGA (~16:9).
pub const TARGETS: [Size; 3] = [
    Size::new(1024, 768),
    Size::new(1280, 800),
    Size::new(1366, 768),
];

/// How far a screen's aspect ratio may be from a target's and still use it, as the
/// reference allows (1366x768 is not exactly 16:9).
const ASPECT_TOLERANCE: f64 = 0.02;

/// The size the model sees for a frame of `screen` pixels.
///
/// A screen whose aspect ratio matches a target and is wider than it gets that target, as in
/// the reference. Any other screen (ultrawide, portrait, odd sizes) keeps its aspect ratio and
/// is shrunk, never enlarged, to at most the largest target's pixel count and the API's long
/// edge, where the reference would send it unscaled and over the API's limits.
pub fn model_size(screen: Size) -> Size {
    if screen.width == 0 || screen.height == 0 {
        return screen;
    }
    if let Some(target) = TARGETS
        .iter()
        .find(|t| (t.aspect() - screen.aspect()).abs() < ASPECT_TOLERANCE)
    {
        return if target.width < screen.width {
            *target
        } else {
            screen
        };
    }
    let budget = TARGETS.iter().map(|t| t.pixels()).max().unwrap_or(0);
    shrink(screen, budget)
}

/// The largest size within the API's limits with `size`'s aspect ratio, never larger than
/// `size`: what a full-resolution `zoom` crop is sent at.
pub fn within_limits(size: Size) -> Size {
    shrink(size, u64::from(MAX_PIXELS))
}

/// The size the model sees for a frame of `screen` pixels when the person set a largest
/// size: the screen's aspect ratio, shrunk (never enlarged) to fit inside `bound` and the
/// API's limits. Without a bound, [`model_size`].
pub fn model_size_within(screen: Size, bound: Option<Size>) -> Size {
    let Some(bound) = bound else {
        return model_size(screen);
    };
    if screen.width == 0 || screen.height == 0 || bound.width == 0 || bound.height == 0 {
        return within_limits(screen);
    }
    let factor = (f64::from(bound.width) / f64::from(screen.width))
        .min(f64::from(bound.height) / f64::from(screen.height));
    if factor >= 1.0 {
        return within_limits(screen);
    }
    within_limits(Size::new(
        ((f64::from(screen.width) * factor).floor() as u32).max(1),
        ((f64::from(screen.height) * factor).floor() as u32).max(1),
    ))
}

/// `size` shrunk, keeping its aspect ratio, to at most `max_pixels` and the API's long edge.
fn shrink(size: Size, max_pixels: u64) -> Size {
    if size.width == 0 || size.height == 0 {
        return size;
    }
    let by_area = (max_pixels as f64 / size.pixels() as f64).sqrt();
    let by_edge = f64::from(MAX_LONG_EDGE) / f64::from(size.width.max(size.height));
    let factor = by_area.min(by_edge);
    if factor >= 1.0 {
        return size;
    }
    Size::new(
        ((f64::from(size.width) * factor).floor() as u32).max(1),
        ((f64::from(size.height) * factor).floor() as u32).max(1),
    )
}

/// Where a monitor is on the desktop, in the input driver's units, and how its captured
/// frames are sized. On X11 both are physical pixels; on macOS input is in points while
/// frames are in pixels, so `input` and `pixels` differ by the scale factor.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Geometry {
    /// The monitor's top-left corner on the desktop, in input units.
    pub x: i32,
    pub y: i32,
    /// The monitor's size in input units.
    pub input: Size,
    /// A captured frame's size in pixels.
    pub pixels: Size,
}

/// Maps model coordinates to the desktop and back for one monitor.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mapping {
    pub geometry: Geometry,
    /// What the model sees and is told (`display_width_px` / `display_height_px`).
    pub model: Size,
}

impl Mapping {
    /// The mapping for a monitor; `bound` is the largest size the model may see (see
    /// [`model_size_within`]).
    pub fn new(geometry: Geometry, bound: Option<Size>) -> Self {
        Self {
            geometry,
            model: model_size_within(geometry.pixels, bound),
        }
    }

    /// The desktop point (input units) for a model point. The caller checks the model
    /// point is inside `model`; the result is inside the monitor.
    pub fn to_screen(&self, x: u32, y: u32) -> (i32, i32) {
        let g = &self.geometry;
        let sx = scale(x, g.input.width, self.model.width);
        let sy = scale(y, g.input.height, self.model.height);
        (g.x + sx as i32, g.y + sy as i32)
    }

    /// The model point for a desktop point, or `None` if the point is not on this monitor.
    pub fn to_model(&self, x: i32, y: i32) -> Option<(u32, u32)> {
        let g = &self.geometry;
        let (dx, dy) = (x.checked_sub(g.x)?, y.checked_sub(g.y)?);
        if dx < 0 || dy < 0 || dx as u32 >= g.input.width || dy as u32 >= g.input.height {
            return None;
        }
        Some((
            scale(dx as u32, self.model.width, g.input.width),
            scale(dy as u32, self.model.height, g.input.height),
        ))
    }

    /// The frame-pixel rectangle `(left, top, width, height)` that a model rectangle covers,
    /// for `zoom`. Corners may come in any order; the result is at least one pixel.
    pub fn to_pixels(&self, x1: u32, y1: u32, x2: u32, y2: u32) -> (u32, u32, u32, u32) {
        let p = self.geometry.pixels;
        let (l, r) = (x1.min(x2), x1.max(x2));
        let (t, b) = (y1.min(y2), y1.max(y2));
        let left = scale(l, p.width, self.model.width);
        let top = scale(t, p.height, self.model.height);
        let right = edge(r, p.width, self.model.width).max(left + 1);
        let bottom = edge(b, p.height, self.model.height).max(top + 1);
        (left, top, right - left, bottom - top)
    }
}

/// `value * to / from`, rounded to the nearest and kept below `to` (a pixel index).
fn scale(value: u32, to: u32, from: u32) -> u32 {
    edge(value, to, from).min(to.saturating_sub(1))
}

/// `value * to / from`, rounded to the nearest and kept at most `to` (a rectangle's edge).
fn edge(value: u32, to: u32, from: u32) -> u32 {
    if from == 0 {
        return 0;
    }
    let scaled = (u64::from(value) * u64::from(to) * 2 + u64::from(from)) / (u64::from(from) * 2);
    (scaled as u32).min(to)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inside_api_limits(s: Size) -> bool {
        s.width.max(s.height) <= MAX_LONG_EDGE && s.width * s.height <= MAX_PIXELS
    }

    #[test]
    fn a_bound_keeps_the_aspect_ratio_and_never_enlarges() {
        let screen = Size::new(1920, 1080);
        assert_eq!(model_size_within(screen, None), Size::new(1366, 768));
        assert_eq!(
            model_size_within(screen, Some(Size::new(1024, 768))),
            Size::new(1024, 576)
        );
        assert_eq!(
            model_size_within(screen, Some(Size::new(1280, 800))),
            Size::new(1280, 720)
        );
        assert_eq!(
            model_size_within(Size::new(800, 600), Some(Size::new(1280, 800))),
            Size::new(800, 600)
        );
    }

    #[test]
    fn common_screens_get_the_reference_targets() {
        for (screen, model) in [
            ((1920, 1080), (1366, 768)),
            ((2560, 1440), (1366, 768)),
            ((3840, 2160), (1366, 768)),
            ((1920, 1200), (1280, 800)),
            ((2880, 1800), (1280, 800)),
            ((1600, 1200), (1024, 768)),
            ((2048, 1536), (1024, 768)),
        ] {
            assert_eq!(
                model_size(Size::new(screen.0, screen.1)),
                Size::new(model.0, model.1),
                "{screen:?}"
            );
        }
    }

    #[test]
    fn small_screens_are_never_enlarged() {
        for (w, h) in [
            (1024, 768),
            (1280, 800),
            (1366, 768),
            (1280, 720),
            (800, 600),
            (640, 480),
        ] {
            assert_eq!(model_size(Size::new(w, h)), Size::new(w, h));
        }
    }

    #[test]
    fn other_shapes_keep_their_aspect_and_stay_within_the_api_limits() {
        for (w, h) in [
            (3840, 1080),
            (5120, 1440),
            (1080, 1920),
            (2560, 1080),
            (1200, 1920),
            (10000, 500),
        ] {
            let screen = Size::new(w, h);
            let model = model_size(screen);
            assert!(inside_api_limits(model), "{screen} -> {model}");
            assert!(model.width <= w && model.height <= h);
            let drift = (model.aspect() - screen.aspect()).abs() / screen.aspect();
            assert!(drift < 0.01, "{screen} -> {model}: aspect drifts {drift}");
        }
        assert_eq!(model_size(Size::new(3840, 1080)), Size::new(1568, 441));
        assert_eq!(within_limits(Size::new(960, 540)), Size::new(960, 540));
        assert!(inside_api_limits(within_limits(Size::new(3840, 2160))));
    }

    #[test]
    fn every_model_size_is_within_the_api_limits() {
        for w in (200..8000).step_by(97) {
            for h in (200..8000).step_by(89) {
                let model = model_size(Size::new(w, h));
                assert!(inside_api_limits(model), "{w}x{h} -> {model}");
                assert!(model.width <= w && model.height <= h, "{w}x{h} -> {model}");
            }
        }
    }

    fn mapping(x: i32, y: i32, input: (u32, u32), pixels: (u32, u32)) -> Mapping {
        Mapping::new(
            Geometry {
                x,
                y,
                input: Size::new(input.0, input.1),
                pixels: Size::new(pixels.0, pixels.1),
            },
            None,
        )
    }

    #[test]
    fn model_points_map_onto_the_monitor() {
        let m = mapping(0, 0, (1920, 1080), (1920, 1080));
        assert_eq!(m.model, Size::new(1366, 768));
        assert_eq!(m.to_screen(0, 0), (0, 0));
        assert_eq!(m.to_screen(683, 384), (960, 540));
        assert_eq!(m.to_screen(1365, 767), (1919, 1079));
        // A second monitor to the right, and a HiDPI one whose input units are points.
        let right = mapping(1920, 0, (1280, 1024), (1280, 1024));
        assert_eq!(right.model, Size::new(1145, 916));
        assert_eq!(right.to_screen(0, 0), (1920, 0));
        let hidpi = mapping(-1440, 200, (1440, 900), (2880, 1800));
        assert_eq!(hidpi.model, Size::new(1280, 800));
        assert_eq!(hidpi.to_screen(640, 400), (-1440 + 720, 200 + 450));
        assert_eq!(hidpi.to_model(-1440 + 720, 650), Some((640, 400)));
        assert_eq!(hidpi.to_model(-1441, 650), None);
        assert_eq!(hidpi.to_model(0, 650), None);
    }

    #[test]
    fn round_trips_are_off_by_at_most_one_model_pixel() {
        for m in [
            mapping(0, 0, (1920, 1080), (1920, 1080)),
            mapping(1920, 0, (2560, 1440), (2560, 1440)),
            mapping(-1440, 200, (1440, 900), (2880, 1800)),
            mapping(0, 1080, (3840, 1080), (3840, 1080)),
            mapping(0, 0, (1080, 1920), (1080, 1920)),
        ] {
            let g = m.geometry;
            for sx in (0..g.input.width).step_by(7) {
                for sy in (0..g.input.height).step_by(13) {
                    let (mx, my) = m.to_model(g.x + sx as i32, g.y + sy as i32).unwrap();
                    assert!(mx < m.model.width && my < m.model.height);
                    let (bx, by) = m.to_screen(mx, my);
                    let (mx2, my2) = m.to_model(bx, by).unwrap();
                    assert!(mx.abs_diff(mx2) <= 1 && my.abs_diff(my2) <= 1);
                    // And the screen point moves by less than one model pixel's worth.
                    let fx = f64::from(g.input.width) / f64::from(m.model.width);
                    let fy = f64::from(g.input.height) / f64::from(m.model.height);
                    assert!(f64::from((bx - g.x).abs_diff(sx as i32)) <= fx.ceil());
                    assert!(f64::from((by - g.y).abs_diff(sy as i32)) <= fy.ceil());
                }
            }
        }
    }

    #[test]
    fn zoom_regions_map_to_frame_pixels() {
        let m = mapping(0, 0, (1920, 1080), (1920, 1080));
        assert_eq!(m.to_pixels(0, 0, 683, 384), (0, 0, 960, 540));
        assert_eq!(m.to_pixels(683, 384, 0, 0), (0, 0, 960, 540));
        assert_eq!(m.to_pixels(10, 10, 10, 10).2, 1);
        assert_eq!(m.to_pixels(683, 384, 1366, 768), (960, 540, 960, 540));
    }
}
