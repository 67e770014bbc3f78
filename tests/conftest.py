"""Shared test fixtures: offline settings, the real data folder beside the checkout.

Tests mirror the layers: tests/unit/<layer>/ (schema, metrics, formats, prompts, tasks, data, llm,
backbones, bench, callbacks, glue = models/ and datamodules/, pipelines, run, cli, house) and
tests/integration/ (train.py runs, jobs, Slurm, DeepSpeed, the demo). Helpers that are not tests live in
tests/support/ (on sys.path from here); example files of the formats in tests/data/."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

# Tests never reach a model hub or W&B's servers.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Idle OpenMP threads wait passively: on a CPU shared with other jobs, spinning torch threads made the
# forecasting tests ~5x slower (docs/forecasting.md). Set before any test module imports torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT / "tests" / "support"))  # forecast_toy_world, toy_captioner, fake_vllm
# The support modules whose asserts are a test's checks: rewritten as a test module's are, so a failing
# check shows its values. A test module imports helpers from here, never from another folder's test module
# (tests/unit/house/test_test_layout.py).
pytest.register_assert_rewrite("compare_checks", "aria_sample_shards", "qa_checks")
SHARED_DATA = Path(os.environ.get("EGOHORIZON_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real data sets of ../shared/data (SOURCES.md there); skips when the folder is absent."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data folder {SHARED_DATA} is absent (set EGOHORIZON_SHARED_DATA to its path)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


# The SmolLM2 backbone's converted folder (backbone=smollm2_135m): built once (~1 min) into this fixed,
# git-ignored cache and reused by later sessions, so `make test` pays the conversion once per clone.
SMOLLM2_CACHE = Path(os.environ.get("EGOHORIZON_TEST_BACKBONES", REPO_ROOT / ".cache" / "backbones"))


@pytest.fixture(scope="session")
def smollm2_backbone():
    """backbone=smollm2_135m, converted (or found converted) once per test session."""
    from egohorizon.backbones import GGUFBackbone
    from egohorizon.errors import ConfigError

    backbone = GGUFBackbone(cache_dir=str(SMOLLM2_CACHE))
    try:
        backbone.prepare()
    except ConfigError as error:  # the wheel is not installed (`make install` installs it)
        pytest.skip(str(error))
    return backbone


@pytest.fixture(scope="session")
def effnet_composite(smollm2_backbone):
    """backbone=effnet_smollm2 at 224 px, assembled (or found) once per test session in the backbone cache
    beside SmolLM2's folder."""
    from egohorizon.backbones import EffnetSmolLM2Backbone

    backbone = EffnetSmolLM2Backbone(cache_dir=str(Path(smollm2_backbone.path).parent))
    backbone.prepare()
    return backbone
