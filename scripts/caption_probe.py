#!/usr/bin/env python
"""Is what a caption needs in the pixels the tiny captioner sees? (issue 11; docs/models.md)

On the caption_demo shards (built by `python train.py experiment=caption_demo`), with its day split:

- oracle: a captioner that knew the window's level-k activity (k = 2, 3, 4) and wrote the most
  frequent training L1 action of that activity over the whole window;
- probe: the same, with the level-3 activity named by a logistic regression on 4-level colour
  histograms of the prompt's images (2 frames with the gaze ring + the close-up, at 32x32), fitted on
  the training days.

Each is scored on the validation days by `egohorizon score captions` (exact judge), next to the
repeat-previous and most-frequent baselines. Nothing here touches the test days.

    python scripts/caption_probe.py [--shards data/demo_shards_caption] [--out /tmp/caption_probe]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np


def histogram(image: np.ndarray) -> np.ndarray:
    from PIL import Image

    levels = np.asarray(Image.fromarray(image).resize((32, 32), Image.Resampling.BICUBIC)) // 64
    codes = (levels[..., 0].astype(int) * 16 + levels[..., 1] * 4 + levels[..., 2]).ravel()
    return np.bincount(codes, minlength=64) / codes.size


def windows(dm, split: str):
    """(features, activity by level, gold L1 texts, key) of the split's windows with gold actions."""
    from egohorizon.data.shards.stream import WindowStream
    from egohorizon.formats.caption import gold_actions
    from egohorizon.metrics.captions import activity_of
    from egohorizon.prompts.caption import caption_sample

    urls = [str(u) for u in dm.index.urls(dm.selected[split])]
    for batch in WindowStream(urls, batch_size=1, shuffle=False, rank=0, world_size=1):
        for window in batch.get("samples", []):
            meta = window.meta
            gold = gold_actions(meta["events"], meta["start"], meta["end"])
            if not gold:
                continue
            sample = caption_sample(meta, window.frames, window.crops, dm.frames_per_window)
            feats = [histogram(im) for im in sample["images"]] + [np.zeros(64)] * (3 - len(sample["images"]))
            acts = {k: activity_of(meta["events"], meta["start"], meta["end"], level=k) for k in (2, 3, 4)}
            yield np.concatenate(feats[:3]), acts, [a.text for a in gold], meta["key"]


def write(path: Path, keys: list[str], texts: list[str]) -> Path:
    with path.open("w") as f:
        for key, text in zip(keys, texts):
            f.write(json.dumps({"id": key, "actions": [{"start": 0.0, "end": 30.0, "action": text}], "scene": None}) + "\n")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shards", default="data/demo_shards_caption")
    parser.add_argument("--out", default="/tmp/caption_probe")
    args = parser.parse_args()
    from sklearn.linear_model import LogisticRegression

    from egohorizon.repo_conf import glue_importable

    glue_importable()  # datamodules/ is a folder of the checkout, not an installed package
    from datamodules.caption import CaptionDataModule
    from egohorizon.cli import main as cli
    from egohorizon.schema import write_jsonl

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    # caption_demo's data settings (conf/experiment/caption_demo.yaml)
    dm = CaptionDataModule(demo_shards_dir=args.shards, demo_days=12, demo_window_stride=10, long_side=224,
                           crop_size=128, frames_per_window=2, seed=0)
    dm.prepare()
    dm.setup()
    train, val = list(windows(dm, "train")), list(windows(dm, "val"))
    for split in ("train", "val"):
        write_jsonl(out / f"gold_{split}.jsonl", dm.eval_items(split).values())
    keys = [w[3] for w in val]
    overall = Counter(t for w in train for t in w[2])
    runs = {}
    for level in (2, 3, 4):
        usual = defaultdict(Counter)
        for _, acts, texts, _ in train:
            usual[acts[level]].update(texts)
        pick = [(usual.get(w[1][level]) or overall).most_common(1)[0][0] for w in val]
        runs[f"oracle_L{level}"] = write(out / f"oracle_L{level}.jsonl", keys, pick)
    probe = LogisticRegression(C=10, max_iter=3000).fit(np.stack([w[0] for w in train]), [w[1][3] for w in train])
    named = probe.predict(np.stack([w[0] for w in val]))
    accuracy = float(np.mean([n == w[1][3] for n, w in zip(named, val)]))
    majority = Counter(w[1][3] for w in val).most_common(1)[0][1] / len(val)
    usual3 = defaultdict(Counter)
    for _, acts, texts, _ in train:
        usual3[acts[3]].update(texts)
    runs["probe_L3"] = write(out / "probe_L3.jsonl", keys, [usual3[n].most_common(1)[0][0] for n in named])
    print(f"probe: level-3 activity accuracy on validation {accuracy:.3f} (majority {majority:.3f})")
    for name, path in runs.items():
        print(f"== {name}")
        cli(["score", "captions", "--gold", str(out / "gold_val.jsonl"), "--pred", str(path),
             "--train-gold", str(out / "gold_train.jsonl")])


if __name__ == "__main__":
    main()
