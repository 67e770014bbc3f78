"""The public annotation sets the experiments read, fetched by the project itself into a data home
(``egohorizon data fetch NAME``; docs/data-sources.md): sets (the manifest), homes (where they live and
which one wins), sources (git at the pinned commit, or a local copy), install (the checked fetch)."""

from egohorizon.data.fetch.homes import find_home, homes, write_home
from egohorizon.data.fetch.install import fetch
from egohorizon.data.fetch.sets import GROUPS, NAMES, SETS

__all__ = ["GROUPS", "NAMES", "SETS", "fetch", "find_home", "homes", "write_home"]
