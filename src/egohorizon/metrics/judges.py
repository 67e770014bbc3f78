"""Judges for EgoHome segments (SPEC §4): is a predicted label a permissible match for a gold one?

Every judge answers ``judge_pairs([(gold, pred), ...]) -> [bool, ...]`` and reports ``describe()``
(name, model, prompt version) and ``stats``. Kinds:

- ``ExactJudge``: equal after normalisation (case, spaces, surrounding punctuation).
- ``VerbJudge``: equal Ego4D verb class ("pick up the cup" ~ "grab cup": both ``take``).
- ``EmbeddingJudge``: cosine of sentence embeddings >= a threshold (offline stand-in for the LLM).
- ``LLMJudge``: the EgoHome judge prompt (``prompts/judge_subtask.txt``, ``judge_hand_caption.txt``),
  verbatim and versioned, through any ``egohorizon.llm`` backend; every verdict is cached on disk
  in a JSON Lines file keyed by (judge, model, prompt name and version, gold, pred), so a re-run
  asks the model nothing it was asked before. The cache file is also a valid ``verdicts:`` table.
- ``VerdictsJudge``: a fixed table ``{"gold", "pred", "match"}`` (human review or a replayed cache);
  a pair missing from the table is an error that names it.

Generic labels ("doing chores", "using the hands", ...) never match a specific label (SPEC §4): all
judges except the fixed table apply this rule before anything else, and the LLM judge records the
rule's verdicts in its cache too, so the cache replays completely.
"""

from __future__ import annotations

import logging
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Sequence

from egohorizon.backbones.embedders import Embedder, normalise_text
from egohorizon.errors import DataError
from egohorizon.metrics.ego4d_verbs import EGO4D_VERB_CLASSES

log = logging.getLogger(__name__)

# Labels that name no specific physical action: from the EgoHome judge prompt, plus close variants.
GENERIC_LABELS = frozenset(
    {
        "",
        "doing chores",
        "doing the chores",
        "chores",
        "household chores",
        "doing household chores",
        "cleaning up",
        "cleaning",
        "working in the kitchen",
        "doing the task",
        "doing a task",
        "the task",
        "using the hands",
        "using hands",
        "using both hands",
        "using the hand",
        "moving the hands",
        "doing something",
        "doing stuff",
        "working",
        "activity",
        "doing an activity",
        "nothing",
        "none",
        "n/a",
        "na",
        "unknown",
        "placeholder",
        "idle",
        "-",
        "...",
    }
)

Pair = tuple[str, str]


def is_generic(label: str) -> bool:
    return normalise_text(label) in GENERIC_LABELS


def generic_rule(gold: str, pred: str) -> bool | None:
    """False when exactly one side is generic (or either is empty), else None (no verdict)."""
    generic_gold, generic_pred = is_generic(gold), is_generic(pred)
    if not gold.strip() or not pred.strip():
        return False
    if generic_gold != generic_pred:
        return False
    return None


class Judge(ABC):
    name = "judge"
    model = ""
    prompt_version = ""
    applies_generic_rule = True

    def __init__(self) -> None:
        self.stats = {"pairs": 0, "generic_rule": 0}

    def judge_pairs(self, pairs: Sequence[Pair]) -> list[bool]:
        """Verdicts for (gold, pred) label pairs; each distinct pair is decided once."""
        unique = list(dict.fromkeys(pairs))
        self.stats["pairs"] += len(unique)
        verdicts: dict[Pair, bool] = {}
        rest = []
        for pair in unique:
            ruled = generic_rule(*pair) if self.applies_generic_rule else None
            if ruled is None:
                rest.append(pair)
            else:
                verdicts[pair] = ruled
                self.stats["generic_rule"] += 1
        self._record_ruled({p: v for p, v in verdicts.items()})
        verdicts.update(zip(rest, self._decide(rest)))
        return [verdicts[pair] for pair in pairs]

    def __call__(self, gold: str, pred: str) -> bool:
        return self.judge_pairs([(gold, pred)])[0]

    @abstractmethod
    def _decide(self, pairs: list[Pair]) -> list[bool]:
        """Verdicts for pairs that the generic-label rule did not settle."""

    def _record_ruled(self, verdicts: dict[Pair, bool]) -> None:
        """Hook for judges that keep a record of every verdict (the LLM judge's cache)."""

    def describe(self) -> dict:
        return {"judge": self.name, "model": self.model, "prompt_version": self.prompt_version}


class ExactJudge(Judge):
    name = "exact"

    def _decide(self, pairs):
        return [normalise_text(g) == normalise_text(p) for g, p in pairs]


def _verb_lookup() -> dict[str, str]:
    """Every head verb and synonym of the Ego4D classes (spaces for underscores) -> head verb."""
    lookup: dict[str, str] = {}
    for name in EGO4D_VERB_CLASSES:
        head, _, synonyms = name.partition("_(")
        words = [head] + [s.strip("_) ") for s in synonyms.rstrip(")").split(",")] if synonyms else [head]
        for word in words:
            if word and not word.startswith("with"):
                lookup.setdefault(word.replace("_", " "), head)
    return lookup


_VERBS = _verb_lookup()
_CLASS_HEADS = {name: name.partition("_(")[0] for name in EGO4D_VERB_CLASSES}


def _verb_forms(word: str) -> list[str]:
    """The word and the base forms it may inflect from (taking -> take, cuts -> cut, cutting -> cut)."""
    forms = [word]
    if word.endswith("ing") and len(word) > 4:
        stem = word[:-3]
        forms += [stem, stem + "e"] + ([stem[:-1]] if len(stem) > 2 and stem[-1] == stem[-2] else [])
    if word.endswith("ies") and len(word) > 4:
        forms.append(word[:-3] + "y")
    if word.endswith("es") and len(word) > 3:
        forms.append(word[:-2])
    if word.endswith("s") and len(word) > 2:
        forms.append(word[:-1])
    if word.endswith("ed") and len(word) > 3:
        forms += [word[:-2], word[:-1]] + ([word[:-3]] if word[-3] == word[-4] else [])
    return forms


def ego4d_verb(label: str) -> str | None:
    """The Ego4D verb class (its head verb) of a hand-action label, or None if it names none.

    A label may be a class name (``take_(pick,_grab,_get)``), a verb, or a phrase ("picks up the cup"):
    the first word (or two-word verb such as "turn off") that is a verb or synonym of a class decides.
    """
    text = label.strip().casefold()
    if text in _CLASS_HEADS:
        return _CLASS_HEADS[text]
    words = re.findall(r"[a-z][a-z\-/]*", re.sub(r"\(.*?\)", " ", text).replace("_", " "))
    for i, word in enumerate(words):
        if i + 1 < len(words):
            for form in _verb_forms(word):
                if f"{form} {words[i + 1]}" in _VERBS:
                    return _VERBS[f"{form} {words[i + 1]}"]
        for form in _verb_forms(word):
            if form in _VERBS:
                return _VERBS[form]
    return None


class VerbJudge(Judge):
    """Same Ego4D verb class; labels with no Ego4D verb match only an identical label."""

    name = "verb"

    def _decide(self, pairs):
        out = []
        for gold, pred in pairs:
            verbs = ego4d_verb(gold), ego4d_verb(pred)
            if verbs[0] is None or verbs[1] is None:
                out.append(
                    verbs[0] is None and verbs[1] is None and normalise_text(gold) == normalise_text(pred)
                )
            else:
                out.append(verbs[0] == verbs[1])
        return out


class EmbeddingJudge(Judge):
    """cos(e(gold), e(pred)) >= threshold. 0.75 with MiniLM accepts "sweeping the top stair" for
    "sweeping the stairs" (0.91) and rejects "carrying the broom" (0.54); it is a crude offline
    stand-in for the LLM judge, not a replacement."""

    name = "embedding"

    def __init__(self, embedder: Embedder, threshold: float = 0.75) -> None:
        super().__init__()
        self.embedder = embedder
        self.threshold = threshold
        self.model = embedder.name

    def _decide(self, pairs):
        if not pairs:
            return []
        texts = list(dict.fromkeys(t for pair in pairs for t in pair))
        vectors = dict(zip(texts, self.embedder.embed(texts)))
        return [float(vectors[g] @ vectors[p]) >= self.threshold for g, p in pairs]

    def describe(self):
        return {**super().describe(), "threshold": self.threshold}


class VerdictsJudge(Judge):
    """Fixed verdicts from a JSON Lines file of ``{"gold", "pred", "match"}``."""

    name = "verdicts"
    applies_generic_rule = False

    def __init__(self, path: str | os.PathLike) -> None:
        super().__init__()
        self.path = str(path)
        self.model = self.path
        self.table = read_verdicts(self.path)

    def _decide(self, pairs):
        missing = [pair for pair in pairs if pair not in self.table]
        if missing:
            shown = "; ".join(f"gold {g!r} / pred {p!r}" for g, p in missing[:5])
            more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
            raise DataError(f"{self.path}: no verdict for {len(missing)} overlapping pair(s): {shown}{more}")
        return [self.table[pair] for pair in pairs]


def read_verdicts(path: str) -> dict[Pair, bool]:
    """Reads a verdicts table; every defect is reported with file, line and field."""
    from egohorizon.schema import iter_json_lines

    table: dict[Pair, bool] = {}
    problems = []
    try:
        lines = list(iter_json_lines(path))
    except (OSError, UnicodeDecodeError) as error:
        raise DataError(f"{path}: cannot read verdicts ({error})") from error
    for line, obj, json_problem in lines:
        if json_problem or not isinstance(obj, dict):
            problems.append(f"{path}:{line}: {json_problem or 'expected a JSON object'}")
            continue
        for field, kind in (("gold", str), ("pred", str), ("match", bool)):
            if not isinstance(obj.get(field), kind):
                problems.append(
                    f"{path}:{line}: field '{field}': expected {kind.__name__}, got {obj.get(field)!r}"
                )
        if all(isinstance(obj.get(f), k) for f, k in (("gold", str), ("pred", str), ("match", bool))):
            pair = (obj["gold"], obj["pred"])
            if pair in table and table[pair] != obj["match"]:
                problems.append(
                    f"{path}:{line}: contradicts an earlier verdict for gold {pair[0]!r} / pred {pair[1]!r}"
                )
            table[pair] = obj["match"]
    if problems:
        raise DataError(
            "\n".join(problems[:20]) + (f"\n... and {len(problems) - 20} more" if len(problems) > 20 else "")
        )
    return table
