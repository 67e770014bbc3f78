"""Backbones: transformers causal LMs / VLMs by hub id or path, and the offline ``tiny`` one.

No Lightning here. Heavy imports (torch, transformers, tokenizers) happen inside the methods.
"""

from egohorizon.backbones.base import Backbone, default_cache_dir, needs_mm_token_type_ids
from egohorizon.backbones.hf import HFBackbone, load_pretrained_model
from egohorizon.backbones.tiny import TinyBackbone

__all__ = [
    "Backbone",
    "HFBackbone",
    "TinyBackbone",
    "default_cache_dir",
    "load_pretrained_model",
    "needs_mm_token_type_ids",
]
