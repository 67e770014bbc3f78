"""``egohorizon pipeline``: recordings -> ingested -> shards -> captions -> hierarchy -> points. The
settings and the stage record (``settings``, lowest), the five stages (``stages``) and the runner that
skips finished ones (``runner``, highest)."""
