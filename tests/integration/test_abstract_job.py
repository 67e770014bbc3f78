"""egohorizon abstract against a loopback OpenAI-compatible server started here, which answers each
prompt by a rule (consecutive events with the same first word form a group, at most four) and can be
told to answer invalidly: once (the retry must show the error and succeed) or always (the day fails and
is left out); model "balanced" cuts a run by how much of it the prompt shows. Chunking (the last chunk of a
long session holds the full --max-events, its overlap reconciled), caching, resume after a torn write, and
the hierarchy invariants."""

from __future__ import annotations

import itertools
import json
import re
import threading
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from egohorizon.cli import main
from egohorizon.data.events.hierarchy import check_hierarchy
from egohorizon.formats.abstract import ReplyError, parse_groups
from egohorizon.schema import Event, load_jsonl, write_jsonl

_EVENT = re.compile(r"^(\d+)\. \d\d:\d\d-\d\d:\d\d (.*)$", re.MULTILINE)


def rule_reply(prompt: str) -> str:
    texts = [m.group(2) for m in _EVENT.finditer(prompt)]
    groups, first = [], 0
    for i in range(1, len(texts) + 1):
        if i == len(texts) or texts[i].split()[0] != texts[first].split()[0] or i - first == 4:
            groups.append(f"{first}-{i - 1}: handle {texts[first].split()[0]} matters")
            first = i
    return "\n".join(groups)


def balanced_reply(prompt: str) -> str:
    """Model "balanced": a run of events with the same first word becomes ceil(length / 3) groups of
    near-equal size, so how a run is cut depends on how much of it the prompt shows (unlike ``rule_reply``)."""
    verbs = [m.group(2).split()[0] for m in _EVENT.finditer(prompt)]
    groups, first = [], 0
    for verb, run in itertools.groupby(verbs):
        length = len(list(run))
        parts = -(-length // 3)
        for part in range(parts):
            size = length // parts + (part < length % parts)
            groups.append(f"{first}-{first + size - 1}: {verb} for a while")
            first += size
    return "\n".join(groups)


def pairs_reply(prompt: str, seed: int) -> str:
    """Model "pairs": greedy (seed 0) pairs events from the prompt's start; sampled (any other seed) it
    answers one event alone first, then pairs, so a retry shifts every boundary by one."""
    n = len(_EVENT.findall(prompt))
    starts = list(range(0, n, 2)) if seed == 0 else [0, *range(1, n, 2)]
    return "\n".join(f"{a}-{min(a + (1 if seed == 0 or a else 0), n - 1)}: step {a}" for a in starts)


class RuleServer:
    def __init__(self):
        self.requests: list[list[dict]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                messages = body["messages"]
                with server.lock:
                    server.requests.append(messages)
                prompt = messages[0]["content"]
                if body.get("model") == "reject":  # a server that refuses every request, as vLLM does a bad model name
                    self.send_error(400, "The model `reject` does not exist.")
                    return
                if "broken" in prompt:
                    answer = "Here are the groups: breakfast, then work."
                elif "flaky" in prompt and len(messages) == 1:
                    answer = "0-0: start\n2-3: skip one"
                elif body.get("model") == "balanced":
                    answer = balanced_reply(prompt)
                elif body.get("model") == "pairs":
                    answer = pairs_reply(prompt, body.get("seed") or 0)
                else:
                    answer = rule_reply(prompt)
                data = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def server():
    s = RuleServer()
    yield s
    s.httpd.shutdown()


VERBS = ["open", "open", "pour", "pour", "pour", "wash", "type", "type", "type", "type", "type", "read"]


def day_events(participant: str, day: str, n: int, start: float, sessions: int = 2, marker: str = "") -> list[Event]:
    events, t = [], start
    for i in range(n):
        session = f"{participant}-{day}-s{1 + i * sessions // n}"
        text = f"{VERBS[i % len(VERBS)]} the thing {i}" + (f" {marker}" if marker and i == 3 else "")
        events.append(Event(id=f"{participant}-{day}-L1-{i:04d}", participant=participant, day=day,
                            session=session, level=1, start=t, end=t + 30, text=text, source="test"))
        t += 40
    return events


@pytest.fixture
def events_file(tmp_path):
    events = (day_events("p1", "2025-03-03", 30, 1740990000)
              + day_events("p1", "2025-03-04", 20, 1741076400, marker="flaky")
              + day_events("p2", "2025-03-03", 15, 1740990000, marker="broken"))
    path = tmp_path / "l1.jsonl"
    write_jsonl(path, events)
    return path


def run(capsys, *args) -> tuple[int, dict]:
    code = main(["abstract", *map(str, args)])
    return code, json.loads(capsys.readouterr().out)


def test_parse_groups_is_strict():
    assert [(g.first, g.last, g.text) for g in parse_groups("0-1: a b\n2-2: c\n", 3)] == [(0, 1, "a b"), (2, 2, "c")]
    for reply, message in [("", "empty"), ("0-1 a", "FIRST-LAST"), ("0-0: a\n2-2: b", "start at event 1"),
                           ("0-1: a", "cover every event up to 2"), ("0-3: a", "only events 0 to 2"),
                           ("0-0: \n1-2: b", "description is empty"), ("1-2: a", "start at event 0"),
                           ("0-0: a\n1-0: b", "before FIRST")]:
        with pytest.raises(ReplyError, match=message):
            parse_groups(reply, 3)


def test_abstract_against_a_server(tmp_path, events_file, server, capsys):
    out = tmp_path / "h"
    code, report = run(capsys, events_file, "--out", out, "--levels", 5, "--model", "rule",
                       "--base-url", server.url, "--max-events", 12, "--overlap", 3)
    assert code == 1  # a failed day: exit 1 unless --allow-failed-days
    assert (report["days"], report["days_ok"], report["days_failed"]) == (3, 2, 1)
    failure = report["failures"][0]
    assert failure["day"] == "p2/2025-03-03" and failure["kind"] == "output" and "FIRST-LAST" in failure["reason"]
    assert report["failed_days"][0].startswith("p2/2025-03-03: output: ")
    assert report["hierarchy_valid"] and not report["hierarchy_ok"], report["hierarchy_problems"]
    events = load_jsonl(out / "events.jsonl", Event)
    assert {e.participant for e in events} == {"p1"}  # the failed day is left out, not patched
    assert check_hierarchy(events).ok and {e.level for e in events} == {1, 2, 3, 4, 5}
    table = (out / "levels.md").read_text()  # the per-level table and PNG of what was written
    assert report["figures"]["levels_png"] == str(out / "levels.png") and "| L5 |" in table
    assert (out / "levels.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for e in events:
        if e.level > 1:
            assert e.text and e.meta["prompt"]["name"] == "abstract" and e.meta["model"] == "rule"
        assert all(c.session == e.session for c in events if c.parent == e.id)  # runs stop at sessions
    # the flaky day was asked again with the error shown, then answered validly
    retries = [m for m in server.requests if len(m) == 3 and "flaky" in m[0]["content"]]
    assert retries and "should start at event 1" in retries[0][2]["content"]
    assert retries[0][1] == {"role": "assistant", "content": "0-0: start\n2-3: skip one"}
    # the 15-event session of day 1 does not fit in 12: chunked, and no prompt holds more than 12 events
    assert max(len(_EVENT.findall(m[0]["content"])) for m in server.requests) == 12
    assert report["invalid_replies"] == 1 + 3  # flaky once; broken three times (retries 2)

    # a rerun asks nothing and writes the same events
    before, calls = (out / "events.jsonl").read_bytes(), len(server.requests)
    code, again = run(capsys, events_file, "--out", out, "--model", "rule", "--base-url", server.url,
                      "--max-events", 12, "--overlap", 3, "--allow-failed-days")
    assert code == 0 and len(server.requests) == calls and again["days_done_now"] == 0
    assert (out / "events.jsonl").read_bytes() == before

    # --retry-failed asks again, from the cache: still no request, still failed
    code, again = run(capsys, events_file, "--out", out, "--model", "rule", "--base-url", server.url,
                      "--max-events", 12, "--overlap", 3, "--retry-failed", "--allow-failed-days")
    assert code == 0 and again["days_done_now"] == 1 and again["cache_misses"] == 0 and len(server.requests) == calls


def test_a_run_whose_every_day_failed_exits_1_and_names_each_day_and_error(tmp_path, events_file, server, capsys):
    """Every request refused (HTTP 400): it exited 0 with hierarchy_ok true over an empty hierarchy."""
    out = tmp_path / "h"
    code = main(["abstract", str(events_file), "--out", str(out), "--model", "reject", "--base-url", server.url])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert code == 1 and report["days_ok"] == 0 and report["days_failed"] == 3
    assert not report["hierarchy_ok"] and report["hierarchy_valid"]  # nothing written breaks a rule: nothing is
    assert len(report["failed_days"]) == 3
    assert all(line.split(": ")[1] == "model" and "HTTP 400" in line and "does not exist" in line
               for line in report["failed_days"])
    assert json.loads((out / "report.json").read_text())["failed_days"] == report["failed_days"]
    assert f"3 of 3 days failed and are left out of {out / 'events.jsonl'}" in captured.err
    assert "p1/2025-03-03: model: " in captured.err and "HTTP 400" in captured.err
    assert "--allow-failed-days" in captured.err
    code = main(["abstract", str(events_file), "--out", str(out), "--model", "reject", "--base-url", server.url,
                 "--allow-failed-days"])  # model failures are asked again each run; accepted here
    assert code == 0 and "accepted (--allow-failed-days)" in capsys.readouterr().err


def test_chunks_keep_groups_whole_across_the_overlap(tmp_path, server, capsys):
    """One 40-event session in chunks of 12 gives exactly the groups of one unchunked request."""
    path = tmp_path / "one.jsonl"
    write_jsonl(path, day_events("p1", "2025-03-03", 40, 1740990000, sessions=1))
    outs = {}
    for size in (12, 40):
        code, report = run(capsys, path, "--out", tmp_path / f"c{size}", "--levels", 2, "--model", "rule",
                           "--base-url", server.url, "--max-events", size, "--overlap", 4, "--no-cache")
        assert code == 0 and report["days_ok"] == 1
        outs[size] = [(e.start, e.end, e.text) for e in load_jsonl(tmp_path / f"c{size}" / "events.jsonl", Event)
                      if e.level == 2]
    assert outs[12] == outs[40] and len(outs[40]) < 40


def test_resume_after_a_torn_write_and_a_refusal_to_mix_models(tmp_path, events_file, server, capsys):
    out = tmp_path / "h"
    args = [events_file, "--out", out, "--levels", 3, "--model", "rule", "--base-url", server.url,
            "--allow-failed-days"]  # the "broken" day fails by design
    run(capsys, *args)
    full = (out / "events.jsonl").read_bytes()
    lines = (out / "days.jsonl").read_bytes().split(b"\n")
    (out / "days.jsonl").write_bytes(lines[0] + b"\n" + lines[1][: len(lines[1]) // 2])  # killed mid-write
    (out / "events.jsonl").unlink()
    code, report = run(capsys, *args)
    assert code == 0 and report["days_done_now"] == 2 and report["cache_misses"] == 0  # redone from the cache
    assert (out / "events.jsonl").read_bytes() == full
    assert main(["abstract", str(events_file), "--out", str(out), "--levels", "3", "--model", "other",
                 "--base-url", server.url]) == 2
    assert "'other' now" in capsys.readouterr().err  # the folder's marker (issue 36): another model is refused


def test_bad_input_lines_are_counted(tmp_path, server, capsys):
    path = tmp_path / "l1.jsonl"
    write_jsonl(path, day_events("p1", "2025-03-03", 8, 1740990000, sessions=1))
    with open(path, "a") as handle:
        handle.write('{"id": "x", "participant": "p1"}\nnot json\n')
    code, report = run(capsys, path, "--out", tmp_path / "h", "--levels", 2, "--model", "rule",
                       "--base-url", server.url)
    assert code == 0 and report["input"]["bad_lines"] == 2 and "l1.jsonl:9" in report["input"]["defects"][0]


# The last chunk of a long session holds the full --max-events (a model trained on runs of that length fails
# on a short remainder): it starts before the kept groups end and the overlap is reconciled.

_THING = re.compile(r"the thing (\d+)")


def l1_requests(server) -> list[tuple[int, int]]:
    """The first and last event (day index) of every L1 prompt the server saw, in order."""
    spans = []
    for messages in server.requests:
        indices = [int(i) for i in _THING.findall(messages[0]["content"])]
        if indices:
            spans.append((indices[0], indices[-1]))
    return spans


def groups_of(out, level=2) -> list[tuple[int, int]]:
    """The built groups as (first, last) L1 day indices, from the children ids."""
    events = load_jsonl(out / "events.jsonl", Event)
    return sorted((int(e.children[0][-4:]), int(e.children[-1][-4:])) for e in events if e.level == level)


def one_session(tmp_path, verbs: list[str]):
    path = tmp_path / "one.jsonl"
    events = day_events("p1", "2025-03-03", len(verbs), 1740990000, sessions=1)
    write_jsonl(path, [replace(e, text=f"{verb} the thing {i}")
                       for i, (e, verb) in enumerate(zip(events, verbs, strict=True))])
    return path


def test_the_last_chunk_is_full_and_the_hierarchy_valid_and_repeatable(tmp_path, server, capsys):
    path = tmp_path / "one.jsonl"
    write_jsonl(path, day_events("p1", "2025-03-03", 30, 1740990000, sessions=1))
    out = tmp_path / "h"
    args = ["--levels", 5, "--model", "rule", "--base-url", server.url, "--max-events", 12, "--overlap", 3]
    code, report = run(capsys, path, "--out", out, *args)
    assert code == 0 and report["days_ok"] == 1 and report["hierarchy_ok"], report["hierarchy_problems"]
    # chunks [0,12) keeps groups ending before 9 -> 6; [6,18) -> 14; [14,26) -> 23; the 7 events left are
    # asked as the run's last 12 (18-29), not alone (23-29)
    assert l1_requests(server) == [(0, 11), (6, 17), (14, 25), (18, 29)]
    # the last chunk agrees at event 23 (read | open): the kept groups stay, its groups from 23 are added,
    # and the result is that of one unchunked request
    assert groups_of(out) == [(0, 1), (2, 4), (5, 5), (6, 9), (10, 10), (11, 11), (12, 13), (14, 16),
                              (17, 17), (18, 21), (22, 22), (23, 23), (24, 25), (26, 28), (29, 29)]
    code, whole = run(capsys, path, "--out", tmp_path / "whole", "--levels", 2, "--model", "rule",
                      "--base-url", server.url, "--max-events", 30, "--no-cache")
    assert whole["days_ok"] == 1 and groups_of(tmp_path / "whole") == groups_of(out)
    events = load_jsonl(out / "events.jsonl", Event)
    assert check_hierarchy(events).ok and {e.level for e in events} == {1, 2, 3, 4, 5}
    l1 = [e for e in events if e.level == 1]
    l2_children = [c for e in events if e.level == 2 for c in e.children]
    assert sorted(l2_children) == sorted(e.id for e in l1)  # every event in exactly one group, none twice
    # a rerun asks nothing and writes the same bytes; a fresh uncached run writes the same events too
    before, calls = (out / "events.jsonl").read_bytes(), len(server.requests)
    code, again = run(capsys, path, "--out", out, *args)
    assert code == 0 and again["days_done_now"] == 0 and len(server.requests) == calls
    assert (out / "events.jsonl").read_bytes() == before
    code, fresh = run(capsys, path, "--out", tmp_path / "fresh", *args, "--no-cache")
    assert code == 0 and fresh["hierarchy_ok"]
    assert (tmp_path / "fresh" / "events.jsonl").read_bytes() == before


def test_the_overlap_is_cut_at_the_latest_boundary_both_answers_share(tmp_path, server, capsys):
    """Model "balanced" cuts a run by how much of it it sees: the first chunk (0-7) sees four "pour" and
    answers 4-5 | 6-7; the last chunk (1-8) sees five and answers 4-6 | 7-8. Kept before the overlap: 0 | 1-3
    | 4-5. The latest boundary both share up to 6 is 4: 0 and 1-3 stay, the last chunk decides from 4."""
    path = one_session(tmp_path, ["pour", "type", "type", "type", "pour", "pour", "pour", "pour", "pour"])
    code, report = run(capsys, path, "--out", tmp_path / "h", "--levels", 2, "--model", "balanced",
                       "--base-url", server.url, "--max-events", 8, "--overlap", 2, "--no-cache")
    assert code == 0 and report["days_ok"] == 1 and report["hierarchy_ok"]
    assert l1_requests(server) == [(0, 7), (1, 8)]
    assert groups_of(tmp_path / "h") == [(0, 0), (1, 3), (4, 6), (7, 8)]  # 4-5 was not kept next to 4-6
    run(capsys, path, "--out", tmp_path / "whole", "--levels", 2, "--model", "balanced", "--base-url", server.url,
        "--max-events", 9, "--no-cache")
    assert groups_of(tmp_path / "whole") == groups_of(tmp_path / "h")


def test_without_a_shared_boundary_the_remainder_from_a_kept_boundary_is_asked(tmp_path, server, capsys):
    """22 "type" events, groups of at most four from each prompt's start: the last chunk (10-21) answers
    10 | 14 | 18, the kept groups 0 | 4 | 8 | 12 and end at 16: nothing shared. The last chunk is asked twice
    more (sampled; the rule answers the same), then the events from the first kept boundary inside it
    (12-21) are asked alone; the kept 12-15 is decided again there."""
    path = one_session(tmp_path, ["type"] * 22)
    out = tmp_path / "h"
    code, report = run(capsys, path, "--out", out, "--levels", 2, "--model", "rule", "--base-url", server.url,
                       "--max-events", 12, "--overlap", 3)
    assert code == 0 and report["days_ok"] == 1 and report["hierarchy_ok"]
    assert l1_requests(server) == [(0, 11), (8, 19), (10, 21), (10, 21), (10, 21), (12, 21)]
    assert groups_of(out) == [(0, 3), (4, 7), (8, 11), (12, 15), (16, 19), (20, 21)]
    day = json.loads((out / "days.jsonl").read_text().splitlines()[0])
    assert [day["counts"][k] for k in ("chunks", "disagreements", "short_tails")] == [6, 3, 1]


def test_a_last_chunk_that_disagrees_is_asked_again_sampled(tmp_path, server, capsys):
    """13 events, chunks of 8, model "pairs". Kept from 0-7: 0-1 | 2-3 | 4-5 (ending before 6). The last chunk
    (5-12) answers greedily 5-6 | 7-8 | ...: no boundary shared, so it is asked again with seed 3 (the first
    seed of the next round) and answers 5 | 6-7 | 8-9 | 10-11 | 12, which agrees at 6."""
    path = one_session(tmp_path, ["step"] * 13)
    out = tmp_path / "h"
    code, report = run(capsys, path, "--out", out, "--levels", 2, "--model", "pairs", "--base-url", server.url,
                       "--max-events", 8, "--overlap", 2)
    assert code == 0 and report["days_ok"] == 1 and report["hierarchy_ok"]
    assert l1_requests(server) == [(0, 7), (5, 12), (5, 12)]
    assert groups_of(out) == [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9), (10, 11), (12, 12)]
    day = json.loads((out / "days.jsonl").read_text().splitlines()[0])
    assert [day["counts"][k] for k in ("chunks", "disagreements", "short_tails", "invalid")] == [3, 1, 0, 0]
