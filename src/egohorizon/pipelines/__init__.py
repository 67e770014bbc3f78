"""Offline jobs, grouped by concern: ``caption/``, ``abstract/``, ``hands/``, ``chain/`` (the whole
recordings-to-points chain). Shared by them: ``append_log`` (a locked append-only results file) and
``image_folder`` (one rule for unreadable images)."""
