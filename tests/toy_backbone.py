"""Hydra overrides that shrink the tiny backbone further, for tests that run train.py end to end."""

TOY_BACKBONE = [
    "backbone.hidden_size=32",
    "backbone.intermediate_size=64",
    "backbone.num_layers=1",
    "backbone.num_heads=2",
    "backbone.num_kv_heads=1",
    "backbone.vocab_size=300",
]
