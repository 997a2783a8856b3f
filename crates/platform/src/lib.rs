//! Everything Deskhand does through the operating system's native parts: the screen and the
//! input devices (X11, wlroots, portals), the element map (AT-SPI, OCR), agent desktops and the
//! sandbox the agent's programs run in. Every native dependency lives here and nowhere else;
//! `docs/porting.md` says where other systems would plug in.

pub mod computer;
pub mod desktop;
pub mod elements;
pub mod launch;
pub mod sandbox;
pub mod windows;
