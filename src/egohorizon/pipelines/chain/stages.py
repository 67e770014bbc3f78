"""The chain's five stages (``pipelines.chain.runner``), each a call into the library the matching command uses:
``data.ingest.aria.ingest_aria`` / ``data.ingest.video.ingest_video``, ``data.shards.writer.build_shards``,
the caption job (``pipelines.caption.setup.make_job``), the abstraction job (``pipelines.abstract.job``) and
``data.points.build.build_points``. Each returns a JSON-able summary for the report."""

from __future__ import annotations

import json
import logging
from dataclasses import asdict
from pathlib import Path
from typing import Any

from egohorizon.errors import ConfigError, EgohorizonError
from egohorizon.pipelines.chain.settings import ChainSettings, Stage, file_digest

log = logging.getLogger(__name__)

VIDEO_SUFFIXES = (".mp4", ".mov", ".mkv")


# -- ingest ----------------------------------------------------------------------------------------


def recording_entries(settings: ChainSettings) -> list[dict[str, Any]]:
    """What to ingest: every .vrs / video file under a folder (participant ``settings.participant``), or
    the lines of a manifest .jsonl ``{"path", "participant", "day"?, "session"?, "time_base"?,
    "start_time"?}`` (relative paths from the manifest's folder)."""
    if not settings.recordings:
        raise ConfigError("pipeline: give a RECORDINGS folder or manifest, or --demo")
    root = Path(settings.recordings)
    if root.is_file():
        entries = []
        for number, line in enumerate(root.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as error:
                raise ConfigError(f"{root}:{number}: not a JSON line ({error.msg})") from None
            if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
                raise ConfigError(f"{root}:{number}: field 'path': expected the recording's file path")
            path = Path(entry["path"])
            entries.append({"participant": settings.participant, **entry,
                            "path": str(path if path.is_absolute() else root.parent / path)})
        return entries
    if not root.is_dir():
        raise ConfigError(f"{root}: no such folder or manifest file")
    files = sorted(p for p in root.rglob("*") if p.suffix.lower() in (".vrs", *VIDEO_SUFFIXES))
    if not files:
        raise ConfigError(f"{root}: no .vrs or video files found")
    return [{"path": str(p), "participant": settings.participant} for p in files]


def _name(entry: dict[str, Any], settings: ChainSettings) -> str:
    path = Path(entry["path"])
    root = Path(settings.recordings)
    relative = path.relative_to(root) if root.is_dir() and path.is_relative_to(root) else Path(path.name)
    return "_".join(relative.with_suffix("").parts)


def _ingest_one(entry: dict[str, Any], out: Path) -> None:
    path = Path(entry["path"])
    common = {"participant": entry["participant"], "day": entry.get("day"), "session": entry.get("session"),
              "overwrite": False}
    if path.suffix.lower() == ".vrs":
        from egohorizon.data.ingest.aria import find_gaze_csv, ingest_aria

        mps = path.parent / "mps"
        speech = path.parent / "speech.csv"
        ingest_aria(path, out, gaze_csv=find_gaze_csv(mps) if mps.is_dir() else None,
                    speech_csv=speech if speech.is_file() else None, time_base=entry.get("time_base", "epoch"),
                    **common)
    else:
        from egohorizon.data.ingest.video import ingest_video

        ingest_video(path, out, start_time=entry.get("start_time"), **common)


def run_ingest(run_dir: Path, settings: ChainSettings) -> dict[str, Any]:
    if settings.demo:
        return {"recordings": 0, "note": "demo world: frames are rendered when the shards are built"}
    done = ran = 0
    failures = []
    for entry in recording_entries(settings):
        out = run_dir / "ingested" / entry["participant"] / _name(entry, settings)
        if (out / "recording.json").is_file():  # an ingest writes its folder whole (rename at the end)
            done += 1
            continue
        try:
            _ingest_one(entry, out)
            ran += 1
        except EgohorizonError as error:  # one bad recording is reported and left out, the rest go on
            failures.append({"recording": entry["path"], "reason": str(error)})
    if not done + ran:
        raise ConfigError(f"pipeline: no recording could be ingested: {failures[:3]}")
    return {"recordings": done + ran, "ingested_now": ran, "done_earlier": done, "failed": len(failures),
            "failures": failures}


def digest_ingest(run_dir: Path) -> str:
    return file_digest(*sorted((run_dir / "ingested").rglob("recording.json")))


# -- shards ----------------------------------------------------------------------------------------


def _demo_world(settings: ChainSettings):
    from egohorizon.data.demo import ensure_recorded_demo_world, load_demo_world

    return load_demo_world(ensure_recorded_demo_world(settings.demo_dir))


def run_shards(run_dir: Path, settings: ChainSettings) -> dict[str, Any]:
    from egohorizon.data.shards.sources import demo_sources, ingested_sources
    from egohorizon.data.shards.writer import build_shards
    from egohorizon.data.windows.sample import WindowConfig

    options = dict(settings.shards)
    deid = options.pop("deid", "auto")
    config = WindowConfig(**options)
    if settings.demo:
        world = _demo_world(settings)
        days = sorted({r.day for r in world.recordings})[: settings.demo_days] if settings.demo_days else None
        recordings = [r for r in world.recordings if days is None or r.day in days]
        if settings.demo_day_list:
            wanted = set(settings.demo_day_list)
            missing = wanted - {f"{r.participant}/{r.day}" for r in recordings}
            if missing:
                raise ConfigError(f"--demo-day {', '.join(sorted(missing))}: no demo recording on that participant-day "
                                  "(expected participant/YYYY-MM-DD, e.g. p01/2025-03-04)")
            recordings = [r for r in recordings if f"{r.participant}/{r.day}" in wanted]
        sources = demo_sources(world, frame_size=config.long_side, recordings=recordings)
        inputs = None
    else:
        folder = run_dir / "ingested"
        sources = ingested_sources([folder])
        inputs = {"ingested": [str(folder.resolve())], "events": []}
    index = build_shards(sources, run_dir / "shards", config=config, deid=deid, inputs=inputs)
    return index.totals()


def digest_shards(run_dir: Path) -> str:
    """The shards' content: each shard's name and size from the index (the index's own build times
    would make every rebuild look new)."""
    import hashlib

    index = json.loads((run_dir / "shards" / "index.json").read_text())
    shards = sorted((s["path"], s.get("samples"), s.get("bytes"), s.get("fingerprint")) for s in index["shards"])
    return hashlib.sha256(json.dumps(shards, default=str).encode()).hexdigest()


# -- caption, abstract, points -----------------------------------------------------------------------


def run_caption(run_dir: Path, settings: ChainSettings) -> dict[str, Any]:
    from egohorizon.pipelines.caption.setup import make_job

    options = dict(settings.captioner)
    model, base_url = options.pop("model", None), options.pop("base_url", None)
    if not model:
        raise ConfigError("pipeline: --captioner is required (a trained adapter, a local VLM or a served model)")
    runner = {k: options.pop(k) for k in ("concurrency", "timeout", "retries", "batch_size", "workers",
                                          "device", "dtype") if k in options}
    job = make_job(run_dir / "shards", run_dir / "captions", model, base_url=base_url, progress=False,
                   max_failures=options.pop("max_failures", 0.05), settings=options, runner=runner)
    report = job.run().to_dict()
    return {"windows": report["windows_total"], "counts": report["counts"], "events": report["events"],
            "failures": [f"{f['window']}: {f['kind']}: {f['reason'][:200]}" for f in report["failures"]][:50],
            "shard_problems": report["shard_problems"][:20]}


def run_abstract(run_dir: Path, settings: ChainSettings) -> dict[str, Any]:
    from egohorizon.pipelines.abstract.day import AbstractSettings
    from egohorizon.pipelines.abstract.job import AbstractJob, make_backend

    options = dict(settings.abstractor)
    model, base_url = options.pop("model", None), options.pop("base_url", None)
    if not model:
        raise ConfigError("pipeline: --abstractor is required (a trained adapter, a local model or a served model)")
    out = run_dir / "hierarchy"
    http = {k: options.pop(k) for k in ("timeout", "max_concurrency") if k in options}
    setup = make_backend(model, base_url=base_url, cache=out / "cache", prompt=options.pop("prompt", None),
                         device=options.pop("device", None), dtype=options.pop("dtype", None), **http)
    report = AbstractJob(run_dir / "captions" / "events.jsonl", out, setup, AbstractSettings(**options),
                         workers=http.get("max_concurrency", 1) if base_url else 1).run()
    keep = ("days", "days_ok", "days_failed", "failures", "model_calls", "invalid_replies", "hierarchy_ok",
            "levels", "compression", "figures")
    return {k: report[k] for k in keep} | {"hierarchy_problems": report["hierarchy_problems"][:20]}


def run_points(run_dir: Path, settings: ChainSettings) -> dict[str, Any]:
    from egohorizon.data.points.build import build_points, check_splits_filled, count_points
    from egohorizon.data.splits import SPLITS, make_day_split
    from egohorizon.schema import Event, load_jsonl, write_jsonl

    options = {"levels": [1, 2, 3, 4, 5], "ks": [1, 10], "n_context": 50, "val_frac": 0.15, "test_frac": 0.15,
               "seed": 0, "min_history_days": 1, **settings.points}
    events = load_jsonl(run_dir / "hierarchy" / "events.jsonl", Event)
    if not events:
        raise ConfigError(f"{run_dir / 'hierarchy' / 'events.jsonl'}: no events (every day failed?); see the report")
    split = make_day_split(events, val_frac=options["val_frac"], test_frac=options["test_frac"],
                           seed=options["seed"], min_history_days=options["min_history_days"])
    points = build_points(events, split, levels=options["levels"], ks=options["ks"],
                          n_context=options["n_context"], seed=options["seed"])
    warnings = check_splits_filled(points, split, allow_empty=settings.allow_empty_splits)
    out = run_dir / "points"
    split.save(out / "splits.json")
    for name in SPLITS:
        write_jsonl(out / f"points_{name}.jsonl", points[name])
    counts = count_points(points)
    summary = {"participant_days": split.counts(),
               "points": [{"split": s, "level": lv, "k": k, "n": n} for (s, lv, k), n in sorted(counts.items())]}
    return {**summary, "warnings": warnings} if warnings else summary  # old runs' summaries unchanged


def digest_points(run_dir: Path) -> str:
    out = run_dir / "points"
    return file_digest(out / "splits.json", *(out / f"points_{s}.jsonl" for s in ("train", "val", "test")))


def default_stages() -> list[Stage]:
    def source(s: ChainSettings) -> dict[str, Any]:
        chosen = {"demo_day_list": sorted(s.demo_day_list)} if s.demo_day_list else {}  # old runs keep their key
        return {"recordings": s.recordings and str(Path(s.recordings).resolve()), "demo": s.demo,
                "demo_dir": s.demo_dir, "demo_days": s.demo_days, "participant": s.participant, **chosen}

    return [
        Stage("ingest", source, run_ingest, digest_ingest),
        Stage("shards", lambda s: {**source(s), "shards": s.shards}, run_shards, digest_shards),
        Stage("caption", lambda s: s.captioner, run_caption,
              lambda r: file_digest(r / "captions" / "events.jsonl")),
        Stage("abstract", lambda s: s.abstractor, run_abstract,
              lambda r: file_digest(r / "hierarchy" / "events.jsonl")),
        Stage("points", lambda s: s.points, run_points, digest_points),
    ]


def settings_dict(settings: ChainSettings) -> dict[str, Any]:
    return asdict(settings)
