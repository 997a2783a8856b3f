//! xdotool key syntax (`ctrl+shift+t`, `Return`, `alt+Tab`, `KP_Enter`), as the model writes
//! it, mapped to enigo keys.
//!
//! Each table row starts with the X keysym name the key produces (what `xdotool` and `xev`
//! call it), then the other spellings models use. Names match without regard to case.

use enigo::Key;

/// A key table row: the X keysym name, other accepted names, the key.
type Row = (&'static str, &'static [&'static str], Key);

/// X keysyms enigo has no variant for; on X11 `Key::Other` carries a keysym.
mod keysym {
    pub const KP_ENTER: u32 = 0xff8d;
    pub const KP_MULTIPLY: u32 = 0xffaa;
    pub const KP_ADD: u32 = 0xffab;
    pub const KP_SUBTRACT: u32 = 0xffad;
    pub const KP_DECIMAL: u32 = 0xffae;
    pub const KP_DIVIDE: u32 = 0xffaf;
    pub const KP_0: u32 = 0xffb0;
    pub const MENU: u32 = 0xff67;
    pub const ISO_LEFT_TAB: u32 = 0xfe20;
    pub const META_L: u32 = 0xffe7;
}

/// Every named key. Single characters (`a`, `7`, `é`) need no row: they are typed as
/// themselves.
pub const TABLE: &[Row] = &[
    // Modifiers
    (
        "Control_L",
        &["ctrl", "control", "ctrl_l", "lctrl"],
        Key::Control,
    ),
    ("Control_R", &["ctrl_r", "rctrl"], Key::RControl),
    ("Shift_L", &["shift", "lshift"], Key::Shift),
    ("Shift_R", &["rshift"], Key::RShift),
    ("Alt_L", &["alt", "lalt", "option"], Key::Alt),
    (
        "Super_L",
        &["super", "win", "windows", "cmd", "command", "meta"],
        Key::Meta,
    ),
    ("Meta_L", &[], Key::Other(keysym::META_L)),
    // Editing and navigation
    ("Return", &["enter", "ret"], Key::Return),
    ("KP_Enter", &["kp_return"], Key::Other(keysym::KP_ENTER)),
    ("Tab", &[], Key::Tab),
    ("ISO_Left_Tab", &[], Key::Other(keysym::ISO_LEFT_TAB)),
    ("Escape", &["esc"], Key::Escape),
    ("BackSpace", &["bksp"], Key::Backspace),
    ("Delete", &["del"], Key::Delete),
    ("Insert", &["ins"], Key::Insert),
    ("space", &["spc"], Key::Space),
    ("Home", &[], Key::Home),
    ("End", &[], Key::End),
    ("Prior", &["page_up", "pageup", "pgup"], Key::PageUp),
    ("Next", &["page_down", "pagedown", "pgdn"], Key::PageDown),
    ("Up", &["uparrow", "arrowup"], Key::UpArrow),
    ("Down", &["downarrow", "arrowdown"], Key::DownArrow),
    ("Left", &["leftarrow", "arrowleft"], Key::LeftArrow),
    ("Right", &["rightarrow", "arrowright"], Key::RightArrow),
    ("Menu", &["apps", "context_menu"], Key::Other(keysym::MENU)),
    (
        "Print",
        &["printscreen", "prtsc", "print_screen"],
        Key::PrintScr,
    ),
    ("Pause", &["break"], Key::Pause),
    ("Caps_Lock", &["capslock"], Key::CapsLock),
    ("Num_Lock", &["numlock"], Key::Numlock),
    ("Scroll_Lock", &["scrolllock"], Key::ScrollLock),
    // Function keys
    ("F1", &[], Key::F1),
    ("F2", &[], Key::F2),
    ("F3", &[], Key::F3),
    ("F4", &[], Key::F4),
    ("F5", &[], Key::F5),
    ("F6", &[], Key::F6),
    ("F7", &[], Key::F7),
    ("F8", &[], Key::F8),
    ("F9", &[], Key::F9),
    ("F10", &[], Key::F10),
    ("F11", &[], Key::F11),
    ("F12", &[], Key::F12),
    ("F13", &[], Key::F13),
    ("F14", &[], Key::F14),
    ("F15", &[], Key::F15),
    ("F16", &[], Key::F16),
    ("F17", &[], Key::F17),
    ("F18", &[], Key::F18),
    ("F19", &[], Key::F19),
    ("F20", &[], Key::F20),
    // Keypad
    ("KP_0", &["numpad0"], Key::Other(keysym::KP_0)),
    ("KP_1", &["numpad1"], Key::Other(keysym::KP_0 + 1)),
    ("KP_2", &["numpad2"], Key::Other(keysym::KP_0 + 2)),
    ("KP_3", &["numpad3"], Key::Other(keysym::KP_0 + 3)),
    ("KP_4", &["numpad4"], Key::Other(keysym::KP_0 + 4)),
    ("KP_5", &["numpad5"], Key::Other(keysym::KP_0 + 5)),
    ("KP_6", &["numpad6"], Key::Other(keysym::KP_0 + 6)),
    ("KP_7", &["numpad7"], Key::Other(keysym::KP_0 + 7)),
    ("KP_8", &["numpad8"], Key::Other(keysym::KP_0 + 8)),
    ("KP_9", &["numpad9"], Key::Other(keysym::KP_0 + 9)),
    ("KP_Add", &[], Key::Other(keysym::KP_ADD)),
    ("KP_Subtract", &[], Key::Other(keysym::KP_SUBTRACT)),
    ("KP_Multiply", &[], Key::Other(keysym::KP_MULTIPLY)),
    ("KP_Divide", &[], Key::Other(keysym::KP_DIVIDE)),
    ("KP_Decimal", &[], Key::Other(keysym::KP_DECIMAL)),
    // Media
    (
        "XF86AudioMute",
        &["audiomute", "volumemute", "mute"],
        Key::VolumeMute,
    ),
    ("XF86AudioLowerVolume", &["volumedown"], Key::VolumeDown),
    ("XF86AudioRaiseVolume", &["volumeup"], Key::VolumeUp),
    (
        "XF86AudioPlay",
        &["audioplay", "playpause"],
        Key::MediaPlayPause,
    ),
    ("XF86AudioNext", &["audionext"], Key::MediaNextTrack),
    ("XF86AudioPrev", &["audioprev"], Key::MediaPrevTrack),
    // Characters xdotool spells out
    ("plus", &[], Key::Unicode('+')),
    ("minus", &[], Key::Unicode('-')),
    ("equal", &[], Key::Unicode('=')),
    ("comma", &[], Key::Unicode(',')),
    ("period", &["dot"], Key::Unicode('.')),
    ("slash", &[], Key::Unicode('/')),
    ("backslash", &[], Key::Unicode('\\')),
    ("semicolon", &[], Key::Unicode(';')),
    ("colon", &[], Key::Unicode(':')),
    ("apostrophe", &["quoteright"], Key::Unicode('\'')),
    ("quotedbl", &[], Key::Unicode('"')),
    ("grave", &["quoteleft", "backtick"], Key::Unicode('`')),
    ("bracketleft", &[], Key::Unicode('[')),
    ("bracketright", &[], Key::Unicode(']')),
    ("braceleft", &[], Key::Unicode('{')),
    ("braceright", &[], Key::Unicode('}')),
    ("parenleft", &[], Key::Unicode('(')),
    ("parenright", &[], Key::Unicode(')')),
    ("less", &[], Key::Unicode('<')),
    ("greater", &[], Key::Unicode('>')),
    ("question", &[], Key::Unicode('?')),
    ("exclam", &[], Key::Unicode('!')),
    ("at", &[], Key::Unicode('@')),
    ("numbersign", &["hash"], Key::Unicode('#')),
    ("dollar", &[], Key::Unicode('$')),
    ("percent", &[], Key::Unicode('%')),
    ("asciicircum", &["caret"], Key::Unicode('^')),
    ("ampersand", &[], Key::Unicode('&')),
    ("asterisk", &[], Key::Unicode('*')),
    ("underscore", &[], Key::Unicode('_')),
    ("bar", &["pipe"], Key::Unicode('|')),
    ("asciitilde", &["tilde"], Key::Unicode('~')),
];

/// One key by name: a table name or a single character.
pub fn key(name: &str) -> Option<Key> {
    if let Some((_, _, key)) = TABLE.iter().find(|(x, others, _)| {
        x.eq_ignore_ascii_case(name) || others.iter().any(|o| o.eq_ignore_ascii_case(name))
    }) {
        return Some(*key);
    }
    let mut chars = name.chars();
    match (chars.next(), chars.next()) {
        (Some(c), None) if !c.is_control() => Some(Key::Unicode(c)),
        _ => None,
    }
}

/// The keysym a key sends, as xkb's keymap text spells it: the table's X name, else the
/// number (characters outside Latin-1 as Unicode keysyms), for the Wayland keymap.
pub fn xkb_keysym(key: Key) -> Option<String> {
    if let Some((name, _, _)) = TABLE.iter().find(|(_, _, k)| *k == key) {
        return Some((*name).to_string());
    }
    match key {
        Key::Unicode(c) => {
            let c = u32::from(c);
            let latin1 = (0x20..=0x7e).contains(&c) || (0xa0..=0xff).contains(&c);
            Some(format!("0x{:x}", if latin1 { c } else { 0x0100_0000 | c }))
        }
        Key::Other(keysym) => Some(format!("0x{keysym:x}")),
        _ => None,
    }
}

/// Keys pressed together, in order (released in reverse).
pub type Combo = Vec<Key>;

/// Parses xdotool syntax: combos joined by `+`, several combos separated by spaces
/// (`ctrl+a BackSpace`). The error names the key that is not known.
pub fn parse(text: &str) -> Result<Vec<Combo>, KeyError> {
    let combos: Vec<&str> = text.split_whitespace().collect();
    if combos.is_empty() {
        return Err(KeyError::NoKey);
    }
    combos
        .into_iter()
        .map(|combo| {
            // A lone `+` is the plus key; otherwise `+` joins keys.
            let names: Vec<&str> = if combo == "+" {
                vec!["plus"]
            } else {
                combo.split('+').collect()
            };
            names
                .into_iter()
                .map(|name| {
                    if name.is_empty() {
                        return Err(KeyError::EmptyName {
                            combo: combo.to_string(),
                        });
                    }
                    key(name).ok_or_else(|| KeyError::Unknown {
                        name: name.to_string(),
                        combo: combo.to_string(),
                    })
                })
                .collect()
        })
        .collect()
}

/// Modifier names for clicks and scrolls (`text`/`key` = "shift", "ctrl+alt").
pub fn modifiers(text: &str) -> Result<Combo, KeyError> {
    let mut combos = parse(text)?;
    if combos.len() != 1 {
        return Err(KeyError::NotOneCombo {
            text: text.to_string(),
        });
    }
    let combo = combos.remove(0);
    if let Some(bad) = combo.iter().find(|k| !is_modifier(**k)) {
        return Err(KeyError::NotAModifier {
            text: text.to_string(),
            key: *bad,
        });
    }
    Ok(combo)
}

/// Why a text names no keys, or not the modifiers asked for.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum KeyError {
    #[error("`text` names no key; use xdotool syntax such as `Return` or `ctrl+s`")]
    NoKey,
    #[error("`{combo}` has an empty key name (write `plus` for the + key)")]
    EmptyName { combo: String },
    #[error(
        "unknown key `{name}` in `{combo}`; use xdotool key names such as Return, Tab, Escape, BackSpace, Page_Down, F5, KP_Enter, ctrl, shift, alt, super, or a single character"
    )]
    Unknown { name: String, combo: String },
    #[error("`{text}` must be one modifier combo such as `shift` or `ctrl+alt`")]
    NotOneCombo { text: String },
    #[error("`{text}`: {key:?} is not a modifier (use shift, ctrl, alt or super)")]
    NotAModifier { text: String, key: Key },
}

fn is_modifier(key: Key) -> bool {
    matches!(
        key,
        Key::Control
            | Key::RControl
            | Key::Shift
            | Key::RShift
            | Key::Alt
            | Key::Meta
            | Key::Other(keysym::META_L)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_found_by_each_of_its_names_in_any_case() {
        for (x_name, others, expected) in TABLE {
            for name in std::iter::once(x_name).chain(others.iter()) {
                assert_eq!(key(name), Some(*expected), "{name}");
                assert_eq!(key(&name.to_uppercase()), Some(*expected), "{name}");
                assert_eq!(key(&name.to_lowercase()), Some(*expected), "{name}");
            }
        }
    }

    #[test]
    fn no_name_is_in_two_rows() {
        let mut seen = std::collections::HashSet::new();
        for (x_name, others, _) in TABLE {
            for name in std::iter::once(x_name).chain(others.iter()) {
                assert!(seen.insert(name.to_lowercase()), "`{name}` is listed twice");
            }
        }
    }

    #[test]
    fn the_issue_examples_parse() {
        assert_eq!(
            parse("ctrl+shift+t").unwrap(),
            vec![vec![Key::Control, Key::Shift, Key::Unicode('t')]]
        );
        assert_eq!(parse("Return").unwrap(), vec![vec![Key::Return]]);
        assert_eq!(parse("super").unwrap(), vec![vec![Key::Meta]]);
        assert_eq!(parse("alt+Tab").unwrap(), vec![vec![Key::Alt, Key::Tab]]);
        assert_eq!(parse("F5").unwrap(), vec![vec![Key::F5]]);
        assert_eq!(parse("Page_Down").unwrap(), vec![vec![Key::PageDown]]);
        assert_eq!(
            parse("KP_Enter").unwrap(),
            vec![vec![Key::Other(keysym::KP_ENTER)]]
        );
        assert_eq!(
            parse("ctrl+a  BackSpace").unwrap(),
            vec![vec![Key::Control, Key::Unicode('a')], vec![Key::Backspace]]
        );
        assert_eq!(
            parse("ctrl+plus").unwrap(),
            vec![vec![Key::Control, Key::Unicode('+')]]
        );
        assert_eq!(parse("+").unwrap(), vec![vec![Key::Unicode('+')]]);
        assert_eq!(parse("é").unwrap(), vec![vec![Key::Unicode('é')]]);
    }

    #[test]
    fn bad_keys_are_named() {
        let e = parse("ctrl+Retrun").unwrap_err().to_string();
        assert!(e.contains("unknown key `Retrun` in `ctrl+Retrun`"), "{e}");
        assert!(
            parse("  ")
                .unwrap_err()
                .to_string()
                .contains("names no key")
        );
        assert!(
            parse("ctrl++")
                .unwrap_err()
                .to_string()
                .contains("empty key name")
        );
        assert!(parse("\u{7}").is_err());
    }

    #[test]
    fn modifiers_are_only_modifiers() {
        assert_eq!(modifiers("shift").unwrap(), vec![Key::Shift]);
        assert_eq!(modifiers("ctrl+alt").unwrap(), vec![Key::Control, Key::Alt]);
        assert!(
            modifiers("ctrl+a")
                .unwrap_err()
                .to_string()
                .contains("not a modifier")
        );
        assert!(
            modifiers("shift ctrl")
                .unwrap_err()
                .to_string()
                .contains("one modifier combo")
        );
    }
}
