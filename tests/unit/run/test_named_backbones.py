"""Issue 39 §2: a backbone config name used as a local model (``--model smollm2_135m``, ``llm.model=``) is
read and instantiated by the middle (run/named_backbones), which hands llm/ the resolver; llm/ reads no
config."""

from __future__ import annotations

import pytest

from egohorizon.errors import ConfigError
from egohorizon.repo_conf import conf_dir
from egohorizon.run.named_backbones import backbone_by_name, backbone_config


def test_only_a_plain_name_with_a_backbone_config_is_one():
    assert backbone_config("smollm2_135m") == conf_dir() / "backbone" / "smollm2_135m.yaml"
    assert backbone_by_name("no_such_backbone") is None
    assert backbone_by_name("backbone/tiny") is None  # a path, not a name
    assert backbone_by_name("HuggingFaceTB/SmolLM2-135M-Instruct") is None  # a hub id


def test_a_backbone_built_from_a_corpus_has_no_weights_by_name():
    with pytest.raises(ConfigError, match="'tiny' .* is built from a training corpus"):
        backbone_by_name("tiny")


def test_the_middle_and_the_command_hand_llm_the_resolver(capsys):
    """eval.py's middle hands it over on import (checked in a fresh process: in this one an earlier test may
    already have run the command, which hands over its own lazy one); the command hands it over itself."""
    import subprocess
    import sys

    from egohorizon.cli import main
    from egohorizon.llm import local_model

    fresh = subprocess.run([sys.executable, "-c", ("import egohorizon.run; from egohorizon.llm import local_model as m; "
                                                   "r = m._model_names; print(r.__module__, r.__qualname__)")],
                           capture_output=True, text=True, check=True)
    assert fresh.stdout.split() == ["egohorizon.run.named_backbones", "backbone_by_name"]
    local_model.use_model_names(None)  # as in a process that has not imported the middle
    assert main(["serve", "--model", "tiny"]) == 2  # the command hands it over: the name is a backbone's
    assert "is built from a training corpus" in capsys.readouterr().err
