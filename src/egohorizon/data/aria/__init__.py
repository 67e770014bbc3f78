"""Project Aria ingestion (being split into modules, issue 24): ``ingest`` for now."""

from egohorizon.data.aria.ingest import *  # noqa: F403  (re-exported)
