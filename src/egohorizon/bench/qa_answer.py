"""``egohorizon qa answer ITEMS --model M | --base-url URL --out OUT``: the in-context QA baseline that
answers from the memory's text alone, no frames (docs/qa.md). Like ``bench run`` and ``bench forecast`` it
asks any model zero-shot (a local transformers model or an OpenAI-compatible server) and scores the replies:

    ITEMS (QAItem JSONL: ``qa generate``, ``data convert``) -> the items of --split (--per-task, --limit)
      -> per item, --notes event descriptions of the text memory (levels --levels) that end before its
         question time: the most similar to the question and options, or the latest (--memory recent);
         --notes 0: the question alone (items without a question time, e.g. HD-EPIC's)
      -> the qa prompt (prompts/qa.py) without frames -> the model, greedy
      -> tasks.qa: each reply read without guessing, scored with chance, the majority position and the
         answer prior of the training items -> OUT/predictions.jsonl, OUT/report.json

``answer_items`` returns what the command prints.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class QAAnswerSettings:
    split: str = "test"  # items whose meta.split is this; "all": every item
    notes: int = 20  # memory notes per question; 0: the question alone
    memory: str = "retrieved"  # or "recent"
    levels: str = "1,2,3,4,5"  # event levels in the memory, comma-separated
    embedder: str = "words"  # the memory's text embedder
    max_new_tokens: int = 8
    limit: int | None = None  # the first N items of the split
    per_task: int | None = None  # the first N items of each task type, before limit
    events: str | None = None  # event JSONL the memory indexes (default: the demo world's)
    world: str | None = None  # demo world folder for the events (default world)


def answer_items(items_file: str, out: str | Path, model: str, *, base_url: str | None = None,
                 cache_dir: str | None = None, backend_options: dict[str, Any] | None = None,
                 settings: QAAnswerSettings | None = None) -> dict[str, Any]:
    """Answers and scores the items of ``settings.split``; writes OUT/predictions.jsonl and OUT/report.json
    and returns the result the command prints (out, headline, metrics). ``backend_options``: make_backend's."""
    from egohorizon.errors import ConfigError
    from egohorizon.llm import make_backend
    from egohorizon.metrics.qa import answer_prior
    from egohorizon.prompts import load_prompt
    from egohorizon.prompts.qa import QA_PROMPT_NAME, memory_query, render_qa_prompt
    from egohorizon.schema import QAItem, load_jsonl, write_jsonl
    from egohorizon.tasks import get_task

    settings = settings or QAAnswerSettings()
    every = load_jsonl(items_file, QAItem)
    items = [i for i in every if settings.split == "all" or i.meta.get("split") == settings.split]
    if settings.per_task:
        items = _first_per_task(items, settings.per_task)
    items = items[: settings.limit]
    if not items:
        raise ConfigError(f"{items_file}: no items of split {settings.split!r} (meta.split)")
    memory = None
    if settings.notes > 0:
        _check_question_times(items, items_file)  # the memory is cut at each question time: every item needs one
        memory = _text_memory(settings)
    prompts = []
    for item in items:
        t_q = item.meta.get("t_question")
        notes = []
        if memory is not None:
            notes = _notes(memory, item, float(t_q), settings.notes, settings.memory, memory_query)
        prompts.append(render_qa_prompt(item.question, item.options, t_q, (), notes, image_mark=""))
    backend = make_backend(model, base_url=base_url, cache_dir=cache_dir, **(backend_options or {}))
    texts = backend.generate_many(prompts, max_new_tokens=settings.max_new_tokens, temperature=0.0, seed=0)
    task = get_task("qa")
    raw = {item.id: out for item, out in zip(items, texts)}
    predictions = {item.id: task.parse(raw[item.id], item) for item in items}
    train_items = [i for i in every if i.meta.get("split") == "train"]
    train = Counter(i.answer for i in train_items)
    majority = min(train, key=lambda a: (-train[a], a)) if train else None
    evaluation = task.evaluate(items, predictions, settings.split, majority_letter=majority,
                               answer_prior=answer_prior(train_items))
    prompt = load_prompt(QA_PROMPT_NAME)
    out = Path(out)
    made = backend.generation_record()  # a local model's dtype and stop rule (the cache is keyed by them too)
    rows = task.prediction_records(items, raw, predictions, backend.model_id, prompt.name, prompt.version, 0)
    write_jsonl(out / "predictions.jsonl", [{**row, **made} for row in rows])
    report = {**evaluation.report, "baselines": evaluation.baselines, "model": backend.model_id, **made,
              "notes": settings.notes, "memory": settings.memory if settings.notes else None,
              "per_task": settings.per_task, "levels": settings.levels, "split": settings.split}
    (out / "report.json").write_text(json.dumps(report, indent=1, default=str))
    return {"out": str(out), "headline": task.headline(evaluation), **evaluation.metrics}


def _first_per_task(items: list, n: int) -> list:
    """The first ``n`` items of every task type, in file order."""
    seen: dict[str, int] = {}
    kept = []
    for item in items:
        seen[item.task] = seen.get(item.task, 0) + 1
        if seen[item.task] <= n:
            kept.append(item)
    return kept


def _check_question_times(items, items_file: str) -> None:
    """The leakage guard on the items; where an item has no question time (benchmark items from `data
    convert` carry none), the error names the fix its help gives: --notes 0 (issue 36, item 14)."""
    from egohorizon.data.points.leakage import check_qa_items
    from egohorizon.errors import DataError, LeakageError

    try:
        check_qa_items(items)
    except LeakageError as error:
        if not any("meta.t_question" in problem for problem in error.problems):
            raise
        hint = (f"{items_file}: memory notes are cut at each item's question time (meta.t_question), which "
                "these items do not have (benchmark items converted with `data convert` carry none); pass "
                "--notes 0 to answer from the question alone")
        raise DataError(f"{error}\n{hint}") from None


def _notes(memory, item, t_question: float, n: int, which: str, memory_query) -> list[tuple[float, float, str]]:
    """(start, end, text) of ``n`` event notes that end before the question time, in time order: the
    most similar to the question and options, or the latest ones (``which`` = "recent")."""
    if which == "recent":
        entries = [e for e in memory.before(item.participant, t_question) if e.kind == "event"][-n:]
    else:
        entries = [h.entry for h in memory.search(item.participant, t_question, memory_query(item), k=n,
                                                  kinds=["event"])]
    return sorted((e.start, e.end, e.text) for e in entries)


def _text_memory(settings: QAAnswerSettings):
    from egohorizon.memory import MemoryIndex, text_embedder

    if settings.events:
        from egohorizon.schema import Event, load_jsonl

        events = load_jsonl(settings.events, Event)
    else:
        from egohorizon.data.demo import load_demo_world

        events = load_demo_world(settings.world).events
    levels = [int(x) for x in settings.levels.split(",")]
    return MemoryIndex.from_sources(events, None, embed=text_embedder(settings.embedder), levels=levels)
