"""Zero-shot runs of any model on imported benchmark items (issue 25, item 2; ``egohorizon bench run``):

- ``sampling``: which frames of an item's videos (EgoMonth's Qwen3-VL-8B rule, or uniform);
- ``video``: frame counts and frames at indices with PyAV;
- ``prompts``: the paper's prompt and the project's qa prompt;
- ``results``: the append-only per-item file, the summary and its table;
- ``run``: the run itself (local model or OpenAI-compatible server, resumable per item).

docs/benchmarks.md, "Zero-shot runs (bench run)". Importing this package imports no torch.
"""
