"""``egohorizon deid``: de-identify a folder of images, to check the pipeline on one's own frames."""

from __future__ import annotations

import argparse
from pathlib import Path

from egohorizon.commands._args import out_dir
from egohorizon.commands._owned import declare_output
from egohorizon.pipelines.image_folder import IMAGE_SUFFIXES, BadImages, add_allow_bad, image_files, read_rgb  # noqa: F401 (read_rgb: this module's before)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "deid", help="de-identify a folder of images (blur faces, mask sensitive screen text)",
        description="Runs the de-identification every real frame passes before it is stored in a shard "
                    "on each image of IMAGES_DIR (not its subfolders) and writes the de-identified copies, "
                    "under the same file names, into --out, with --out/counts.jsonl: one line per image, "
                    '{"image": name, "faces": n, "text_boxes": n}. Copies carry no metadata (EXIF, GPS). '
                    "Files that cannot be read as images are skipped and named; the exit status is then 1 "
                    "(0 with --allow-bad).")
    parser.add_argument("images_dir", metavar="IMAGES_DIR", help="folder of images (.jpg .png .bmp .tif .webp)")
    parser.add_argument("--out", required=True, type=out_dir, help="output folder (not IMAGES_DIR)")
    parser.add_argument("--faces", action=argparse.BooleanOptionalAction, default=True,
                        help="blur faces (BlazeFace full-range; default on)")
    parser.add_argument("--text", action=argparse.BooleanOptionalAction, default=True,
                        help="mask sensitive on-screen text (OCR; needs tesseract; default on)")
    parser.add_argument("--names", default=None, metavar="FILE",
                        help="names to hide too, one per line (as shards build --deid-names)")
    add_allow_bad(parser)
    parser.set_defaults(handler=run_deid)
    declare_output(parser, inputs=("images_dir", "names"))


def write_rgb(array, path: Path) -> None:
    from PIL import Image

    options = {"quality": 95} if path.suffix.lower() in (".jpg", ".jpeg", ".webp") else {}
    Image.fromarray(array).save(path, **options)


def run_deid(args: argparse.Namespace) -> int:
    from egohorizon.data.deid.deid import Deidentifier
    from egohorizon.data.deid.sensitive import read_names
    from egohorizon.errors import ConfigError
    from egohorizon.schema import write_jsonl

    source, out = Path(args.images_dir), Path(args.out)
    if not source.is_dir():
        raise ConfigError(f"{source}: not a folder of images")
    if out.resolve() == source.resolve():
        raise ConfigError(f"--out {out} is IMAGES_DIR: the de-identified copies would overwrite the originals")
    if not (args.faces or args.text):
        raise ConfigError("--no-faces and --no-text together leave nothing to do")
    paths = image_files(source)
    names = read_names(args.names) if args.names else ()
    deidentify = Deidentifier(blur_faces=args.faces, mask_text=args.text, names=names)
    out.mkdir(parents=True, exist_ok=True)
    bad = BadImages(total=len(paths))
    totals = {"faces": 0, "text_boxes": 0}

    def counts():
        for path in paths:
            image = bad.read(path)
            if image is None:
                continue
            image, found = deidentify(image)
            write_rgb(image, out / path.name)
            totals["faces"] += found["faces"]
            totals["text_boxes"] += found["text_boxes"]
            yield {"image": path.name, "faces": found["faces"], "text_boxes": found["text_boxes"]}

    written = write_jsonl(out / "counts.jsonl", counts())
    print(f"{out}: {written} images de-identified ({totals['faces']} faces, {totals['text_boxes']} text boxes); "
          f"counts in {out / 'counts.jsonl'}")
    return bad.exit_status(args.allow_bad)
