"""Where the repository's Hydra configs (``conf/``) are, for code that composes them outside train.py /
eval.py (compare, backbone names given to ``--model``)."""

from __future__ import annotations

import os
from pathlib import Path

from egohorizon.errors import ConfigError


def conf_dir() -> Path:
    """The repository's ``conf/`` (``$EGOHORIZON_CONF`` overrides): beside ``src/`` in a checkout or an
    editable install, which is how the Makefile installs the project."""
    path = Path(os.environ.get("EGOHORIZON_CONF") or Path(__file__).resolve().parents[2] / "conf")
    if not (path / "eval.yaml").is_file():
        raise ConfigError(f"{path}: no eval.yaml; set EGOHORIZON_CONF to the repository's conf/ folder")
    return path
