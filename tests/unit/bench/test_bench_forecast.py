"""NextMe-800's in-context forecasting protocol as a run (issue 25 item 5: `egohorizon bench forecast`).

The 50-most-recent rule and that nothing at or after t0 reaches a prompt (property test over random
messy contexts, future events planted among them), the prompt texts, a server with fixed replies
scored by hand with the exact embedder (best of the first three, an unreadable reply invalid, S_norm,
repeat-last, the 50 events it was sent), `score forecast` on OUT/predictions.jsonl agreeing with
summary.json, a model failure left unfinished and finished by a rerun, a toy model end to end locally
and through the project's loopback server with the same replies and scores, reruns and a torn line
giving the same bytes, another setting refused, and bad input named by file, line and field.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from egohorizon import cli
from egohorizon.bench.forecast import render
from egohorizon.errors import LeakageError
from egohorizon.prompts.forecast import render_forecast_prompt
from egohorizon.prompts.nextme import NEXTME_CONTEXT, check_no_future, recent_context, render_nextme_prompt
from egohorizon.schema import ForecastPoint

BASE = 1_767_225_600.0  # 2026-01-01 00:00 UTC, a Thursday


def _events(texts, start, length=60.0):
    """Consecutive events of ``length`` s from ``start`` (s after BASE), the last ending at start + n * length."""
    return [{"id": f"e{start:.0f}-{i:02d}", "text": text, "start": BASE + start + i * length,
             "end": BASE + start + (i + 1) * length} for i, text in enumerate(texts)]


def _point(pid, level, k, context, targets):
    t0 = context[-1]["end"]
    return {"id": pid, "source": "toy", "participant": "P1", "level": level, "k": k, "t0": t0, "context": context,
            "targets": targets, "windows": [[t0 + 60 * i, t0 + 60 * i + 50] for i in range(k)]}


def _write(path: Path, points) -> Path:
    path.write_text("".join(json.dumps(p) + "\n" for p in points), encoding="utf-8")
    return path


# Hand-checked below: A shows 50 of its 55 events; replies to A list four candidates (the fourth, which
# would be perfect, does not count), B plain text, C nothing readable, D a fenced JSON list, E a miss.
POINTS = [
    _point("A", 1, 2, _events([f"step {i:02d}" for i in range(53)] + ["take milk", "close fridge"], 0),
           ["open fridge", "take milk"]),
    _point("B", 1, 2, _events(["stand up", "wash cup", "wash cup"], 10_000), ["wash cup", "dry cup"]),
    _point("C", 1, 2, _events(["stand up", "walk"], 20_000), ["sit down", "read book"]),
    _point("D", 2, 1, _events(["wake up"], 30_000, 600), ["make breakfast"]),
    _point("E", 2, 1, _events(["make breakfast"], 90_000, 600), ["go to work"]),
]
REPLIES = {
    "A": json.dumps({"candidates": [["open fridge", "pour milk"], ["wash cup"], ["take milk"],
                                    ["open fridge", "take milk"]]}),
    "B": "Here are my guesses.\nCandidate 1: wash cup; dry hands\nCandidate 2: sit down; read book",
    "C": "I cannot know what this person does next.",
    "D": '```json\n["make breakfast"]\n```',
    "E": '{"candidates": [["go to the office"]]}',
}
EXPECTED_S = {"A": 0.5, "B": 0.5, "C": 0.0, "D": 1.0, "E": 0.0}  # 1 - Levenshtein / max(m, n), best of 3


@pytest.fixture
def points_file(tmp_path) -> Path:
    return _write(tmp_path / "points.jsonl", POINTS)


def _bench(*argv) -> int:
    return cli.main(["bench", "forecast", *map(str, argv)])


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "predictions.jsonl").read_text(encoding="utf-8").splitlines()]


def _files(out: Path) -> dict[str, bytes]:
    return {name: (out / name).read_bytes() for name in ("predictions.jsonl", "summary.json")}


# ----------------------------------------------------------------- the 50-most-recent rule, no leakage


@st.composite
def messy_points(draw):
    """A point whose context holds past events and planted future ones (ending after t0, starting at or
    after it, running across it, zero-length at t0), overlapping, tied and shuffled."""
    t0 = BASE + draw(st.integers(0, 100)) * 30
    events = []
    for i in range(draw(st.integers(0, 90))):
        start = BASE + draw(st.integers(-20, 120)) * 30
        end = start + draw(st.sampled_from([0, 0, 30, 60, 600]))
        tag = "past" if end <= t0 and start < t0 else "FUTURE"
        events.append({"id": f"e{i:03d}", "text": f"{tag} event {i:03d}", "start": start, "end": end})
    events = draw(st.permutations(events))
    k = draw(st.integers(1, 3))
    return ForecastPoint(id="p", source="s", participant="P", level=draw(st.integers(1, 5)), k=k, t0=t0,
                         context=list(events), targets=[f"target {j}" for j in range(k)],
                         windows=[[t0 + 30 * j, t0 + 30 * j + 20] for j in range(k)])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(messy_points())
def test_the_50_most_recent_events_before_t0_and_nothing_at_or_after_it(point):
    eligible = [e for e in point.context if e["end"] <= point.t0 and e["start"] < point.t0]
    by_recency = sorted(eligible, key=lambda e: (e["end"], e["start"], e["id"]))
    expected = sorted(by_recency[-NEXTME_CONTEXT:], key=lambda e: (e["start"], e["end"], e["id"]))
    assert recent_context(point) == expected
    assert len(expected) == min(NEXTME_CONTEXT, len(eligible))
    for protocol, shown in (("nextme", expected), ("egohorizon", sorted(eligible, key=lambda e: (
            e["start"], e["end"], e["id"])))):
        text, n = render(point, protocol)
        assert n == len(shown)
        assert "FUTURE" not in text and "target" not in text  # no future event, no target text
        assert [line.split(") ", 1)[1] for line in text.splitlines() if "event " in line] == \
            [e["text"] for e in shown]


def test_the_guard_refuses_an_event_not_before_t0():
    t0 = BASE + 600
    for late in ({"text": "x", "start": t0 - 60, "end": t0 + 1}, {"text": "x", "start": t0, "end": t0},
                 {"text": "x", "start": t0 + 5, "end": t0 + 9}):
        with pytest.raises(LeakageError, match="not before t0"):
            check_no_future("p", t0, [{"text": "ok", "start": t0 - 60, "end": t0}, late])
    check_no_future("p", t0, [{"text": "ends at t0", "start": t0 - 60, "end": t0}])  # the most recent: shown


# ----------------------------------------------------------------- prompt texts


def test_nextme_prompt_text():
    point, _ = ForecastPoint.from_dict(_point("B", 1, 2, _events(["stand up", "wash cup", "wash cup"], 10_200),
                                              ["wash cup", "dry cup"]))
    text, shown = render_nextme_prompt(point)
    assert shown == 3
    assert text == """\
You are given the most recent events of one person's own life, as recorded by a camera they wear, and you predict what this person does next.
The events are first-person activity descriptions at level 1 of 5 (atomic actions).

The most recent events, oldest first (start-end, duration, activity):
Thu 2026-01-01
02:50:00-02:51:00 (1 min) stand up
02:51:00-02:52:00 (1 min) wash cup
02:52:00-02:53:00 (1 min) wash cup

Now: Thu 2026-01-01 02:53:00.
Predict the next 2 activities of this person, one for each of these recorded time windows:
1. 02:53:00-02:53:50 (50 s)
2. 02:54:00-02:54:50 (50 s)

People do not always do what is most likely, so give 3 lists of exactly 2 short activity descriptions: different plausible futures, each in time order and written like the events above. Only the closest one counts.
Answer with JSON only: {"candidates": [[...], ...]}
"""


def test_egohorizon_protocol_is_the_forecast_prompt_with_the_points_context():
    point, _ = ForecastPoint.from_dict(POINTS[0])
    text, shown = render(point, "egohorizon")
    assert shown == 55 and text == render_forecast_prompt(point, n_candidates=3)
    text, shown = render(point, "nextme")
    assert shown == 50 and "step 04" not in text and "step 05" in text and text.startswith("You are given")


# ----------------------------------------------------------------- a server with fixed replies, by hand


class FixedReplies:
    """An OpenAI-compatible endpoint replying by the exact prompt it is sent; ``fail`` prompts get HTTP 400."""

    def __init__(self, replies: dict[str, str], fail: set[str] = frozenset()):
        self.replies, self.fail, self.requests = replies, set(fail), []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                prompt = body["messages"][0]["content"]
                if prompt in owner.fail:
                    status, data = 400, {"error": {"message": "no"}}
                else:
                    status, data = 200, {"choices": [{"message": {"role": "assistant",
                                                                  "content": owner.replies[prompt]}}]}
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _prompts() -> dict[str, str]:
    return {p["id"]: render(ForecastPoint.from_dict(p)[0], "nextme")[0] for p in POINTS}


@pytest.fixture
def fixed_server():
    prompts = _prompts()
    server = FixedReplies({prompts[pid]: reply for pid, reply in REPLIES.items()})
    server.prompts = prompts
    yield server
    server.close()


def test_fixed_replies_scored_by_hand_and_score_forecast_agrees(points_file, fixed_server, tmp_path, capsys):
    out = tmp_path / "out"
    assert _bench(points_file, "--model", "fixed", "--base-url", fixed_server.url, "--embedder", "exact",
                  "--max-new-tokens", "300", "--out", out) == 0
    printed = capsys.readouterr().out
    # One user turn holding exactly the rendered prompt, greedy, the budget; A sent its 50 latest events.
    sent = {body["messages"][0]["content"]: body for body in fixed_server.requests}
    assert set(sent) == set(fixed_server.prompts.values()) and len(fixed_server.requests) == 5
    assert all(len(b["messages"]) == 1 and b["messages"][0]["role"] == "user" and b["temperature"] == 0.0
               and b["max_tokens"] == 300 for b in fixed_server.requests)
    rows = {r["id"]: r for r in _rows(out)}
    assert [r["context_shown"] for r in rows.values()] == [50, 3, 2, 1, 1]
    assert rows["A"]["candidates"] == [["open fridge", "pour milk"], ["wash cup"], ["take milk"]]  # 3 count
    assert rows["B"]["candidates"] == [["wash cup", "dry hands"], ["sit down", "read book"]]
    assert "candidates" not in rows["C"] and rows["C"]["text"] == REPLIES["C"]  # invalid, kept raw
    assert rows["D"]["candidates"] == [["make breakfast"]]
    assert all(r["raw_texts"] == [REPLIES[r["id"]]] and r["model"] == "fixed" and r["prompt"] == "nextme"
               for r in rows.values())

    summary = json.loads((out / "summary.json").read_text())
    per_point = {r["id"]: r for r in summary["per_point"]}
    assert {pid: round(r["S"], 6) for pid, r in per_point.items()} == EXPECTED_S
    assert per_point["C"]["invalid"] and per_point["A"]["best"] == 0
    groups = {(g["level"], g["k"]): g for g in summary["groups"]}
    # L1 K2: S = (0.5 + 0.5 + 0) / 3; random draws come from the other points' targets: S_rand 0 (exact)
    assert groups[(1, 2)]["S"] == pytest.approx(1 / 3) and groups[(1, 2)]["S_rand"] == 0.0
    assert groups[(1, 2)]["S_norm"] == pytest.approx(1 / 3) and groups[(1, 2)]["invalid"] == 1
    assert groups[(2, 1)]["S"] == pytest.approx(0.5) and groups[(2, 1)]["S_norm"] == pytest.approx(0.5)
    assert summary["overall"]["S"] == pytest.approx(0.4) and summary["overall"]["invalid"] == 1
    # repeat-last-K: A ["take milk", "close fridge"] 0, B ["wash cup", "wash cup"] 0.5, C 0; D, E 0
    table = {(r["level"], r["k"]): r for r in summary["table"]}
    assert table[(1, 2)]["repeat_last_S"] == pytest.approx(1 / 6) and table[(2, 1)]["repeat_last_S"] == 0.0
    assert table[(1, 2)]["model_invalid_rate"] == pytest.approx(1 / 3) and table[(1, 2)]["random_S"] == 0.0
    assert table[(1, 2)]["context_shown_mean"] == pytest.approx(55 / 3)
    per_k = {r["k"]: r for r in summary["per_k"]}  # one level per K here: the groups' figures again
    assert per_k[2]["model_S"] == pytest.approx(1 / 3) and per_k[2]["repeat_last_S"] == pytest.approx(1 / 6)
    assert per_k[1]["model_S_norm"] == pytest.approx(0.5) and per_k[1]["n"] == 2
    assert summary["context_shown"] == {"asked": 50, "mean": 11.4, "min": 1, "max": 50, "points_with_fewer": 4}
    assert summary["unfinished"] == [] and summary["answered"] == 5 and summary["embedder"] == "exact"
    assert "protocol nextme (prompt nextme v1): the 50 most recent events" in printed
    assert "1 of 5 replies unreadable" in printed

    # egohorizon score forecast on the predictions gives the same report.
    report = tmp_path / "report.json"
    assert cli.main(["score", "forecast", "--gold", str(points_file), "--pred", str(out / "predictions.jsonl"),
                     "--embedder", "exact", "--out", str(report)]) == 0
    scored = json.loads(report.read_text())
    assert {k: scored["overall"][k] for k in summary["overall"]} == summary["overall"]
    assert scored["groups"] == summary["groups"] and scored["per_point"] == summary["per_point"]


def _history_files(tmp_path: Path) -> tuple[Path, Path]:
    """P1's one training day, 31 December: L1 wash cup, dry cup, wash cup, dry cup; L2 make breakfast, go to work."""
    texts = [(1, "wash cup"), (1, "dry cup"), (1, "wash cup"), (1, "dry cup"), (2, "make breakfast"), (2, "go to work")]
    events = [{"id": f"h{i}", "participant": "P1", "day": "2025-12-31", "session": "s", "level": level,
               "start": BASE - 86_400 + 3600 * (i + 1), "end": BASE - 86_400 + 3600 * (i + 1) + 60, "text": text,
               "source": "toy"} for i, (level, text) in enumerate(texts)]
    split = {"participants": {"P1": {"train": ["2025-12-31"], "test": ["2026-01-01", "2026-01-02"]}}}
    (tmp_path / "split.json").write_text(json.dumps(split))
    return _write(tmp_path / "events.jsonl", events), tmp_path / "split.json"


def test_habit_baselines_beside_the_model_with_history_and_split(points_file, fixed_server, tmp_path, capsys):
    events, split = _history_files(tmp_path)
    common = [points_file, "--model", "fixed", "--base-url", fixed_server.url, "--embedder", "exact"]
    assert _bench(*common, "--out", tmp_path / "plain") == 0
    assert "habit baselines: not computed (no --history)" in capsys.readouterr().out
    assert json.loads((tmp_path / "plain" / "summary.json").read_text())["habits"] is None
    out = tmp_path / "out"
    assert _bench(*common, "--out", out, "--history", events, "--split", split) == 0
    printed = capsys.readouterr().out
    summary = json.loads((out / "summary.json").read_text())
    markov = {(g["level"], g["k"]): g for g in summary["habits"]["markov"]["groups"]}
    # L1: after "wash cup" comes "dry cup": B's 2nd candidate [wash cup, dry cup] is right (S 1), A and C 0;
    # L2: D's last text is unseen (start list: go to work, make breakfast) and E's is followed by go to work
    assert markov[(1, 2)]["S"] == pytest.approx(1 / 3) and markov[(2, 1)]["S"] == pytest.approx(1.0)
    assert {v["strongest"] for v in summary["vs_strongest"]} == {"markov"}
    assert "these same points" in summary["vs_strongest"][0]["rule"]
    assert "habit baselines (training days of --split only)" in printed and "minus markov" in printed


def test_a_model_failure_stays_unfinished_and_a_rerun_finishes_it(points_file, fixed_server, tmp_path, capsys):
    args = [points_file, "--model", "fixed", "--base-url", fixed_server.url, "--embedder", "exact"]
    whole = tmp_path / "whole"
    assert _bench(*args, "--out", whole) == 0
    fixed_server.fail = {fixed_server.prompts["C"]}
    out = tmp_path / "out"
    assert _bench(*args, "--max-failures", "0.5", "--out", out) == 1  # C unfinished: rerun to finish
    summary = json.loads((out / "summary.json").read_text())
    assert summary["unfinished"] == ["C"] and summary["answered"] == 4 and summary["overall"]["invalid"] == 1
    assert "unfinished (model failures, scored invalid): 1" in capsys.readouterr().out
    assert _bench(*args, "--out", tmp_path / "strict") == 2  # 1 of 5 above the default 5%
    fixed_server.fail = set()
    assert _bench(*args, "--out", out) == 0
    assert [r["id"] for r in _rows(out)] == ["A", "B", "D", "E", "C"]  # C appended by the rerun
    assert (out / "summary.json").read_bytes() == (whole / "summary.json").read_bytes()


def test_bad_points_are_named_by_file_line_and_field(tmp_path, capsys):
    leaky = dict(POINTS[1], context=POINTS[1]["context"] + [{"text": "later", "start": POINTS[1]["t0"],
                                                             "end": POINTS[1]["t0"] + 60}])
    no_k = {key: value for key, value in POINTS[2].items() if key != "k"}
    path = _write(tmp_path / "bad.jsonl", [POINTS[0], leaky, no_k])
    out = tmp_path / "out"
    assert _bench(path, "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--out", out) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: field 'context': item 3 ends at" in err and "future leaked" in err
    assert f"{path}:3: field 'k': missing required field" in err
    assert not out.exists()


# ----------------------------------------------------------------- a toy model, locally and served


@pytest.fixture(scope="module")
def toy_model(tmp_path_factory) -> str:
    """A toy Qwen2.5-VL (random weights, a tokenizer trained on the prompts), as tests/unit/llm/test_llm_server.py."""
    from egohorizon.backbones import TinyBackbone

    backbone = TinyBackbone(cache_dir=str(tmp_path_factory.mktemp("tiny")), hidden_size=32, intermediate_size=64,
                            num_layers=1, num_heads=2, num_kv_heads=1, vocab_size=400, vision_depth=1,
                            vision_hidden_size=16)
    backbone.prepare(corpus=lambda: list(_prompts().values()) + list(REPLIES.values()))
    return backbone.base_path


def test_toy_model_locally_and_served_same_scores_rerun_and_resume_same_bytes(points_file, toy_model, tmp_path,
                                                                            capsys, caplog):
    from egohorizon.llm import make_backend
    from egohorizon.llm.server import ChatServer

    caplog.set_level("INFO", logger="egohorizon.bench")
    args = [points_file, "--max-new-tokens", "12", "--embedder", "exact"]
    local = tmp_path / "local"
    assert _bench(*args, "--model", toy_model, "--out", local) == 0
    assert "points/s" in capsys.readouterr().err
    before = _files(local)
    assert _bench(*args, "--model", toy_model, "--out", local) == 0  # nothing left to do
    assert _files(local) == before

    # A run killed while writing its third line: two whole lines and half of the third.
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    lines = before["predictions.jsonl"].splitlines(keepends=True)
    (resumed / "predictions.jsonl").write_bytes(b"".join(lines[:2]) + lines[2][: len(lines[2]) // 2])
    assert _bench(*args, "--model", toy_model, "--out", resumed) == 0
    assert "cut off a partial last line" in caplog.text and "3 to go" in caplog.text
    assert _files(resumed) == before

    # The same model behind the project's loopback server: the same replies, the same scores.
    server = ChatServer(make_backend(toy_model)).start()
    try:
        served = tmp_path / "served"
        assert _bench(*args, "--model", "toy", "--base-url", server.url, "--concurrency", "2", "--out", served) == 0
    finally:
        server.close()
    assert server.requests == 5
    here, there = _rows(local), _rows(served)
    assert [r["raw_texts"] for r in here] == [r["raw_texts"] for r in there]
    local_only = ("model", "dtype", "stop")  # a server's precision is its own: not recorded by the client
    assert [{k: v for k, v in r.items() if k not in local_only} for r in here] == \
        [{k: v for k, v in r.items() if k not in local_only} for r in there]
    assert {(r["dtype"], r["stop"]) for r in here} == {("float32", "max_new_tokens")}  # the toy keeps float32
    assert {(r["dtype"], r["stop"]) for r in there} == {(None, None)}
    a, b = (json.loads((o / "summary.json").read_text()) for o in (local, served))
    assert (a["overall"], a["groups"], a["table"], a["per_point"]) == (b["overall"], b["groups"], b["table"],
                                                                      b["per_point"])
    assert (a["backend"], b["backend"], b["model"]) == ("local", "http", "toy")

    # Another setting into the same folder is refused, naming it; a rescore with another embedder is not.
    assert _bench(*args[:1], "--max-new-tokens", "11", "--embedder", "exact", "--model", toy_model,
                  "--out", local) == 2
    assert "max_new_tokens: 12 there, 11 now" in capsys.readouterr().err
    assert _bench(*args, "--dtype", "bfloat16", "--model", toy_model, "--out", local) == 2  # issue 37
    # refused by the folder's marker (issue 36) before the model loads: the run before asked for no --dtype
    assert "dtype: None there, 'bfloat16' now" in capsys.readouterr().err
    assert _bench(points_file, "--max-new-tokens", "12", "--protocol", "egohorizon", "--model", toy_model,
                  "--embedder", "exact", "--limit", "2", "--out", tmp_path / "own") == 0
    assert [r["context_shown"] for r in _rows(tmp_path / "own")] == [55, 3]


def test_a_wrong_local_model_ends_before_out_is_written(points_file, tmp_path, capsys):
    out = tmp_path / "out"
    assert _bench(points_file, "--model", tmp_path / "no-such-model", "--embedder", "exact", "--out", out) == 2
    assert not out.exists()
