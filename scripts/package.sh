#!/usr/bin/env bash
# Builds the desktop app's packages from one build, and prints their paths:
#   target/<profile>/deskhand_<version>_<arch>.deb       (dpkg-deb)
#   target/<profile>/Deskhand-<version>-<arch>.AppImage  (scripts/appimage: our own runtime,
#                                                         as the official one is on GitHub only)
# Both hold the app, the CLI, the desktop entry (scripts/deskhand-app.desktop) and the icons.
# Usage: scripts/package.sh [--debug] [--no-build]
#   --debug     package the debug build (target/debug) instead of the release, compressed
#               fast (gzip -1, not dpkg-deb's default xz: docs/benchmarks.md): the tests'
#               packages
#   --no-build  package the binaries already built (with --features deskhand-app/custom-protocol;
#               test.sh, which has just built them)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=release build=1 zstd_level=15 deb_compression=()
for arg in "$@"; do
  case $arg in
    --debug) profile=debug zstd_level=6 deb_compression=(-Zgzip -z1) ;;
    --no-build) build=0 ;;
    *) echo "usage: scripts/package.sh [--debug] [--no-build]" >&2; exit 2 ;;
  esac
done
if ((build)); then
  scripts/setup.sh package
  export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
  (cd ui && npm ci --no-audit --no-fund --silent && npm run --silent build)
  release=()
  [ "$profile" = debug ] || release=(--release)
  cargo build "${release[@]}" --locked --features deskhand-app/custom-protocol
fi

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
bin=target/$profile
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The files both packages install under usr/.
install_usr() {
  local root=$1
  install -Dm755 "$bin/deskhand-app" "$root/usr/bin/deskhand-app"
  install -Dm755 "$bin/deskhand" "$root/usr/bin/deskhand"
  for size in 32x32 128x128; do
    install -Dm644 "icons/$size.png" "$root/usr/share/icons/hicolor/$size/apps/deskhand-app.png"
  done
  install -Dm644 icons/128x128@2x.png "$root/usr/share/icons/hicolor/256x256/apps/deskhand-app.png"
  install -Dm644 icons/icon.png "$root/usr/share/icons/hicolor/512x512/apps/deskhand-app.png"
  install -Dm644 scripts/deskhand-app.desktop "$root/usr/share/applications/deskhand-app.desktop"
}

deb_root=$work/deb
install_usr "$deb_root"
arch=$(dpkg --print-architecture)
mkdir -p "$deb_root/DEBIAN"
cat >"$deb_root/DEBIAN/control" <<CONTROL
Package: deskhand
Version: $version
Architecture: $arch
Maintainer: Deskhand <deskhand@localhost>
Depends: libwebkit2gtk-4.1-0, libgtk-3-0, libayatana-appindicator3-1, libpipewire-0.3-0
Recommends: tesseract-ocr, tesseract-ocr-eng, at-spi2-core
Section: utils
Priority: optional
Description: An AI agent that works your computer while you watch and approve
 A chat window over an agent that sees the screen and works the mouse and keyboard,
 with every action behind an approval. Includes the headless CLI, deskhand.
CONTROL
deb="$bin/deskhand_${version}_${arch}.deb"
dpkg-deb "${deb_compression[@]}" --root-owner-group --build "$deb_root" "$deb" >/dev/null

# The AppDir: the same usr/, plus what the AppImage format looks for at the top.
appdir=$work/Deskhand.AppDir
install_usr "$appdir"
install -m755 scripts/appimage/AppRun "$appdir/AppRun"
install -m644 scripts/deskhand-app.desktop "$appdir/deskhand-app.desktop"
install -m644 icons/128x128@2x.png "$appdir/deskhand-app.png"
ln -s deskhand-app.png "$appdir/.DirIcon"
appimage="$bin/Deskhand-${version}-$(uname -m).AppImage"
scripts/appimage/make-appimage.sh "$appdir" "$appimage" "$zstd_level"

echo "$deb"
echo "$appimage"
