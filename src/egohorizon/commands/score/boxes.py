"""``score boxes``: the centroid hit fraction of hand boxes, after the gold file's own checks (one box per
clip, hand and frame; frames on the clip's annotation grid).
"""

from __future__ import annotations

import argparse

from egohorizon.commands.score.common import finish, load, load_gold, reconcile


def run_boxes(args: argparse.Namespace) -> int:
    from egohorizon.metrics.boxes import centroid_hit_fraction
    from egohorizon.metrics.report import format_boxes
    from egohorizon.schema import BoxPrediction, HandBox

    gold = load_gold(args, HandBox)
    _check_duplicate_gold_boxes(args.gold)
    _check_gold_box_grids(args.gold)
    predictions = load(args.pred, BoxPrediction)
    report = centroid_hit_fraction(gold, predictions, fps=args.fps)
    report["inputs"] = reconcile(sorted({b.clip for b in gold}), sorted({p.clip for p in predictions}), args)
    report["inputs"].update(n_gold=len(gold), n_pred=len(predictions))
    return finish(report, format_boxes(report), args)


def _check_duplicate_gold_boxes(path: str) -> None:
    """Two gold boxes for one (clip, hand, frame) are a defect named by file and line."""
    from egohorizon.schema import Defect, RecordError, iter_json_lines

    seen: dict[tuple, int] = {}
    defects = []
    for line, obj, _ in iter_json_lines(path):
        key = (obj["clip"], obj["hand"], obj["frame"])
        if key in seen:
            defects.append(
                Defect(
                    path,
                    line,
                    "frame",
                    f"second box for clip {key[0]!r}, hand {key[1]!r}, "
                    f"frame {key[2]} (first on line {seen[key]})",
                )
            )
        seen.setdefault(key, line)
    if defects:
        raise RecordError(defects)


def _check_gold_box_grids(path: str) -> None:
    """A clip's records agree on its ``grid`` and all its frames lie on it (SPEC §4), named by line."""
    from egohorizon.schema import Defect, RecordError, iter_json_lines

    lines = list(iter_json_lines(path))  # records already validated by load
    grids: dict[str, tuple[int, int]] = {}
    defects = []
    for line, obj, _ in lines:
        if obj.get("grid") is None:
            continue
        grid = int(obj["grid"])
        first = grids.setdefault(obj["clip"], (grid, line))
        if first[0] != grid:
            defects.append(
                Defect(
                    path,
                    line,
                    "grid",
                    f"clip {obj['clip']!r} has grid {first[0]} on line {first[1]}, here {grid}",
                )
            )
    for line, obj, _ in lines:
        grid, given = grids.get(obj["clip"], (1, 0))
        if obj.get("grid") is None and int(obj["frame"]) % grid:
            defects.append(
                Defect(
                    path,
                    line,
                    "frame",
                    f"frame {obj['frame']} is not on the annotation grid of clip {obj['clip']!r} "
                    f"(frames 0, {grid}, {2 * grid}, ...; grid set on line {given})",
                )
            )
    if defects:
        raise RecordError(sorted(defects, key=lambda d: d.line))
