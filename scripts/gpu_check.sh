#!/usr/bin/env bash
# Checks the DeepSpeed strategies end to end on one CUDA GPU, in a few minutes, and says what it verified.
# (Lightning's DeepSpeed strategy does not start on a CPU, so the test suite cannot do this; see
# docs/cluster.md.)
#
#   scripts/gpu_check.sh                          # deepspeed_z2 and deepspeed_z3
#   scripts/gpu_check.sh deepspeed_z3_offload     # any of conf/strategy/deepspeed_*.yaml
#
# For each strategy it trains the tiny forecaster on the demo world for 4 optimizer steps (8 batches,
# trainer.accumulate_grad_batches=2) with trainer=gpu and the strategy's bf16 and activation
# checkpointing, then checks:
#   [train]   train.py exits 0                                   (log: <out>/<strategy>/train.log)
#   [config]  <run>/deepspeed_config.json: the strategy's ZeRO stage, bf16 enabled,
#             gradient_accumulation_steps 2, train_micro_batch_size_per_gpu 4
#   [ckpt]    checkpoints/last.ckpt is a ZeRO checkpoint folder (one shard per rank) at global step 4
#   [export]  egohorizon export-adapter turns it into a PEFT adapter folder (export.json: deepspeed, step 4)
#   [peft]    PeftModel.from_pretrained puts that adapter on the base model; the logits on a probe are
#             finite and differ from the base model's (the adapter was trained)
#   [eval]    eval.py scores the exported adapter on the run's held-out test points
# One PASS/FAIL line per check, then a summary. Exit status: 0 all passed, 1 a check failed, 2 no GPU.
#
# Environment: PYTHON (default .venv/bin/python, else python3), OUT (default outputs/gpu_check),
# EVAL_TRAINER (default trainer=gpu). `scripts/gpu_check.sh --check-run RUN_DIR STRATEGY` runs the
# checks after [train] on an existing run folder.
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}"
OUT="${OUT:-outputs/gpu_check}"
STRATEGIES=("$@")
[ ${#STRATEGIES[@]} -gt 0 ] || STRATEGIES=(deepspeed_z2 deepspeed_z3)
[ "${1:-}" = "--check-run" ] && STRATEGIES=()
export HF_HUB_OFFLINE="${HF_HUB_OFFLINE:-1}" WANDB_MODE="${WANDB_MODE:-offline}" TOKENIZERS_PARALLELISM=false

if [ "${1:-}" != "--check-run" ] && ! "$PYTHON" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
  echo "gpu_check: no CUDA GPU visible to $PYTHON (torch.cuda.is_available() is False); nothing checked."
  exit 2
fi
[ "${1:-}" = "--check-run" ] || "$PYTHON" -c "import torch, deepspeed, lightning; print(f'gpu_check: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, deepspeed {deepspeed.__version__}, lightning {lightning.__version__}')" 2>/dev/null | grep '^gpu_check'

FAILED=0
report() {  # report STRATEGY CHECK STATUS DETAIL
  printf '%-22s %-7s %s  %s\n' "$1" "[$2]" "$3" "$4"
  [ "$3" = PASS ] || FAILED=1
}

check_strategy() {
  local strategy="$1" run="$OUT/$1" start
  rm -rf "$run"
  mkdir -p "$run"
  start=$(date +%s)
  if ! "$PYTHON" train.py experiment=forecast_l3 trainer=gpu "strategy=$strategy" "paths.run_dir=$run" \
      trainer.max_steps=4 trainer.max_epochs=-1 trainer.accumulate_grad_batches=2 trainer.log_every_n_steps=1 \
      trainer.check_val_every_n_epoch=1000 trainer.enable_progress_bar=false test_after_fit=false logger=csv \
      callbacks.model_checkpoint.monitor=null data.batch_size=4 data.max_train_points=64 data.max_eval_points=8 \
      >"$run/train.log" 2>&1; then
    report "$strategy" train FAIL "train.py failed after $(($(date +%s) - start)) s; last lines of $run/train.log:"
    tail -n 25 "$run/train.log" | sed 's/^/    /'
    return
  fi
  report "$strategy" train PASS "4 optimizer steps in $(($(date +%s) - start)) s (log: $run/train.log)"
  check_run "$run" "$strategy"
}

check_run() {  # the checks after training, on an existing run folder
  local run="$1" strategy="$2"
  # [config] [ckpt] [export] [peft]: one Python process writes one line per check.
  # (Into a file: DeepSpeed's converter prints to stdout.)
  rm -f "$run/checks.tsv"
  "$PYTHON" - "$run" "$strategy" "$run/checks.tsv" >"$run/checks.log" 2>&1 <<'PY'
import json, sys, traceback
from pathlib import Path

run, strategy, results = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
stage = 2 if strategy == "deepspeed_z2" else 3

def say(check, ok, detail):
    detail = " ".join(str(detail).split())
    with results.open("a") as f:
        f.write(f"{check}\t{'PASS' if ok else 'FAIL'}\t{detail}\n")

try:
    config = json.loads((run / "deepspeed_config.json").read_text())
    got = (config["zero_optimization"]["stage"], config.get("bf16", {}).get("enabled"),
           config.get("gradient_accumulation_steps"), config.get("train_micro_batch_size_per_gpu"))
    say("config", got == (stage, True, 2, 4), f"stage, bf16, accumulation, micro batch = {got}")
except Exception as error:
    say("config", False, f"{run}/deepspeed_config.json: {type(error).__name__}: {error}")

try:
    from egohorizon.checkpoints import is_deepspeed_checkpoint, read_checkpoint
    last = run / "checkpoints" / "last.ckpt"
    checkpoint = read_checkpoint(last)
    shards = sorted(p.name for p in last.glob("*/*optim_states.pt"))
    say("ckpt", is_deepspeed_checkpoint(last) and checkpoint.global_step == 4,
        f"{checkpoint.kind} checkpoint, global step {checkpoint.global_step}, optimizer shards {shards}")
except Exception as error:
    say("ckpt", False, f"{type(error).__name__}: {error}")

try:
    from egohorizon.run.export import export_run_adapter
    adapter = export_run_adapter(run, out=run / "exported.adapter")
    info = json.loads((adapter / "export.json").read_text())
    say("export", info["kind"] == "deepspeed" and info["global_step"] == 4, f"{adapter}: {info}")
except Exception as error:
    say("export", False, f"{type(error).__name__}: {error}")
    traceback.print_exc()
    sys.exit(0)

try:
    import torch
    from peft import PeftModel
    from transformers import AutoTokenizer
    from egohorizon.backbones import load_pretrained_model
    base_path = json.loads((adapter / "egohorizon_adapter.json").read_text())["base_path"]
    tokenizer = AutoTokenizer.from_pretrained(adapter)
    ids = tokenizer(["at 08:00 have breakfast, then"], return_tensors="pt")
    inputs = {"input_ids": ids["input_ids"], "attention_mask": ids["attention_mask"],
              "mm_token_type_ids": torch.zeros_like(ids["input_ids"], dtype=torch.int)}
    with torch.no_grad():
        base = load_pretrained_model(base_path, kind="vlm").eval()
        plain = base(**inputs).logits
        tuned = PeftModel.from_pretrained(base, adapter).eval()(**inputs).logits
    moved = (tuned - plain).abs().max().item()
    say("peft", bool(torch.isfinite(tuned).all()) and moved > 0,
        f"PeftModel on {base_path}: logits finite, max change from the base {moved:.3g}")
except Exception as error:
    say("peft", False, f"{type(error).__name__}: {error}")
PY
  [ -f "$run/checks.tsv" ] && while IFS=$'\t' read -r check status detail; do
    report "$strategy" "$check" "$status" "$detail"
  done <"$run/checks.tsv"
  grep -qs "^peft" "$run/checks.tsv" || report "$strategy" checks FAIL "the checks stopped early (log: $run/checks.log)"

  if [ -d "$run/exported.adapter" ] && "$PYTHON" eval.py "ckpt=$run/exported.adapter" "points=$run/points/points_test.jsonl" \
      "paths.run_dir=$run/eval" "${EVAL_TRAINER:-trainer=gpu}" trainer.enable_progress_bar=false >"$run/eval.log" 2>&1; then
    report "$strategy" eval PASS "$("$PYTHON" -c "import json,sys; r=json.load(open(sys.argv[1])); o=r['reports']['model']['overall']; print(f\"{r['n_points']} points: S {o['S']:.3f}, S_norm {o['S_norm']}, invalid {o['invalid']}\")" "$run/eval/report.json")"
  else
    report "$strategy" eval FAIL "eval.py on the exported adapter failed (log: $run/eval.log)"
  fi
}

if [ "${1:-}" = "--check-run" ]; then  # scripts/gpu_check.sh --check-run RUN_DIR STRATEGY: checks only
  check_run "$2" "$3"
  exit "$FAILED"
fi
for strategy in "${STRATEGIES[@]}"; do
  if [ ! -f "conf/strategy/$strategy.yaml" ]; then
    report "$strategy" train FAIL "no conf/strategy/$strategy.yaml"
    continue
  fi
  check_strategy "$strategy"
done
if [ "$FAILED" = 0 ]; then echo "gpu_check: all checks passed (${STRATEGIES[*]})"; else echo "gpu_check: some checks FAILED"; fi
exit "$FAILED"
