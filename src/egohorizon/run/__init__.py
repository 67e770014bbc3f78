"""The middle of the project: what train.py, eval.py and the ``egohorizon`` commands call. The only code
that reads a Hydra DictConfig; everything below it takes plain arguments.

Floors, lowest first (each imports only the ones above it in this list, never back):
  config_checks.py, run_guard.py, split_record.py, named_backbones.py    private helpers: the bounded
                      settings checked before anything is built, one run folder (failed runs removed or
                      marked), a run's day split, what a backbone config name means as a local model
  setup.py            seed, run folder, and one ``build_*`` per piece (datamodule, backbone, model,
                      callbacks, loggers, trainer)
  training.py         ``train``: fit, test the checkpoint chosen on validation, write metrics.json
  eval_target.py      what eval.py evaluates, resolved once: the ckpt's adapter and the held-out runs
  eval_build.py       an evaluation's pieces: the datamodule (its declared ``evaluation_setup``), the
                      model predictor, the Lightning loop that generates and scores it
  evaluation.py       eval.py's one road for every task: the predictors on a held-out split, scored by
                      the task (``Task.score_predictors``)
  studies.py          eval.py's studies over evaluations (+sweep=context|levels|grounding)
  export.py, answer_set.py    a run's adapter exported (export-adapter), its caption answer set
  comparison.py, comparison_eval.py    checkpoints of one or several runs scored on the same items
  dispatch.py         ``evaluate``: a study or an evaluation
The face below names what the entry points use.

The configs' ``_target_`` name the Lightning glue (``models.*``, ``datamodules.*``), folders of the
checkout rather than installed packages: importing the middle puts the checkout on ``sys.path``
(``repo_conf.glue_importable``), as running train.py from it does.
"""

from egohorizon.errors import ConfigError
from egohorizon.repo_conf import glue_importable
from egohorizon.run.named_backbones import use_backbone_names
from egohorizon.run.resolvers import register_resolvers

# ${precision_for:${trainer.accelerator}} in the real-model experiments, ${task_objective:} in every config:
# known wherever the middle composes or resolves a config. Registered here, not on ``import egohorizon``: the
# layers below the middle (and the GPU machine's scripts/device_check.py) run without omegaconf.
register_resolvers()
# eval.py's llm.model=smollm2_135m: a backbone config name, read and instantiated here, not in llm/.
use_backbone_names()

try:
    glue_importable()
except ConfigError:
    pass  # not in a checkout: composing a config (conf_dir) says so, with what to do

from egohorizon.run.answer_set import add_answer_set
from egohorizon.run.comparison_eval import evaluate_checkpoints as compare
from egohorizon.run.dispatch import evaluate
from egohorizon.run.export import export_run_adapter as export_adapter
from egohorizon.run.studies import run_sweep as sweep
from egohorizon.run.training import train

__all__ = ["add_answer_set", "compare", "evaluate", "export_adapter", "sweep", "train"]
