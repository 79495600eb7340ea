"""``render_mode="rgb_array"``: the env's text render drawn as an image.

Video recorders and SB3's ``make_vec_env`` (which asks for ``rgb_array`` by
default) want an ``H x W x 3`` uint8 frame of a constant size: the text is
wrapped to the width, and when it is taller than the frame its last lines are
kept (the latest passes). Drawn with Pillow's built-in font; Pillow comes with
matplotlib and is imported only when a frame is drawn.
"""
from __future__ import annotations

import textwrap

import numpy as np

__all__ = ["FRAME_SHAPE", "text_frame"]

#: (height, width, channels) of every frame.
FRAME_SHAPE = (480, 640, 3)
_MARGIN = 8
_BACKGROUND = (255, 255, 255)
_INK = (0, 0, 0)


def text_frame(text: str, shape: tuple[int, int, int] = FRAME_SHAPE) -> np.ndarray:
    """``text`` drawn black on white in a uint8 array of ``shape`` (H, W, 3)."""
    height, width, channels = shape
    if channels != 3 or height <= 2 * _MARGIN or width <= 2 * _MARGIN:
        raise ValueError(f"Expected a frame shape (H > {2 * _MARGIN}, W > {2 * _MARGIN}, 3), got {shape}")
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError as e:  # pragma: no cover - Pillow is installed with matplotlib
        raise ImportError("render_mode='rgb_array' draws with Pillow: pip install pillow") from e
    font = ImageFont.load_default()
    left, top, right, bottom = font.getbbox("Mg")
    char_width = max(1, int(round(font.getlength("M"))))
    line_height = max(1, int(bottom - min(top, 0)) + 2)
    columns = max(1, (width - 2 * _MARGIN) // char_width)
    rows = max(1, (height - 2 * _MARGIN) // line_height)
    lines = [wrapped for line in text.splitlines() for wrapped in textwrap.wrap(line, columns) or [""]]
    image = Image.new("RGB", (width, height), _BACKGROUND)
    draw = ImageDraw.Draw(image)
    for row, line in enumerate(lines[-rows:]):
        draw.text((_MARGIN, _MARGIN + row * line_height), line, fill=_INK, font=font)
    return np.asarray(image, dtype=np.uint8)
