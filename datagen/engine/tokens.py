"""Token accounting for Nemotron-VL-style models (Holotron-12B), as vLLM 0.14.1 does it.

Images are tiled InternVL-style: pick the (cols, rows) grid with 1 ≤ cols·rows ≤ max_tiles
whose aspect ratio is closest to the image's (ties go to the larger grid only when the image
is big enough), resize to 512·cols × 512·rows, cut 512×512 tiles, add a 512×512 thumbnail when
there is more than one tile; 256 tokens per tile, plus 2 wrapper tokens (`<img>`, `</img>`).
Text is estimated at 4 UTF-8 bytes per token (no tokenizer on these machines).
"""

from __future__ import annotations

import functools
import math

TILE = 512
TOKENS_PER_TILE = 256
IMAGE_WRAPPER_TOKENS = 2
DEFAULT_MAX_TILES = 12
BYTES_PER_TOKEN = 4


@functools.lru_cache(maxsize=64)
def _grids(max_tiles: int) -> tuple[tuple[int, int], ...]:
    grids = {
        (c, r)
        for n in range(1, max_tiles + 1)
        for c in range(1, n + 1)
        for r in range(1, n + 1)
        if c * r <= max_tiles
    }
    return tuple(sorted(grids, key=lambda g: g[0] * g[1]))


def tile_grid(width: int, height: int, max_tiles: int = DEFAULT_MAX_TILES) -> tuple[int, int]:
    """The (cols, rows) grid an image of this size is resized to."""
    aspect = width / height
    best, best_diff = (1, 1), math.inf
    for cols, rows in _grids(max_tiles):
        diff = abs(aspect - cols / rows)
        if diff < best_diff:
            best, best_diff = (cols, rows), diff
        elif diff == best_diff and width * height > 0.5 * TILE * TILE * cols * rows:
            best = (cols, rows)
    return best


def image_tiles(width: int, height: int, max_tiles: int = DEFAULT_MAX_TILES) -> int:
    """Tiles the vision encoder sees, thumbnail included."""
    cols, rows = tile_grid(width, height, max_tiles)
    tiles = cols * rows
    return tiles + 1 if tiles > 1 else tiles


def image_tokens(width: int, height: int, max_tiles: int = DEFAULT_MAX_TILES) -> int:
    """Prompt tokens one image costs."""
    return image_tiles(width, height, max_tiles) * TOKENS_PER_TILE + IMAGE_WRAPPER_TOKENS


def text_tokens(text: str) -> int:
    """Estimated tokens of a text (4 UTF-8 bytes a token)."""
    return math.ceil(len(text.encode("utf-8")) / BYTES_PER_TOKEN)
