"""The real-model experiments' training precision (egohorizon.precision): bf16 autocast on a CPU with
native bfloat16, float32 on one without, bf16-true on GPUs; the toy runs keep float32; a typed
trainer.precision wins."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from run_configs import REPO_ROOT, compose_config

from egohorizon import precision

REAL_MODEL_EXPERIMENTS = ("forecast_epic_smollm2", "forecast_hdepic_smollm2", "abstract_smollm2")


@pytest.mark.parametrize(("native", "accelerator", "expected"), [
    (True, "cpu", "bf16-mixed"), (False, "cpu", "32-true"), (True, "gpu", "bf16-true"), (False, "gpu", "bf16-true"),
])
def test_precision_for_each_machine(monkeypatch, native, accelerator, expected):
    monkeypatch.setattr(precision, "native_bf16_cpu", lambda: native)
    assert precision.precision_for(accelerator) == expected


def test_this_machines_probe_answers_a_bool():
    assert isinstance(precision.native_bf16_cpu(), bool)


@pytest.mark.parametrize("experiment", REAL_MODEL_EXPERIMENTS)
def test_the_real_model_experiments_resolve_the_machines_precision(experiment, monkeypatch):
    for native, expected in ((True, "bf16-mixed"), (False, "32-true")):
        monkeypatch.setattr(precision, "native_bf16_cpu", lambda native=native: native)
        cfg = compose_config("train", [f"experiment={experiment}"])
        assert cfg.trainer.precision == expected
    gpu = compose_config("train", [f"experiment={experiment}", "trainer=gpu"])
    assert gpu.trainer.precision == "bf16-true"
    typed = compose_config("train", [f"experiment={experiment}", "trainer.precision=32-true"])
    assert typed.trainer.precision == "32-true"


def test_the_toy_runs_keep_float32():
    assert compose_config("train", ["experiment=forecast_l3"]).trainer.precision == "32-true"


def test_train_py_resolves_the_precision_before_anything_else_imports_the_middle():
    # `--cfg job --resolve` resolves the composed config inside Hydra, before main() imports egohorizon.run:
    # train.py itself must have made ${precision_for:...} known.
    done = subprocess.run([sys.executable, "train.py", "experiment=forecast_hdepic_smollm2", "trainer=gpu",
                           "--cfg", "job", "--resolve"], cwd=REPO_ROOT, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert yaml.safe_load(done.stdout)["trainer"]["precision"] == "bf16-true"


def test_importing_the_layers_below_the_middle_imports_no_omegaconf():
    # The GPU machine's device check (scripts/device_check.py) runs these without omegaconf installed.
    code = ("import sys, egohorizon, egohorizon.precision, egohorizon.backbones.lora, egohorizon.checkpoints; "
            "print('omegaconf' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False"
