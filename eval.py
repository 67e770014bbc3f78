"""Evaluate forecasters and baselines on held-out points: ``python eval.py ckpt=RUN_OR_ADAPTER``; any
other task's adapter with ``python eval.py task=caption ckpt=...``.

A thin Hydra entry point; the work is in ``egohorizon.run.evaluation``. See conf/eval.yaml, and
``python eval.py +sweep=context`` / ``+sweep=levels`` for the two studies.
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


@hydra.main(version_base="1.3", config_path="conf", config_name="eval")
def main(cfg: DictConfig) -> None:
    from egohorizon.run import evaluate
    from egohorizon.run.run_guard import run_or_exit

    # A problem the user can fix: "error: ..." and exit 2, no traceback, no run folder left looking like one.
    result = run_or_exit(evaluate, cfg)
    if "sweep" in result:
        print(f"{result['sweep']} study: table {result['table']}, plot {result['plot']}")
    else:
        print(f"{result['task']}: {result['split']} split, {result['n_points']} items, predictors {result['predictors']}")
        print(result["text"])
    print(f"run folder: {result['run_dir']}")


if __name__ == "__main__":
    from egohorizon.run.run_guard import follow_run_dir, refuse_foreign_run_dir

    refuse_foreign_run_dir(sys.argv)  # before Hydra writes .hydra/ into a folder that is not a run's
    sys.argv = follow_run_dir(sys.argv)  # Hydra's own files (.hydra/, the log) go to paths.run_dir too
    main()
