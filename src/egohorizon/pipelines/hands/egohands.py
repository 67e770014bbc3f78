"""The EgoHands still frames (``../shared/data/egohands-frames``) as hand-annotator data: where they
are, their boxes and sizes, the video each frame comes from, and leave-one-video-out folds.

The folder holds ``images/`` and ``boxes.csv`` (``filename,width,height,class,xmin,ymin,xmax,ymax``, one
class ``hand``, no sides). A frame's video is its file name before ``_frame_``
(``CARDS_OFFICE_S_B_frame_0123.jpg`` -> ``CARDS_OFFICE_S_B``). The frames cannot be fetched by
``egohorizon data fetch`` (research-use images of real people): they are looked for by name in the data
homes (``egohorizon.data.fetch``: ``$EGOHORIZON_DATA``, ``../shared/data`` beside the checkout,
``data/sources``), and the error says where they come from.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path

from egohorizon.errors import ConfigError

NAME = "egohands-frames"
ORIGIN = ("the EgoHands frames (Bambach et al., ICCV 2015) as converted in github.com/jake25fuller/HandDetection, "
          "commit d66f994b04730c3339913c5771e6c6763ada1014, images/train/ and images/train/train_labels.csv "
          "(../shared/data/SOURCES.md and egohands-frames/README.md say which 100 frames and how)")


@dataclass
class StillFrame:
    name: str  # the image's file name
    video: str
    height: int
    width: int
    boxes: list[list[float]] = field(default_factory=list)


def video_of(name: str) -> str:
    return name.split("_frame_")[0]


def find_frames(where: str | Path) -> Path:
    """``where``: a folder holding ``boxes.csv`` and ``images/``, or a name looked for in the data homes."""
    path = Path(where).expanduser()
    if (path / "boxes.csv").is_file():
        return path
    looked = [str(path)]
    if not path.is_absolute() and len(path.parts) == 1:
        from egohorizon.data.fetch.homes import homes

        for home in homes():
            if (home.path / path / "boxes.csv").is_file():
                return home.path / path
            looked.append(f"{home.label} = {home.path / path}")
    raise ConfigError(f"data.frames_dir={where}: no boxes.csv and images/ in {'; '.join(looked)}. The frames are "
                      f"{ORIGIN}; put that folder in ../shared/data (beside the checkout) or set data.frames_dir=DIR")


def read_frames(folder: Path) -> list[StillFrame]:
    """Every frame that ``boxes.csv`` lists, sorted by name, with its boxes; each listed image must exist.
    Errors name the file, line and field."""
    from egohorizon.pipelines.hands.frames import read_box_csv

    boxes = read_box_csv(folder / "boxes.csv")
    sizes: dict[str, tuple[int, int]] = {}
    with (folder / "boxes.csv").open(newline="", encoding="utf-8") as handle:
        for line, row in enumerate(csv.DictReader(handle), start=2):
            try:
                size = (int(row["height"]), int(row["width"]))
            except (KeyError, TypeError, ValueError):
                raise ConfigError(f"{folder / 'boxes.csv'}, line {line}: expected whole-number width and height, "
                                  f"got {row.get('width')!r} x {row.get('height')!r}") from None
            if sizes.setdefault(row["filename"], size) != size:
                raise ConfigError(f"{folder / 'boxes.csv'}, line {line}: {row['filename']} given two sizes, "
                                  f"{sizes[row['filename']]} and {size} (height, width)")
    missing = [name for name in boxes if not (folder / "images" / name).is_file()]
    if missing:
        raise ConfigError(f"{folder / 'boxes.csv'} lists {len(missing)} image(s) not in {folder / 'images'} "
                          f"(e.g. {missing[0]})")
    return [StillFrame(name, video_of(name), *sizes[name], boxes=boxes[name]) for name in sorted(boxes)]


def fold_videos(videos: list[str], test_video: str, val_video: str) -> dict[str, str]:
    """video -> split for one leave-one-video-out fold: ``test_video`` tests, ``val_video`` chooses the
    checkpoint, the rest train. Names are checked against the videos found."""
    for key, value in (("data.test_video", test_video), ("data.val_video", val_video)):
        if value not in videos:
            raise ConfigError(f"{key}={value!r}: not one of the frames' videos {sorted(videos)}")
    if test_video == val_video:
        raise ConfigError(f"data.test_video and data.val_video are both {test_video!r}: a fold tests on one "
                          "video and chooses its checkpoint on another")
    return {v: "test" if v == test_video else "val" if v == val_video else "train" for v in videos}
