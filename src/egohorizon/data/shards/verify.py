"""``egohorizon shards verify``: read every sample of every shard the way the stream does, and report.

A shard is fine when its byte size matches the index, it reads to the end, it holds exactly the
index's number of samples (and the keys its sidecar lists), and every sample decodes. Everything
else is a problem naming the shard and, where there is one, the sample. The index itself is wrong
where two entries name one file or a path leaves the shard folder (``ShardIndex.path_problems``).

The index is also compared with the ingested recordings it was built from (``verify_inputs``): a
session changed, removed or added since the build makes the index stale, a problem naming the shard
and the session (issue 9). Indexes of the demo world, or built before fingerprints, have nothing to
compare with.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from egohorizon.data.shards.index import INDEX_FILE, ShardIndex, is_inside
from egohorizon.data.shards.stages import StreamStats, decode, read_shards


@dataclass
class ShardReport:
    path: str
    samples_ok: int = 0
    problems: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.problems


def verify_shard(index: ShardIndex, entry: dict[str, Any]) -> ShardReport:
    path = index.path_of(entry)
    report = ShardReport(path=str(path))
    if not path.is_file():
        report.problems.append("file is missing")
        return report
    size = path.stat().st_size
    if size != entry["bytes"]:
        report.problems.append(f"{size} bytes, the index says {entry['bytes']}")
    stats = StreamStats()
    keys = [w.key for w in decode(stats)(read_shards(stats, {str(path): entry["samples"]})([{"url": str(path)}]))]
    report.samples_ok = len(keys)
    report.counts = {k: v for k, v in stats.counts.items() if v}
    for message in stats.reasons.get(str(path), []):
        report.problems.append(message)
    sidecar = path.with_suffix(".json")
    if sidecar.is_file():
        try:
            listed = json.loads(sidecar.read_text(encoding="utf-8")).get("keys", [])
        except json.JSONDecodeError:
            report.problems.append(f"sidecar {sidecar.name} is not JSON")
        else:
            missing = sorted(set(listed) - set(keys))
            if missing and not stats.reasons.get(str(path)):
                report.problems.append(f"{len(missing)} listed sample(s) not readable, e.g. {missing[0]}")
    return report


def current_fingerprints(index: ShardIndex) -> dict[str, str] | None:
    """Recording id -> fingerprint of the inputs the index names, read now; None when it names none."""
    from egohorizon.data.shards.sources import ingested_sources, source_fingerprint

    folders = index.inputs.get("ingested")
    if not folders:
        return None
    window_s = float(index.build.get("window_s", 30.0))
    sources = ingested_sources(folders, index.inputs.get("events", []))
    return {s.recording.id: source_fingerprint(s, window_s) for s in sources}


def verify_inputs(index: ShardIndex) -> list[ShardReport]:
    """Problems where the index no longer describes its inputs: one report per stale shard, plus one for
    index.json naming sessions that no shard stands for (added since the build, or changed/removed
    with all their windows left out)."""
    from egohorizon.errors import DataError

    top = ShardReport(path=str(index.root / INDEX_FILE))
    try:
        current = current_fingerprints(index)
    except DataError as error:
        top.problems.append(f"the ingested inputs cannot be read ({error}); the index cannot be checked")
        return [top]
    if current is None:
        return []
    reports, covered = [], set()
    for entry in index.shards:
        report = ShardReport(path=str(index.root / entry["path"]))
        for rid, fingerprint in entry.get("inputs", {}).items():
            covered.add(rid)
            _compare_session(report, rid, fingerprint, current)
        if report.problems:
            reports.append(report)
    built = index.inputs.get("sessions", {})
    for rid in sorted(set(current) - set(built)):
        top.problems.append(f"session {rid} is ingested but not in the index (added since the build); rebuild")
    for rid in sorted(set(built) - covered):
        _compare_session(top, rid, built[rid], current)
    return reports + ([top] if top.problems else [])


def _compare_session(report: ShardReport, rid: str, fingerprint: str, current: dict[str, str]) -> None:
    if rid not in current:
        report.problems.append(f"session {rid} is no longer ingested; the index is stale, rebuild")
    elif current[rid] != fingerprint:
        report.problems.append(f"session {rid} changed since the build (frames, words, events or its "
                               "recording); the index is stale, rebuild")


def verify_index(index: ShardIndex, *, inputs: bool = True) -> tuple[list[ShardReport], dict[str, int]]:
    """Reports for every shard and, where the inputs make the index stale, one for index.json (unless
    ``inputs`` is False); the summed counters, with ``shards_with_problems`` and ``index_problems``."""
    # A path outside the folder is never opened; it and two entries naming one file are problems of
    # the index (issue 22: such a folder used to verify clean with one shard's samples lost).
    index_problems = index.path_problems()
    reports = [verify_shard(index, entry) for entry in index.shards if is_inside(entry["path"])]
    by_path = {r.path: r for r in reports}
    for stale in verify_inputs(index) if inputs else []:
        if stale.path in by_path:
            by_path[stale.path].problems.extend(stale.problems)
        else:  # index.json itself
            index_problems.extend(stale.problems)
    totals: Counter = Counter()
    for report in reports:
        totals.update(report.counts)
    totals["shards_with_problems"] = sum(not r.ok for r in reports)
    totals["index_problems"] = len(index_problems)
    if index_problems:
        reports.append(ShardReport(path=str(index.root / INDEX_FILE), problems=index_problems))
    return reports, dict(totals)
