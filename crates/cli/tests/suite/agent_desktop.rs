//! The agent's own desktop and its sandbox, for real: `deskhand ask --desktop agent` starts a
//! private Xvfb with openbox and a bus, the stand-in model clicks and types into an xterm
//! there while `xev` on the person's display (the test display) watches for any input, and
//! a SIGKILLed Deskhand leaves nothing the next desktop does not clean. The sandbox tests
//! run bash under bubblewrap and look at what it could read and write.

use std::io::{BufRead as _, BufReader};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::support::cli::{deskhand, deskhand_at, run};
use crate::support::x11::{self, Xev};
use deskhand_standin::{Reply, StandIn, Turn};
use serde_json::json;

/// Processes whose command line is exactly `args` (a leftover Xvfb, say).
fn processes_with(args: &[&str]) -> Vec<u32> {
    let wanted = args.join("\0");
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                String::from_utf8_lossy(&c)
                    .trim_end_matches('\0')
                    .starts_with(&wanted)
            })
        })
        .collect()
}

/// `deskhand` with its own runtime directory (the desktops' registry lives there).
fn isolated(api: &StandIn, dir: &Path) -> std::process::Command {
    let runtime = dir.join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let mut command = deskhand_at(api, dir);
    command.env("XDG_RUNTIME_DIR", &runtime);
    command
}

/// `deskhand ask --desktop agent --no-sandbox --tools bash --approve auto PROMPT`, its
/// display numbers from `first`.
fn ask_on_agent_desktop(
    api: &StandIn,
    dir: &Path,
    first: u32,
    prompt: &str,
) -> std::process::Command {
    let mut command = isolated(api, dir);
    command
        .env("DESKHAND_FIRST_DISPLAY", first.to_string())
        .args([
            "ask",
            "--desktop",
            "agent",
            "--no-sandbox",
            "--tools",
            "bash",
        ])
        .args(["--approve", "auto", prompt]);
    command
}

/// The person's screen, watched while the agent works elsewhere: an xev window sees any input,
/// and their pointer is where it was put.
struct PersonWatch {
    xev: Xev,
    pointer: (i32, i32),
}

impl PersonWatch {
    fn start(name: &str) -> Self {
        x11::run("xdotool", &["mousemove", "40", "40"]);
        let xev = Xev::open(name, 300, 200, 900, 600);
        Self {
            xev,
            pointer: x11::pointer(),
        }
    }

    /// The person's display saw nothing, and their pointer stayed put.
    fn assert_untouched(&self) {
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(self.xev.events(), Vec::new());
        assert_eq!(x11::pointer(), self.pointer);
    }
}

fn no_desktop_records(dir: &Path) -> bool {
    std::fs::read_dir(dir.join("run/deskhand/desktops"))
        .unwrap()
        .next()
        .is_none()
}

#[test]
fn an_agent_desktop_run_types_into_its_own_xterm_and_the_person_sees_no_input() {
    let Some(_display) = x11::display() else {
        return;
    };
    let person = PersonWatch::start("person-watch");
    let dir = tempfile::tempdir().unwrap();
    // Not in the data directory (`dir`), which is never shared.
    let share_dir = tempfile::tempdir().unwrap();
    let share = share_dir.path();
    let typed = share.join("typed.txt");
    let start_xterm = format!(
        "xterm -title agentterm -geometry 100x40+0+0 -e sh -c 'read line; echo \"$line\" > {}' &
         for i in $(seq 100); do xdotool search --onlyvisible --name agentterm && break; sleep 0.1; done",
        typed.display()
    );
    let api = StandIn::spawn(vec![
        crate::support::bash_turn(&start_xterm),
        Turn::tool_use(
            "computer",
            json!({"action": "left_click", "coordinate": [200, 200]}),
        ),
        Turn::tool_use(
            "computer",
            json!({"action": "type", "text": "hello agent\n"}),
        ),
        crate::support::bash_turn(&format!(
            "for i in $(seq 50); do [ -s {0} ] && break; sleep 0.1; done; cat {0}; echo display=$DISPLAY; xdotool getmouselocation",
            typed.display()
        )),
        Reply::new().text("Typed.").into(),
    ]);
    let (output, stdout, stderr) = run(isolated(&api, dir.path())
        .env("DESKHAND_FIRST_DISPLAY", "215")
        .args(["ask", "--desktop", "agent", "--share"])
        .arg(share)
        .args([
            "--tools",
            "computer,bash",
            "--approve",
            "auto",
            "--model",
            "claude-sonnet-4-5",
            "type into the terminal",
        ]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stdout.contains("Typed."), "{stdout}");
    assert!(
        stderr.contains("the agent works on its own desktop, display :"),
        "{stderr}"
    );
    let results = crate::support::tool_result_texts(&api);
    let last = results.last().unwrap();
    assert!(last.contains("hello agent"), "{results:?}");
    assert_eq!(std::fs::read_to_string(&typed).unwrap(), "hello agent\n");
    let agent_display = last
        .lines()
        .find_map(|l| l.strip_prefix("display=:"))
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or_else(|| panic!("{last}"));
    assert!(agent_display >= 215, "{last}");
    // The click moved the agent's pointer, on the agent's screen.
    assert!(last.contains("x:") && !last.contains("x:0 y:0"), "{last}");
    person.assert_untouched();
    // The desktop ended with the run.
    assert!(!Path::new(&format!("/tmp/.X{agent_display}-lock")).exists());
    assert!(processes_with(&["Xvfb", &format!(":{agent_display}")]).is_empty());
    assert!(no_desktop_records(dir.path()));
}

#[test]
fn a_taken_display_number_is_skipped() {
    let Some(_display) = x11::display() else {
        return;
    };
    // A lock file nobody serves still marks the number as someone's.
    let taken = 221;
    let lock = format!("/tmp/.X{taken}-lock");
    std::fs::write(&lock, "         1\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn(vec![
        crate::support::bash_turn("echo $DISPLAY"),
        Reply::new().text("ok").into(),
    ]);
    let (output, _, stderr) = run(&mut ask_on_agent_desktop(
        &api,
        dir.path(),
        taken,
        "which display",
    ));
    let _ = std::fs::remove_file(&lock);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let display = crate::support::tool_result_texts(&api)[0]
        .trim()
        .to_string();
    assert_ne!(display, format!(":{taken}"));
    assert!(display.starts_with(':'), "{display}");
}

#[test]
fn leftovers_of_a_sigkilled_deskhand_are_cleaned_by_the_next_start() {
    let Some(_display) = x11::display() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn(vec![
        crate::support::bash_turn("sleep 60"),
        Reply::new().text("never").into(),
    ]);
    let mut child = ask_on_agent_desktop(&api, dir.path(), 223, "wait")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let display: u32 = loop {
        let line = lines.next().expect("the desktop notice").unwrap();
        if let Some(n) = line.split("display :").nth(1) {
            break n.trim().parse().unwrap();
        }
    };
    // Wait until the shell runs its command, then kill Deskhand outright.
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes_with(&["sleep", "60"]).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let registry = dir.path().join("run/deskhand/desktops");
    assert!(registry.join(format!("{display}.pids")).exists());
    child.kill().unwrap();
    child.wait().unwrap();
    // The keepers end the programs; what the killed Xvfb wrote stays.
    let xvfb = ["Xvfb".to_string(), format!(":{display}")];
    let xvfb: Vec<&str> = xvfb.iter().map(String::as_str).collect();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !processes_with(&xvfb).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        processes_with(&xvfb).is_empty(),
        "Xvfb :{display} outlived Deskhand"
    );
    assert!(registry.join(format!("{display}.pids")).exists());

    // The next run on an agent desktop cleans them before it starts its own.
    let api = StandIn::spawn(vec![Reply::new().text("fresh").into()]);
    let (output, _, stderr) = run(&mut ask_on_agent_desktop(&api, dir.path(), 223, "again"));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(!registry.join(format!("{display}.pids")).exists());
    assert!(!registry.join(display.to_string()).exists());
    assert!(!Path::new(&format!("/tmp/.X{display}-lock")).exists());
    assert!(!Path::new(&format!("/tmp/.X11-unix/X{display}")).exists());
}

/// Two sessions of one `deskhand serve`, each on an agent desktop of its own, at the same time:
/// each task's bash waits until both have written their display, so neither finishes alone.
#[test]
fn one_service_runs_two_sessions_on_two_agent_desktops_at_once() {
    let Some(_display) = x11::display() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let marks = dir.path().join("marks");
    std::fs::create_dir(&marks).unwrap();
    let marks = marks.display();
    let both = format!(
        "echo $DISPLAY > {marks}/$$; for i in $(seq 100); do \
         [ $(ls {marks} | wc -l) -ge 2 ] && break; sleep 0.1; done; ls {marks} | wc -l"
    );
    let api = StandIn::spawn([
        crate::support::bash_turn(&both),
        crate::support::bash_turn(&both),
        Turn::text("One."),
        Turn::text("Two."),
    ]);
    let runtime = dir.path().join("run");
    std::fs::create_dir_all(&runtime).unwrap();
    let serve = crate::support::serve::Serve::start_with_env(
        &api,
        dir.path(),
        &[
            ("XDG_RUNTIME_DIR", runtime.to_str().unwrap()),
            ("DESKHAND_FIRST_DISPLAY", "245"),
        ],
    );
    let task = json!({"prompt": "wait for the other", "desktop": "agent", "sandbox": false,
                      "tools": ["bash"], "approve": "auto"});
    let tasks = [serve.submit(task.clone()), serve.submit(task)];
    assert_ne!(tasks[0]["session_id"], tasks[1]["session_id"]);
    for task in &tasks {
        serve.wait_for(task["id"].as_str().unwrap(), "done");
    }
    let counted: Vec<String> = crate::support::tool_result_texts(&api)
        .iter()
        .map(|r| r.trim().into())
        .collect();
    assert_eq!(counted, ["2", "2"], "the tasks did not overlap");
    let mut displays: Vec<String> = std::fs::read_dir(dir.path().join("marks"))
        .unwrap()
        .map(|e| {
            std::fs::read_to_string(e.unwrap().path())
                .unwrap()
                .trim()
                .to_string()
        })
        .collect();
    displays.sort();
    assert_eq!(displays.len(), 2);
    assert_ne!(displays[0], displays[1], "two sessions shared a desktop");
    for display in &displays {
        let number: u32 = display.trim_start_matches(':').parse().unwrap();
        assert!(number >= 245, "{display} is not an agent desktop");
    }
    // A task is done before its desktop is dropped; the desktop ends right after.
    let gone = || {
        no_desktop_records(dir.path())
            && displays
                .iter()
                .all(|display| processes_with(&["Xvfb", display]).is_empty())
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while !gone() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(gone(), "a desktop outlived its task: {displays:?}");
}

/// A sandbox that cannot start is a clear error before anything runs: where user namespaces
/// are off (a `bwrap` that fails with bubblewrap's own message there, since turning them off
/// would change the whole machine) and where bubblewrap is not installed. The model is never
/// asked, and no desktop is started.
#[test]
fn a_sandbox_that_cannot_start_is_a_clear_error_before_anything_runs() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let no_userns = tempfile::tempdir().unwrap();
    let bwrap = no_userns.path().join("bwrap");
    std::fs::write(
        &bwrap,
        "#!/bin/sh\necho \"bwrap: No permissions to creating new namespace, likely because the \
         kernel does not allow non-privileged user namespaces.\" >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
    let no_bwrap = tempfile::tempdir().unwrap();
    let path = std::env::var("PATH").unwrap();
    for (path, says) in [
        (
            format!("{}:{path}", no_userns.path().display()),
            "cannot start the sandbox: bubblewrap failed (bwrap: No permissions to creating new \
             namespace, likely because the kernel does not allow non-privileged user namespaces.); \
             user namespaces may be turned off (sysctl kernel.unprivileged_userns_clone=1)",
        ),
        (
            no_bwrap.path().display().to_string(),
            "cannot start the sandbox: bubblewrap (`bwrap`) is not installed (apt install bubblewrap)",
        ),
    ] {
        let api = StandIn::spawn([Turn::text("never")]);
        let mut command = isolated(&api, dir.path());
        command
            .env("PATH", &path)
            .env("DESKHAND_FIRST_DISPLAY", "247")
            .args(["ask", "--desktop", "agent", "--tools", "bash"])
            .args(["--approve", "auto", "do it"]);
        let (output, _, stderr) = run(&mut command);
        assert_eq!(output.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
        assert!(api.accepted().is_empty(), "the model was asked");
        assert!(processes_with(&["Xvfb", ":247"]).is_empty());
        assert!(!dir.path().join("run/deskhand/desktops/247.pids").exists());
    }
}

#[test]
fn a_missing_or_broken_xvfb_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let api = StandIn::spawn(vec![Reply::new().text("unused").into()]);
    let (output, _, stderr) =
        run(ask_on_agent_desktop(&api, dir.path(), 226, "hi").env("PATH", &bin));
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot start an agent desktop: Xvfb is not installed"),
        "{stderr}"
    );

    let xvfb = bin.join("Xvfb");
    std::fs::write(
        &xvfb,
        "#!/bin/sh\necho 'Fatal server error: no screens' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&xvfb, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (output, _, stderr) = run(ask_on_agent_desktop(&api, dir.path(), 226, "hi")
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display())));
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("did not start"), "{stderr}");
    assert!(stderr.contains("no screens"), "{stderr}");
    assert!(api.requests().is_empty());
    assert!(no_desktop_records(dir.path()));
}

#[test]
fn sandboxed_bash_reads_its_share_and_nothing_of_the_home_and_writes_only_the_share() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let share = dir.path().join("share");
    let outside = dir.path().join("outside");
    for d in [&home, &share, &outside] {
        std::fs::create_dir_all(d).unwrap();
    }
    std::fs::write(home.join("secret.txt"), "the person's secret").unwrap();
    std::fs::write(share.join("shared.txt"), "shared on purpose").unwrap();
    let api = StandIn::spawn(vec![
        crate::support::bash_turn(&format!("cat {}/secret.txt; echo rc=$?", home.display())),
        crate::support::bash_turn(&format!(
            "echo x > {}/escape.txt; cat {}/escape.txt; ls {}",
            outside.display(),
            outside.display(),
            dir.path().join("data").display()
        )),
        crate::support::bash_turn(&format!(
            "cat {0}/shared.txt; echo written > {0}/new.txt; echo bus=${{DBUS_SESSION_BUS_ADDRESS:-none}}",
            share.display()
        )),
        Reply::new().text("done").into(),
    ]);
    let data = dir.path().join("data");
    let (output, _, stderr) = run(deskhand_at(&api, &data)
        .env("HOME", &home)
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/run/user/0/bus")
        .args(["ask", "--sandbox", "--share"])
        .arg(&share)
        .args(["--tools", "bash", "--approve", "auto", "look around"]));
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let results = crate::support::tool_result_texts(&api);
    assert!(!results[0].contains("the person's secret"), "{results:?}");
    assert!(results[0].contains("rc=1"), "{results:?}");
    // Writes outside the share land in the sandbox's own /tmp, not on the machine; the
    // history's folder is not there at all.
    assert!(!outside.join("escape.txt").exists());
    assert!(results[1].contains("No such file"), "{results:?}");
    assert!(results[2].contains("shared on purpose"), "{results:?}");
    assert!(results[2].contains("bus=none"), "{results:?}");
    assert_eq!(
        std::fs::read_to_string(share.join("new.txt")).unwrap(),
        "written\n"
    );
}

#[test]
fn a_missing_share_or_share_without_sandbox_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let api = StandIn::spawn(vec![Reply::new().text("unused").into()]);
    let (output, _, stderr) = run(deskhand_at(&api, dir.path()).args([
        "ask",
        "--sandbox",
        "--share",
        "/no/such/folder",
        "--tools",
        "bash",
        "hi",
    ]));
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot share `/no/such/folder` with the sandbox"),
        "{stderr}"
    );
    let (output, _, stderr) =
        run(deskhand(dir.path()).args(["ask", "--share", "/tmp", "--tools", "bash", "hi"]));
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("need the sandbox"), "{stderr}");
    assert!(api.requests().is_empty());
}

/// Bash in the sandbox reaches the model server on 127.0.0.1 by default, and not with
/// `--no-network`.
#[test]
fn the_sandbox_has_the_network_unless_it_is_cut() {
    for (flags, expected) in [(&[][..], "net=on"), (&["--no-network"][..], "net=off")] {
        let dir = tempfile::tempdir().unwrap();
        let api = StandIn::spawn(vec![Reply::new().text("unused").into()]);
        let port = api.addr().port();
        let api = StandIn::spawn(vec![
            crate::support::bash_turn(&format!(
                "(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo net=on || echo net=off"
            )),
            Reply::new().text("done").into(),
        ]);
        let (output, _, stderr) = run(deskhand_at(&api, dir.path())
            .args(["ask", "--sandbox"])
            .args(flags)
            .args(["--tools", "bash", "--approve", "auto", "reach out"]));
        assert_eq!(output.status.code(), Some(0), "{stderr}");
        assert_eq!(
            crate::support::tool_result_texts(&api)[0].trim(),
            expected,
            "{flags:?}"
        );
    }
}

/// A program on the agent desktop `display`, ended when dropped.
fn on_agent_desktop(display: &str, program: &str, args: &[&str]) -> x11::Program {
    x11::Program(
        std::process::Command::new(program)
            .args(args)
            .env("DISPLAY", display)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{program}: {e}")),
    )
}

/// What xwininfo says of the window titled `name` on `display` once it shows (10 s at most).
fn agent_window(display: &str, name: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = std::process::Command::new("xwininfo")
            .args(["-display", display, "-name", name])
            .output()
            .unwrap();
        let found = String::from_utf8_lossy(&out.stdout);
        if out.status.success() && found.contains("Map State: IsViewable") {
            return found.into_owned();
        }
        assert!(Instant::now() < deadline, "no window {name} on {display}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Frames a live view has sent, with when each came.
type Frames =
    std::sync::Arc<std::sync::Mutex<Vec<(Instant, deskhand_engine::desktop::live::LiveFrame)>>>;

fn frames_after(frames: &Frames, since: Instant) -> usize {
    frames
        .lock()
        .unwrap()
        .iter()
        .filter(|(at, _)| *at > since)
        .count()
}

#[test]
fn the_live_view_shows_changes_at_most_ten_a_second_and_nothing_while_idle() {
    use deskhand_engine::desktop::AgentDesktop;
    use deskhand_engine::desktop::live::LiveView;
    let Some(_display) = x11::display() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = dir.path().join("desktops");
    let desktop = runtime
        .block_on(AgentDesktop::start_in(&registry, 231))
        .unwrap();
    let name = desktop.display_name();
    let frames: Frames = Default::default();
    let sink = frames.clone();
    let view = LiveView::start(&name, 320, move |frame| {
        sink.lock().unwrap().push((Instant::now(), frame));
        true
    })
    .unwrap();
    assert_eq!((view.screen().width, view.screen().height), (1280, 800));
    let deadline = Instant::now() + Duration::from_secs(5);
    while frames.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "no first frame");
        std::thread::sleep(Duration::from_millis(10));
    }
    {
        let frames = frames.lock().unwrap();
        let first = &frames[0].1;
        assert_eq!(&first.jpeg[..2], &[0xff, 0xd8], "a JPEG");
        assert_eq!((first.size.width, first.size.height), (320, 200));
    }
    // Idle: nothing is sent.
    std::thread::sleep(Duration::from_millis(300));
    let idle = Instant::now();
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(frames_after(&frames, idle), 0, "frames while idle");

    // A change: a frame follows.
    let changed = Instant::now();
    let _terminal = on_agent_desktop(
        &name,
        "xterm",
        &["-title", "liveterm", "-geometry", "80x20+10+10"],
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while frames_after(&frames, changed) == 0 {
        assert!(Instant::now() < deadline, "no frame after the xterm opened");
        std::thread::sleep(Duration::from_millis(5));
    }
    // A screen that changes all the time is shown at 10 frames a second at most.
    let _clock = on_agent_desktop(
        &name,
        "xterm",
        &[
            "-title",
            "busyterm",
            "-geometry",
            "40x10+600+10",
            "-e",
            "sh",
            "-c",
            "while :; do date +%N; sleep 0.005; done",
        ],
    );
    agent_window(&name, "busyterm");
    let busy = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let shown = frames_after(&frames, busy);
    // At least two (frames keep coming while it changes; a loaded machine draws slowly), and
    // never more than the limit allows.
    assert!((2..=21).contains(&shown), "{shown} frames in 2 s");
    drop(view);
    let stopped = frames.lock().unwrap().len();
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        frames.lock().unwrap().len(),
        stopped,
        "frames after the view stopped"
    );
}

#[test]
fn take_over_input_reaches_the_agent_desktop_and_not_the_persons_screen() {
    use deskhand_engine::desktop::AgentDesktop;
    use deskhand_engine::desktop::takeover::{PointerButton, TakeOver, TakeOverInput};
    let Some(_display) = x11::display() else {
        return;
    };
    let person = PersonWatch::start("person-watch-takeover");
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = dir.path().join("desktops");
    let desktop = runtime
        .block_on(AgentDesktop::start_in(&registry, 235))
        .unwrap();
    let name = desktop.display_name();
    let typed = dir.path().join("typed.txt");
    let script = format!("read line; echo \"$line\" > {}", typed.display());
    let _terminal = on_agent_desktop(
        &name,
        "xterm",
        &[
            "-title",
            "taketerm",
            "-geometry",
            "80x20+0+0",
            "-e",
            "sh",
            "-c",
            &script,
        ],
    );
    agent_window(&name, "taketerm");
    let mut takeover = TakeOver::open(&name).unwrap();
    for input in [
        TakeOverInput::Click {
            x: 100,
            y: 100,
            button: PointerButton::Left,
        },
        TakeOverInput::Text {
            text: "took over".into(),
        },
        TakeOverInput::Key {
            keys: "Return".into(),
        },
    ] {
        takeover.send(&input).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::fs::read_to_string(&typed)
        .unwrap_or_default()
        .is_empty()
    {
        assert!(Instant::now() < deadline, "nothing typed reached the xterm");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(std::fs::read_to_string(&typed).unwrap(), "took over\n");
    let bad = takeover.send(&TakeOverInput::Key {
        keys: "NoSuchKey".into(),
    });
    assert!(bad.unwrap_err().to_string().contains("unknown key"));
    person.assert_untouched();
}
