"""Issue 39 §2: eval.py has one road through egohorizon.run.evaluation. The evaluated target is resolved
once and handed down, the datamodule says what it takes (``TaskDataModule.evaluation_setup``) and the task
scores its predictors (``Task.score_predictors``), so a walk of ``eval.py ckpt=<run>`` calls two functions of
the file, ``evaluate_run`` from outside and its ``evaluate_split`` (before: 8 functions, the target, prompt,
datamodule, signature and scorer helpers among them). Comprehensions are not counted as calls."""

from __future__ import annotations

import sys
from pathlib import Path

from forecast_toy_world import toy_events, write_toy_events
from hydra import compose, initialize_config_dir

from egohorizon.data.splits import make_day_split


def entries(path: str, work) -> tuple[list[str], list[str]]:
    """The calls of functions of file ``path`` that ``work()`` makes: all of them, and those from a frame of
    another file (the file's import, its ``<module>`` code, and comprehensions are not function calls)."""
    entered: list[str] = []
    outside: list[str] = []

    def profile(frame, event, arg):
        if event == "call" and frame.f_code.co_filename == path and not frame.f_code.co_name.startswith("<"):
            entered.append(frame.f_code.co_name)
            caller = frame.f_back
            if caller is None or caller.f_code.co_filename != path:
                outside.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        work()
    finally:
        sys.setprofile(None)
    return entered, outside


def test_eval_of_a_run_enters_the_evaluation_module_at_most_twice(tmp_path):
    from conftest import REPO_ROOT

    events = write_toy_events(tmp_path)
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    make_day_split(toy_events(), seed=1).save(run / "split.json")
    overrides = ["data=forecast_events", f"data.events={events}", "data.n_context=4", "data.max_eval_points=3",
                 "data.num_workers=0", f"paths.run_dir={tmp_path}/eval", f"paths.cache_dir={tmp_path}/cache",
                 f"ckpt={run}", "predictors=[repeat_last,random,markov]", "embedder=exact"]
    with initialize_config_dir(config_dir=str(REPO_ROOT / "conf"), version_base="1.3"):
        cfg = compose("eval", overrides=overrides)
    from egohorizon.run import dispatch, evaluate
    from egohorizon.run.run_guard import run_or_exit

    path = str(Path(dispatch.__file__).with_name("evaluation.py"))
    result = {}
    entered, outside = entries(path, lambda: result.update(run_or_exit(evaluate, cfg)))
    assert result["n_points"] > 0 and (tmp_path / "eval" / "report.json").is_file()
    assert len(entered) <= 2, entered
    assert outside == ["evaluate_run"]
