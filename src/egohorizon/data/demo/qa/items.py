"""The demo-world QA benchmark (issue 13): multiple-choice items of the 14 EgoMonth task types whose
answers the simulation knows for certain, split by held-out days.

For every participant and recorded day (after the first ``min_history_days``), and every task type,
``per_day`` question times are drawn: the end of one of that day's sessions. The task's maker
(``tasks``) sees only the participant's past up to that time (``history.History.until``). An
item's split is its question day's split (``egohorizon.data.splits``; the evidence may reach back into
earlier days of any split, as forecasting contexts do). Answer positions are balanced per task type:
positions are dealt per task type and split in shuffled blocks of A-D, so chance and the majority-position
baseline stay at 1/4 in every split.

Answer texts are balanced too, so that the options' wording gives nothing away (the answer-prior
baseline, ``metrics.qa.answer_prior``, falls to chance): each question time's maker is asked
``draws`` times and the draft whose answer has been right least often so far (for that task and person)
is kept, which spreads the right answers over the answer space; then the distractors of every
``pooled`` draft are redrawn from the right answers of the same task and person, each in proportion to
how often it is right (never the answer nor the draft's ``excluded`` values, which the maker knows to be
possibly right), so an option text is right about once in every four times it is shown.

Each item is a ``schema.QAItem`` with ``level`` (from the task), ``evidence`` (session, start, end of
each event that holds the answer) and ``meta``: ``t_question`` (Unix s), ``day``, ``split``, and the
maker's ground-truth notes. ``egohorizon.data.points.leakage.check_qa_items`` checks every item before it is
written.
"""

from __future__ import annotations

import random
import string
from collections import Counter, defaultdict
from typing import Any

from egohorizon.data.demo.qa.history import History
from egohorizon.data.demo.qa.tasks import MAKERS, Draft
from egohorizon.data.splits import DaySplit
from egohorizon.progress import QUIET, StepProgress
from egohorizon.schema import EGOMONTH_TASK_LEVELS, QAItem


def _task_slug(task: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in task.lower()).strip("_")


def _options(draft: Draft, position: int, rng: random.Random) -> list[str]:
    wrong = list(draft.distractors[:3])
    if len(wrong) < 3 or len(set(wrong) | {draft.answer}) < 4:
        raise ValueError(f"a draft needs 3 distinct distractors besides its answer: {draft.question!r}")
    rng.shuffle(wrong)
    return wrong[:position] + [draft.answer] + wrong[position:]


def _evidence(draft: Draft) -> list[dict[str, Any]]:
    return [{"video": e.session, "start": e.start, "end": e.end} for e in draft.evidence]


class _Positions:
    """Answer positions per task dealt from shuffled blocks of 0..n-1 (balanced to within one block)."""

    def __init__(self, rng: random.Random, n: int = 4):
        self.rng, self.n, self.blocks = rng, n, defaultdict(list)

    def next(self, task: tuple[str, str]) -> int:
        block = self.blocks[task]
        if not block:
            block.extend(self.rng.sample(range(self.n), self.n))
        return block.pop()


def _weighted_sample(rng: random.Random, weights: dict[str, int], n: int) -> list[str]:
    """``n`` distinct keys drawn without replacement, each in proportion to its weight."""
    pool, out = dict(weights), []
    while pool and len(out) < n:
        keys = sorted(pool)
        pick = rng.choices(keys, weights=[pool[k] for k in keys])[0]
        out.append(pick)
        del pool[pick]
    return out


def _rebalance_distractors(drafts: list[tuple[str, str, float, Draft]], rng: random.Random) -> None:
    """Redraw the distractors of every pooled draft from its task's and person's right answers, each in
    proportion to how often it is right, so that an option text is right about 1 time in 4 it is shown;
    the maker's own distractors fill up when the pool has too few. Only answers of question times up to
    this one's are drawn: an option never names what the person has not met yet."""
    answers: dict[tuple[str, str], Counter] = defaultdict(Counter)
    for task, participant, _, draft in sorted(drafts, key=lambda d: d[2]):
        past_answers = answers[task, participant]
        past_answers[draft.answer] += 1
        if not draft.pooled:
            continue
        allowed = {a: n for a, n in past_answers.items() if a != draft.answer and a not in draft.excluded}
        chosen = _weighted_sample(rng, allowed, 3)
        own = [d for d in draft.distractors if d not in chosen and d != draft.answer]
        draft.distractors = (chosen + rng.sample(own, len(own)))[:3]


def generate_items(world, split: DaySplit, seed: int = 0, per_day: int = 1, min_history_days: int = 3,
                   tasks: list[str] | None = None, draws: int = 4, train_per_day: int = 0,
                   progress: StepProgress = QUIET) -> tuple[list[QAItem], dict[str, Any]]:
    """Items of every task type for every participant's days (module doc), and a report: items per task
    and split, answer positions, and how many question times gave no item, per task.

    ``train_per_day`` > 0 adds that many more question times per task type on every *training* day, drawn
    by a second pass with its own random stream (``extra_training_items``): the items of the first pass,
    val and test included, are the same bytes with or without them. ``progress`` shows each pass's
    question times done (a bar with ETA on a terminal)."""
    items, no_item = _generate(world, split, seed, per_day, min_history_days, tasks, draws, progress=progress)
    if train_per_day > 0:
        items += extra_training_items(world, split, items, seed, train_per_day, min_history_days, tasks, draws,
                                      progress=progress)
    return items, report(items, no_item)


def extra_training_items(world, split: DaySplit, base: list[QAItem], seed: int, per_day: int,
                         min_history_days: int = 3, tasks: list[str] | None = None, draws: int = 4,
                         progress: StepProgress = QUIET) -> list[QAItem]:
    """More training items (issue 13: ~600 items cannot teach a random-weight model to read its inputs):
    ``per_day`` question times per task type on each training day, from a random stream of their own
    (seed + 7919), ids tagged ``x``; a question (person, task, wording, answer) already among ``base`` is
    dropped. Only training days are asked about, so val and test are untouched."""
    train_only = DaySplit({p: {d: s for d, s in days.items() if s == "train"} for p, days in split.days.items()},
                          dict(split.settings))
    extra, _ = _generate(world, train_only, seed + 7919, per_day, min_history_days, tasks, draws, id_tag="x",
                         progress=progress, label="more training questions")
    asked = {(i.participant, i.task, i.question, i.options[ord(i.answer) - ord("A")]) for i in base}
    return [i for i in extra if (i.participant, i.task, i.question, i.options[ord(i.answer) - ord("A")]) not in asked]


def _generate(world, split: DaySplit, seed: int, per_day: int, min_history_days: int, tasks: list[str] | None,
              draws: int, id_tag: str = "", progress: StepProgress = QUIET,
              label: str = "drafting questions") -> tuple[list[QAItem], Counter]:
    tasks = tasks or list(MAKERS)
    unknown = sorted(set(tasks) - set(MAKERS))
    if unknown:
        raise ValueError(f"unknown QA task types {unknown}; known: {sorted(MAKERS)}")
    rng = random.Random(seed)
    positions = _Positions(random.Random(seed + 1))
    drafted: list[tuple[str, str, Draft, dict[str, Any]]] = []  # task, participant, draft, item fields
    right_so_far: dict[tuple[str, str], Counter] = defaultdict(Counter)
    no_item: Counter = Counter()
    seen_questions: set[tuple[str, str, str]] = set()
    participants = sorted({r.participant for r in world.recordings})
    histories = [History(participant, world.events, world.recordings) for participant in participants]
    # The question times to come (days with a split, times task types and per_day): the bar's total.
    total = sum(len(tasks) * per_day for h in histories for day in h.days()[min_history_days:]
                if split.get(h.participant, day) is not None)
    with progress.step(label, total, unit="questions") as advance:
        for participant, history in zip(participants, histories):
            for day in history.days()[min_history_days:]:
                sessions = history.sessions_of(day)
                day_split = split.get(participant, day)
                if day_split is None:
                    continue
                for task in tasks:
                    for n in range(per_day):
                        session = rng.choice(sessions)
                        t_q = float(session.end)
                        past = history.until(t_q)
                        right = right_so_far[task, participant]
                        drafts = (MAKERS[task](past, rng, world) for _ in range(draws))
                        candidates = [d for d in drafts if d is not None
                                      and (participant, task, d.question, d.answer) not in seen_questions]
                        if not candidates:
                            no_item[task] += 1
                            advance(1)
                            continue
                        # The draft whose answer has been right least often so far (the first among ties).
                        draft = min(candidates, key=lambda d: right[d.answer])
                        right[draft.answer] += 1
                        seen_questions.add((participant, task, draft.question, draft.answer))
                        drafted.append((task, participant, draft, {
                            "id": f"demo-{participant}-{day}-{_task_slug(task)}-{id_tag}{n}",
                            "meta": {"t_question": t_q, "day": day, "split": day_split}}))
                        advance(1)
    _rebalance_distractors([(t, p, f["meta"]["t_question"], d) for t, p, d, f in drafted], rng)
    items: list[QAItem] = []
    for task, participant, draft, fields in drafted:
        position = positions.next((task, fields["meta"]["split"]))  # balanced within each split
        items.append(QAItem(
            id=fields["id"], participant=participant, task=task, question=draft.question,
            options=_options(draft, position, rng), answer=string.ascii_uppercase[position],
            level=EGOMONTH_TASK_LEVELS[task], evidence=_evidence(draft), source="demo",
            meta={**draft.meta, **fields["meta"]}))
    return items, no_item


def report(items: list[QAItem], no_item: Counter | None = None) -> dict[str, Any]:
    """Items per task type and split, answer positions (overall and per split), and question times
    that gave no item per task type."""
    per_task: dict[str, dict[str, int]] = defaultdict(lambda: {"train": 0, "val": 0, "test": 0})
    positions: dict[str, Counter] = defaultdict(Counter)
    for item in items:
        per_task[item.task][item.meta["split"]] += 1
        positions["all"][item.answer] += 1
        positions[item.meta["split"]][item.answer] += 1
    return {
        "items": len(items),
        "per_task": {t: dict(per_task[t]) for t in MAKERS if t in per_task},
        "missing_tasks": [t for t in MAKERS if t not in per_task],
        "answer_positions": {s: dict(sorted(c.items())) for s, c in positions.items()},
        "no_item": dict(no_item or {}),
    }
