"""``egohorizon score forecast|qa|segments|captions|boxes --gold G --pred P [options] [--out report.json]``, and
``egohorizon score agreement --gold RANKED`` (a metric checked against human rankings).

Reads JSON Lines files (SPEC §6), prints a readable table (every figure with its count) and writes
the full report as JSON. Only argparse is imported here; the metrics load inside the handlers.
"""

from __future__ import annotations

import argparse

from egohorizon.commands._args import bounded_float, positive_float, positive_int, seed
from egohorizon.commands.export import FORECAST_FORMATS, QA_FORMATS, add_export_options

EXAMPLES = 5  # ids shown in messages about missing or unknown predictions


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "score",
        help="score predictions: forecasting, QA, segments, captions, hand boxes",
        description="Score model outputs against gold files (JSON Lines, SPEC §6).",
    )
    tasks = parser.add_subparsers(dest="score_task", metavar="TASK", required=True)

    forecast = _task(
        tasks, "forecast", "NextMe-800 soft edit distance, best of N, normalised by random draws"
    )
    forecast.add_argument(
        "--embedder",
        default="minilm",
        help="minilm (default, offline) | exact (normalised Levenshtein) | qwen3-embedding-8b | "
        "any sentence-transformers hub id or local path",
    )
    forecast.add_argument("--embed-prompt", default=None, help="instruction prepended to every text")
    forecast.add_argument("--embed-model", default=None, help="local path of a named embedder's weights")
    forecast.add_argument("--batch-size", type=positive_int, default=64, help="embedding batch size")
    forecast.add_argument("--device", default=None, help="embedding device (cpu, cuda)")
    forecast.add_argument("--draws", type=positive_int, default=5, help="random-baseline draws per point (default 5)")
    forecast.add_argument("--max-candidates", type=positive_int, default=3, help="N of best-of-N (default 3)")
    forecast.add_argument("--seed", type=seed, default=0, help="seed of the random-baseline draws")
    forecast.add_argument("--repeat-last", action="store_true", help="also score the repeat-last-K baseline")
    forecast.add_argument(
        "--metric",
        choices=("s-norm", "ego4d-ed"),
        default="s-norm",
        help="s-norm: the soft edit distance only; ego4d-ed: also Ego4D LTA's official edit distance "
        "(Levenshtein ED@Z and AUED for verb, noun, action; min over the first 5 candidates; Z = each "
        "point's K) printed next to S_norm (default: s-norm)",
    )
    add_export_options(forecast, FORECAST_FORMATS)
    forecast.set_defaults(handler=run_forecast)

    table = tasks.add_parser(
        "forecast-table",
        help="several forecasters on the same points: S_norm with paired bootstrap intervals",
        description="Scores every --pred file (and repeat-last) on the --gold points with the same random "
        "draws and prints one Markdown row per group and predictor: S_norm with a percentile bootstrap "
        "interval over points and its paired difference to --baseline.",
    )
    table.add_argument("--gold", required=True, help="the points (.jsonl) every predictor was run on")
    table.add_argument("--pred", action="append", required=True, metavar="NAME=FILE",
                       help="a predictor's name and its predictions .jsonl (repeatable)")
    table.add_argument("--baseline", default="repeat_last",
                       help="the predictor the differences are taken to (default repeat_last, always scored)")
    table.add_argument("--embedder", default="minilm", help="as for score forecast (default minilm)")
    table.add_argument("--draws", type=positive_int, default=5, help="random-baseline draws per point (default 5)")
    table.add_argument("--max-candidates", type=positive_int, default=3, help="N of best-of-N (default 3)")
    table.add_argument("--seed", type=seed, default=0, help="seed of the random-baseline draws")
    table.add_argument("--boot", type=positive_int, default=2000, help="bootstrap resamples (default 2000)")
    table.add_argument("--out", default=None, help="write the rows as JSON here")
    table.set_defaults(handler=run_forecast_table)

    qa = _task(tasks, "qa", "multiple-choice accuracy: per task, Avg, Acc, per level, invalid, chance")
    qa.add_argument(
        "--task-levels",
        default=None,
        help="JSON file {task: level} for benchmarks other than EgoMonth (e.g. HD-EPIC)",
    )
    qa.add_argument(
        "--split",
        default=None,
        help="score only the gold items whose meta.split is this (train, val, test: as `qa answer --split`); "
        "default: every gold item",
    )
    qa.add_argument(
        "--only-predicted",
        action="store_true",
        help="score only the gold items that have a prediction and say how many were left out "
        "(default: a gold item without a prediction is scored wrong, with a warning)",
    )
    qa.add_argument(
        "--extraction",
        choices=("strict", "egomonth-cs", "egomonth-upper", "egoschema"),  # = metrics.extraction.MODES
        default="strict",
        help="how a reply becomes a letter: strict (the project's, never guesses), egomonth-cs (first "
        "standalone capital A-D, EgoMonth's Qwen3-VL script), egomonth-upper (the same after upper-casing, "
        "EgoMonth's other scripts), egoschema (option text, or a leading letter / 0-based digit); "
        "strict's Avg/Acc are reported beside any other mode (default: strict)",
    )
    add_export_options(qa, QA_FORMATS)
    qa.set_defaults(handler=run_qa)

    segments = _task(tasks, "segments", "EgoHome permissible subsegment Jaccard and semantic F1")
    segments.add_argument(
        "--judge", default="exact", help="exact | verb | embedding | llm | verdicts:FILE (default exact)"
    )
    segments.add_argument(
        "--action-judge",
        default=None,
        help="judge for hand actions (default: verb with --judge llm, else --judge)",
    )
    segments.add_argument("--embedder", default="minilm", help="embedder of the embedding judge")
    segments.add_argument(
        "--threshold", type=bounded_float(-1, 1), default=0.75, help="cosine threshold of the embedding judge"
    )
    add_llm_judge_options(segments)
    segments.add_argument(
        "--iou", type=bounded_float(0, 1, lo_open=True), default=0.75, help="temporal IoU for semantic F1 (default 0.75)"
    )
    segments.add_argument(
        "--baselines", action="store_true", help="also score the three degenerate baselines"
    )
    segments.set_defaults(handler=run_segments)

    captions = _task(
        tasks,
        "captions",
        "caption F1 (one-to-one by temporal IoU and a judge) and soft edit score per window",
    )
    captions.add_argument(
        "--judge", default="exact", help="exact | embedding | llm | verdicts:FILE (default exact)"
    )
    captions.add_argument(
        "--only-predicted",
        action="store_true",
        help="score only the gold windows that have a prediction (e.g. a run's test days against a whole shard "
        "folder) and say how many were left out (default: a window without a prediction is scored wrong)",
    )
    captions.add_argument(
        "--embedder",
        default="minilm",
        help="soft edit score's embedder (and the embedding judge's): "
        "minilm (default) | exact | qwen3-embedding-8b | hub id or local path",
    )
    captions.add_argument(
        "--threshold", type=bounded_float(-1, 1), default=0.75, help="cosine threshold of the embedding judge"
    )
    captions.add_argument("--iou", type=bounded_float(0, 1, lo_open=True), default=0.5, help="temporal IoU for a match (default 0.5)")
    captions.add_argument(
        "--train-gold",
        default=None,
        help="gold caption windows of the training days: their most frequent action is the most-frequent baseline",
    )
    captions.add_argument(
        "--most-frequent", default=None, help="the most-frequent baseline's action, given directly"
    )
    add_llm_judge_options(captions)
    captions.set_defaults(handler=run_captions)

    boxes = _task(tasks, "boxes", "EgoHome centroid hit fraction of hand boxes")
    boxes.add_argument(
        "--fps", type=positive_float, default=30.0, help="frame rate of gold frame indices (default 30)"
    )
    boxes.set_defaults(handler=run_boxes)

    judges = tasks.add_parser(
        "judges",
        help="how far a segment judge (e.g. the LLM judge) agrees with another (default exact) on gold label pairs",
        description="Pairs of gold labels of each --kinds, each clip's segments in time order against another "
        "clip's (seeded), decided by --judge and by --against: the share they agree on, Cohen's kappa, the "
        "four counts and the first disagreements. No predictions needed: a check of the judge itself.",
    )
    judges.add_argument("--gold", required=True, help="gold segments .jsonl file (schema.Segment)")
    judges.add_argument("--judge", required=True, help="the judge checked: llm | embedding | verb | verdicts:FILE")
    judges.add_argument("--against", default="exact", help="the reference judge (default exact)")
    judges.add_argument("--kinds", default="subtask,hand_caption",
                        help="segment kinds, comma-separated (default subtask,hand_caption: the LLM-judged ones)")
    judges.add_argument("--max-pairs", type=positive_int, default=100, help="pairs per kind at most (default 100)")
    judges.add_argument("--seed", type=seed, default=0, help="seed of the partner clips and of the sample")
    judges.add_argument("--embedder", default="minilm", help="embedder of the embedding judge")
    judges.add_argument("--threshold", type=bounded_float(-1, 1), default=0.75, help="embedding judge threshold")
    add_llm_judge_options(judges)
    judges.add_argument("--out", default=None, help="write the report as JSON here")
    judges.set_defaults(handler=run_judges)

    agreement = tasks.add_parser(
        "agreement",
        help="validate a forecast metric on human rankings: pairwise accuracy, H10, score histogram",
        description="The NextMe-800 metric-validation table for one embedder: pairwise accuracy against "
        "human rankings of candidates (ties allowed), the annotators' own leave-one-out agreement, "
        "H10 (spread of the scores) and a histogram PNG. --gold: JSON Lines of "
        '{"id", "reference": [actions], "candidates": [[actions], ...], "rankings": [[rank per '
        "candidate], one list per annotator]} (rank 1 = closest).",
    )
    agreement.add_argument("--gold", required=True, help="ranked candidates .jsonl file")
    agreement.add_argument(
        "--embedder",
        default="minilm",
        help="minilm (default) | exact (normalised Levenshtein) | qwen3-embedding-8b | hub id or local path",
    )
    agreement.add_argument("--embed-prompt", default=None, help="instruction prepended to every text")
    agreement.add_argument("--embed-model", default=None, help="local path of a named embedder's weights")
    agreement.add_argument("--out", default=None, help="write the report as JSON here")
    agreement.add_argument("--plot", default=None, help="write the score histogram as a PNG here")
    agreement.set_defaults(handler=run_agreement)


def add_llm_judge_options(parser: argparse.ArgumentParser) -> None:
    """The LLM judge's options (``--judge llm``), the same for every command that judges labels."""
    parser.add_argument("--judge-model", default=None,
                        help="LLM judge: model id (server), hub id, local path or backbone name (smollm2_135m)")
    parser.add_argument("--judge-url", default=None,
                        help="LLM judge: OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1); "
                             "without it the model runs locally with transformers")
    parser.add_argument("--judge-api-key-env", default="OPENAI_API_KEY", help="env variable holding the API key")
    parser.add_argument("--judge-concurrency", type=positive_int, default=8, help="LLM judge: requests in flight")
    parser.add_argument("--cache-dir", default=None,
                        help="LLM judge verdict cache (default $EGOHORIZON_CACHE/judge or ~/.cache/egohorizon/judge)")


def _task(tasks, name: str, help_text: str) -> argparse.ArgumentParser:
    parser = tasks.add_parser(name, help=help_text, description=help_text + ".")
    parser.add_argument("--gold", required=True, help="gold .jsonl file")
    parser.add_argument("--pred", required=True, help="predictions .jsonl file")
    parser.add_argument("--out", default=None, help="write the full report as JSON here")
    return parser


# ------------------------------------------------------------------------------------ helpers


def _load(path: str, record_type):
    from egohorizon.schema import read_jsonl

    result = read_jsonl(path, record_type)
    result.raise_for_defects()
    return result.records


def _load_gold(args: argparse.Namespace, record_type) -> list:
    """The gold records, which must exist; ``--out`` is checked first, before any work is done."""
    from egohorizon.errors import DataError

    _check_out(args.out)
    records = _load(args.gold, record_type)
    if not records:  # an empty gold file would score as a run over nothing, with exit 0
        raise DataError(f"{args.gold}: no records; expected JSON Lines of {record_type.__name__} records")
    return records


def _check_out(out: str | None) -> None:
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


def _reconcile(gold_ids, pred_ids, args) -> dict:
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


def _finish(report: dict, text: str, args) -> int:
    import sys

    from egohorizon.metrics.report import format_inputs

    sys.stdout.write(format_inputs(report["inputs"]) + "\n" + text)
    _write_report(report, args.out)
    return 0


def _write_report(report: dict, out: str | None) -> None:
    """Writes the report atomically (a temporary file, then a rename) and says where."""
    import sys
    from pathlib import Path

    from egohorizon.errors import ConfigError

    if out:
        from egohorizon.atomic_files import write_json_atomic

        path = Path(out)
        try:
            write_json_atomic(path, report, indent=2)
        except OSError as error:  # e.g. a read-only file system, which _check_out cannot see
            raise ConfigError(f"--out {path}: cannot write the report ({error.strerror or error})") from error
        sys.stdout.write(f"report written to {path}\n")


# ------------------------------------------------------------------------------------ tasks


def run_forecast_table(args: argparse.Namespace) -> int:
    """Every named predictor and repeat-last on the same points (``metrics.forecast_table``)."""
    import sys

    from egohorizon.errors import ConfigError, DataError
    from egohorizon.metrics.embedders import get_embedder
    from egohorizon.metrics.forecast_table import compare_forecasters, format_table
    from egohorizon.schema import ForecastPoint, ForecastPrediction
    from egohorizon.tasks import get_task
    from egohorizon.tasks.forecast import repeat_last_predictions

    _check_out(args.out)  # before any scoring, as the other score commands do
    points = _load_gold(args, ForecastPoint)
    task = get_task("forecast", num_candidates=args.max_candidates)
    predictions: dict[str, dict] = {}
    for spec in args.pred:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"--pred {spec!r}: expected NAME=FILE")
        if name in predictions or name == "repeat_last":
            raise ConfigError(f"--pred {spec!r}: the name {name!r} is given twice (repeat_last is built in)")
        records = _load(path, ForecastPrediction)
        ids = {r.id for r in records}
        missing = [p.id for p in points if p.id not in ids]
        if len(missing) == len(points):
            raise DataError(f"{path}: none of its {len(ids)} prediction ids is in {args.gold}")
        if missing:  # scored invalid, as score forecast does; said so, never silently
            sys.stderr.write(f"{path}: {len(missing)} of {len(points)} points have no prediction (scored invalid)\n")
        predictions[name] = {r.id: task.parse_record(r) for r in records}
    predictions["repeat_last"] = repeat_last_predictions(points)
    if args.baseline not in predictions:
        raise ConfigError(f"--baseline {args.baseline!r}: not among {list(predictions)}")
    rows = compare_forecasters(points, predictions, get_embedder(args.embedder), baseline=args.baseline,
                               n_random_draws=args.draws, seed=args.seed, max_candidates=args.max_candidates,
                               n_boot=args.boot)
    sys.stdout.write(format_table(rows, args.baseline))
    _write_report({"rows": rows, "gold": args.gold, "pred": args.pred}, args.out)
    return 0


def run_forecast(args: argparse.Namespace) -> int:
    """Scores forecast predictions through the forecast task of the registry (the evaluation
    callback's code): best of ``--max-candidates``, the random baseline inside the report and, with
    --repeat-last, the repeat-last-K baseline."""
    from egohorizon.commands.export import check_exports, forecast_exports, write_exports
    from egohorizon.metrics.embedders import get_embedder
    from egohorizon.metrics.report import format_forecast
    from egohorizon.schema import ForecastPoint, ForecastPrediction
    from egohorizon.tasks import get_task

    taxonomy = check_exports(args)
    task = get_task("forecast", num_candidates=args.max_candidates)
    points = _load_gold(args, ForecastPoint)
    records = _load(args.pred, ForecastPrediction)
    predictions = {r.id: task.parse_record(r) for r in records}
    inputs = _reconcile([p.id for p in points], [r.id for r in records], args)
    embedder = get_embedder(
        args.embedder,
        prompt=args.embed_prompt,
        batch_size=args.batch_size,
        device=args.device,
        model=args.embed_model,
    )
    evaluation = task.evaluate(points, predictions, "test", embedder=embedder, n_random_draws=args.draws,
                               seed=args.seed)
    report = evaluation.report
    report["overall"]["unparsed"] = sum(
        1 for r in records if r.candidates is None and predictions[r.id] is None
    )
    if args.repeat_last:
        baseline = evaluation.baselines["repeat_last"]
        report["baselines"] = {"repeat_last": {k: baseline[k] for k in ("overall", "groups")}}
    report["inputs"] = inputs
    text = format_forecast(report)
    if args.metric == "ego4d-ed":
        from egohorizon.metrics.ego4d import ego4d_report
        from egohorizon.metrics.report import format_ego4d

        report["ego4d"] = ego4d_report(points, {p.id: predictions.get(p.id) for p in points})
        text += format_ego4d(report["ego4d"])
    exports = forecast_exports(args, taxonomy, points, records, predictions, report)  # refusals before writes
    _finish(report, text, args)
    return write_exports(exports)


def run_qa(args: argparse.Namespace) -> int:
    import json

    from egohorizon.commands.export import check_exports, qa_exports, write_exports
    from egohorizon.errors import DataError
    from egohorizon.metrics.exports import qa_rows
    from egohorizon.metrics.qa import item_level
    from egohorizon.metrics.report import format_qa
    from egohorizon.schema import QAItem, QAPrediction
    from egohorizon.tasks import get_task

    check_exports(args)
    task = get_task("qa")  # the same parsing and scoring as the evaluation callback's
    every = _load_gold(args, QAItem)
    records = _load(args.pred, QAPrediction)
    items, selection = _select_gold(every, {r.id for r in records}, args)
    records = [r for r in records if r.id not in selection["other_split_ids"]]  # neither missing nor unknown
    by_id = {item.id: item for item in items}
    raws = {r.id: (r.answer if r.answer is not None else r.text) for r in records if r.id in by_id}
    answers = {i: task.parse([raw], by_id[i]) for i, raw in raws.items()}
    mode = getattr(args, "extraction", "strict")
    strict_answers = answers
    if mode != "strict":
        from egohorizon.metrics.extraction import extract

        answers = {i: extract(raw, by_id[i].options, mode) for i, raw in raws.items()}
    task_levels = None
    if args.task_levels:
        try:
            with open(args.task_levels, encoding="utf-8") as handle:
                task_levels = json.load(handle)
        except (OSError, json.JSONDecodeError) as error:
            raise DataError(
                f"{args.task_levels}: cannot read a JSON object {{task: level}} ({error})"
            ) from error
        if not isinstance(task_levels, dict) or not all(isinstance(v, int) for v in task_levels.values()):
            raise DataError(
                f"{args.task_levels}: expected a JSON object mapping task names to integer levels"
            )
    report = task.evaluate(items, answers, "test", task_levels=task_levels).report
    levels = {item.id: item_level(item, task_levels) for item in items}
    report["per_item"] = qa_rows(items, raws, answers, mode, levels, strict_answers if mode != "strict" else None)
    report["inputs"] = _reconcile([i.id for i in items], [r.id for r in records], args)
    report["inputs"].update({k: v for k, v in selection.items() if k != "other_split_ids"})
    _warn_missing(report["inputs"], "gold item")
    text = format_qa(report)
    if mode != "strict":
        strict = task.evaluate(items, strict_answers, "test", task_levels=task_levels).report
        differ = sum(1 for i in raws if answers[i] != strict_answers[i])
        report["extraction"] = {"mode": mode, "read_differently": differ,
                                "strict": {k: strict[k] for k in ("Avg", "Acc", "n", "invalid")}}
        text += (f"extraction {mode}; strict: Avg {_fmt(strict['Avg'])} Acc {_fmt(strict['Acc'])} "
                 f"invalid {strict['invalid']} ({differ} of {len(raws)} replies read differently)\n")
    exports = qa_exports(args, items, report["per_item"], report, records, len(every))
    _finish(report, _selection_lines(selection) + text, args)
    return write_exports(exports)


def _fmt(value) -> str:
    from egohorizon.metrics.report import fmt

    return fmt(value)


def _select_gold(items: list, pred_ids: set[str], args: argparse.Namespace) -> tuple[list, dict]:
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


def _selection_lines(selection: dict) -> str:
    lines = []
    if "left_out_other_splits" in selection:
        lines.append(f"  split {selection['split']}: {selection['left_out_other_splits']} gold item(s) of other "
                     "splits left out")
    if "left_out_unpredicted" in selection:
        lines.append(f"  --only-predicted: {selection['left_out_unpredicted']} gold item(s) without a prediction "
                     "left out (not scored)")
    return "".join(line + "\n" for line in lines)


def _warn_missing(inputs: dict, what: str, hint: str = "--split SPLIT scores one split's items, ") -> None:
    """Missing predictions are scored wrong: said on stderr with the count, not only in the table."""
    import sys

    if inputs["missing"]:
        sys.stderr.write(
            f"warning: {inputs['missing']} of {inputs['n_gold']} {what}(s) have no prediction in {inputs['pred']} "
            f"and are scored wrong (e.g. {', '.join(map(str, inputs['missing_examples']))}); {hint}"
            "--only-predicted scores only the ones with predictions\n")


def run_segments(args: argparse.Namespace) -> int:
    from egohorizon.metrics.report import format_segments
    from egohorizon.metrics.segments import score_segments
    from egohorizon.schema import Segment

    gold = _load_gold(args, Segment)
    predictions = _load(args.pred, Segment)
    judges = _segment_judges(args, sorted({s.kind for s in gold}))
    report = score_segments(gold, predictions, judges, iou_threshold=args.iou)
    if args.baselines:
        from egohorizon.metrics.segment_baselines import score_baselines

        report["baselines"] = score_baselines(gold, judges)
    report["judge_stats"] = {kind: judge.stats for kind, judge in judges.items()}
    gold_clips = sorted({s.clip for s in gold})
    report["inputs"] = _reconcile(gold_clips, sorted({s.clip for s in predictions}), args)
    report["inputs"].update(n_gold=len(gold), n_pred=len(predictions))
    return _finish(report, format_segments(report), args)


def _segment_judges(args: argparse.Namespace, kinds: list[str]) -> dict:
    """kind -> judge. With --judge llm, hand actions use the verb judge (as in EgoHome)."""
    action_spec = args.action_judge or ("verb" if args.judge == "llm" else args.judge)
    built: dict[tuple[str, str], object] = {}
    judges = {}
    for kind in kinds:
        spec = action_spec if kind == "hand_action" else args.judge
        prompt = "judge_hand_caption" if kind == "hand_caption" else "judge_subtask"
        key = (spec, prompt if spec == "llm" else "")
        if key not in built:
            built[key] = _make_judge(spec, prompt, args)
        judges[kind] = built[key]
    return judges


def _make_judge(spec: str, prompt: str, args: argparse.Namespace):
    import os
    from pathlib import Path

    from egohorizon.errors import ConfigError
    from egohorizon.metrics import judges

    if spec == "exact":
        return judges.ExactJudge()
    if spec == "verb":
        return judges.VerbJudge()
    if spec == "embedding":
        from egohorizon.metrics.embedders import get_embedder

        return judges.EmbeddingJudge(get_embedder(args.embedder), threshold=args.threshold)
    if spec.startswith("verdicts:"):
        return judges.VerdictsJudge(spec.split(":", 1)[1])
    if spec == "llm":
        from egohorizon.llm import make_backend
        from egohorizon.metrics.llm_judge import LLMJudge

        if not args.judge_model:
            raise ConfigError(
                "--judge llm needs --judge-model (a server's model id with --judge-url, "
                "or a hub id / local path to run locally)"
            )
        options = (
            {"api_key_env": args.judge_api_key_env, "max_concurrency": args.judge_concurrency}
            if args.judge_url
            else {}
        )
        backend = make_backend(args.judge_model, base_url=args.judge_url, **options)
        root = Path(os.environ.get("EGOHORIZON_CACHE") or Path.home() / ".cache" / "egohorizon")
        return LLMJudge(backend, prompt, cache_dir=args.cache_dir or root / "judge")
    raise ConfigError(f"--judge {spec!r}: expected exact, verb, embedding, llm or verdicts:FILE")


def run_judges(args: argparse.Namespace) -> int:
    """``score judges``: one judge against another on pairs of gold labels (metrics.judge_agreement)."""
    import sys

    from egohorizon.errors import ConfigError
    from egohorizon.metrics.judge_agreement import agreement, gold_pairs
    from egohorizon.metrics.report import table
    from egohorizon.schema import Segment

    _check_out(args.out)
    segments = _load_gold(args, Segment)
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    report: dict = {"gold": args.gold, "against": args.against, "kinds": {}}
    rows = []
    for kind in kinds:
        pairs = gold_pairs(segments, kind, args.max_pairs, args.seed)
        if not pairs:
            raise ConfigError(f"{args.gold}: fewer than two clips with {kind!r} segments; nothing to pair "
                              f"(--kinds {args.kinds})")
        prompt = "judge_hand_caption" if kind == "hand_caption" else "judge_subtask"
        judge, reference = _make_judge(args.judge, prompt, args), _make_judge(args.against, prompt, args)
        result = agreement(pairs, judge, reference)
        report["kinds"][kind] = {"judge": judge.describe(), "reference": reference.describe(), **result}
        rows.append([kind, result["n"], result["agreement"], result["kappa"], result["judge_match_rate"],
                     result["reference_match_rate"], result["judge_only"], result["reference_only"]])
    # The command's result goes to stdout, as every score command writes its table (sys.stdout.write).
    described = report["kinds"][kinds[0]]["judge"]
    model = f" ({described['model']})" if described.get("model") else ""
    lines = [f"{described['judge']}{model} against {args.against} on gold label pairs of {args.gold}",
             table(["kind", "pairs", "agreement", "kappa", "judge matches", "reference matches", "judge only",
                    "reference only"], rows)]
    lines += [f"  {kind}: {d['gold']!r} vs {d['pred']!r}: judge {d['judge']}, {args.against} {d['reference']}"
              for kind, block in report["kinds"].items() for d in block["disagreements"][:3]]
    sys.stdout.write("\n".join(lines) + "\n")
    _write_report(report, args.out)
    return 0


def run_captions(args: argparse.Namespace) -> int:
    """Scores caption predictions through the caption task of the registry (the evaluation callback's
    code), with the repeat-previous baseline and, given --train-gold or --most-frequent, the
    most-frequent one."""
    from egohorizon.errors import ConfigError
    from egohorizon.metrics.captions import most_frequent_action, most_frequent_scene
    from egohorizon.metrics.embedders import get_embedder
    from egohorizon.tasks import get_task

    if args.train_gold and args.most_frequent:
        raise ConfigError("--train-gold and --most-frequent both name the baseline's action; give one")
    task = get_task("caption")
    _check_out(args.out)
    every = _caption_gold(args.gold)
    records, skipped = _caption_predictions(args.pred)
    windows, selection = _select_gold(every, {r.id for r in records}, args)
    by_id = {w.id: w for w in windows}
    predictions = {r.id: task.parse_record(r, by_id[r.id]) for r in records if r.id in by_id}
    action, scene = args.most_frequent, None
    if args.train_gold:
        train = _caption_train_gold(args.train_gold, windows, selection)
        action, scene = most_frequent_action(train), most_frequent_scene(train)
    embedder = get_embedder(args.embedder)
    judge = _make_judge(args.judge, "judge_subtask", args)
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
    report["inputs"] = _reconcile([w.id for w in windows], [r.id for r in records], args)
    report["inputs"].update({k: v for k, v in selection.items() if k != "other_split_ids"}, skipped_windows=skipped)
    _warn_missing(report["inputs"], "gold window", hint="")
    rows = task.summary_rows(evaluation)
    notes = _selection_lines(selection) + (f"  {skipped} window(s) the caption job skipped (no frames) are no "
                                           "predictions\n" if skipped else "")
    return _finish(report, notes + task.format_summary(rows, title="Caption scores") + "\n", args)


def _caption_gold(path: str) -> list:
    """Gold caption windows: a JSON Lines file of ``CaptionWindow`` records, or a shard folder (its
    index.json) whose samples carry gold level-1 events (the demo world's: ``shards build --demo``)."""
    from pathlib import Path

    from egohorizon.errors import DataError
    from egohorizon.schema import CaptionWindow

    if not (Path(path) / "index.json").is_file():
        records = _load(path, CaptionWindow)
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
        return _load(path, CaptionWindow)
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
        return _load(path, CaptionPrediction), 0
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


def run_boxes(args: argparse.Namespace) -> int:
    from egohorizon.metrics.boxes import centroid_hit_fraction
    from egohorizon.metrics.report import format_boxes
    from egohorizon.schema import BoxPrediction, HandBox

    gold = _load_gold(args, HandBox)
    _check_duplicate_gold_boxes(args.gold)
    _check_gold_box_grids(args.gold)
    predictions = _load(args.pred, BoxPrediction)
    report = centroid_hit_fraction(gold, predictions, fps=args.fps)
    report["inputs"] = _reconcile(sorted({b.clip for b in gold}), sorted({p.clip for p in predictions}), args)
    report["inputs"].update(n_gold=len(gold), n_pred=len(predictions))
    return _finish(report, format_boxes(report), args)


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

    lines = list(iter_json_lines(path))  # records already validated by _load
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


def run_agreement(args: argparse.Namespace) -> int:
    """Scores every candidate against its reference with the chosen embedder (the soft edit score of
    SPEC §1) and checks the scores against the human rankings."""
    import sys

    from egohorizon.metrics.diagnostics import (
        annotator_agreement,
        h10,
        histogram10,
        pairwise_accuracy,
        score_candidates,
    )
    from egohorizon.metrics.embedders import get_embedder
    from egohorizon.schema import RankedCandidates

    _check_out(args.plot)
    items = _load_gold(args, RankedCandidates)
    embedder = get_embedder(args.embedder, prompt=args.embed_prompt, model=args.embed_model)
    scores = score_candidates([i.reference for i in items], [i.candidates for i in items], embedder)
    rankings = [i.rankings for i in items]
    flat = [score for item_scores in scores for score in item_scores]
    report = {
        "gold": args.gold,
        "embedder": embedder.name,
        "n_items": len(items),
        "n_candidates": len(flat),
        "n_annotators": max(len(r) for r in rankings),
        "pairwise_accuracy": pairwise_accuracy(scores, rankings),
        "annotator_agreement": annotator_agreement(rankings),
        "h10": h10(flat),
        "histogram": histogram10(flat),
        "endpoint_share": sum(s <= 0.0 or s >= 1.0 for s in flat) / len(flat),
        "per_item": [{"id": i.id, "scores": s} for i, s in zip(items, scores)],
    }
    sys.stdout.write(_format_agreement(report))
    if args.plot:
        _plot_histogram(report, args.plot)
        sys.stdout.write(f"histogram written to {args.plot}\n")
    _write_report(report, args.out)
    return 0


def _format_agreement(report: dict) -> str:
    def fmt(value):
        return "n/a" if value is None else f"{value:.4f}"

    pairwise, people = report["pairwise_accuracy"], report["annotator_agreement"]
    return (
        f"gold: {report['gold']} ({report['n_items']} items, {report['n_candidates']} candidates, "
        f"up to {report['n_annotators']} annotators)\n"
        f"metric: soft edit score with embedder {report['embedder']}\n"
        f"  pairwise accuracy   {fmt(pairwise['accuracy'])}  ({pairwise['right']} of {pairwise['pairs']} "
        "strictly ordered pairs)\n"
        f"  annotators (LOO)    {fmt(people['accuracy'])}  ({people['right']} of {people['pairs']} pairs, "
        f"{people['items']} items with 2+ annotators)\n"
        f"  H10                 {fmt(report['h10'])}  (1 = scores spread evenly over [0, 1])\n"
        f"  scores at 0 or 1    {report['endpoint_share']:.1%}\n"
        f"  histogram (10 bins) {report['histogram']}\n"
    )


def _plot_histogram(report: dict, path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    figure, axis = plt.subplots(figsize=(6, 3.5))
    axis.bar([i / 10 + 0.05 for i in range(10)], report["histogram"], width=0.095, color="#4c72b0")
    axis.set_xlim(0, 1)
    axis.set_xlabel("soft edit score S (0 = nothing in common, 1 = the same actions)")
    axis.set_ylabel("candidates")
    axis.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))  # counts, not fractions
    h = report["h10"]
    axis.set_title(
        f"{report['embedder']}: H10 = {'n/a' if h is None else f'{h:.3f}'}, "
        f"pairwise accuracy = {report['pairwise_accuracy']['accuracy'] or 0:.3f}"
    )
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
