"""Which memory notes `egohorizon qa answer` (bench/qa_answer.py) puts in the prompt: the most similar to the
question or the latest before the question time (--memory recent), never one that ends at or after it."""

from types import SimpleNamespace

from egohorizon.bench.qa_answer import _first_per_task, _notes
from egohorizon.memory import MemoryIndex, text_embedder
from egohorizon.schema import Event


def _event(i, start, end, text, level=1):
    return Event(id=f"e{i}", participant="p", day="d1", session="s", level=level, start=start, end=end, text=text)


EVENTS = [_event(0, 0, 10, "wash the mug"), _event(1, 10, 20, "open the fridge"),
          _event(2, 20, 30, "wash the pan"), _event(3, 30, 40, "read a book"),
          _event(4, 40, 50, "wash the mug again")]  # ends after the question time below


def _memory():
    return MemoryIndex.from_sources(EVENTS, None, embed=text_embedder("words"), levels=[1])


def _query(item):
    return item.question


def test_recent_notes_are_the_latest_that_end_before_the_question_time():
    item = SimpleNamespace(participant="p", question="what did I wash?")
    assert _notes(_memory(), item, 45.0, 2, "recent", _query) == [(20, 30, "wash the pan"), (30, 40, "read a book")]


def test_retrieved_notes_are_the_most_similar_in_time_order_and_end_before_the_question():
    item = SimpleNamespace(participant="p", question="wash the mug")
    notes = _notes(_memory(), item, 45.0, 2, "retrieved", _query)
    assert [text for _, _, text in notes] == ["wash the mug", "wash the pan"]  # not "wash the mug again"
    assert all(end < 45.0 for _, end, _ in notes)


def test_per_task_takes_the_first_n_items_of_every_task_in_file_order():
    items = [SimpleNamespace(id=str(i), task=task) for i, task in enumerate("aabacbbc")]
    assert [i.id for i in _first_per_task(items, 2)] == ["0", "1", "2", "4", "5", "7"]


def test_items_without_a_question_time_name_notes_0(tmp_path, capsys):
    # issue 36, item 14: converted benchmark items have no meta.t_question; the guard's message names the fix
    import json

    from egohorizon.cli import main

    items = tmp_path / "qa.jsonl"
    items.write_text(json.dumps({"id": "q1", "participant": "", "task": "egoschema", "question": "What?",
                                 "options": ["a", "b", "c", "d", "e"], "answer": "A", "meta": {"split": "test"}}) + "\n")
    code = main(["qa", "answer", str(items), "--out", str(tmp_path / "out"), "--model", str(tmp_path / "none")])
    err = " ".join(capsys.readouterr().err.split())
    assert code == 2 and "meta.t_question: expected a number" in err and "pass --notes 0" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
