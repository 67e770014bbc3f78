"""All acts of the demo world, registered by importing the vocabulary modules, and checked."""

from egohorizon.data.demo import (  # noqa: F401  (importing a vocabulary module registers its acts)
    vocab_common,
    vocab_days,
    vocab_home,
    vocab_leisure,
    vocab_outside,
    vocab_rare,
    vocab_work,
)
from egohorizon.data.demo.grammar import REGISTRY, check_registry

_problems = check_registry()
if _problems:  # a mistake in the vocabulary is a bug in this package: fail at import, loudly
    raise ValueError("demo world vocabulary is inconsistent:\n" + "\n".join(_problems))

ACTS = REGISTRY
