"""Tasks: one torch-free object per task that parses model output, scores a split with
``egohorizon.metrics``, flattens the report into log keys, renders the summary and names its default
objective. ``get_task`` is the registry the CLI, the evaluation callback, eval.py and compare share."""

from __future__ import annotations

from typing import Any

from egohorizon.tasks.base import Evaluation, Task

# The one registry line of a task: name -> "module:Class", imported on use, so listing the tasks costs
# nothing. Everything else a task declares on its class (Task.predictor_scorer, ...).
TASKS = {
    "forecast": "egohorizon.tasks.forecast:ForecastTask",
    "qa": "egohorizon.tasks.qa:QATask",
    "caption": "egohorizon.tasks.caption:CaptionTask",
    "abstract": "egohorizon.tasks.abstract:AbstractTask",
    "hands": "egohorizon.tasks.hands:HandsTask",
}

# The predictors eval.py knows (``predictors=[...]``): the task's model (a trained adapter, or the backbone
# prompted in context: ``Task.in_context_generation``), an llm, and the baselines: repeat-last, random and the
# habit baselines of SPEC §1 (= metrics.habits.HABIT_PREDICTORS, spelled out so listing costs no import).
HABIT_PREDICTORS = ("frequency", "markov", "time_of_day", "frequency_all", "markov_all")
PREDICTORS = ("model", "llm", "repeat_last", "random", *HABIT_PREDICTORS)


def task_class(name: str) -> type[Task]:
    """The class of the task called ``name``."""
    import importlib

    if name not in TASKS:
        raise ValueError(f"task: unknown {name!r}; known tasks: {', '.join(sorted(TASKS))}")
    module, _, cls = TASKS[name].partition(":")
    return getattr(importlib.import_module(module), cls)


def get_task(name: str, **options: Any) -> Task:
    """The task called ``name``, built with ``options`` (e.g. the forecast task's ``num_candidates``)."""
    return task_class(name)(**options)


__all__ = ["HABIT_PREDICTORS", "PREDICTORS", "TASKS", "Evaluation", "Task", "get_task",
           "task_class"]
