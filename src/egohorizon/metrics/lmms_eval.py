"""A scored QA or forecast evaluation as lmms-eval writes its own (issue 25, item 4). Plain, no torch.

lmms-eval (github.com/EvolvingLMMs-Lab/lmms-eval) saves, per run, ``<date>_results.json`` and one
``<date>_samples_<task>.jsonl`` per task (``loggers/evaluation_tracker.py``; ``date`` is
``utils.get_datetime_str``'s ``%Y%m%d_%H%M%S``). The results document (``evaluator.py``,
``evaluator_utils.py``) holds ``results`` {task: {"alias", "<metric>,<filter>": value,
"<metric>_stderr,<filter>": value or "N/A"}}, ``group_subtasks``, ``configs``, ``versions``,
``n-shot``, ``higher_is_better``, ``n-samples`` {task: {"original", "effective"}}, ``config`` {model,
model_args, batch_size, ...}, ``git_hash``, ``date`` and ``task_hashes``. A samples line is
``{"doc_id", "target" (a string), "resps", "filtered_resps", "doc_hash", "prompt_hash",
"target_hash", <metric>: per-sample value, ..., "input"}``, with ``resps`` left out when it equals
``filtered_resps`` (the tracker pops it); the hashes are SHA-256 hex digests as ``utils.hash_string``.

What the fields hold here:
- QA: the filter is the extraction mode (lm-eval names its answer-extraction filters the same way,
  e.g. ``strict-match``), so the keys read ``acc,strict``; per sample ``acc`` (1/0), ``invalid`` (1/0)
  and ``avg`` ({"task", "score"}: lmms-eval's payload convention, aggregated as the macro mean over
  tasks); results add ``avg_L<level>`` and ``acc_<task>``. ``filtered_resps`` is the letter read, or
  ``[invalid]`` (lm-eval's regex filter fallback).
- Forecast: the filter is ``none``; per sample ``S``, ``S_rand``, ``invalid``, ``best``; results add
  ``S_norm`` (from the group means, SPEC §1, no per-sample value) and ``S_norm_<group>`` / ``S_<group>``
  per (source,) level and K, and with ``--metric ego4d-ed`` ``ED_<head>`` / ``AUED_<head>`` (suffix
  ``_Z<z>`` when points have several Z).
- ``invalid`` is a share (the mean of the per-sample 0/1) where egohorizon's report has a count.
- ``doc`` (the item, without media) is kept: lmms-eval drops it from the saved file, but ``doc_id``
  alone is a position; ``input`` is the prediction's recorded ``prompt`` (None when not recorded).
- stderr: mean metrics get lmms-eval's ``mean_stderr`` (sample standard deviation / sqrt n; "N/A"
  below 2 samples); macro means and S_norm get "N/A" (lmms-eval bootstraps those; nothing is
  resampled here).
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from egohorizon.schema.forecast_groups import metric_key

INVALID = "[invalid]"
VERSION = 1  # of this exporter's task configs, written as the tasks' version


def hash_string(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def datetime_str(now: datetime.datetime | None = None) -> str:
    return (now or datetime.datetime.now()).strftime("%Y%m%d_%H%M%S")


def file_names(date: str, task: str) -> tuple[str, str]:
    """The results and samples file names lmms-eval gives a run of ``task`` at ``date``."""
    return f"{date}_results.json", f"{date}_samples_{task}.jsonl"


def task_name(sources: Sequence[str], fallback: str) -> str:
    """The lmms-eval task name: the records' one ``source`` (``egomonth``, ``ego4d_lta``), else the fallback."""
    names = {s for s in sources if s}
    name = names.pop() if len(names) == 1 else fallback
    return re.sub(r"\W+", "_", name).strip("_").lower() or fallback


def model_name(models: Sequence[str], fallback: str) -> str:
    names = sorted({m for m in models if m})
    return names[0] if len(names) == 1 else ", ".join(names) if names else fallback


def mean_stderr(values: Sequence[float]) -> float | str:
    n = len(values)
    if n < 2:
        return "N/A"
    mean = sum(values) / n
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1) / n)


def _sample(doc_id: int, doc: dict, target: str, resps: list, filtered: list, prompt: str | None,
            metrics: dict) -> dict:
    sample = {"doc_id": doc_id, "doc": doc, "target": target, "resps": resps, "filtered_resps": filtered,
              "doc_hash": hash_string(json.dumps(doc, indent=2, ensure_ascii=False)),
              "prompt_hash": hash_string(prompt) if prompt else None, "target_hash": hash_string(target),
              **metrics, "input": prompt}
    if filtered == resps or (resps and filtered == resps[0]):
        sample.pop("resps")  # as lmms-eval's save_results_samples does
    return sample


def _results(task: str, metrics: dict, higher: dict, configs: dict, n: tuple[int, int], model: str,
             samples: Sequence[dict], date: str) -> dict:
    from egohorizon import __version__

    task_hash = hash_string("".join(f"sample_{i}" + s["doc_hash"] for i, s in enumerate(samples)))
    return {
        "results": {task: {"alias": task, **metrics}},
        "group_subtasks": {task: []},
        "configs": {task: configs},
        "versions": {task: VERSION},
        "n-shot": {task: 0},
        "higher_is_better": {task: higher},
        "n-samples": {task: {"original": n[0], "effective": n[1]}},
        "config": {"model": model, "model_args": "", "batch_size": None, "batch_sizes": [], "device": None,
                   "use_cache": None, "limit": None, "bootstrap_iters": 0, "gen_kwargs": "",
                   "random_seed": None, "numpy_seed": None, "torch_seed": None, "fewshot_seed": None},
        "git_hash": None,
        "date": date,
        "task_hashes": {task: task_hash},
        "egohorizon_version": __version__,
    }


def _metric(out: dict, name: str, value: Any, filter_key: str, values: Sequence[float] | None = None) -> None:
    out[f"{name},{filter_key}"] = value
    out[f"{name}_stderr,{filter_key}"] = mean_stderr(values) if values is not None else "N/A"


def _key(text: str) -> str:
    return re.sub(r"\W+", "_", text).strip("_").lower()


# --------------------------------------------------------------------------------------------- QA


def qa_export(items: Sequence, rows: Sequence[Mapping], report: Mapping, prompts: Mapping[str, str | None], *,
              task: str, model: str, n_original: int, settings: Mapping, date: str) -> tuple[dict, list[dict]]:
    """(results document, samples) of one ``score qa`` run. ``rows``: ``exports.qa_rows``; ``report``:
    ``metrics.qa.score_qa``'s; ``prompts``: item id -> recorded prompt; ``settings``: what the
    command was run with (files, extraction), kept in the task's config ``metadata``."""
    mode = rows[0]["extraction"] if rows else "strict"
    by_id = {row["id"]: row for row in rows}
    samples = []
    for doc_id, item in enumerate(items):
        row = by_id[item.id]
        doc = {"id": item.id, "task": item.task, "level": row["level"], "question": item.question,
               "options": list(item.options)}
        resps = [[row["raw"]]] if row["raw"] is not None else [[]]
        score = 1.0 if row["correct"] else 0.0
        samples.append(_sample(doc_id, doc, item.answer, resps, [row["prediction"] or INVALID],
                               prompts.get(item.id), {"acc": score, "avg": {"task": item.task, "score": score},
                                                      "invalid": 0.0 if row["status"] == "answered" else 1.0}))
    metrics: dict[str, Any] = {}
    _metric(metrics, "acc", report["Acc"], mode, [s["acc"] for s in samples])
    _metric(metrics, "avg", report["Avg"], mode)
    _metric(metrics, "invalid", report["invalid"] / report["n"] if report["n"] else None, mode,
            [s["invalid"] for s in samples])
    for level, block in report["per_level"].items():
        _metric(metrics, f"avg_L{level}", block["avg"], mode)
    for name, block in report["per_task"].items():
        scores = [s["acc"] for s in samples if s["doc"]["task"] == name]
        _metric(metrics, f"acc_{_key(name)}", block["acc"], mode, scores)
    configs = {"task": task, "output_type": "generate_until", "metric_list": [
        {"metric": "acc", "aggregation": "mean", "higher_is_better": True},
        {"metric": "avg", "aggregation": "macro mean over tasks", "higher_is_better": True},
        {"metric": "invalid", "aggregation": "mean", "higher_is_better": False}],
        "filter_list": [{"name": mode, "filter": [{"function": f"egohorizon.metrics.extraction:{mode}"}]}],
        "metadata": {"producer": "egohorizon score qa", "chance": report["chance"], **settings}}
    higher = {"acc": True, "avg": True, "invalid": False}
    return _results(task, metrics, higher, configs, (n_original, len(items)), model, samples, date), samples


# --------------------------------------------------------------------------------------- forecast


def forecast_export(points: Sequence, records: Mapping[str, Any], predictions: Mapping[str, Any],
                    report: Mapping, *, task: str, model: str, n_original: int, settings: Mapping,
                    date: str) -> tuple[dict, list[dict]]:
    """(results document, samples) of one ``score forecast`` run. ``records``: point id ->
    ``ForecastPrediction`` (its ``text`` or ``candidates`` are the response, ``prompt`` the input);
    ``predictions``: id -> parsed candidates or None; ``report``: ``score_forecasts``' (with
    ``ego4d`` when computed)."""
    per_point = {row["id"]: row for row in report["per_point"]}
    samples = []
    for doc_id, point in enumerate(points):
        record, row = records.get(point.id), per_point[point.id]
        raw = None if record is None else record.text if record.candidates is None else record.candidates
        doc = {"id": point.id, "source": point.source, "participant": point.participant, "level": point.level,
               "k": point.k, "t0": point.t0}
        resps = [[raw]] if raw is not None else [[]]
        filtered = [predictions.get(point.id)] if not row["invalid"] else [INVALID]
        samples.append(_sample(doc_id, doc, str(list(point.targets)), resps, filtered,
                               getattr(record, "prompt", None) or None,
                               {"S": row["S"], "S_rand": row["S_rand"], "invalid": 1.0 if row["invalid"] else 0.0,
                                "best": row["best"]}))
    overall, several = report["overall"], len({g["source"] for g in report["groups"]}) > 1
    metrics: dict[str, Any] = {}
    _metric(metrics, "S", overall["S"], "none", [s["S"] for s in samples])
    _metric(metrics, "S_rand", overall["S_rand"], "none")
    _metric(metrics, "S_norm", overall["S_norm"], "none")
    _metric(metrics, "invalid", overall["invalid"] / overall["n"] if overall["n"] else None, "none",
            [s["invalid"] for s in samples])
    for group in report["groups"]:
        suffix = (f"{_key(group['source'])}_" if several else "") + metric_key(group["level"], group["k"])
        _metric(metrics, f"S_{suffix}", group["S"], "none")
        _metric(metrics, f"S_norm_{suffix}", group["S_norm"], "none")
    _ego4d_metrics(metrics, report.get("ego4d"))
    configs = {"task": task, "output_type": "generate_until", "metric_list": [
        {"metric": "S", "aggregation": "mean", "higher_is_better": True},
        {"metric": "S_rand", "aggregation": "mean over points with a random pool", "higher_is_better": True},
        {"metric": "S_norm", "aggregation": "(S - S_rand) / (1 - S_rand)", "higher_is_better": True},
        {"metric": "invalid", "aggregation": "mean", "higher_is_better": False}],
        "metadata": {"producer": "egohorizon score forecast", **settings}}
    higher = {"S": True, "S_rand": True, "S_norm": True, "invalid": False}
    if report.get("ego4d"):
        higher.update({f"{m}_{h}": False for m in ("ED", "AUED") for h in ("verb", "noun", "action")})
    return _results(task, metrics, higher, configs, (n_original, len(points)), model, samples, date), samples


def _ego4d_metrics(metrics: dict, ego4d: Mapping | None) -> None:
    if not ego4d:
        return
    groups = ego4d["groups"]
    for group in groups:
        suffix = f"_Z{group['Z']}" if len(groups) > 1 else ""
        for head in ("verb", "noun", "action"):
            if group[head] is not None:
                _metric(metrics, f"ED_{head}{suffix}", group[head]["ED"], "none")
                _metric(metrics, f"AUED_{head}{suffix}", group[head]["AUED"], "none")


def samples_text(samples: Sequence[dict]) -> str:
    return "".join(json.dumps(s, ensure_ascii=False) + "\n" for s in samples)
