"""What every ``score`` task shares: reading and checking the inputs (gold, predictions, ``--out``),
which gold items are scored, and writing the table and the JSON report.
"""

from __future__ import annotations

import argparse

EXAMPLES = 5  # ids shown in messages about missing or unknown predictions


def load(path: str, record_type):
    from egohorizon.schema import read_jsonl

    result = read_jsonl(path, record_type)
    result.raise_for_defects()
    return result.records


def load_gold(args: argparse.Namespace, record_type) -> list:
    """The gold records, which must exist; ``--out`` is checked first, before any work is done."""
    from egohorizon.errors import DataError

    check_out(args.out)
    records = load(args.gold, record_type)
    if not records:  # an empty gold file would score as a run over nothing, with exit 0
        raise DataError(f"{args.gold}: no records; expected JSON Lines of {record_type.__name__} records")
    return records


def check_out(out: str | None) -> None:
    """Fails early, with the reason, when the report could not be written to ``--out``."""
    import os
    from pathlib import Path

    from egohorizon.errors import ConfigError

    if not out:
        return
    path = Path(out)
    if path.is_dir():
        raise ConfigError(f"--out {out}: is a folder; expected a file name for the report")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ConfigError(f"--out {out}: cannot write the report: {folder} is a file, not a folder")
    probe = path.with_name(f".{path.name}.probe-{os.getpid()}")
    try:  # a real write: permissions, read-only file systems and /proc all answer the same way
        path.parent.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise ConfigError(f"--out {out}: cannot write the report ({error.strerror or error})") from error


def reconcile(gold_ids, pred_ids, args) -> dict:
    from egohorizon.errors import DataError

    gold_set, pred_set = set(gold_ids), set(pred_ids)
    if gold_set and pred_set and not gold_set & pred_set:  # scored every item invalid with exit 0
        raise DataError(f"{args.pred}: none of its {len(pred_set)} prediction ids is in {args.gold} "
                        f"({len(gold_set)} ids), e.g. {min(pred_set)!r} vs {min(gold_set)!r}; "
                        "predictions of another gold file?")
    missing = [i for i in gold_ids if i not in pred_set]
    unknown = [i for i in pred_ids if i not in gold_set]
    return {
        "gold": args.gold,
        "pred": args.pred,
        "n_gold": len(gold_ids),
        "n_pred": len(pred_ids),
        "missing": len(missing),
        "missing_examples": missing[:EXAMPLES],
        "missing_ids": missing,
        "unknown": len(unknown),
        "unknown_examples": unknown[:EXAMPLES],
        "unknown_ids": unknown,
    }


def finish(report: dict, text: str, args) -> int:
    import sys

    from egohorizon.metrics.report import format_inputs

    sys.stdout.write(format_inputs(report["inputs"]) + "\n" + text)
    write_report(report, args.out)
    return 0


def write_report(report: dict, out: str | None) -> None:
    """Writes the report atomically (a temporary file, then a rename) and says where."""
    import sys
    from pathlib import Path

    from egohorizon.errors import ConfigError

    if out:
        from egohorizon.atomic_files import write_json_atomic

        path = Path(out)
        try:
            write_json_atomic(path, report, indent=2)
        except OSError as error:  # e.g. a read-only file system, which check_out cannot see
            raise ConfigError(f"--out {path}: cannot write the report ({error.strerror or error})") from error
        sys.stdout.write(f"report written to {path}\n")


def select_gold(items: list, pred_ids: set[str], args: argparse.Namespace) -> tuple[list, dict]:
    """The gold items to score: those of ``--split`` (their ``meta.split``), and with ``--only-predicted``
    only those with a prediction; how many each choice left out goes into the report."""
    from collections import Counter

    from egohorizon.errors import DataError

    split = getattr(args, "split", None)  # captions have no split field: --only-predicted alone
    selection: dict = {"split": split, "only_predicted": args.only_predicted, "other_split_ids": set()}
    if split and split != "all":
        chosen = [i for i in items if i.meta.get("split") == split]
        if not chosen:
            present = dict(Counter(str(i.meta.get("split")) for i in items))
            raise DataError(f"{args.gold}: no gold item of split {split!r} (field 'meta.split'); "
                            f"the items' splits: {present}")
        selection["other_split_ids"] = {i.id for i in items} - {i.id for i in chosen}
        selection["left_out_other_splits"] = len(items) - len(chosen)
        items = chosen
    if args.only_predicted:
        chosen = [i for i in items if i.id in pred_ids]
        if not chosen:
            raise DataError(f"{args.pred}: no prediction for any of the {len(items)} gold item(s) to score "
                            f"(ids such as {items[0].id!r}); is it the predictions file of these items?")
        selection["left_out_unpredicted"] = len(items) - len(chosen)
        items = chosen
    return items, selection


def selection_lines(selection: dict) -> str:
    lines = []
    if "left_out_other_splits" in selection:
        lines.append(f"  split {selection['split']}: {selection['left_out_other_splits']} gold item(s) of other "
                     "splits left out")
    if "left_out_unpredicted" in selection:
        lines.append(f"  --only-predicted: {selection['left_out_unpredicted']} gold item(s) without a prediction "
                     "left out (not scored)")
    return "".join(line + "\n" for line in lines)


def warn_missing(inputs: dict, what: str, hint: str = "--split SPLIT scores one split's items, ") -> None:
    """Missing predictions are scored wrong: said on stderr with the count, not only in the table."""
    import sys

    if inputs["missing"]:
        sys.stderr.write(
            f"warning: {inputs['missing']} of {inputs['n_gold']} {what}(s) have no prediction in {inputs['pred']} "
            f"and are scored wrong (e.g. {', '.join(map(str, inputs['missing_examples']))}); {hint}"
            "--only-predicted scores only the ones with predictions\n")
