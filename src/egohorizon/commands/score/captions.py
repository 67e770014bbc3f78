"""``score captions``: caption windows through the caption task of the registry; gold from JSON Lines or a
shard folder, predictions from JSON Lines or the caption job's results.
"""

from __future__ import annotations

import argparse

from egohorizon.commands.score.common import (
    check_out,
    finish,
    load,
    reconcile,
    select_gold,
    selection_lines,
    warn_missing,
)
from egohorizon.commands.score.segments import make_judge


def run_captions(args: argparse.Namespace) -> int:
    """Scores caption predictions through the caption task of the registry (the evaluation callback's
    code), with the repeat-previous baseline and, given --train-gold or --most-frequent, the
    most-frequent one."""
    from egohorizon.backbones.embedders import get_embedder
    from egohorizon.errors import ConfigError
    from egohorizon.metrics.captions import most_frequent_action, most_frequent_scene
    from egohorizon.tasks import get_task

    if args.train_gold and args.most_frequent:
        raise ConfigError("--train-gold and --most-frequent both name the baseline's action; give one")
    task = get_task("caption")
    check_out(args.out)
    every = _caption_gold(args.gold)
    records, skipped = _caption_predictions(args.pred)
    windows, selection = select_gold(every, {r.id for r in records}, args)
    by_id = {w.id: w for w in windows}
    predictions = {r.id: task.parse_record(r, by_id[r.id]) for r in records if r.id in by_id}
    action, scene = args.most_frequent, None
    if args.train_gold:
        train = _caption_train_gold(args.train_gold, windows, selection)
        action, scene = most_frequent_action(train), most_frequent_scene(train)
    embedder = get_embedder(args.embedder)
    judge = make_judge(args.judge, "judge_subtask", args)
    evaluation = task.evaluate(
        windows,
        predictions,
        "test",
        judge=judge,
        embedder=embedder,
        iou_threshold=args.iou,
        most_frequent_action=action,
        most_frequent_scene=scene,
    )
    report = {**evaluation.report, "baselines": evaluation.baselines, "judge_stats": judge.stats}
    report["inputs"] = reconcile([w.id for w in windows], [r.id for r in records], args)
    report["inputs"].update({k: v for k, v in selection.items() if k != "other_split_ids"}, skipped_windows=skipped)
    warn_missing(report["inputs"], "gold window", hint="")
    rows = task.summary_rows(evaluation)
    notes = selection_lines(selection) + (f"  {skipped} window(s) the caption job skipped (no frames) are no "
                                           "predictions\n" if skipped else "")
    return finish(report, notes + task.format_summary(rows, title="Caption scores") + "\n", args)


def _caption_gold(path: str) -> list:
    """Gold caption windows: a JSON Lines file of ``CaptionWindow`` records, or a shard folder (its
    index.json) whose samples carry gold level-1 events (the demo world's: ``shards build --demo``)."""
    from pathlib import Path

    from egohorizon.errors import DataError
    from egohorizon.schema import CaptionWindow

    if not (Path(path) / "index.json").is_file():
        records = load(path, CaptionWindow)
        if not records:
            raise DataError(f"{path}: no records; expected JSON Lines of CaptionWindow records or a shard folder")
        return records
    windows = [w for w in _shard_windows(path) if w.actions]  # as training scores them: windows with gold actions
    if not windows:
        raise DataError(f"{path}: no window of these shards carries gold level-1 events (the demo world's shards "
                        "do; shards of your own recordings do not): give gold windows as JSON Lines "
                        "(CaptionWindow records, tests/data/captions_gold.jsonl)")
    return windows


def _shard_windows(path: str) -> list:
    """Every window of a shard folder as a ``CaptionWindow``, read from the samples' JSON members alone."""
    import json
    import tarfile

    from egohorizon.data.shards.index import ShardIndex
    from egohorizon.tasks.caption import caption_window  # the training run's own gold records

    windows = []
    for url in ShardIndex.load(path).urls():
        with tarfile.open(url) as tar:
            windows += [caption_window(json.loads(tar.extractfile(m).read())) for m in tar if m.name.endswith(".json")]
    return windows


def _caption_train_gold(path: str, scored: list, selection: dict) -> list:
    """The most-frequent baseline's training windows. From a shard folder only the windows on days
    not scored here count, so the baseline never learns from the scored days."""
    from pathlib import Path

    from egohorizon.errors import DataError
    from egohorizon.schema import CaptionWindow

    if not (Path(path) / "index.json").is_file():
        return load(path, CaptionWindow)
    scored_days = {(w.participant, w.day) for w in scored}
    train = [w for w in _shard_windows(path) if (w.participant, w.day) not in scored_days]
    selection["train_gold_days"] = len({(w.participant, w.day) for w in train})
    if not train:
        raise DataError(f"--train-gold {path}: every day of these shards is scored here; the baseline needs "
                        "windows of other days (the training days)")
    return train


def _caption_predictions(path: str) -> tuple[list, int]:
    """Caption predictions and the number of skipped windows: a JSON Lines file of ``CaptionPrediction``
    records, or the caption job's results (its --out folder, or captions*.jsonl in it)."""
    from pathlib import Path

    from egohorizon.errors import DataError
    from egohorizon.pipelines.caption.results import better, prediction_record, read_results, result_files
    from egohorizon.schema import CaptionPrediction, Defect, RecordError

    p = Path(path)
    files = result_files(p) if p.is_dir() else [p] if _is_caption_results(p) else None
    if files is None:
        return load(path, CaptionPrediction), 0
    if not files:
        raise DataError(f"{path}: a folder without captions.jsonl; expected the --out folder of `egohorizon caption`")
    merged: dict = {}
    for file in files:
        records, problems = read_results(file)
        if problems:
            raise DataError("; ".join(problems[:5]))
        for window, record in records.items():
            if better(record, merged.get(window)):
                merged[window] = record
    converted = [prediction_record(r) for r in merged.values()]
    predictions, defects = [], []
    for obj in (c for c in converted if c is not None):
        record, problems = CaptionPrediction.from_dict(obj)
        defects += [Defect(str(p), 0, field, f"window {obj['id']}: {problem}") for field, problem in problems]
        predictions.append(record)
    if defects:
        raise RecordError(defects)
    return predictions, converted.count(None)


def _is_caption_results(path) -> bool:
    """Whether a file's first line is a caption job result (``window`` and ``status``, no ``id``)."""
    import json

    try:
        with open(path, encoding="utf-8") as handle:
            first = next((line for line in handle if line.strip()), "")
        obj = json.loads(first)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False  # the ordinary reader names the problem
    return isinstance(obj, dict) and "window" in obj and "status" in obj and "id" not in obj
