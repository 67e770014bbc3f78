"""The demo world's vocabulary: every act, declared by the modules of this package (``common``, ``home``,
``work``, ``leisure``, ``outside``, ``rare``, ``days``) with the helpers of ``grammar``, registered by
importing them here, and checked."""

from egohorizon.data.demo.grammar import REGISTRY, check_registry
from egohorizon.data.demo.vocab import (  # noqa: F401  (importing a vocabulary module registers its acts)
    common,
    days,
    home,
    leisure,
    outside,
    rare,
    work,
)

_problems = check_registry()
if _problems:  # a mistake in the vocabulary is a bug in this package: fail at import, loudly
    raise ValueError("demo world vocabulary is inconsistent:\n" + "\n".join(_problems))

ACTS = REGISTRY
