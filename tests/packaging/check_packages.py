#!/usr/bin/env python3
"""Checks the packages scripts/package.sh makes: the .deb's control fields and files; the
AppImage's format (type-2 magic, where its squashfs starts), its contents, and the app it
starts (its window on the X display, the FUSE mount gone once it is closed); and, on a small
AppImage made by the same scripts/appimage/make-appimage.sh, the runtime itself: arguments, the
AppImage variables, exit statuses and SIGTERM passed through, with FUSE and without.

Usage: tests/packaging/check_packages.py DEB APPIMAGE APP_BINARY CLI_BINARY
APP_BINARY and CLI_BINARY are the binaries both packages must carry, byte for byte. Needs
DISPLAY (with a window manager that closes a window on Alt+F4, as openbox does), xdotool and
dpkg-deb. The checks that hide /dev/fuse or WebKitGTK do it in a mount namespace of their own
(`unshare`); where none can be made they say they are skipped.
"""

import argparse
import os
import re
import signal
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "e2e"))
import harness  # noqa: E402
from harness import app_env  # noqa: E402


def check(name, condition, detail=""):
    """harness.check, with `detail` (often a whole output) shown only when it fails."""
    harness.check(name, condition, detail, show=False)


def run(args, timeout=120, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def version():
    with open(os.path.join(ROOT, "Cargo.toml")) as f:
        return re.search(r'^version = "(.*)"', f.read(), re.M).group(1)


ICONS = ["usr/share/icons/hicolor/32x32/apps/deskhand-app.png",
         "usr/share/icons/hicolor/128x128/apps/deskhand-app.png",
         "usr/share/icons/hicolor/256x256/apps/deskhand-app.png",
         "usr/share/icons/hicolor/512x512/apps/deskhand-app.png"]
USR_FILES = ["usr/bin/deskhand-app", "usr/bin/deskhand",
             "usr/share/applications/deskhand-app.desktop"] + ICONS
DESKTOP = os.path.join(ROOT, "scripts", "deskhand-app.desktop")


def files_under(root):
    """Every file and symlink under `root`, relative to it."""
    found = set()
    for top, dirs, files in os.walk(root):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            found.add(os.path.relpath(os.path.join(top, name), root))
    return found


def same_usr_files(root, app, cli, what):
    check(f"{what}: the app and the CLI are the built binaries, byte for byte",
          read(f"{root}/usr/bin/deskhand-app") == read(app)
          and read(f"{root}/usr/bin/deskhand") == read(cli))
    check(f"{what}: the binaries are executable",
          all(os.stat(f"{root}/usr/bin/{b}").st_mode & 0o777 == 0o755
              for b in ("deskhand-app", "deskhand")))
    check(f"{what}: the desktop entry is scripts/deskhand-app.desktop",
          read(f"{root}/usr/share/applications/deskhand-app.desktop") == read(DESKTOP))


def check_deb(deb, app, cli, work):
    fields = dict(line.split(": ", 1) for line in run(
        ["dpkg-deb", "-f", deb, "Package", "Version", "Architecture", "Depends"],
        check=True).stdout.splitlines())
    arch = run(["dpkg", "--print-architecture"], check=True).stdout.strip()
    check("deb: control fields", fields.get("Package") == "deskhand"
          and fields.get("Version") == version() and fields.get("Architecture") == arch
          and "libwebkit2gtk-4.1-0" in fields.get("Depends", ""), str(fields))
    listing = run(["dpkg-deb", "-c", deb], check=True).stdout.splitlines()
    files = {line.split()[-1].removeprefix("./") for line in listing if not line.endswith("/")}
    check("deb: exactly the app, the CLI, the desktop entry and four icons",
          files == set(USR_FILES), str(sorted(files ^ set(USR_FILES))))
    check("deb: every file belongs to root", all(" root/root " in line for line in listing))
    root = os.path.join(work, "deb")
    run(["dpkg-deb", "-x", deb, root], check=True)
    same_usr_files(root, app, cli, "deb")


def elf_end(path):
    """Where the ELF file ends (its section header table), read as the runtime reads it."""
    header = read(path)[:64]
    check("AppImage: an ELF executable", header[:4] == b"\x7fELF" and header[4] == 2)
    shoff, = struct.unpack_from("<Q", header, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", header, 0x3A)
    return shoff + shentsize * shnum


def check_appimage_format(appimage):
    data = read(appimage)
    check("AppImage: type-2 magic AI\\x02 at offset 8", data[8:11] == b"AI\x02", repr(data[8:11]))
    offset, end = int(run([appimage, "--appimage-offset"], check=True).stdout), elf_end(appimage)
    check("AppImage: --appimage-offset is where the ELF ends", offset == end, f"{offset} vs {end}")
    check("AppImage: the squashfs image (hsqs) starts at that offset",
          data[offset:offset + 4] == b"hsqs", repr(data[offset:offset + 4]))
    used, = struct.unpack_from("<Q", data, offset + 40)
    check("AppImage: the image runs to the end of the file (padded to 4 KiB)",
          offset + used <= len(data) < offset + used + 4096,
          f"{offset} + {used} bytes in {len(data)}")
    print(f"AppImage: {len(data) / 1e6:.1f} MB, runtime {offset / 1e3:.0f} KB", flush=True)


def check_appimage_contents(appimage, app, cli, work):
    out = run([appimage, "--appimage-extract"], cwd=work, check=True).stdout
    root = os.path.join(work, "squashfs-root")
    expected = set(USR_FILES) | {"AppRun", "deskhand-app.desktop", "deskhand-app.png", ".DirIcon"}
    found = files_under(root)
    check("AppImage: --appimage-extract writes the AppDir to ./squashfs-root",
          found == expected and "squashfs-root/AppRun" in out.splitlines(),
          str(sorted(found ^ expected)))
    same_usr_files(root, app, cli, "AppImage")
    check("AppImage: AppRun is scripts/appimage/AppRun, executable",
          read(f"{root}/AppRun") == read(os.path.join(ROOT, "scripts", "appimage", "AppRun"))
          and os.access(f"{root}/AppRun", os.X_OK))
    # Started by hand from the extraction, AppRun finds the AppDir itself (no runtime sets
    # APPDIR then); without the app in it, it says so.
    os.rename(f"{root}/usr/bin/deskhand-app", f"{work}/moved-app")
    result = run([f"{root}/AppRun"], env={k: v for k, v in os.environ.items() if k != "APPDIR"})
    os.rename(f"{work}/moved-app", f"{root}/usr/bin/deskhand-app")
    check("AppImage: squashfs-root/AppRun started by hand looks for the app beside itself",
          result.returncode == 1
          and f"{root}/usr/bin/deskhand-app is missing" in result.stderr, result.stderr)
    check("AppImage: the desktop entry and the icon at the top, .DirIcon pointing at it",
          read(f"{root}/deskhand-app.desktop") == read(DESKTOP)
          and os.readlink(f"{root}/.DirIcon") == "deskhand-app.png"
          and read(f"{root}/deskhand-app.png")[:8] == b"\x89PNG\r\n\x1a\n")


def runtime_dirs(tmp):
    """The runtime's mounts under `tmp`, and its extraction directories there."""
    with open("/proc/mounts") as f:
        mounts = [line.split() for line in f if line.split()[1].startswith(f"{tmp}/.mount_")]
    extracted = [n for n in os.listdir(tmp) if n.startswith(("appimage_extracted_", ".mount_"))]
    return mounts, extracted


def wait_exit(process, timeout=30):
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise


def own_window(tmp, process, timeout=60):
    """The visible window named exactly Deskhand whose process runs from under `tmp` (the
    AppImage's mount or extraction; not some other Deskhand), that process's id and its
    executable; (None, None, None) if none shows up in time or the AppImage exits first."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        for window in run(["xdotool", "search", "--onlyvisible", "--name", "^Deskhand$"]
                          ).stdout.split():
            pid = run(["xdotool", "getwindowpid", window]).stdout.strip()
            try:
                exe = os.path.realpath(f"/proc/{pid}/exe", strict=True)
            except OSError:
                continue
            if exe.startswith(f"{tmp}/"):
                return window, pid, exe
        time.sleep(0.1)
    return None, None, None


def check_appimage_runs(appimage, work):
    """The AppImage shows the window, from its mount (or, without FUSE, its extraction), and
    closing the window ends it all: app, runtime, mount."""
    tmp = os.path.join(work, "tmp")
    os.makedirs(tmp)
    env = dict(app_env(work, "http://127.0.0.1:9"), TMPDIR=tmp)
    log_path = os.path.join(work, "appimage.log")
    started = time.monotonic()
    with open(log_path, "w") as log:
        process = subprocess.Popen([appimage], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        window, pid, exe = own_window(tmp, process)
        check("AppImage: shows a window named Deskhand", window is not None,
              f"none within 60 s; exit status {process.poll()}")
        shown = time.monotonic() - started
        mounts, extracted = runtime_dirs(tmp)
        if mounts:
            check("AppImage: the window's process runs from the FUSE mount",
                  len(mounts) == 1 and mounts[0][2] == "fuse.appimage"
                  and exe == f"{mounts[0][1]}/usr/bin/deskhand-app", f"{exe}, {mounts}")
        else:
            check("AppImage: without FUSE, the window's process runs from an extraction",
                  b"cannot mount with FUSE" in read(log_path) and len(extracted) == 1
                  and exe == f"{tmp}/{extracted[0]}/usr/bin/deskhand-app", f"{exe}, {extracted}")
        with open(f"/proc/{pid}/environ", "rb") as f:
            names = {entry.split(b"=")[0].decode() for entry in f.read().split(b"\0") if entry}
        check("AppImage: the app gets none of the AppImage's variables (nor do the programs it "
              "starts)", not names & {"APPIMAGE", "APPDIR", "ARGV0", "OWD"}, str(sorted(names)))
        # Alt+F4: openbox asks the window to close, as a user closing it would.
        run(["xdotool", "windowactivate", "--sync", window, "key", "alt+F4"], check=True)
        status = wait_exit(process)
        check("AppImage: closing the window ends it with status 0", status == 0, str(status))
        mounts, extracted = runtime_dirs(tmp)
        check("AppImage: no mount and no directory of its own left behind",
              not mounts and not extracted, f"{mounts} {extracted}")
        print(f"AppImage: window after {shown:.2f} s", flush=True)
    except BaseException:
        if process.poll() is None:
            process.kill()
            process.wait()
        sys.stderr.write(read(log_path).decode(errors="replace"))
        raise


TOY_APPRUN = """#!/bin/sh
echo "APPDIR=$APPDIR"
echo "APPIMAGE=$APPIMAGE"
echo "ARGV0=$ARGV0"
for arg in "$@"; do echo "arg=$arg"; done
cat "$APPDIR/data"
case $1 in
  exit) exit "$2" ;;
  wait) sleep 60 & trap 'kill $!; echo "got TERM"; exit 42' TERM; echo ready; wait ;;
esac
"""


def make_toy(work):
    appdir = os.path.join(work, "Toy.AppDir")
    os.makedirs(appdir)
    with open(f"{appdir}/AppRun", "w") as f:
        f.write(TOY_APPRUN)
    os.chmod(f"{appdir}/AppRun", 0o755)
    with open(f"{appdir}/data", "w") as f:
        f.write("data from the image\n")
    toy = os.path.join(work, "Toy.AppImage")
    run([os.path.join(ROOT, "scripts", "appimage", "make-appimage.sh"), appdir, toy], check=True)
    return toy


def namespace(command):
    """`command` in a mount namespace of its own, or None (and why) where none can be made;
    root makes it directly, anyone else in a user namespace."""
    unshare = ["unshare", "-m"] if os.geteuid() == 0 else ["unshare", "-r", "-m"]
    probe = run(unshare + ["true"])
    if probe.returncode != 0:
        return None, probe.stderr.strip()
    return unshare + ["sh", "-c", command, "sh"], ""


def check_runtime(toy, work):
    tmp = os.path.join(work, "toytmp")
    os.makedirs(tmp)
    env = dict(os.environ, TMPDIR=tmp)
    result = run([toy, "exit", "7", "two words"], env=env)
    lines = result.stdout.splitlines()
    fuse = "cannot mount with FUSE" not in result.stderr
    where = f"{tmp}/.mount_" if fuse else f"{tmp}/appimage_extracted_"
    check("runtime: AppRun gets the arguments and APPDIR, APPIMAGE, ARGV0",
          lines[0].startswith(f"APPDIR={where}") and lines[1] == f"APPIMAGE={toy}"
          and lines[2] == f"ARGV0={toy}" and lines[3:7] == [
              "arg=exit", "arg=7", "arg=two words", "data from the image"],
          result.stdout + result.stderr)
    check("runtime: exits with AppRun's status", result.returncode == 7, str(result.returncode))
    check("runtime: " + ("mounted with FUSE, nothing on stderr" if fuse
                         else "FUSE unavailable: says so in one line"),
          result.stderr == "" if fuse else result.stderr.count("\n") == 1, result.stderr)

    result = run([toy, "--appimage-extract-and-run", "exit", "3", "x"], env=env)
    lines = result.stdout.splitlines()
    check("runtime: --appimage-extract-and-run runs AppRun from an extraction with the rest "
          "of the arguments, and exits with its status",
          lines[0].startswith(f"APPDIR={tmp}/appimage_extracted_")
          and lines[3:6] == ["arg=exit", "arg=3", "arg=x"] and result.returncode == 3,
          result.stdout + result.stderr)

    process = subprocess.Popen([toy, "wait"], env=env, stdout=subprocess.PIPE, text=True)
    while process.stdout.readline() not in ("ready\n", ""):
        pass
    process.send_signal(signal.SIGTERM)
    status = wait_exit(process)
    check("runtime: passes SIGTERM to AppRun and exits as it does",
          status == 42 and process.stdout.read() == "got TERM\n", str(status))
    process.stdout.close()
    mounts, left = runtime_dirs(tmp)
    check("runtime: no mount and no directory of its own left behind", not mounts and not left,
          f"{mounts} {left}")

    # A SIGTERM at any moment of the start (while it mounts, forks, or AppRun starts) ends it,
    # neither lost (AppRun would sleep on) nor leaving its mount behind.
    statuses = []
    for delay_ms in range(0, 40, 2):
        process = subprocess.Popen([toy, "wait"], env=env, stdout=subprocess.DEVNULL)
        time.sleep(delay_ms / 1000)
        process.send_signal(signal.SIGTERM)
        statuses.append(wait_exit(process, timeout=10))
    mounts, left = runtime_dirs(tmp)
    check("runtime: a SIGTERM during its start ends it and leaves nothing behind",
          all(s in (-signal.SIGTERM, 42) for s in statuses) and not mounts and not left,
          f"{statuses} {mounts} {left}")

    # /dev/null in place of /dev/fuse: the mount fails, as on a machine without FUSE.
    command, why = namespace('mount --bind /dev/null /dev/fuse && exec "$@"')
    if command is None:
        print(f"skip - runtime: falls back without FUSE (no mount namespace: {why})")
        return
    result = run(command + [toy, "exit", "5"], env=env)
    check("runtime: when the FUSE mount fails, says so in one line and runs from an extraction",
          result.stderr.count("\n") == 1 and "cannot mount with FUSE" in result.stderr
          and result.stdout.startswith(f"APPDIR={tmp}/appimage_extracted_")
          and result.returncode == 5, result.stdout + result.stderr)
    mounts, left = runtime_dirs(tmp)
    check("runtime: the extraction is removed afterwards", not left, str(left))


def check_missing_webkit(appimage, app, work):
    """Where WebKitGTK cannot be loaded, AppRun says how to install it instead of starting."""
    trace = run([app], env=dict(os.environ, LD_TRACE_LOADED_OBJECTS="1"), check=True).stdout
    library = os.path.realpath(
        re.search(r"libwebkit2gtk-4\.1\.so\.0 => (\S+)", trace).group(1))
    # /dev/null in place of the library: the loader cannot load it, as where it is missing.
    command, why = namespace(f'mount --bind /dev/null {library} && exec "$@"')
    if command is None:
        print(f"skip - AppImage: the message without WebKitGTK (no mount namespace: {why})")
        return
    tmp = os.path.join(work, "nowebkit")
    os.makedirs(tmp)
    result = run(command + [appimage], env=dict(app_env(work, "http://127.0.0.1:9"), TMPDIR=tmp))
    check("AppImage: without WebKitGTK, exits 1 saying how to install it",
          result.returncode == 1
          and "sudo apt install libwebkit2gtk-4.1-0" in result.stderr.splitlines()[-1],
          f"{result.returncode}: {result.stderr}")
    check("AppImage: and leaves nothing behind", not os.listdir(tmp), str(os.listdir(tmp)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("deb")
    parser.add_argument("appimage")
    parser.add_argument("app")
    parser.add_argument("cli")
    args = parser.parse_args()
    appimage = os.path.abspath(args.appimage)
    with tempfile.TemporaryDirectory() as work:
        try:
            check_deb(args.deb, args.app, args.cli, work)
            check_appimage_format(appimage)
            check_appimage_contents(appimage, args.app, args.cli, work)
            check_appimage_runs(appimage, work)
            check_runtime(make_toy(work), work)
            check_missing_webkit(appimage, args.app, work)
        except BaseException:
            print(f"packaging: {harness.passed} passed, 1 failed", flush=True)
            raise
    print(f"packaging: {harness.passed} passed, 0 failed", flush=True)


if __name__ == "__main__":
    main()
