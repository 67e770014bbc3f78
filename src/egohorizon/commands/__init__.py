"""The ``egohorizon`` subcommands, one module each; ``cli.py`` registers them."""

from __future__ import annotations

import json
import sys
from typing import Any


def write_result(result: Any, indent: int | None = 1) -> None:
    """A command's machine-readable result, as JSON on stdout (what scripts and tests read); progress
    and warnings go through logging, to stderr."""
    sys.stdout.write(json.dumps(result, indent=indent, ensure_ascii=False, default=str) + "\n")
