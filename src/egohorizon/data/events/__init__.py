"""Event sets and their L1-L5 hierarchy: ``hierarchy`` (the invariants, per-level figures), ``stats``
(``egohorizon data stats``), ``figures`` (a day's icicle chart, the per-level table and PNG),
``abstract_items`` (the abstractor's gold items cut from a hierarchy)."""
