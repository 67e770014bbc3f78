"""``egohorizon shards verify``: read every sample of every shard the way the stream does, and report.

A shard is fine when its byte size matches the index, it reads to the end, it holds exactly the
index's number of samples (and the keys its sidecar lists), and every sample decodes. Everything
else is a problem naming the shard and, where there is one, the sample.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from egohorizon.data.shards.index import ShardIndex
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


def verify_index(index: ShardIndex) -> tuple[list[ShardReport], dict[str, int]]:
    """Reports for every shard and the summed counters."""
    reports = [verify_shard(index, entry) for entry in index.shards]
    totals: Counter = Counter()
    for report in reports:
        totals.update(report.counts)
    totals["shards_with_problems"] = sum(not r.ok for r in reports)
    return reports, dict(totals)
