"""egohorizon: train and evaluate models on months of one person's egocentric recordings."""

__version__ = "0.1.0"

# ${precision_for:${trainer.accelerator}} in the real-model experiments: known wherever a config is resolved.
from egohorizon.precision import register_resolver as _register_resolver  # noqa: E402

_register_resolver()
