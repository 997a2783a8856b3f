#!/usr/bin/env python3
"""Draws Deskhand's icons (icons/*.png) with the standard library only, so they can be
regenerated anywhere: a rounded blue square with a white mouse pointer.

Usage: scripts/make-icons.py   (writes icons/ at the repository root)
"""
import os
import struct
import zlib

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "icons")
SIZES = {"32x32.png": 32, "128x128.png": 128, "128x128@2x.png": 256, "icon.png": 512}
BLUE = (37, 99, 235)
WHITE = (255, 255, 255)
# The pointer as a polygon in unit coordinates (tip at the top left).
POINTER = [(0.30, 0.20), (0.30, 0.78), (0.44, 0.64), (0.55, 0.86), (0.64, 0.82),
           (0.53, 0.60), (0.72, 0.60)]
SAMPLES = 4  # per axis, for anti-aliased edges


def inside_rounded_square(x, y, radius=0.22):
    cx = min(max(x, radius), 1 - radius)
    cy = min(max(y, radius), 1 - radius)
    return (x - cx) ** 2 + (y - cy) ** 2 <= radius ** 2


def inside_polygon(x, y, points):
    inside = False
    for (x1, y1), (x2, y2) in zip(points, points[1:] + points[:1]):
        if (y1 > y) != (y2 > y) and x < x1 + (y - y1) * (x2 - x1) / (y2 - y1):
            inside = not inside
    return inside


def pixel(px, py, size):
    bg = fg = 0
    for sy in range(SAMPLES):
        for sx in range(SAMPLES):
            x = (px + (sx + 0.5) / SAMPLES) / size
            y = (py + (sy + 0.5) / SAMPLES) / size
            if inside_rounded_square(x, y):
                bg += 1
                if inside_polygon(x, y, POINTER):
                    fg += 1
    n = SAMPLES * SAMPLES
    if bg == 0:
        return (0, 0, 0, 0)
    t = fg / bg
    rgb = tuple(round(b + (w - b) * t) for b, w in zip(BLUE, WHITE))
    return rgb + (round(255 * bg / n),)


def png(size):
    rows = b"".join(
        b"\x00" + bytes(c for px in range(size) for c in pixel(px, py, size)) for py in range(size)
    )

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", size, size, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def main():
    os.makedirs(ROOT, exist_ok=True)
    for name, size in SIZES.items():
        with open(os.path.join(ROOT, name), "wb") as f:
            f.write(png(size))


if __name__ == "__main__":
    main()
