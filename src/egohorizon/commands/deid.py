"""``egohorizon deid``: de-identify a folder of images, to check the pipeline on one's own frames."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from egohorizon.commands._args import out_dir

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp", ".tif", ".tiff", ".webp")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "deid", help="de-identify a folder of images (blur faces, mask sensitive screen text)",
        description="Runs the de-identification every real frame passes before it is stored in a shard "
                    "on each image of IMAGES_DIR (not its subfolders) and writes the de-identified copies, "
                    "under the same file names, into --out, with --out/counts.jsonl: one line per image, "
                    '{"image": name, "faces": n, "text_boxes": n}. Copies carry no metadata (EXIF, GPS). '
                    "Files that cannot be read as images are skipped and named; the exit status is then 1.")
    parser.add_argument("images_dir", metavar="IMAGES_DIR", help="folder of images (.jpg .png .bmp .tif .webp)")
    parser.add_argument("--out", required=True, type=out_dir, help="output folder (not IMAGES_DIR)")
    parser.add_argument("--faces", action=argparse.BooleanOptionalAction, default=True,
                        help="blur faces (BlazeFace full-range; default on)")
    parser.add_argument("--text", action=argparse.BooleanOptionalAction, default=True,
                        help="mask sensitive on-screen text (OCR; needs tesseract; default on)")
    parser.add_argument("--names", default=None, metavar="FILE",
                        help="names to hide too, one per line (as shards build --deid-names)")
    parser.set_defaults(handler=run_deid)


def read_rgb(path: Path):
    """The image as an upright RGB array; raises OSError/ValueError for a file that is not a whole image."""
    import numpy as np
    from PIL import Image, ImageOps

    with Image.open(path) as image:
        image.load()  # decodes now: a truncated file raises here instead of giving grey rows
        return np.asarray(ImageOps.exif_transpose(image).convert("RGB"))


def write_rgb(array, path: Path) -> None:
    from PIL import Image

    options = {"quality": 95} if path.suffix.lower() in (".jpg", ".jpeg", ".webp") else {}
    Image.fromarray(array).save(path, **options)


def run_deid(args: argparse.Namespace) -> int:
    from PIL import Image

    from egohorizon.errors import ConfigError, DataError
    from egohorizon.pipelines.deid import Deidentifier
    from egohorizon.pipelines.sensitive import read_names
    from egohorizon.schema import write_jsonl

    source, out = Path(args.images_dir), Path(args.out)
    if not source.is_dir():
        raise ConfigError(f"{source}: not a folder of images")
    if out.resolve() == source.resolve():
        raise ConfigError(f"--out {out} is IMAGES_DIR: the de-identified copies would overwrite the originals")
    if not (args.faces or args.text):
        raise ConfigError("--no-faces and --no-text together leave nothing to do")
    paths = sorted(p for p in source.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_SUFFIXES)
    if not paths:
        raise DataError(f"{source}: no image files ({' '.join(IMAGE_SUFFIXES)})")
    names = read_names(args.names) if args.names else ()
    deidentify = Deidentifier(blur_faces=args.faces, mask_text=args.text, names=names)
    out.mkdir(parents=True, exist_ok=True)
    skipped: list[str] = []
    totals = {"faces": 0, "text_boxes": 0}

    def counts():
        for path in paths:
            try:
                image = read_rgb(path)
            except (OSError, ValueError, Image.DecompressionBombError) as error:  # PIL's UnidentifiedImageError is an OSError
                print(f"warning: skipped {path}: not a readable image ({error})", file=sys.stderr)
                skipped.append(path.name)
                continue
            image, found = deidentify(image)
            write_rgb(image, out / path.name)
            totals["faces"] += found["faces"]
            totals["text_boxes"] += found["text_boxes"]
            yield {"image": path.name, "faces": found["faces"], "text_boxes": found["text_boxes"]}

    written = write_jsonl(out / "counts.jsonl", counts())
    print(f"{out}: {written} images de-identified ({totals['faces']} faces, {totals['text_boxes']} text boxes); "
          f"counts in {out / 'counts.jsonl'}")
    if skipped:
        print(f"{len(skipped)} file(s) skipped, not readable as images: {', '.join(skipped)}", file=sys.stderr)
    return 1 if skipped else 0

