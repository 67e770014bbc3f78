"""``egohorizon caption``: the offline captioning job (``job``), its two model runners (``runners``), the
choice of model and prompt from the command's options (``setup``), the append-only results (``results``),
the L1 events regenerated from them (``events``), and the audit page (``audit``, ``audit_page``)."""
