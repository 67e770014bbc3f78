"""``egohorizon score forecast|qa|segments|captions|boxes --gold G --pred P [options] [--out report.json]``, and
``egohorizon score agreement --gold RANKED`` (a metric checked against human rankings).

Reads JSON Lines files (SPEC §6), prints a readable table (every figure with its count) and writes
the full report as JSON. Only argparse is imported here; the metrics load inside the handlers.

The handlers live in one module per task family: forecast (forecast, forecast-table), qa, segments
(segments, judges, and the judges every task builds), captions, boxes, agreement; common holds what
they share (reading, checking, the report). ``register`` names them through ``_lazy``, so
``egohorizon --help`` imports none of them.
"""

from __future__ import annotations

import argparse

from egohorizon.commands._args import bounded_float, bounded_int, positive_float, positive_int, seed
from egohorizon.commands._owned import declare_output
from egohorizon.commands.export import FORECAST_FORMATS, QA_FORMATS, add_export_options
from egohorizon.commands.habit_args import add_history_arguments


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
    forecast.set_defaults(handler=_lazy("forecast", "run_forecast"))

    table = tasks.add_parser(
        "forecast-table",
        help="several forecasters on the same points: S_norm with paired bootstrap intervals",
        description="Scores every --pred file (and repeat-last) on the --gold points with the same random "
        "draws and prints one Markdown row per group and predictor: S_norm with a percentile bootstrap "
        "interval over points and its paired difference to --baseline.",
    )
    table.add_argument("--gold", required=True, help="the points (.jsonl) every predictor was run on")
    table.add_argument("--pred", action="append", default=[], metavar="NAME=FILE",
                       help="a predictor's name and its predictions .jsonl (repeatable; may be left out with "
                            "--history, to score the baselines alone)")
    table.add_argument("--baseline", default=None,
                       help="the predictor the differences are taken to, or 'strongest' (per group the best of "
                            "repeat_last, frequency, markov, time_of_day on these points); default: strongest with "
                            "--history, else repeat_last (always scored)")
    table.add_argument("--embedder", default="minilm", help="as for score forecast (default minilm)")
    table.add_argument("--draws", type=positive_int, default=5, help="random-baseline draws per point (default 5)")
    table.add_argument("--max-candidates", type=positive_int, default=3, help="N of best-of-N (default 3)")
    table.add_argument("--seed", type=seed, default=0, help="seed of the random-baseline draws")
    # 1000 = metrics.bootstrap.MIN_BOOT (not imported here: --help loads no numpy)
    table.add_argument("--boot", type=bounded_int(1000), default=2000,
                       help="bootstrap resamples, at least 1000 (default 2000)")
    table.add_argument("--out", default=None, help="write the rows as JSON here")
    add_history_arguments(table)
    table.set_defaults(handler=_lazy("forecast", "run_forecast_table"))

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
    qa.set_defaults(handler=_lazy("qa", "run_qa"))

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
    segments.set_defaults(handler=_lazy("segments", "run_segments"))

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
    captions.set_defaults(handler=_lazy("captions", "run_captions"))

    boxes = _task(tasks, "boxes", "EgoHome centroid hit fraction of hand boxes")
    boxes.add_argument(
        "--fps", type=positive_float, default=30.0, help="frame rate of gold frame indices (default 30)"
    )
    boxes.set_defaults(handler=_lazy("boxes", "run_boxes"))

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
    judges.set_defaults(handler=_lazy("segments", "run_judges"))

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
    agreement.set_defaults(handler=_lazy("agreement", "run_agreement"))
    for task in (forecast, table, qa, segments, captions, boxes, judges, agreement):
        declare_output(task, inputs=("gold", "pred", "history", "split"), kind="file")  # a report over its own predictions: refused


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


def _lazy(module: str, name: str):
    """The handler ``name`` of ``egohorizon.commands.score.<module>``, imported only when the command runs."""

    def handler(args: argparse.Namespace) -> int:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{module}"), name)(args)

    handler.__name__ = handler.__qualname__ = name
    return handler
