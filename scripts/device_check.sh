#!/usr/bin/env bash
# One short check of the GPU path on one H200 (or any CUDA GPU with >= 40 GB) with nothing reachable:
# real-size Qwen2.5-VL-7B and Qwen3-VL-8B from hand-written configs, random bf16 weights on the GPU, the
# project's LoRA set-up (conf/finetune/*.yaml through egohorizon.backbones.lora.add_lora): 196 / 252
# language targets, 40,370,176 / 43,646,976 trainable parameters at r=16, lora_B == 0 and logits equal
# to the base at step 0, 5 LoRA steps with gradient checkpointing on a synthetic 9-image caption batch,
# greedy generation; then raw DeepSpeed ZeRO-3 on one rank in a child process (Qwen2.5-VL-7B made inside
# deepspeed.zero.Init, add_lora, every gathered lora_B 0, one step, the trainable weights saved, consolidated
# by egohorizon.checkpoints and loaded into a fresh engine: equal logits; 16 tokens with synced_gpus=True);
# one JSON line at the end (median step time, peak memory, tokens/s, MFU against 989 and 790 TFLOP/s, the
# "zero3" figures). scripts/device_check.py has the details. Budget: <= 8 minutes (timeout 480 s).
#
#   scripts/device_check.sh              # on the GPU machine
#   scripts/device_check.sh --dry-run    # the same code on the CPU at toy width, < 60 s (tests/unit/house/test_device_check.py)
#
# What it needs: python with torch, transformers (>= 5: Qwen3-VL), peft and PyYAML, and the working tree
# (src/ is put on PYTHONPATH; nothing is installed, nothing downloaded). It imports no hydra, omegaconf,
# lightning, deepspeed or submitit, which the lent machine lacks (torch 2.11, transformers 5.17 there);
# only the ZeRO-3 stage's child process imports deepspeed, and without it reports
# "skipped: deepspeed not installed" in the JSON (the check still passes on the rest).
# What to carry (<= 64 MiB in all), built here before the run:
#   - peft, if that machine lacks it:  pip download --no-deps peft==0.21.2 -d wheels/
#   - DeepSpeed for the ZeRO-3 stage:  DS_BUILD_OPS=0 pip wheel deepspeed==0.19.8 --no-deps -w wheels/
#     (the version in .venv; no compiled ops: the stage uses torch's AdamW, none is built there). The wheel
#     is 2.1 MiB (deepspeed-0.19.8-py3-none-any.whl), well inside the limit. Its dependencies that machine
#     may lack, as wheels:  pip download --no-deps einops hjson msgpack ninja py-cpuinfo pydantic
#     pydantic-core annotated-types typing-inspection -d wheels/  (3.5 MiB; msgpack and pydantic-core are
#     binary: add --python-version X.Y --platform manylinux2014_x86_64 --only-binary=:all: for its Python).
#     Measured here: 5.6 MiB in all with DeepSpeed, 6.4 MiB with peft (0.8 MiB), far under 64 MiB.
#   wheels/*.whl are installed with --no-index --no-deps into a temporary folder before the check.
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
