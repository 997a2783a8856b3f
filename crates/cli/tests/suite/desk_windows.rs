//! The desktop's windows as the app sees them (`deskhand_engine::windows`, issue 38): the
//! focus and the pointer read, moved by someone else, and put back; a process's windows
//! found by its pid. On the real display, with its window manager (openbox under
//! `scripts/test.sh`).

use std::time::Duration;

use deskhand_engine::elements::Rect;
use deskhand_engine::windows::Desk;
use deskhand_test_support::wait_until;
use deskhand_test_support::x11::{self, Program, run};

fn xterm(title: &str, geometry: &str) -> (Program, u32) {
    let (program, id) = x11::xterm(title, &["-geometry", geometry]);
    (program, id.parse().unwrap())
}

#[test]
fn the_focus_and_the_pointer_go_back_where_they_were_and_a_process_windows_are_found() {
    let Some(_display) = x11::display() else {
        return;
    };
    let (a, a_id) = xterm("desk-windows-a", "40x10+100+100");
    let (_b, b_id) = xterm("desk-windows-b", "40x10+700+400");
    let desk = Desk::open().unwrap();
    run("xdotool", &["windowactivate", "--sync", &a_id.to_string()]);
    run("xdotool", &["mousemove", "--sync", "150", "150"]);
    let then = desk.focus().unwrap();
    assert_eq!((then.window, then.pointer), (a_id, (150, 150)));

    // Someone else moves them, as a click on Approve in another window does.
    run("xdotool", &["windowactivate", "--sync", &b_id.to_string()]);
    run("xdotool", &["mousemove", "--sync", "760", "450"]);
    assert_eq!(desk.focus().unwrap().window, b_id);

    desk.restore(&then).unwrap();
    assert!(
        wait_until(Duration::from_secs(2), || desk.focus().unwrap() == then),
        "the focus and the pointer are back: {:?}, want {then:?}",
        desk.focus()
    );
    assert_eq!(x11::pointer(), (150, 150));

    // The xterm's window, found by its pid where `xwininfo` says it is (xdotool's geometry
    // counts the frame twice); none of this test's.
    let info = run("xwininfo", &["-id", &a_id.to_string()]);
    let field = |name: &str| -> i32 {
        info.lines()
            .find_map(|l| l.trim().strip_prefix(&format!("{name}:")))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in {info}"))
    };
    assert_eq!(desk.owner(a_id), Some(a.0.id()));
    assert_eq!(
        desk.windows_of(a.0.id()).unwrap(),
        vec![Rect {
            x: field("Absolute upper-left X"),
            y: field("Absolute upper-left Y"),
            width: field("Width"),
            height: field("Height"),
        }]
    );
    assert_eq!(desk.windows_of(std::process::id()).unwrap(), Vec::new());
}
