use super::fixtures::element;
use super::refs::RefBook;
use super::*;
use deskhand_protocol::scaling::{Geometry, Mapping, Size};

fn snapshot() -> Snapshot {
    Snapshot {
        elements: vec![
            element("/1", "frame", "notes.txt", (0, 0, 800, 600)),
            element("/2", "panel", "", (0, 0, 800, 40)),
            element("/3", "push button", "Delete", (10, 5, 80, 30)),
            element("/4", "push button", "Cancel", (100, 5, 80, 30)),
        ],
        notes: Vec::new(),
    }
}

#[test]
fn the_hit_test_names_the_smallest_element_under_the_point() {
    let s = snapshot();
    assert_eq!(s.at(50, 20).map(|e| e.name.as_str()), Some("Delete"));
    assert_eq!(s.at(150, 20).map(|e| e.name.as_str()), Some("Cancel"));
    // Only the frame and a panel are there: nothing a person would call a target.
    assert_eq!(s.at(400, 300), None);
    assert_eq!(s.at(2000, 20), None);
}

#[test]
fn find_matches_text_and_role() {
    let s = snapshot();
    let names = |v: Vec<&Element>| v.iter().map(|e| e.name.clone()).collect::<Vec<_>>();
    assert_eq!(names(s.find(Some("del"), None)), ["Delete"]);
    assert_eq!(
        names(s.find(None, Some("push button"))),
        ["Delete", "Cancel"]
    );
    assert_eq!(
        names(s.find(Some("cancel"), Some("frame"))),
        Vec::<String>::new()
    );
}

#[test]
fn approvals_describe_the_element_in_words() {
    assert_eq!(
        snapshot().elements[2].describe(),
        "**Delete** (push button) in Mousepad"
    );
    assert!(snapshot().elements[2].is_sensitive());
    assert!(!snapshot().elements[3].is_sensitive());
    // A very long name is shortened on the approval line, saying so and how long it is.
    let mut long = snapshot().elements[2].clone();
    long.name = format!("Delete {}", "x".repeat(2000));
    assert_eq!(
        long.describe(),
        format!(
            "**Delete {}**… (2,007 characters) (push button) in Mousepad",
            "x".repeat(73)
        )
    );
}

#[test]
fn sensitive_names_are_whole_words() {
    for yes in [
        "Delete",
        "Delete file",
        "Send now",
        "PAY",
        "Löschen",
        "Submit!",
    ] {
        assert!(sensitive::is_sensitive(yes), "{yes}");
    }
    for no in ["Undelete", "Sender", "Cancel", "", "Payment plan"] {
        assert!(!sensitive::is_sensitive(no), "{no}");
    }
}

#[test]
fn bounds_are_mapped_into_the_models_coordinates() {
    let mapping = Mapping::new(
        Geometry {
            x: 0,
            y: 0,
            input: Size::new(1920, 1080),
            pixels: Size::new(1920, 1080),
        },
        None,
    );
    assert_eq!(mapping.model, Size::new(1366, 768));
    let r = Rect {
        x: 192,
        y: 108,
        width: 96,
        height: 54,
    };
    let [x, y, w, h] = r.to_model(&mapping).unwrap();
    assert_eq!((x, y), (137, 77));
    assert!((67..=69).contains(&w) && (37..=39).contains(&h), "{w}x{h}");
    let off = Rect { x: 3000, ..r };
    assert_eq!(off.to_model(&mapping), None);
}

#[test]
fn refs_stay_while_the_element_exists_and_a_gone_one_is_named() {
    let mut book = RefBook::default();
    let s = snapshot();
    let delete = book.reference(&s.elements[2]);
    assert_eq!(
        book.reference(&s.elements[2]),
        delete,
        "the same element, the same ref"
    );
    assert_ne!(book.reference(&s.elements[3]), delete);
    assert_eq!(book.resolve(&delete, &s).unwrap().name, "Delete");
    let mut later = s.clone();
    later.elements.remove(2);
    let e = book.resolve(&delete, &later).unwrap_err().to_string();
    assert!(
        e.contains("no longer exists") && e.contains("Delete"),
        "{e}"
    );
    assert!(
        book.resolve("e99", &s)
            .unwrap_err()
            .to_string()
            .contains("no element `e99`")
    );
}

/// An agent desktop without an accessibility bus has no tree: never the person's. Its
/// element map is empty with a note saying why, and the hit test says it cannot tell.
#[test]
fn an_agent_desktop_without_a_bus_reads_no_tree_and_says_so() {
    let tree = tree_of(true, None);
    let snapshot = tree.snapshot().expect("an empty map, not an error");
    assert!(snapshot.elements.is_empty());
    assert_eq!(snapshot.notes.len(), 1, "{:?}", snapshot.notes);
    assert!(
        snapshot.notes[0].contains("agent desktop's accessibility bus is not available"),
        "{:?}",
        snapshot.notes
    );
    let hit = tree.at(100, 100).expect_err("no element, and a reason");
    assert!(matches!(hit, ElementError::NoBus(_)), "{hit}");
    assert_eq!(hit.brief(), "no accessibility bus");
}
