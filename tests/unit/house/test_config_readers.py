"""Issue 39 §2: only the middle (``egohorizon.run``) reads a DictConfig or instantiates from one; the
floors below take plain arguments. Checked by the imports of omegaconf and hydra outside run/ (lazy ones
too): none stands; a new one fails here. A backbone config name used as a local
model (``--model smollm2_135m``) is read in ``run/named_backbones``, which eval.py and the command hand to
``llm.local_model`` as a resolver."""

from __future__ import annotations

import ast

from conftest import REPO_ROOT

# file (under src/egohorizon) -> why it may import omegaconf/hydra: none (the ${precision_for:...} resolver is
# registered by run/resolvers.py, a backbone config name read by run/named_backbones.py)
ALLOWED: dict[str, str] = {}


def config_readers() -> dict[str, list[str]]:
    src = REPO_ROOT / "src" / "egohorizon"
    found: dict[str, list[str]] = {}
    for path in sorted(src.rglob("*.py")):
        name = path.relative_to(src).as_posix()
        if name.startswith("run/"):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            hits = [m for m in modules if m.split(".")[0] in ("omegaconf", "hydra")]
            if hits:
                found.setdefault(name, []).extend(f"{node.lineno} {m}" for m in hits)
    return found


def test_only_the_middle_reads_a_config():
    assert sorted(config_readers()) == sorted(ALLOWED), config_readers()
