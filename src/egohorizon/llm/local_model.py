"""What a local model name means, for ``make_backend`` (eval.py's ``llm.model``, ``qa answer --model``)
and ``egohorizon serve``: one resolution, so a model answers the same in process and behind the server.

In order:

1. a trained adapter: a ``*.adapter`` folder, a ``.ckpt`` saved by train.py or a run folder (its best,
   else last, adapter) -- the base model its ``egohorizon_adapter.json`` names, with the adapter on it,
   prompted as it was trained (chat template or raw text, ``adapter_base``);
2. a local folder (any HF checkpoint: a tiny backbone's cache folder, a converted SmolLM2, Qwen3-8B);
3. the name of a backbone config, ``conf/backbone/<name>.yaml`` (``smollm2_135m``, ``qwen3_8b``, ...): its
   prepared folder and model id, from the resolver the middle hands over (``use_model_names``;
   ``egohorizon.run.named_backbones``, where eval.py or the ``egohorizon`` command starts), since only
   the middle reads and instantiates a config (issue 39 §2);
4. anything else: a hub id (offline, only when it is in the local Hugging Face cache).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from egohorizon.errors import ConfigError

# A name -> (local folder, model id) when it names a model the middle can build, else None.
ModelNames = Callable[[str], "tuple[str, str] | None"]
_model_names: ModelNames | None = None


def use_model_names(resolver: ModelNames | None) -> None:
    """Step 3's resolver (None: names are hub ids only); set by ``egohorizon.run.named_backbones``."""
    global _model_names
    _model_names = resolver


def local_backend(model: str, *, adapter: str | None = None, **options: Any):
    """A ``TransformersBackend`` for ``model`` (see the module docstring); ``adapter`` puts that adapter on
    ``model`` (or on the base it names when ``model`` is None/empty). ``options``: TransformersBackend's."""
    from egohorizon.llm.transformers_local import TransformersBackend

    path = Path(str(model or "")).expanduser()
    if adapter or (model and path.exists() and _is_adapter(path)):
        folder, base, templated = adapter_base(adapter or str(path))
        base = str(path) if adapter and model and path.is_dir() else base  # a local copy of its base
        backend = TransformersBackend(base, adapter=str(folder), chat_template=templated, **options)
        backend.model_id = str(folder)
        return backend
    if not model:
        raise ConfigError("a local model needs a name: a folder, a backbone config name or a hub id")
    if path.exists():
        return TransformersBackend(str(path), **options)
    if looks_like_a_path(str(model)):  # not a hub id: "invalid repo id" would hide the typo (issue 36, item 13)
        raise ConfigError(f"{model}: no such folder ({path.resolve()}); a local model or trained adapter "
                          "must be an existing folder")
    named = _model_names(str(model)) if _model_names is not None else None
    if named is not None:
        base_path, model_id = named
        backend = TransformersBackend(base_path, **options)
        backend.model_id = model_id
        return backend
    return TransformersBackend(str(model), **options)


def looks_like_a_path(name: str) -> bool:
    """True for a name no hub id can be ("./x", "../x", "/x", "~/x", "a/b/c", "x.adapter", "x.ckpt"):
    hub ids are "name" or "owner/name" and start with neither a dot nor a slash."""
    return (name.startswith((".", "/", "~")) or name.count("/") > 1 or "\\" in name
            or Path(name).suffix in (".adapter", ".ckpt", ".safetensors"))


def _is_adapter(path: Path) -> bool:
    return (path / "adapter_config.json").is_file() or path.suffix == ".ckpt" or (path / "checkpoints").is_dir()


def adapter_base(adapter: str) -> tuple[Path, str, bool | None]:
    """The adapter folder of ``adapter`` (folder, ``.ckpt`` or run folder), the base model it names, and
    whether its training prompts went through the chat template: its recorded ``data.use_chat_template``
    (None: the tokenizer's template when it has one, the forecast data's rule), False (raw prompts, as
    the caption and abstract adapters are trained and as LocalVLMBackend feeds them) when not recorded."""
    # checkpoints.py is the one torch-free reader of adapters and run folders
    from egohorizon.checkpoints import read_adapter_meta, resolve_adapter

    folder = resolve_adapter(adapter).resolve()
    meta = read_adapter_meta(folder)
    base = meta.get("base_path") or meta.get("model_id")
    if not base:
        raise ConfigError(f"{folder}/egohorizon_adapter.json: no base_path or model_id naming the base model")
    data = meta.get("data") or {}
    return folder, str(base), data.get("use_chat_template") if "use_chat_template" in data else False

