"""What a local model name means, for ``make_backend`` (eval.py's ``llm.model``, ``qa answer --model``)
and ``egohorizon serve``: one resolution, so a model answers the same in process and behind the server.

In order:

1. a trained adapter: a ``*.adapter`` folder, a ``.ckpt`` saved by train.py or a run folder (its best,
   else last, adapter) -- the base model its ``egohorizon_adapter.json`` names, with the adapter on it,
   prompted as it was trained (chat template or raw text, ``adapter_base``);
2. a local folder (any HF checkpoint: a tiny backbone's cache folder, a converted SmolLM2, Qwen3-8B);
3. the name of a backbone config, ``conf/backbone/<name>.yaml`` (``smollm2_135m``, ``qwen3_8b``, ...),
   instantiated with the default paths (``$EGOHORIZON_CACHE`` or ``./data/cache``, as train.py) and
   prepared (SmolLM2: converted once, then the cached folder). ``tiny`` has no weights without a training
   corpus: serve its cache folder or a trained run instead;
4. anything else: a hub id (offline, only when it is in the local Hugging Face cache).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from egohorizon.errors import ConfigError


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
    config = backbone_config(str(model))
    if config is not None:
        backbone = prepared_backbone(config, str(model))
        backend = TransformersBackend(backbone.base_path, **options)
        backend.model_id = backbone.model_id
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


def backbone_config(name: str) -> Path | None:
    """``conf/backbone/<name>.yaml`` when ``name`` is a plain name and that file exists."""
    if not name.replace("_", "").replace("-", "").isalnum():
        return None
    from egohorizon.repo_conf import conf_dir

    try:
        path = conf_dir() / "backbone" / f"{name}.yaml"
    except ConfigError:  # an installed package without the repository's conf/
        return None
    return path if path.is_file() else None


def prepared_backbone(config: Path, name: str):
    """The backbone of ``config`` with the default paths, prepared (weights on disk)."""
    from hydra.utils import instantiate
    from omegaconf import OmegaConf

    paths = OmegaConf.load(config.parent.parent / "paths" / "default.yaml")
    cfg = OmegaConf.create({"paths": paths, "seed": 0, "backbone": OmegaConf.load(config)})
    backbone = instantiate(cfg.backbone, _convert_="all")
    try:
        backbone.prepare()
    except ConfigError as error:
        if "corpus" in str(error):
            raise ConfigError(f"backbone {name!r} ({config}) is built from a training corpus, so it has no "
                              "weights by name: pass its cache folder (data/cache/tiny_backbones/<hash>, "
                              "a run's config.yaml names it) or a trained run / *.adapter folder") from None
        raise
    return backbone
