#!/usr/bin/env bash
# Issue 38 item 4, the stronger EPIC run: train experiment=forecast_epic_long (not tested), choose the
# decoding per K on the VALIDATION days only, then score the test days once with that choice, and print
# the test table against repeat-last, the strongest personal habit and the population habit markov_all.
#
#   bash scripts/epic_long.sh [OUT] [train.py overrides...]   # OUT default outputs/epic_long; ~1 h 15 min on 2 CPU cores
#
# Steps whose folder already holds metrics.json are not run again (a rerun resumes where it stopped).
# 1. train: python train.py experiment=forecast_epic_long test_after_fit=false (300 steps; the checkpoint
#    chosen by val/forecast_S_norm, pooled over both K, at steps 75/150/225/300).
# 2. the chosen adapter decoded again on 80 validation points per K, five ways: sampling at T = 0.7 with 3
#    samples (the run's own), with 8 and 16 samples and MBR keeping 3 (model.generation.mbr_samples), beam
#    search with 3 beams, and 8 beams with MBR keeping 3. Their validation table is printed.
# 3. per K, the decoding with the highest validation S_norm at that K (ties: the cheaper, first listed)
#    decodes that K's 120 test points (eval.py 'data.ks=[K]'); the two K's predictions are scored together.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-outputs/epic_long}
[ $# -gt 0 ] && shift
PY=${PYTHON:-.venv/bin/python}
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_MODE=offline TOKENIZERS_PARALLELISM=false
mkdir -p "$OUT"
VARIANTS=(sample3 sample_mbr8 sample_mbr16 beam3 beam_mbr8)
decoding() {  # decoding VARIANT: its generation overrides
  case $1 in
    sample3) echo "";;
    sample_mbr8) echo "model.generation.mbr_samples=8";;
    sample_mbr16) echo "model.generation.mbr_samples=16";;
    beam3) echo "model.generation.strategy=beam";;
    beam_mbr8) echo "model.generation.strategy=beam model.generation.mbr_samples=8";;
  esac
}
EVAL=(+experiment=forecast_epic_long "ckpt=$OUT/epic_long")
# As make demo: nothing is fetched when a data home (../shared/data, $EGOHORIZON_DATA, ...) already holds the
# EPIC-KITCHENS annotation files; on a machine without one, the 13 files (10.5 MB) come from their pinned commits.
"$PY" -m egohorizon.cli data fetch epic-kitchens

if [ ! -f "$OUT/epic_long/metrics.json" ]; then
  "$PY" train.py experiment=forecast_epic_long test_after_fit=false "paths.run_dir=$OUT/epic_long" "$@" \
    >"$OUT/epic_long.log" 2>&1
fi
for v in "${VARIANTS[@]}"; do
  if [ ! -f "$OUT/val_$v/metrics.json" ]; then
    # shellcheck disable=SC2046  # the overrides are words
    "$PY" eval.py "${EVAL[@]}" split=val data.max_eval_points=80 'predictors=[model,repeat_last,markov,markov_all]' \
      $(decoding "$v") "paths.run_dir=$OUT/val_$v" >"$OUT/val_$v.log" 2>&1
  fi
done
echo "Validation days, the chosen adapter decoded five ways (each minus sample3, paired 95% bootstrap):"
preds=()
for v in "${VARIANTS[@]}"; do preds+=(--pred "$v=$OUT/val_$v/predictions/test.jsonl"); done
"$PY" -m egohorizon.cli score forecast-table --gold "$OUT/val_sample3/points/points_val.jsonl" "${preds[@]}" \
  --baseline sample3 --out "$OUT/val_decoding.json"

for k in 1 10; do
  chosen=$("$PY" - "$OUT" "$k" "${VARIANTS[@]}" <<'PY'
import json, sys
out, k, variants = sys.argv[1], sys.argv[2], sys.argv[3:]
scores = [json.load(open(f"{out}/val_{v}/metrics.json"))[f"val/forecast_S_norm_L1_K{k}"] for v in variants]
print(variants[scores.index(max(scores))])  # the first of the best: the cheaper on a tie
PY
)
  echo "K = $k: decoding chosen on validation: $chosen"
  if [ ! -f "$OUT/test_k$k/metrics.json" ]; then
    # shellcheck disable=SC2046
    "$PY" eval.py "${EVAL[@]}" split=test "data.ks=[$k]" $(decoding "$chosen") "paths.run_dir=$OUT/test_k$k" \
      >"$OUT/test_k$k.log" 2>&1
  fi
done
cat "$OUT/test_k1/points/points_test.jsonl" "$OUT/test_k10/points/points_test.jsonl" >"$OUT/points_test.jsonl"
cat "$OUT/test_k1/predictions/test.jsonl" "$OUT/test_k10/predictions/test.jsonl" >"$OUT/predictions_test.jsonl"
for baseline in repeat_last strongest markov_all; do
  echo "Held-out test days, each row minus $baseline (paired 95% bootstrap; habits learn from the training days only):"
  "$PY" -m egohorizon.cli score forecast-table --gold "$OUT/points_test.jsonl" \
    --pred "SmolLM2-135M + LoRA, MBR=$OUT/predictions_test.jsonl" --baseline "$baseline" \
    --history data/epic/events.jsonl --split "$OUT/epic_long/split.json" --out "$OUT/test_table_$baseline.json"
done
