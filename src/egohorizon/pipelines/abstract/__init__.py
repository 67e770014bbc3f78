"""``egohorizon abstract``: one day L1 -> L5 (``day``), the idempotent job over many days (``job``) and
its append-only results (``results``)."""
