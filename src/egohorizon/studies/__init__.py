"""Studies over finished runs: tables that compare several trained runs on the same held-out points
(``grounding``: text-only, +frames, +memory, +both). They read run folders, never a DictConfig."""
