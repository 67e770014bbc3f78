#!/usr/bin/env bash
# One short check of the GPU path on one H200 (or any CUDA GPU with >= 40 GB) with nothing reachable:
# real-size Qwen2.5-VL-7B and Qwen3-VL-8B from hand-written configs, random bf16 weights on the GPU, the
# project's LoRA set-up (conf/finetune/*.yaml through egohorizon.backbones.lora.add_lora): 196 / 252
# language targets, 40,370,176 / 43,646,976 trainable parameters at r=16, lora_B == 0 and logits equal
# to the base at step 0, 5 LoRA steps with gradient checkpointing on a synthetic 9-image caption batch,
# greedy generation; one JSON line at the end (median step time, peak memory, tokens/s, MFU against 989
# and 790 TFLOP/s). scripts/device_check.py has the details. Budget: <= 8 minutes (timeout 480 s).
#
#   scripts/device_check.sh              # on the GPU machine
#   scripts/device_check.sh --dry-run    # the same code on the CPU at toy width, < 60 s (tests/test_device_check.py)
#
# What it needs: python with torch, transformers (>= 5: Qwen3-VL), peft and PyYAML, and the working tree
# (src/ is put on PYTHONPATH; nothing is installed, nothing downloaded). It imports no hydra, omegaconf,
# lightning, deepspeed or submitit, which the lent machine lacks (torch 2.11, transformers 5.17 there).
# What to carry (<= 64 MiB in all), built here before the run:
#   - peft, if that machine lacks it:  pip download --no-deps peft==0.21.2 -d wheels/
#     wheels/*.whl are installed with --no-index --no-deps into a temporary folder before the check.
#   - (not used yet) a DeepSpeed wheel for a ZeRO-3 step on one rank: DS_BUILD_OPS=0 pip wheel
#     --no-deps deepspeed==0.19.8 -w wheels/ (no compiled ops; they build just in time there).
# Environment: PYTHON (default .venv/bin/python if present, else python3), DEVICE_CHECK_TIMEOUT (480).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3)}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"
if compgen -G "wheels/*.whl" >/dev/null; then
  SITE="$(mktemp -d)"
  "$PYTHON" -m pip install -q --no-index --no-deps --target "$SITE" wheels/*.whl || exit 2
  export PYTHONPATH="$PYTHONPATH:$SITE"
fi
exec timeout "${DEVICE_CHECK_TIMEOUT:-480}" "$PYTHON" scripts/device_check.py "$@"
