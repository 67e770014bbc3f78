"""Evaluate forecasters and baselines on held-out points: ``python eval.py ckpt=RUN_OR_ADAPTER``.

A thin Hydra entry point; the work is in ``egohorizon.run_eval``. See conf/eval.yaml, and
``python eval.py +sweep=context`` / ``+sweep=levels`` for the two studies.
"""

import os

# Idle OpenMP threads wait passively instead of spinning: on a CPU shared with other jobs, spinning
# threads slowed a training step ~10x in our measurements (docs/forecasting.md). Must precede torch.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import hydra
from omegaconf import DictConfig


@hydra.main(version_base="1.3", config_path="conf", config_name="eval")
def main(cfg: DictConfig) -> None:
    from egohorizon.errors import EgohorizonError
    from egohorizon.run import evaluate
    from egohorizon.run_eval import format_rows

    try:
        result = evaluate(cfg)
    except EgohorizonError as error:
        raise SystemExit(f"error: {error}") from None
    if "sweep" in result:
        print(f"{result['sweep']} study: table {result['table']}, plot {result['plot']}")
    else:
        print(f"{result['split']} split, {result['n_points']} points, predictors {result['predictors']}")
        print(format_rows(result["rows"]))
    print(f"run folder: {result['run_dir']}")


if __name__ == "__main__":
    main()
