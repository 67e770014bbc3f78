"""egohorizon: train and evaluate models on months of one person's egocentric recordings."""

__version__ = "0.1.0"
