//! The sandbox holds, tried as an attacker would: a sandboxed bash on an agent desktop tries
//! the two ways out that the desktop's own programs offered (a D-Bus `.service` file the
//! session bus would start outside, and openbox's root menu with its terminal), as root and as
//! a normal user; as root it tries `open_by_handle_at` and looks at its capabilities; without
//! the sandbox, as root, it tries to read Deskhand's memory maps; and `--share` refuses the
//! folders that would hand over everything.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::cli::{deskhand_at, run};
use crate::support::x11;
use deskhand_standin::{Reply, StandIn};

/// The user id of the "normal user" runs (nobody).
const NORMAL_USER: u32 = 65534;

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Who runs Deskhand in a test: this test's user, or (when it is root) a normal user.
#[derive(Clone, Copy, Debug, PartialEq)]
enum As {
    Me,
    NormalUser,
}

/// The users the escape tests run as: this one, and a normal user when this is root (CI).
fn users() -> Vec<As> {
    if is_root() {
        vec![As::Me, As::NormalUser]
    } else {
        vec![As::Me]
    }
}

/// A folder for one run, owned by whoever runs Deskhand, with its data, runtime and home
/// folders.
struct Place {
    dir: tempfile::TempDir,
    who: As,
}

impl Place {
    fn new(who: As) -> Place {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["data", "run", "home"] {
            std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        }
        if who == As::NormalUser {
            let status = Command::new("chown")
                .args(["-R", &format!("{NORMAL_USER}:{NORMAL_USER}")])
                .arg(dir.path())
                .status()
                .unwrap();
            assert!(status.success());
        }
        Place { dir, who }
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.dir.path().join(sub)
    }

    /// `deskhand ask --desktop agent` (sandboxed by default) as this place's user, its
    /// display numbers from `first`, running bash with every command approved.
    fn ask_on_agent_desktop(&self, api: &StandIn, first: u32) -> Command {
        let mut deskhand = deskhand_at(api, &self.path("data"));
        deskhand
            .env("XDG_RUNTIME_DIR", self.path("run"))
            .env("HOME", self.path("home"))
            .env("DESKHAND_FIRST_DISPLAY", first.to_string())
            .args(["ask", "--desktop", "agent", "--tools", "bash"])
            .args(["--approve", "auto", "get out"]);
        as_user(deskhand, self.who)
    }
}

/// `command` run as `who`: as is, or through `setpriv` as [`NORMAL_USER`].
fn as_user(command: Command, who: As) -> Command {
    if who == As::Me {
        return command;
    }
    let mut wrapped = Command::new("setpriv");
    let id = NORMAL_USER.to_string();
    wrapped
        .args(["--reuid", &id, "--regid", &id, "--clear-groups", "--"])
        .arg(command.get_program())
        .args(command.get_args())
        .stdin(std::process::Stdio::null());
    for (name, value) in command.get_envs() {
        match value {
            Some(value) => wrapped.env(name, value),
            None => wrapped.env_remove(name),
        };
    }
    wrapped
}

/// Whether `who` can start bubblewrap with a user namespace here; a note if not.
fn sandbox_works_as(who: As) -> bool {
    let mut probe = Command::new("bwrap");
    probe.args(["--unshare-user", "--ro-bind", "/", "/", "true"]);
    let works = as_user(probe, who)
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !works {
        eprintln!("skipped for {who:?}: bubblewrap cannot make a user namespace here");
    }
    works
}

/// A D-Bus `.service` file written from inside the sandbox into the desktop's runtime
/// directory (where the stock session bus looks for services), then asked for: the bus
/// must start nothing, so the file the service would write outside never appears.
#[test]
fn a_service_file_written_from_the_sandbox_starts_nothing_outside() {
    let Some(_display) = x11::display() else {
        return;
    };
    for who in users() {
        if !sandbox_works_as(who) {
            continue;
        }
        let place = Place::new(who);
        let escaped = place.path("escaped-by-service");
        let service = format!(
            "d=$XDG_RUNTIME_DIR/dbus-1/services; mkdir -p $d; \
             printf '[D-BUS Service]\\nName=org.deskhand.Escape\\nExec=/usr/bin/touch {}\\n' \
               > $d/org.deskhand.Escape.service; echo wrote=$?; \
             dbus-send --session --print-reply --dest=org.deskhand.Escape / \
               org.deskhand.Escape.Hello 2>&1; sleep 1",
            escaped.display()
        );
        let api = StandIn::spawn([
            crate::support::bash_turn(&service),
            Reply::new().text("done").into(),
        ]);
        let (output, _, stderr) = run(&mut place.ask_on_agent_desktop(&api, 320));
        assert_eq!(output.status.code(), Some(0), "{who:?}: {stderr}");
        let results = crate::support::tool_result_texts(&api);
        assert!(
            !escaped.exists(),
            "{who:?}: the bus started the service outside: {results:?}"
        );
        assert!(
            results[0].contains("org.deskhand.Escape"),
            "{who:?}: the bus was asked and refused: {results:?}"
        );
    }
}

/// A right-click on the desktop and a pick of the first entry of the menu (openbox's stock
/// menu starts with "Terminal emulator"), then a command typed into whatever opened: no
/// terminal opens outside the sandbox, so the file the command would write never appears.
#[test]
fn openbox_offers_no_menu_that_starts_a_program_outside() {
    let Some(_display) = x11::display() else {
        return;
    };
    for who in users() {
        if !sandbox_works_as(who) {
            continue;
        }
        let place = Place::new(who);
        let escaped = place.path("escaped-by-menu");
        let menu = format!(
            "xdotool mousemove 640 400 click 3; sleep 1; xdotool key Down Return; sleep 3; \
             xdotool type --delay 20 'touch {}'; xdotool key Return; sleep 2; echo picked",
            escaped.display()
        );
        let api = StandIn::spawn([
            crate::support::bash_turn(&menu),
            Reply::new().text("done").into(),
        ]);
        let (output, _, stderr) = run(&mut place.ask_on_agent_desktop(&api, 340));
        assert_eq!(output.status.code(), Some(0), "{who:?}: {stderr}");
        let results = crate::support::tool_result_texts(&api);
        assert!(results[0].contains("picked"), "{who:?}: {results:?}");
        assert!(
            !escaped.exists(),
            "{who:?}: openbox's menu started a terminal outside the sandbox"
        );
    }
}

/// The Python program that tries `open_by_handle_at` (the "shocker" way past mounts): it
/// takes the handle of a file of the machine's disk and opens it by that handle.
const OPEN_BY_HANDLE: &str = r#"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
class Handle(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint), ("type", ctypes.c_int), ("bytes", ctypes.c_ubyte * 128)]
handle = Handle(); handle.size = 128; mount = ctypes.c_int()
named = libc.name_to_handle_at(-100, b"/etc/hostname", ctypes.byref(handle), ctypes.byref(mount), 0)
root = os.open("/etc", os.O_RDONLY)
opened = libc.open_by_handle_at(root, ctypes.byref(handle), 0)
print("named=%d opened=%d errno=%d" % (named, opened, ctypes.get_errno()))
"#;

/// As root, the sandbox's programs have no capability at all, are user 1000 inside, cannot
/// open files by handle, and what only root may read under /etc is not there.
#[test]
fn as_root_the_sandbox_has_no_capability_and_no_open_by_handle() {
    if !is_root() {
        eprintln!("skipped: this test is about running as root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("share");
    std::fs::create_dir_all(&script).unwrap();
    std::fs::write(script.join("handle.py"), OPEN_BY_HANDLE).unwrap();
    let api = StandIn::spawn([
        crate::support::bash_turn(&format!(
            "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; id -u; \
             /usr/bin/python3 {}/handle.py; \
             cat /etc/shadow | wc -c",
            script.display()
        )),
        Reply::new().text("done").into(),
    ]);
    let (output, _, stderr) = run(deskhand_at(&api, &dir.path().join("data"))
        .args(["ask", "--sandbox", "--share"])
        .arg(&script)
        .args(["--tools", "bash", "--approve", "auto", "break out"]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let result = &crate::support::tool_result_texts(&api)[0];
    for set in ["CapEff", "CapPrm", "CapBnd"] {
        assert!(
            result.contains(&format!("{set}:\t0000000000000000")),
            "{set} is not empty: {result}"
        );
    }
    assert!(
        result.lines().any(|l| l == "1000"),
        "not user 0 inside: {result}"
    );
    assert!(result.contains("named=0 opened=-1 errno=1"), "{result}");
    // /etc/shadow is an empty file in the sandbox.
    assert!(result.lines().any(|l| l == "0"), "{result}");
}

/// The seccomp filter refuses what it lists (with EPERM), for every user: a mount namespace,
/// a keyring and TIOCSTI.
#[test]
fn the_seccomp_filter_refuses_namespaces_keyrings_and_tiocsti() {
    let dir = tempfile::tempdir().unwrap();
    let share = dir.path().join("share");
    std::fs::create_dir_all(&share).unwrap();
    std::fs::write(
        share.join("calls.py"),
        r#"
import ctypes, os, platform, termios
libc = ctypes.CDLL(None, use_errno=True)
KEYCTL = {"x86_64": 250, "aarch64": 219}[platform.machine()]
def tried(name, result):
    print("%s=%d/%d" % (name, result, ctypes.get_errno()))
tried("unshare", libc.unshare(0x00020000))
tried("keyctl", libc.syscall(KEYCTL, 0, -3, 0))
fd = os.open("/dev/null", os.O_RDONLY)
tried("tiocsti", libc.ioctl(fd, termios.TIOCSTI, b"x"))
tried("personality", libc.personality(0x0040000))
"#,
    )
    .unwrap();
    let api = StandIn::spawn([
        crate::support::bash_turn(&format!("/usr/bin/python3 {}/calls.py", share.display())),
        Reply::new().text("done").into(),
    ]);
    let (output, _, stderr) = run(deskhand_at(&api, &dir.path().join("data"))
        .args(["ask", "--sandbox", "--share"])
        .arg(&share)
        .args(["--tools", "bash", "--approve", "auto", "try"]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let result = &crate::support::tool_result_texts(&api)[0];
    for call in ["unshare", "keyctl", "tiocsti", "personality"] {
        assert!(result.contains(&format!("{call}=-1/1")), "{call}: {result}");
    }
}

/// The capabilities root's programs outside the sandbox lose (`root_powers`): CAP_SYS_MODULE
/// (bit 16), CAP_SYS_RAWIO (17), CAP_SYS_PTRACE (19) and CAP_SYS_ADMIN (21).
const DROPPED_CAPS: u64 = 1 << 16 | 1 << 17 | 1 << 19 | 1 << 21;

/// As root without the sandbox, the agent's bash has no CAP_SYS_PTRACE (not even in its
/// bounding set), so it cannot read Deskhand's memory; nor has the `--check` command. Nor
/// have they CAP_SYS_ADMIN, CAP_SYS_RAWIO or CAP_SYS_MODULE.
#[test]
fn as_root_unsandboxed_bash_cannot_read_deskhands_memory() {
    if !is_root() {
        eprintln!("skipped: this test is about running as root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // Bash's parent is its keeper; the keeper's parent is Deskhand. The first mapping of its
    // memory is its program's first page, always readable to whoever may read it.
    let api = StandIn::spawn([
        crate::support::bash_turn(
            "d=$(cut -d' ' -f4 /proc/$PPID/stat); echo deskhand=$(cat /proc/$d/comm); \
             a=$(head -1 /proc/$d/maps | cut -d- -f1); \
             /usr/bin/python3 -c \"f = open('/proc/$d/mem', 'rb'); f.seek(0x$a); \
             print('read', len(f.read(16)))\" 2>&1 | tail -1; \
             grep -E '^Cap(Eff|Bnd)' /proc/self/status",
        ),
        Reply::new().text("done").into(),
    ]);
    // The check passes (exit 0) only without the dropped capabilities in either set.
    let check = format!(
        "for set in CapEff CapBnd; do \
         mask=$(grep $set /proc/self/status | cut -f2); \
         [ $(( 0x$mask & {DROPPED_CAPS:#x} )) -eq 0 ] || exit 1; done"
    );
    let (output, _, stderr) = run(deskhand_at(&api, dir.path()).args([
        "ask",
        "--tools",
        "bash",
        "--approve",
        "auto",
        "--check",
        &check,
        "peek",
    ]));
    assert_eq!(
        output.status.code(),
        Some(0),
        "the check has the capability: {stderr}"
    );
    let result = &crate::support::tool_result_texts(&api)[0];
    assert!(result.contains("deskhand=deskhand"), "{result}");
    assert!(
        result.contains("PermissionError") && !result.contains("read 16"),
        "{result}"
    );
    let sets: Vec<&str> = result.lines().filter(|l| l.starts_with("Cap")).collect();
    assert_eq!(sets.len(), 2, "{result}");
    for line in sets {
        let mask = u64::from_str_radix(line.split_whitespace().last().unwrap(), 16).unwrap();
        assert_eq!(mask & DROPPED_CAPS, 0, "{line}");
    }
}

/// `--share /`, `--share $HOME` and `--share <data dir>` (and a folder holding the data
/// directory) are refused with the reason, before the model is asked or anything starts.
#[test]
fn sharing_the_root_the_home_or_deskhands_data_is_refused_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let data = home.join(".local/share/deskhand");
    std::fs::create_dir_all(&data).unwrap();
    let api = StandIn::spawn([Reply::new().text("unused").into()]);
    let cases: [(&Path, &str); 4] = [
        (Path::new("/"), "it is the whole file system"),
        (&home, "it is your whole home folder"),
        (&data, "it holds Deskhand's own data"),
        (&home.join(".local"), "it holds Deskhand's own data"),
    ];
    for (share, reason) in cases {
        let (output, _, stderr) = run(deskhand_at(&api, &data)
            .env("HOME", &home)
            .args(["ask", "--sandbox", "--share"])
            .arg(share)
            .args(["--tools", "bash", "hi"]));
        assert_eq!(output.status.code(), Some(1), "{share:?}: {stderr}");
        assert!(
            stderr.contains(&format!("cannot share `{}`", share.display())),
            "{stderr}"
        );
        assert!(stderr.contains(reason), "{share:?}: {stderr}");
    }
    assert!(api.requests().is_empty());
    assert!(!data.join("sandbox-home").exists());
}
