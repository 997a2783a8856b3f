#!/usr/bin/env bash
# Makes a type-2 AppImage of an AppDir: scripts/appimage/make-appimage.sh APPDIR OUTPUT [LEVEL]
# Our runtime (runtime.c, built here with gcc; Debian's libsquashfuse, libfuse3 and the
# compression libraries linked statically, so it needs only glibc) followed by the AppDir as a
# zstd squashfs (mksquashfs), with the type-2 magic "AI\x02" at offset 8. LEVEL is zstd's,
# 15 unless given (package.sh --debug asks for less: it is faster to make, zstd unpacks
# as fast either way).
set -euo pipefail
appdir=$1 out=$2 level=${3:-15}
here=$(dirname "$0")
build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
# -s and --gc-sections make the runtime smaller (docs/benchmarks.md). The section header table
# stays last, where the runtime looks for the end of the ELF.
# shellcheck disable=SC2046 # pkg-config prints several flags
gcc -O2 -Wall -Wextra -s -Wl,--gc-sections -o "$build/runtime" "$here/runtime.c" \
  $(pkg-config --cflags fuse3) -pthread \
  -Wl,-Bstatic -lsquashfuse_ll -lfuse3 -lzstd -llzma -llz4 -llzo2 -lz -Wl,-Bdynamic
# -all-root: the files belong to whoever runs the AppImage, not to the build's user.
mksquashfs "$appdir" "$build/image" -comp zstd -Xcompression-level "$level" -all-root -noappend \
  -no-progress -quiet
cat "$build/runtime" "$build/image" >"$out.part"
printf 'AI\002' | dd of="$out.part" bs=1 seek=8 count=3 conv=notrunc status=none
chmod 755 "$out.part"
mv "$out.part" "$out"
