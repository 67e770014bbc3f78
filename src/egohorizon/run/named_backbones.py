"""What a backbone config name means as a local model: ``smollm2_135m`` is ``conf/backbone/smollm2_135m.yaml``,
instantiated with the default paths (``$EGOHORIZON_CACHE`` or ``./data/cache``, as train.py) and prepared
(SmolLM2: converted once, then the cached folder). Reading and instantiating a config is the middle's job
(issue 39 §2), so ``egohorizon.llm.local_model`` does not do it: it asks the resolver that
``use_backbone_names`` hands it, where eval.py (this package's ``__init__``) or the ``egohorizon`` command
(``cli.main``) starts. ``tiny`` has no weights without a training corpus: serve its cache folder or a trained
run instead.
"""

from __future__ import annotations

from pathlib import Path

from egohorizon.errors import ConfigError


def use_backbone_names() -> None:
    """Let ``llm.local_model.local_backend`` resolve backbone config names (idempotent)."""
    from egohorizon.llm.local_model import use_model_names

    use_model_names(backbone_by_name)


def backbone_by_name(name: str) -> tuple[str, str] | None:
    """The prepared local folder and the model id of backbone config ``name``; None when ``name`` is not one."""
    config = backbone_config(name)
    if config is None:
        return None
    backbone = prepared_backbone(config, name)
    return backbone.base_path, backbone.model_id


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
