"""LightningDataModules, one per task; they import egohorizon, never the other way round."""
