"""Adapters that turn real data sets into egohorizon records (events, recordings, QA items).

Each adapter module says in its docstring where a user gets the files and which files it reads, and
exposes ``convert(root, ...) -> Conversion`` (``_common.Conversion``: records, metadata, counts of
skipped rows; ``Conversion.write(out)`` writes ``events.jsonl``, ``recordings.jsonl``, ``qa.jsonl``
and ``metadata.json``). ``egohorizon data convert NAME --root DIR --out DIR`` runs them.
"""

from __future__ import annotations

# Name on the command line -> module under egohorizon.data.sources (imported when used).
ADAPTERS: dict[str, str] = {
    "epic-kitchens": "epic_kitchens",
    "hd-epic": "hd_epic",
    "hd-epic-vqa": "hd_epic_vqa",
    # benchmark files named on the command line instead of found under --root (issue 25)
    "egomonth": "egomonth",
    "egoschema": "egoschema",
    "ego4d-lta": "ego4d_lta",
}
