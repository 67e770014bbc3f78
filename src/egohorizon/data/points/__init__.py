"""Forecast points (SPEC §2): ``build`` (points from an event set and a held-out-day split) and
``leakage`` (the guard that re-derives every point, and checks QA items, so nothing at or after ``t0``
reaches a model). The day split itself is ``egohorizon.data.splits``: QA items, hand clips and caption
windows are split by it too."""
