"""``--history EVENTS.jsonl --split SPLIT.json`` of ``score forecast-table`` and ``bench forecast``: the
events the points were built from and the run's day split, from which the habit baselines (SPEC §1) learn
the training days only. Without them those commands print ``tasks.forecast_habits.NOT_COMPUTED``.
Only argparse at import: ``egohorizon --help`` loads nothing else."""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def add_history_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--history", metavar="EVENTS.jsonl", default=None,
                        help="the events the points were built from (an events.jsonl or a folder holding one): "
                             "with --split, the habit baselines (frequency, markov, time_of_day, frequency_all, "
                             "markov_all) learn from its training days only")
    parser.add_argument("--split", metavar="SPLIT.json", default=None,
                        help="the run's day split (its split.json or points/splits.json); needed with --history")


def history_from_args(args: argparse.Namespace, points: Sequence) -> object | None:
    """The ``metrics.habits.HabitHistory`` of the split's training days, or None without --history.
    Refused (DataError) when a point's targets lie on a training day of the split: a baseline would then
    have learned the answers."""
    from pathlib import Path

    from egohorizon.data.splits import DaySplit
    from egohorizon.errors import ConfigError, DataError
    from egohorizon.metrics.habits import learn_habits
    from egohorizon.run.split_record import days_of_item, format_days
    from egohorizon.schema import Event, load_jsonl

    if not args.history and not args.split:
        return None
    if not (args.history and args.split):
        raise ConfigError("--history and --split go together: the events and the run's day split")
    split = DaySplit.load(args.split)
    train_days = split.days_in("train")
    leaked = {d for p in points for d in days_of_item(p) if d in train_days}
    if leaked:
        raise DataError(f"--split {args.split}: {len(leaked)} target day(s) of the points are training days of "
                        f"this split ({format_days(leaked)}); give the split the points were made with")
    path = Path(args.history)
    events = load_jsonl(path / "events.jsonl" if path.is_dir() else path, Event)
    return learn_habits(events, train_days, source=_source_override(events, points))


def _source_override(events: Sequence, points: Sequence) -> str | None:
    """The points' source name for events that do not carry it (points built with ``data.source``)."""
    wanted = {p.source for p in points}
    if wanted <= {e.source or "events" for e in events}:
        return None
    return next(iter(wanted)) if len(wanted) == 1 else None
