"""Train a model, choose its checkpoint on validation days and report it on held-out test days: ``python train.py experiment=forecast_l3``.

A thin Hydra entry point; everything happens in ``egohorizon.run.train``. See conf/train.yaml.
"""

import os
import sys

# Idle OpenMP threads wait passively instead of spinning: on a CPU shared with other jobs, spinning
# threads slowed a training step ~10x in our measurements (docs/forecasting.md). Must precede torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import hydra
from omegaconf import DictConfig

from egohorizon.run.resolvers import register_resolvers

register_resolvers()  # before Hydra composes: `--cfg job --resolve` resolves ${precision_for:...} and ${task_objective:} too


@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig) -> float | None:
    from egohorizon.run import train
    from egohorizon.run.run_guard import run_or_exit

    # A problem the user can fix: "error: ..." and exit 2, no traceback, no run folder left looking like one.
    result = run_or_exit(train, cfg)
    print(result["summary_text"])
    print(f"run folder: {result['run_dir']}")
    # The value a Hydra sweeper optimises: the validation metric named by `objective` (never a test
    # metric: the test split is only reported).
    return result["objective"]["value"]


if __name__ == "__main__":
    from egohorizon.run.run_guard import follow_run_dir, refuse_foreign_run_dir

    refuse_foreign_run_dir(sys.argv)  # before Hydra writes .hydra/ into a folder that is not a run's
    sys.argv = follow_run_dir(sys.argv)  # Hydra's own files (.hydra/, the log) go to paths.run_dir too
    main()
