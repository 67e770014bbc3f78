"""Reading a folder of images, with one rule for every command that does (``deid``, ``hands detect``;
issue 22, item 26): a file that cannot be read as an image is skipped, counted and named (the first few
by name, then a count), and the command exits 1 unless the user passed ``--allow-bad``. A command that
went on silently would report numbers over fewer images than the user gave it.
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
                        help="exit 0 even when some files could not be read as images (they are still "
                             "skipped and named; default: exit status 1)")


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
        named = ", ".join(s["image"] for s in self.skipped[:NAMED])
        more = f" and {len(self.skipped) - NAMED} more" if len(self.skipped) > NAMED else ""
        return f"{len(self.skipped)} of {self.total} file(s) skipped, not readable as images: {named}{more}"

    def exit_status(self, allow_bad: bool) -> int:
        """0 when every file was read or the user allowed bad ones, else 1; names the skipped files on stderr."""
        if not self.skipped:
            return 0
        hint = "" if allow_bad else " (exit status 1; --allow-bad accepts them)"
        print(f"warning: {self.summary()}{hint}", file=sys.stderr)
        return 0 if allow_bad else 1
