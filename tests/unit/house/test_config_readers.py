"""Issue 39 §2: only the middle (``egohorizon.run``) reads a DictConfig or instantiates from one; the
floors below take plain arguments. Checked by the imports of omegaconf and hydra outside run/ (lazy ones
too). Two stand, each for a reason below; a new one fails here."""

from __future__ import annotations

import ast

from conftest import REPO_ROOT

# file (under src/egohorizon) -> why it may import omegaconf/hydra
ALLOWED = {
    # registers the ${precision_for:...} resolver, which every config that names it needs; reads no config
    "precision.py": "registers a resolver",
    # a local model named by its backbone config (``qa answer --model smollm2_135m``, serve, eval.py's llm):
    # left for a later step, which resolves the name where the command starts (issue 39 §2)
    "llm/local_model.py": "instantiates conf/backbone/<name>.yaml",
}


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
