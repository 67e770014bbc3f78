"""Where the repository is: its Hydra configs (``conf/``) and the Lightning glue (``models/``,
``datamodules/``), for code that composes configs or instantiates their ``_target_`` outside train.py /
eval.py (compare, the ``egohorizon`` commands, backbone names given to ``--model``).

``models`` and ``datamodules`` are folders of the checkout, not packages of the installed wheel (names
that generic would shadow other projects' in site-packages). train.py and eval.py import them from the
folder they run in; everything else goes through ``glue_importable``.
"""

from __future__ import annotations

import json
import os
import sys
from importlib import metadata
from pathlib import Path

from egohorizon.errors import ConfigError


def _is_repo(path: Path) -> bool:
    return (path / "conf" / "eval.yaml").is_file() and (path / "models").is_dir() and (path / "datamodules").is_dir()


def _editable_source() -> Path | None:
    """The folder an editable install (``pip install -e .``, the Makefile's) was made from: PEP 610's
    ``direct_url.json`` of the installed distribution. Every ``egohorizon`` distribution on the path is
    looked at: the build's ``src/egohorizon.egg-info`` (no direct_url.json) can come first when ``src/``
    is early on ``sys.path``."""
    for distribution in metadata.distributions(name="egohorizon"):
        text = distribution.read_text("direct_url.json")
        if not text:
            continue
        info = json.loads(text)
        url = info.get("url", "")
        if (info.get("dir_info") or {}).get("editable") and url.startswith("file://"):
            return Path(url.removeprefix("file://"))
    return None


def repo_root() -> Path:
    """The checkout: the parent of ``$EGOHORIZON_CONF`` when set; else the working folder or the nearest
    folder above it holding ``conf/``, ``models/`` and ``datamodules/`` (so a second checkout or worktree
    uses its own code); else the folder the project was installed from in editable mode."""
    if os.environ.get("EGOHORIZON_CONF"):
        return Path(os.environ["EGOHORIZON_CONF"]).resolve().parent
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if _is_repo(folder):
            return folder
    source = _editable_source()
    if source is not None and _is_repo(source):
        return source
    raise ConfigError(
        f"{here}: not inside an egohorizon checkout (no conf/, models/ and datamodules/ here or above) and the "
        "project is not installed in editable mode; run from the repository or set EGOHORIZON_CONF to its conf/")


def conf_dir() -> Path:
    """The repository's ``conf/`` (``$EGOHORIZON_CONF`` overrides)."""
    path = Path(os.environ["EGOHORIZON_CONF"]) if os.environ.get("EGOHORIZON_CONF") else repo_root() / "conf"
    if not (path / "eval.yaml").is_file():
        raise ConfigError(f"{path}: no eval.yaml; set EGOHORIZON_CONF to the repository's conf/ folder")
    return path


def glue_importable() -> Path:
    """Puts the checkout first on ``sys.path`` (once), as running train.py from it does, so that
    ``models.*`` and ``datamodules.*`` import from it, as the configs' ``_target_`` need, whatever else is
    installed under those names. Returns the checkout."""
    root = repo_root()
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    return root
