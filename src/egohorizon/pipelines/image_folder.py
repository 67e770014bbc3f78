"""Reading a folder of images, with one rule for every command that reads images (``deid``, ``hands
detect``, and for the frames of a shard folder ``hands label`` and ``hands clips``; issue 22, item 26): a
file (or shard sample) that cannot be read is skipped, counted and named (the first few by name, then a
count), and the command exits 1 unless the user passed ``--allow-bad``. A command that went on silently
would report numbers over fewer images than the user gave it.
"""

from __future__ import annotations

import argparse
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from egohorizon.errors import ConfigError, DataError

if TYPE_CHECKING:
    import numpy as np

log = logging.getLogger(__name__)

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")
NAMED = 5  # bad files named in the summary; the rest are counted


def image_files(folder: str | Path, suffixes: tuple[str, ...] = IMAGE_SUFFIXES) -> list[Path]:
    """The image files of ``folder`` (not its subfolders), by suffix, sorted by name."""
    folder = Path(folder)
    if not folder.is_dir():
        raise ConfigError(f"{folder}: not a folder of images")
    files = sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in suffixes)
    if not files:
        raise DataError(f"{folder}: no image files ({' '.join(suffixes)})")
    return files


def read_rgb(path: Path, upright: bool = True) -> np.ndarray:
    """The image as an RGB array (``upright``: turned as its EXIF orientation says); raises OSError or
    ValueError for a file that is not a whole image."""
    import numpy as np  # here, not above: the commands import this module for --help
    from PIL import Image, ImageOps

    with Image.open(path) as image:
        image.load()  # decodes now: a truncated file raises here instead of giving grey rows
        return np.asarray((ImageOps.exif_transpose(image) if upright else image).convert("RGB"))


def add_allow_bad(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--allow-bad", action="store_true",
                        help="exit 0 even when some input could not be read (unreadable images, damaged "
                             "shard samples: still skipped and named; default: exit status 1)")


@dataclass
class BadImages:
    """The files of one folder that could not be read, each with its reason."""

    total: int
    skipped: list[dict[str, str]] = field(default_factory=list)

    def read(self, path: Path, upright: bool = True) -> np.ndarray | None:
        """The image, or None after noting why ``path`` is not one (PIL's UnidentifiedImageError is an
        OSError; a decompression bomb is neither, so it is named too)."""
        from PIL import Image

        try:
            return read_rgb(path, upright)
        except (OSError, ValueError, Image.DecompressionBombError) as error:
            self.skipped.append({"image": path.name, "reason": f"{type(error).__name__}: {error}"})
            log.warning("skipped %s: not a readable image (%s)", path, error)
            return None

    def summary(self) -> str:
        return (f"{len(self.skipped)} of {self.total} file(s) skipped, not readable as images: "
                f"{first_named([s['image'] for s in self.skipped])}")

    def exit_status(self, allow_bad: bool) -> int:
        """0 when every file was read or the user allowed bad ones, else 1; names the skipped files on stderr."""
        return skipped_status(self.summary(), allow_bad) if self.skipped else 0


def first_named(names: list[str]) -> str:
    more = f" and {len(names) - NAMED} more" if len(names) > NAMED else ""
    return ", ".join(names[:NAMED]) + more


def skipped_status(summary: str, allow_bad: bool) -> int:
    """Warns on stderr that input was skipped (``summary`` names it); 1 unless the user allowed it."""
    hint = "" if allow_bad else " (exit status 1; --allow-bad accepts them)"
    print(f"warning: {summary}{hint}", file=sys.stderr)
    return 0 if allow_bad else 1


def damaged_shards_status(problems: list[dict], allow_bad: bool) -> int:
    """The same rule for the frames of a shard folder: ``problems`` as ``ShardReader.problems()`` gives
    them (shard, lost, reasons), one per shard that lost samples."""
    if not problems:
        return 0
    lost = sum(int(p.get("lost") or 0) for p in problems)
    shards = first_named([f"{p['shard']} ({p.get('lost')} lost)" for p in problems])
    return skipped_status(f"{lost} damaged sample(s) skipped in {len(problems)} shard(s): {shards}", allow_bad)
