#!/usr/bin/env bash
# Builds the Debian package of the desktop app: target/release/deskhand_<version>_<arch>.deb
# (the app, the CLI, a desktop entry and the icons).
#
# AppImage: Tauri's bundler fetches linuxdeploy and its plugins from GitHub while bundling;
# where GitHub is reachable, `cargo install tauri-cli --locked && cargo tauri build --bundles
# appimage` makes one from the same tauri.conf.json. This script does not, so that it works
# offline.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
(cd ui && npm ci --no-audit --no-fund --silent && npm run --silent build)
cargo build --release --locked --features deskhand-app/custom-protocol

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(dpkg --print-architecture)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
install -Dm755 target/release/deskhand-app "$root/usr/bin/deskhand-app"
install -Dm755 target/release/deskhand "$root/usr/bin/deskhand"
for size in 32x32 128x128; do
  install -Dm644 "icons/$size.png" "$root/usr/share/icons/hicolor/$size/apps/deskhand-app.png"
done
install -Dm644 icons/128x128@2x.png "$root/usr/share/icons/hicolor/256x256/apps/deskhand-app.png"
install -Dm644 icons/icon.png "$root/usr/share/icons/hicolor/512x512/apps/deskhand-app.png"
install -Dm644 /dev/stdin "$root/usr/share/applications/deskhand-app.desktop" <<DESKTOP
[Desktop Entry]
Type=Application
Name=Deskhand
Comment=An AI agent that works your computer while you watch and approve
Exec=deskhand-app
Icon=deskhand-app
Terminal=false
Categories=Utility;
DESKTOP
mkdir -p "$root/DEBIAN"
cat >"$root/DEBIAN/control" <<CONTROL
Package: deskhand
Version: $version
Architecture: $arch
Maintainer: Deskhand <deskhand@localhost>
Depends: libwebkit2gtk-4.1-0, libgtk-3-0, libayatana-appindicator3-1
Section: utils
Priority: optional
Description: An AI agent that works your computer while you watch and approve
 A chat window over an agent that sees the screen and works the mouse and keyboard,
 with every action behind an approval. Includes the headless CLI, deskhand.
CONTROL
out="target/release/deskhand_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$root" "$out" >/dev/null
echo "$out"
