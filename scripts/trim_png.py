"""Crop a screenshot's empty bottom (rows of the page's background colour), keeping a 16 px margin.

Usage: python scripts/trim_png.py IN.png OUT.png   (Pillow: installed with matplotlib, the [bench] extra)
"""
from __future__ import annotations

import sys

from PIL import Image, ImageChops


def main(source: str, target: str) -> None:
    image = Image.open(source).convert("RGB")
    background = Image.new("RGB", image.size, image.getpixel((image.width - 1, image.height - 1)))
    box = ImageChops.difference(image, background).getbbox()
    bottom = min(image.height, (box[3] if box else image.height) + 16)
    image.crop((0, 0, image.width, bottom)).save(target, optimize=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
