"""Train a model, choose its checkpoint on validation days and report it on held-out test days: ``python train.py experiment=forecast_l3``.

A thin Hydra entry point; everything happens in ``egohorizon.run.train``. See conf/train.yaml.
"""

import os

# Idle OpenMP threads wait passively instead of spinning: on a CPU shared with other jobs, spinning
# threads slowed a training step ~10x in our measurements (docs/forecasting.md). Must precede torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import hydra
from omegaconf import DictConfig


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    from egohorizon.errors import EgohorizonError
    from egohorizon.run import train

    try:
        result = train(cfg)
    except EgohorizonError as error:  # a problem the user can fix: say what, without a traceback
        raise SystemExit(f"error: {error}") from None
    print(result["summary_text"])
    print(f"run folder: {result['run_dir']}")
    # The value a Hydra sweeper optimises: the validation metric named by `objective` (never a test
    # metric: the test split is only reported).
    return result["objective"]["value"]


if __name__ == "__main__":
    main()
