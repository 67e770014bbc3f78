"""Level-1 events and scene records from the captioning job's results (``results``).

``write_events(out_dir)`` reads every results file of ``out_dir`` and (re)writes, atomically:

- ``events.jsonl``: one SPEC §5 Event per parsed action: ``id`` ``<window>_a<NN>``, the window's
  participant, day and session, ``level`` 1, absolute ``start``/``end`` (the window's start plus the
  action's times in the window), ``text`` the action, ``source`` ``"caption"``, and ``meta`` with the
  provenance (``model``, ``adapter``, ``prompt`` name and version, ``seed``) and the ``window`` id;
- ``scenes.jsonl``: one record per window with a scene line: ``id`` ``<window>_scene``, participant,
  day, session, the window's ``start``/``end``, ``text`` and the same ``meta``.

Both are sorted (participant, start, end, id), so the files depend only on the results: a rerun, or the
merge of a sliced run, gives byte-identical files.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from egohorizon.pipelines.caption.results import OK, load_all_results, provenance

EVENTS_FILE = "events.jsonl"
SCENES_FILE = "scenes.jsonl"


def _meta(record: dict[str, Any]) -> dict[str, Any]:
    return {**provenance(record), "window": record["window"]}


def events_and_scenes(records: Iterable[dict[str, Any]]) -> tuple[list[dict], list[dict]]:
    events, scenes = [], []
    for record in records:
        if record.get("status") != OK:
            continue
        where = {k: record[k] for k in ("participant", "day", "session")}
        origin = float(record["start"])
        for j, action in enumerate(record.get("actions") or []):
            events.append({"id": f"{record['window']}_a{j:02d}", **where, "level": 1,
                           "start": origin + action["start"], "end": origin + action["end"],
                           "text": action["action"], "parent": None, "children": [], "source": "caption",
                           "meta": _meta(record)})
        if record.get("scene"):
            scenes.append({"id": f"{record['window']}_scene", **where, "start": origin,
                           "end": float(record["end"]), "text": record["scene"], "source": "caption",
                           "meta": _meta(record)})
    return sorted(events, key=_order), sorted(scenes, key=_order)


def _order(record: dict[str, Any]) -> tuple:
    return record["participant"], record["start"], record["end"], record["id"]


def write_events(out_dir: Path) -> dict[str, int]:
    """(Re)writes events.jsonl and scenes.jsonl of ``out_dir`` from its results; returns the counts."""
    from egohorizon.schema import write_jsonl

    events, scenes = events_and_scenes(load_all_results(out_dir).values())
    write_jsonl(out_dir / EVENTS_FILE, events)
    write_jsonl(out_dir / SCENES_FILE, scenes)
    return {"events": len(events), "scenes": len(scenes)}
