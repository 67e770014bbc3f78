"""Zero-shot runs of any model on imported benchmark items (issue 25, item 2; ``egohorizon bench run``):

- ``sampling``: which frames of an item's videos (EgoMonth's Qwen3-VL-8B rule, or uniform);
- ``video``: frame counts and frames at indices with PyAV;
- ``prompts``: the paper's prompt and the project's qa prompt;
- ``results``: the append-only per-item file, the summary and its table;
- ``run``: the run itself (local model or OpenAI-compatible server, resumable per item);
- ``forecast``, ``forecast_summary``: ``egohorizon bench forecast``, NextMe-800's in-context forecasting
  protocol for any model (issue 25 item 5), resumable per point, and its summary and table;
- ``qa_answer``: ``egohorizon qa answer``, the in-context QA baseline from the memory's text alone.

docs/benchmarks.md, "Zero-shot runs (bench run)" and "NextMe in-context forecasting (bench forecast)".
Importing this package imports no torch.
"""
