"""Benchmark files from predictions (issue 25, item 4; docs/benchmarks.md#exports).

Two ways in, one set of writers (``egohorizon.metrics.exports``, ``egohorizon.metrics.lmms_eval``):

- ``score qa|forecast ... --export FORMAT=PATH`` (repeatable) writes the evaluation it just scored:
  qa: ``egoschema`` (submission JSON), ``egomonth-csv`` (the paper scripts' CSV), ``lmms-eval`` (a
  folder: ``<date>_results.json`` + ``<date>_samples_<task>.jsonl``); forecast: ``ego4d-lta``
  (challenge JSON, with ``--taxonomy``) and ``lmms-eval``.
- ``egohorizon export egoschema|ego4d-lta`` writes a submission for questions or clips without public
  labels (``unanswered.jsonl``, ``test_unannotated.jsonl`` of ``data convert``), which cannot be scored.

Only argparse is imported at module level; every option is checked while parsing, before any work.
"""

from __future__ import annotations

import argparse

from egohorizon.commands._args import out_dir, out_file
from egohorizon.commands._owned import declare_output

QA_FORMATS = ("egoschema", "egomonth-csv", "lmms-eval")
FORECAST_FORMATS = ("ego4d-lta", "lmms-eval")
FOLDER_FORMATS = ("lmms-eval",)
EXTRACTION_MODES = ("strict", "egomonth-cs", "egomonth-upper", "egoschema")  # = metrics.extraction.MODES
UNKNOWN_HELP = ("a predicted verb or noun that is not a taxonomy class: refuse (stop, naming them) or repeat "
                "(write the candidate's previous label there; counted)")
TAXONOMY_HELP = "fho_lta_taxonomy.json, or the metadata.json `data convert ego4d-lta` wrote"


def export_spec(formats: tuple[str, ...]):
    """An argparse type: ``FORMAT=PATH`` with FORMAT one of ``formats``; PATH a file, or a folder for lmms-eval."""
    def parse(value: str) -> tuple[str, str]:
        name, sep, path = value.partition("=")
        if not sep or name not in formats or not path:
            raise argparse.ArgumentTypeError(f"expected FORMAT=PATH with FORMAT one of {', '.join(formats)}, "
                                             f"got {value!r}")
        try:
            return name, (out_dir if name in FOLDER_FORMATS else out_file)(path)
        except argparse.ArgumentTypeError as error:
            raise argparse.ArgumentTypeError(f"{value}: {error}") from None

    parse.__name__ = "FORMAT=PATH"
    return parse


def add_export_options(parser: argparse.ArgumentParser, formats: tuple[str, ...]) -> None:
    """``--export`` (and, for ego4d-lta, ``--taxonomy`` and ``--lta-unknown``) on a score command."""
    kinds = {"egoschema": "EgoSchema submission JSON {q_uid: 0-based index}",
             "egomonth-csv": "the EgoMonth scripts' per-item CSV",
             "ego4d-lta": "Ego4D LTA challenge JSON (needs --taxonomy)",
             "lmms-eval": "a folder: lmms-eval's <date>_results.json and <date>_samples_<task>.jsonl"}
    parser.add_argument("--export", type=export_spec(formats), action="append", default=[],
                        metavar="FORMAT=PATH", help="also write this evaluation as " + "; ".join(
                            f"{f}: {kinds[f]}" for f in formats) + " (repeatable; docs/benchmarks.md#exports)")
    if "ego4d-lta" in formats:
        parser.add_argument("--taxonomy", default=None, help="for --export ego4d-lta: " + TAXONOMY_HELP)
        parser.add_argument("--lta-unknown", choices=("refuse", "repeat"), default="refuse", help=UNKNOWN_HELP)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "export", help="benchmark submissions for questions or clips without public labels",
        description="Write a benchmark's submission file from predictions for its unlabelled set. Scored "
                    "sets export with `score qa|forecast --export FORMAT=PATH` (docs/benchmarks.md#exports).")
    kinds = parser.add_subparsers(dest="export_format", metavar="FORMAT", required=True)
    egoschema = kinds.add_parser("egoschema", help="EgoSchema submission JSON {q_uid: 0-based answer index}",
                                 description="EgoSchema's submission: {q_uid: 0-based index} over the questions "
                                             "whose reply gives an answer.")
    egoschema.add_argument("--questions", required=True,
                           help="unanswered.jsonl or qa.jsonl of `data convert egoschema`")
    egoschema.add_argument("--pred", required=True, help="QA predictions .jsonl ({id, answer} or {id, text})")
    egoschema.add_argument("--out", type=out_file, required=True, help="the submission .json to write")
    egoschema.add_argument("--extraction", choices=EXTRACTION_MODES, default="strict",
                           help="how a reply becomes an answer, as for `score qa --extraction`")
    egoschema.set_defaults(handler=run_egoschema)
    declare_output(egoschema, inputs=("questions", "pred"), kind="file")
    lta = kinds.add_parser("ego4d-lta", help="Ego4D LTA challenge JSON {clip_uid_idx: {verb, noun}}",
                           description="Ego4D long-term anticipation's challenge file: per point 5 candidate "
                                       "sequences of Z verb and noun class indices.")
    lta.add_argument("--points", required=True,
                     help="test_unannotated.jsonl or points.jsonl of `data convert ego4d-lta`")
    lta.add_argument("--pred", required=True, help="forecast predictions .jsonl ({id, candidates} or {id, text})")
    lta.add_argument("--taxonomy", required=True, help=TAXONOMY_HELP)
    lta.add_argument("--out", type=out_file, required=True, help="the challenge .json to write")
    lta.add_argument("--lta-unknown", choices=("refuse", "repeat"), default="refuse", help=UNKNOWN_HELP)
    lta.set_defaults(handler=run_lta)
    declare_output(lta, inputs=("points", "pred", "taxonomy"), kind="file")


# ------------------------------------------------------------------------- the export subcommand


def _predictions(path: str, record_type, ids: list[str]) -> list:
    """The prediction records, which must name some of ``ids``; unknown ids are said on stderr."""
    import sys

    from egohorizon.errors import DataError
    from egohorizon.schema import read_jsonl

    result = read_jsonl(path, record_type)
    result.raise_for_defects()
    known = set(ids)
    records = [r for r in result.records if r.id in known]
    if not records:
        raise DataError(f"{path}: none of its {len(result.records)} prediction ids is among the {len(ids)} "
                        f"to export (e.g. {ids[0]!r}); predictions of another file?")
    if len(records) < len(result.records):
        sys.stderr.write(f"warning: {path}: {len(result.records) - len(records)} prediction(s) with ids not in the "
                         "exported set are ignored\n")
    return records


def run_egoschema(args: argparse.Namespace) -> int:
    from egohorizon.metrics.exports import egoschema_submission, json_text, unanswered_questions
    from egohorizon.metrics.extraction import extract
    from egohorizon.schema import QAPrediction

    questions = unanswered_questions(args.questions)
    records = _predictions(args.pred, QAPrediction, [q.id for q in questions])
    by_id = {q.id: q for q in questions}
    answers = {r.id: extract(r.answer if r.answer is not None else r.text, by_id[r.id].options, args.extraction)
               for r in records}
    submission, counts = egoschema_submission(questions, answers, args.questions)
    return write_exports([(args.out, json_text(submission), f"--out {args.out}", _egoschema_line(counts))])


def run_lta(args: argparse.Namespace) -> int:
    from egohorizon.data.sources.ego4d_lta import read_taxonomy
    from egohorizon.metrics.exports import json_text, lta_submission, unannotated_points
    from egohorizon.schema import ForecastPrediction
    from egohorizon.tasks import get_task

    taxonomy = read_taxonomy(args.taxonomy)
    points = unannotated_points(args.points)
    records = _predictions(args.pred, ForecastPrediction, [p for p, _ in points])
    task = get_task("forecast")
    predictions = {r.id: task.parse_record(r) for r in records}
    submission, counts = lta_submission(points, predictions, taxonomy, args.pred, args.lta_unknown)
    return write_exports([(args.out, json_text(submission, indent=None), f"--out {args.out}", _lta_line(counts))])


def write_exports(planned: list[tuple[str, str, str, str]]) -> int:
    """Writes each (path, text, option, summary) atomically and prints where and what."""
    import sys

    from egohorizon.metrics.exports import write_text_atomic

    for path, text, what, summary in planned:
        write_text_atomic(path, text, what)
        sys.stdout.write(f"{summary} written to {path}\n")
    return 0


def _egoschema_line(counts: dict) -> str:
    return (f"EgoSchema submission ({counts['written']} of {counts['items']} questions; {counts['not_answered']} "
            "without a readable answer left out)")


def _lta_line(counts: dict) -> str:
    fixes = ", ".join(f"{counts[k]} {k.replace('_', ' ')}" for k in (
        "no_prediction", "no_usable_candidate", "unknown_verb", "unknown_noun", "replaced", "dropped_candidates",
        "padded_candidates", "repeated_candidates", "cut_candidates") if counts[k])
    return (f"Ego4D LTA submission ({counts['written']} of {counts['points']} points" +
            (f"; {fixes}" if fixes else "") + ")")


# ---------------------------------------------------------------------- --export on score commands


def check_exports(args: argparse.Namespace):
    """Before any scoring: each format at most once, and ego4d-lta's taxonomy read (None without one)."""
    from egohorizon.errors import ConfigError

    names = [name for name, _ in args.export]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ConfigError(f"--export {twice[0]}=...: given twice; write one file per format")
    for name, path in args.export:
        _probe(path, name in FOLDER_FORMATS, f"--export {name}={path}")
    if "ego4d-lta" not in names:
        if getattr(args, "taxonomy", None):
            raise ConfigError("--taxonomy is read only by --export ego4d-lta=PATH")
        return None
    if not args.taxonomy:
        raise ConfigError(f"--export ego4d-lta needs --taxonomy ({TAXONOMY_HELP}): the challenge file holds "
                          "class indices")
    from egohorizon.data.sources.ego4d_lta import read_taxonomy

    return read_taxonomy(args.taxonomy)


def _probe(path: str, folder: bool, option: str) -> None:
    """A real write where the export will go (permissions, read-only file systems), as ``score --out`` checks."""
    import os
    from pathlib import Path

    from egohorizon.errors import ConfigError

    target = Path(path) if folder else Path(path).parent
    probe = target / f".export.probe-{os.getpid()}"
    try:
        target.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        raise ConfigError(f"{option}: cannot write there ({error.strerror or error})") from error


def qa_exports(args: argparse.Namespace, items: list, rows: list, report: dict, records: list,
               n_original: int) -> list[tuple[str, str, str, str]]:
    """(path, text, option, summary) of each ``--export`` of ``score qa``, built before anything is written."""
    from egohorizon.metrics import exports, lmms_eval

    planned = []
    answers = {row["id"]: row["prediction"] for row in rows}
    for name, path in args.export:
        option = f"--export {name}={path}"
        if name == "egoschema":
            submission, counts = exports.egoschema_submission(items, answers, args.gold)
            planned.append((path, exports.json_text(submission), option, _egoschema_line(counts)))
        elif name == "egomonth-csv":
            text = exports.csv_text(exports.EGOMONTH_COLUMNS, exports.egomonth_csv_rows(items, rows))
            planned.append((path, text, option, f"EgoMonth CSV ({len(rows)} items)"))
        else:
            task = lmms_eval.task_name([i.source for i in items], "qa")
            model = lmms_eval.model_name([r.model for r in records], _stem(args.pred))
            settings = {"gold": args.gold, "pred": args.pred, "extraction": getattr(args, "extraction", "strict"),
                        "split": args.split, "only_predicted": args.only_predicted}
            results, samples = lmms_eval.qa_export(
                items, rows, report, {r.id: r.prompt or None for r in records}, task=task, model=model,
                n_original=n_original, settings=settings, date=lmms_eval.datetime_str())
            planned += _lmms_files(path, task, results, samples, option)
    return planned


def forecast_exports(args: argparse.Namespace, taxonomy, points: list, records: list, predictions: dict,
                     report: dict) -> list[tuple[str, str, str, str]]:
    from egohorizon.metrics import exports, lmms_eval

    planned = []
    for name, path in args.export:
        option = f"--export {name}={path}"
        if name == "ego4d-lta":
            submission, counts = exports.lta_submission([(p.id, len(p.targets)) for p in points], predictions,
                                                        taxonomy, args.pred, args.lta_unknown)
            planned.append((path, exports.json_text(submission, indent=None), option, _lta_line(counts)))
        else:
            task = lmms_eval.task_name([p.source for p in points], "forecast")
            model = lmms_eval.model_name([r.model for r in records], _stem(args.pred))
            settings = {"gold": args.gold, "pred": args.pred, "embedder": args.embedder,
                        "max_candidates": args.max_candidates, "draws": args.draws, "seed": args.seed,
                        "metric": args.metric}
            results, samples = lmms_eval.forecast_export(
                points, {r.id: r for r in records}, predictions, report, task=task, model=model,
                n_original=len(points), settings=settings, date=lmms_eval.datetime_str())
            planned += _lmms_files(path, task, results, samples, option)
    return planned


def _lmms_files(folder: str, task: str, results: dict, samples: list, option: str) -> list:
    from pathlib import Path

    from egohorizon.metrics.exports import json_text
    from egohorizon.metrics.lmms_eval import file_names, samples_text

    results_name, samples_name = file_names(results["date"], task)
    return [(str(Path(folder) / results_name), json_text(results), option, f"lmms-eval results (task {task})"),
            (str(Path(folder) / samples_name), samples_text(samples), option,
             f"lmms-eval samples ({len(samples)} lines)")]


def _stem(path: str) -> str:
    from pathlib import Path

    return Path(path).stem

