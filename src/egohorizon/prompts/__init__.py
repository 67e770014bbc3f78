"""Versioned prompt templates and their loader.

A prompt is a text file ``<name>.txt`` in this folder whose first line is ``# version: <N>``;
the rest is the template, filled with ``str.format``-style ``{fields}``. The name and version
travel with every prediction and adapter checkpoint (DESIGN.md conventions), so a changed prompt
is visible in every result that used it. Users can point ``load_prompt`` at their own file.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path

from egohorizon.errors import ConfigError

PROMPT_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Prompt:
    name: str
    version: str
    template: str
    path: str

    @property
    def fields(self) -> set[str]:
        return {f for _, f, _, _ in string.Formatter().parse(self.template) if f}

    def render(self, **values: object) -> str:
        missing = self.fields - set(values)
        if missing:
            raise ConfigError(f"prompt {self.name!r} (v{self.version}, {self.path}) needs values for "
                              f"{sorted(missing)}")
        return self.template.format(**values)

    def to_dict(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version, "template": self.template}


def load_prompt(name_or_path: str) -> Prompt:
    """Loads a bundled prompt by name (``forecast``) or any ``.txt`` file by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PROMPT_DIR / f"{name_or_path}.txt"
    if not path.is_file():
        available = sorted(p.stem for p in PROMPT_DIR.glob("*.txt"))
        raise ConfigError(f"prompt {name_or_path!r} not found (looked for {path}); bundled: {available}")
    first, _, rest = path.read_text(encoding="utf-8").partition("\n")
    if not first.startswith("# version:"):
        raise ConfigError(f"{path}:1: expected a '# version: N' header line, got {first!r}")
    return Prompt(name=path.stem, version=first.split(":", 1)[1].strip(), template=rest, path=str(path))
