"""Studies over finished runs: tables that compare several trained runs on the same held-out points
(``grounding``: text-only, +frames, +memory, +both; ``backtest``: the rolling backtest against d) and tables
over finished runs' outputs, each run as ``python -m egohorizon.studies.<name>`` (``grounding_by_cue``,
``qa_table``, ``abstract_whole_days``). They read run folders and reports, never a DictConfig."""
