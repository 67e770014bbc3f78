"""QA answer extraction (never guesses) and the accuracy report with hand-computed figures."""

import json

import pytest

from egohorizon.metrics.qa import extract_answer, score_qa
from egohorizon.schema import EGOMONTH_TASK_LEVELS, QAItem

OPTIONS = ["In the kitchen", "On the balcony", "In the car", "At the office"]


@pytest.mark.parametrize(
    "text, expected",
    [
        ("B", "B"),
        (" c ", "C"),
        ("b", "B"),
        ("(B)", "B"),
        ("[D]", "D"),
        ("A.", "A"),
        ("C)", "C"),
        ("Answer: C", "C"),
        ("answer:C", "C"),
        ("Final answer: (D)", "D"),
        ("The answer is: B", "B"),
        ("After reviewing the week, the answer is D.", "D"),
        ("I think the correct answer is B because the car was parked.", "B"),
        ("The answer is B. Answer: B", "B"),  # the same letter twice is fine
        ("in the car", "C"),
        ("On the balcony.", "B"),  # exact option text
        ("(B) On the balcony", "B"),
        ("A. In the kitchen", "A"),  # letter with its own option text
    ],
)
def test_accepted_answers(text, expected):
    assert extract_answer(text, OPTIONS) == expected


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "   ",
        "E",  # beyond four options
        "The answer is E",
        "I am not sure, maybe the kitchen or the car.",
        "The answer is B. Actually, the answer is C.",  # two different letters
        "the answer is a cup on the table",  # the article, not option A
        "B or C",
        "(B) In the car",  # letter and option text disagree
        "kitchen",  # part of an option is not the option
        "Based on the video, I believe it is option A",  # no accepted form
    ],
)
def test_invalid_answers_are_never_guessed(text):
    assert extract_answer(text, OPTIONS) is None


# Markdown emphasis and "option X" forms (issue 9): common in real model output and unambiguous.
@pytest.mark.parametrize(
    "text, expected",
    [
        ("**C**", "C"),
        ("*C*", "C"),
        ("__B__", "B"),
        ("**(C)**", "C"),
        ("**C.**", "C"),
        ("The answer is: **B**", "B"),
        ("**Answer:** B", "B"),
        ("**Final answer: D**", "D"),
        ("The answer is **Option C**.", "C"),
        ("Option A", "A"),
        ("option (b)", "B"),
        ("**Option A**", "A"),
        ("Option A.", "A"),
        ("Option B: On the balcony", "B"),
        ("**B. On the balcony**", "B"),
        ("The correct option is B", "B"),
        ("The best option is (C).", "C"),
        ("I think the correct option is **D** because the desk was there.", "D"),
        ("Correct option: B", "B"),
        ("The correct option is B. Answer: B", "B"),  # the same letter from both kinds of statement
        ("**On the balcony**", "B"),  # exact option text, emphasised
    ],
)
def test_markdown_and_option_forms_are_accepted(text, expected):
    assert extract_answer(text, OPTIONS) == expected


@pytest.mark.parametrize(
    "text",
    [
        "**B** or **C**",
        "Option A or option B",
        "**Option A**, or maybe **Option C**",
        "Options A and C",
        "The correct option is B. Final answer: C",  # two different letters
        "The correct option is B, but the answer is C",
        "Option B: In the car",  # letter and option text disagree
        "Option E",  # beyond four options
        "the best option is a bike ride",  # the article, not option A
        "Option A is wrong, it was on the balcony",  # "option X" inside prose is not a statement
        "Option A is correct",  # ... not even this one: "Option A is incorrect" differs by two letters
        "**",
    ],
)
def test_markdown_and_option_forms_that_stay_invalid(text):
    assert extract_answer(text, OPTIONS) is None


def test_five_options_and_duplicate_option_texts():
    five = ["one", "two", "three", "four", "five"]
    assert extract_answer("E", five) == "E"
    assert extract_answer("the answer is (E)", five) == "E"
    assert extract_answer("five", five) == "E"
    assert extract_answer("same", ["same", "same", "x"]) is None  # ambiguous option text


def item(pid, task, answer, options=4, level=None):
    return QAItem(
        id=pid,
        participant="P1",
        task=task,
        question="?",
        options=[f"o{i}" for i in range(options)],
        answer=answer,
        level=level,
    )


def test_score_qa_hand_computed():
    items = [
        item("1", "Habit Inference", "A"),
        item("2", "Habit Inference", "B"),  # L1: 1/2
        item("3", "Detail Retrieval", "C"),
        item("4", "Detail Retrieval", "D"),
        item("5", "Detail Retrieval", "A"),  # L2: 2/3
        item("6", "event_time", "B"),  # L2: 0/1 (invalid)
        item("7", "Route Reasoning", "A", options=5),  # L3: 1/1
    ]
    answers = {"1": "A", "2": "C", "3": "C", "4": "D", "5": "B", "6": None, "7": "A"}
    report = score_qa(items, answers)
    assert report["n"] == 7 and report["invalid"] == 1
    assert report["Acc"] == pytest.approx(4 / 7)
    assert report["Avg"] == pytest.approx((1 / 2 + 2 / 3 + 0 + 1) / 4)
    assert report["chance"] == pytest.approx((6 * 0.25 + 0.2) / 7)
    assert report["per_task"]["Detail Retrieval"] == {
        "acc": pytest.approx(2 / 3),
        "n": 3,
        "correct": 2,
        "invalid": 0,
        "level": 2,
    }
    assert report["per_task"]["event_time"]["level"] == 2  # task names match loosely
    assert report["per_level"]["1"] == {"avg": 0.5, "acc": 0.5, "n": 2, "n_tasks": 1}
    assert report["per_level"]["2"]["avg"] == pytest.approx((2 / 3 + 0) / 2)
    assert report["per_level"]["2"]["acc"] == pytest.approx(2 / 4)
    assert report["per_level"]["3"] == {"avg": 1.0, "acc": 1.0, "n": 1, "n_tasks": 1}


def test_missing_answers_are_invalid_and_other_benchmarks_bring_their_levels():
    items = [
        item("a", "fine_grained_how_recognition", "A", options=5),
        item("b", "recipe_step_recognition", "B", options=5),
        item("c", "unknown task", "A"),
    ]
    report = score_qa(
        items, {"a": "A"}, task_levels={"fine_grained_how_recognition": 2, "recipe_step_recognition": 3}
    )
    assert report["invalid"] == 2 and report["Acc"] == pytest.approx(1 / 3)
    assert report["per_task"]["unknown task"]["level"] is None
    assert set(report["per_level"]) == {"2", "3"}
    assert len(EGOMONTH_TASK_LEVELS) == 14
    assert sorted(set(EGOMONTH_TASK_LEVELS.values())) == [1, 2, 3]


def test_hd_epic_questions_with_five_options(shared_data):
    """Real HD-EPIC 5-way questions: the gold option's own text is extracted as that letter."""
    path = shared_data / "hd-epic-annotations" / "vqa-benchmark" / "recipe_step_recognition.json"
    questions = json.loads(path.read_text())
    checked = 0
    for entry in list(questions.values())[:50]:
        choices = entry["choices"]
        letter = chr(ord("A") + entry["correct_idx"])
        if sum(c.strip().casefold() == choices[entry["correct_idx"]].strip().casefold() for c in choices) > 1:
            continue
        assert extract_answer(choices[entry["correct_idx"]], choices) == letter
        assert extract_answer(f"The answer is ({letter}).", choices) == letter
        checked += 1
    assert checked >= 40


def test_per_category_pools_the_tasks_of_each_named_category_by_hand():
    """HD-EPIC VQA's categories (meta.category) are reported as such: macro over their tasks, micro over items."""
    def item(i, task, category, answer):
        return QAItem(id=f"q{i}", participant="p", task=task, question="?", options=["a", "b", "c", "d", "e"],
                      answer=answer, meta={"category": category})

    items = [item(0, "recipe_step_localization", "recipe", "A"), item(1, "recipe_step_localization", "recipe", "B"),
             item(2, "recipe_multi_step", "recipe", "A"),
             item(3, "gaze_gaze_estimation", "gaze", "C")]
    answers = {"q0": "A", "q1": "A", "q2": "A", "q3": None}
    report = score_qa(items, answers)
    # recipe: tasks 1/2 and 1/1 -> macro 0.75, micro 2/3; gaze: 0/1
    assert report["per_category"]["recipe"] == {"avg": 0.75, "acc": 2 / 3, "n": 3, "n_tasks": 2}
    assert report["per_category"]["gaze"] == {"avg": 0.0, "acc": 0.0, "n": 1, "n_tasks": 1}
    assert report["per_level"] == {}  # HD-EPIC's prototypes carry no EgoMonth level
    plain = QAItem(id="x", participant="p", task="t", question="?", options=["a", "b"], answer="A")
    assert score_qa([plain], {"x": "A"})["per_category"] == {}  # no category named: none reported
