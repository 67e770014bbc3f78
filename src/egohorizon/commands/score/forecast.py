"""``score forecast`` (one forecaster, the task registry's scoring) and ``score forecast-table`` (several
forecasters on the same points, with bootstrap intervals).
"""

from __future__ import annotations

import argparse

from egohorizon.commands.score.common import check_out, finish, load, load_gold, reconcile, write_report


def run_forecast_table(args: argparse.Namespace) -> int:
    """Every named predictor and repeat-last on the same points (``metrics.forecast_table``)."""
    import sys

    from egohorizon.backbones.embedders import get_embedder
    from egohorizon.commands.habit_args import history_from_args
    from egohorizon.errors import ConfigError, DataError
    from egohorizon.metrics.forecast_table import compare_forecasters, format_table
    from egohorizon.metrics.habits import STRONGEST_AMONG
    from egohorizon.schema import ForecastPoint, ForecastPrediction
    from egohorizon.tasks import get_task
    from egohorizon.tasks.forecast import repeat_last_predictions
    from egohorizon.tasks.forecast_habits import RULE_SAME_POINTS

    check_out(args.out)  # before any scoring, as the other score commands do
    if not args.pred and not args.history:
        raise ConfigError("give --pred NAME=FILE (repeatable), or --history and --split to score the baselines alone")
    points = load_gold(args, ForecastPoint)
    task = get_task("forecast", num_candidates=args.max_candidates)
    predictions: dict[str, dict] = {}
    for spec in args.pred:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"--pred {spec!r}: expected NAME=FILE")
        if name in predictions or name == "repeat_last":
            raise ConfigError(f"--pred {spec!r}: the name {name!r} is given twice (repeat_last is built in)")
        records = load(path, ForecastPrediction)
        ids = {r.id for r in records}
        missing = [p.id for p in points if p.id not in ids]
        if len(missing) == len(points):
            raise DataError(f"{path}: none of its {len(ids)} prediction ids is in {args.gold}")
        if missing:  # scored invalid, as score forecast does; said so, never silently
            sys.stderr.write(f"{path}: {len(missing)} of {len(points)} points have no prediction (scored invalid)\n")
        predictions[name] = {r.id: task.parse_record(r) for r in records}
    predictions["repeat_last"] = repeat_last_predictions(points)
    history = history_from_args(args, points)
    notes, habit_counts = habit_table_inputs(points, history, predictions)
    baseline = args.baseline or ("strongest" if history is not None else "repeat_last")
    if baseline == "strongest" and history is None:
        raise ConfigError("--baseline strongest needs the habit baselines: give --history and --split")
    if baseline not in (*predictions, "strongest"):
        raise ConfigError(f"--baseline {baseline!r}: not among {[*predictions, 'strongest']}")
    strongest = STRONGEST_AMONG if baseline == "strongest" else ()
    rows = compare_forecasters(points, predictions, get_embedder(args.embedder),
                               baseline=None if strongest else baseline, n_random_draws=args.draws, seed=args.seed,
                               max_candidates=args.max_candidates, n_boot=args.boot, strongest_among=strongest)
    sys.stdout.write(format_table(rows, baseline))
    if strongest:
        notes.insert(0, f"strongest: of {', '.join(STRONGEST_AMONG)}, per group, the {RULE_SAME_POINTS}")
    sys.stdout.write("".join(f"{line}\n" for line in notes))
    write_report({"rows": rows, "gold": args.gold, "pred": args.pred, "habit_counts": habit_counts,
                  "baseline_rule": RULE_SAME_POINTS if strongest else baseline}, args.out)
    return 0


def habit_table_inputs(points, history, predictions: dict) -> tuple[list[str], dict]:
    """Adds the habit baselines' candidates to ``predictions`` (when ``history``); returns the lines that
    say what they are (or that they were not computed) and their no_history / no_clock counts."""
    from egohorizon.metrics.habits import HABIT_PREDICTORS
    from egohorizon.tasks.forecast_habits import NOT_COMPUTED, habit_candidates

    if history is None:
        return [NOT_COMPUTED], {}
    counts = {}
    for name in HABIT_PREDICTORS:
        predictions[name], by_group = habit_candidates(name, points, history)
        counts[name] = {f: sum(c[f] for c in by_group.values()) for f in ("no_history", "no_clock")}
    line = "; ".join(f"{n} {c['no_history']}/{c['no_clock']}" for n, c in counts.items())
    return [f"habit baselines (training days of --split only), no_history points / no_clock slots: {line}"], counts


def run_forecast(args: argparse.Namespace) -> int:
    """Scores forecast predictions through the forecast task of the registry (the evaluation
    callback's code): best of ``--max-candidates``, the random baseline inside the report and, with
    --repeat-last, the repeat-last-K baseline."""
    from egohorizon.backbones.embedders import get_embedder
    from egohorizon.commands.export import check_exports, forecast_exports, write_exports
    from egohorizon.metrics.report import format_forecast
    from egohorizon.schema import ForecastPoint, ForecastPrediction
    from egohorizon.tasks import get_task

    taxonomy = check_exports(args)
    task = get_task("forecast", num_candidates=args.max_candidates)
    points = load_gold(args, ForecastPoint)
    records = load(args.pred, ForecastPrediction)
    predictions = {r.id: task.parse_record(r) for r in records}
    inputs = reconcile([p.id for p in points], [r.id for r in records], args)
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
    finish(report, text, args)
    return write_exports(exports)
