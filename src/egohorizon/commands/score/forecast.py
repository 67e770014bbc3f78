"""``score forecast`` (one forecaster, the task registry's scoring) and ``score forecast-table`` (several
forecasters on the same points, with bootstrap intervals).
"""

from __future__ import annotations

import argparse

from egohorizon.commands.score.common import check_out, finish, load, load_gold, reconcile, write_report


def run_forecast_table(args: argparse.Namespace) -> int:
    """Every named predictor and repeat-last on the same points (``metrics.forecast_table``)."""
    import sys

    from egohorizon.errors import ConfigError, DataError
    from egohorizon.metrics.embedders import get_embedder
    from egohorizon.metrics.forecast_table import compare_forecasters, format_table
    from egohorizon.schema import ForecastPoint, ForecastPrediction
    from egohorizon.tasks import get_task
    from egohorizon.tasks.forecast import repeat_last_predictions

    check_out(args.out)  # before any scoring, as the other score commands do
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
    if args.baseline not in predictions:
        raise ConfigError(f"--baseline {args.baseline!r}: not among {list(predictions)}")
    rows = compare_forecasters(points, predictions, get_embedder(args.embedder), baseline=args.baseline,
                               n_random_draws=args.draws, seed=args.seed, max_candidates=args.max_candidates,
                               n_boot=args.boot)
    sys.stdout.write(format_table(rows, args.baseline))
    write_report({"rows": rows, "gold": args.gold, "pred": args.pred}, args.out)
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
