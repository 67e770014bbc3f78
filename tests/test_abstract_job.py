"""egohorizon abstract against a loopback OpenAI-compatible server started here, which answers each
prompt by a rule (consecutive events with the same first word form a group, at most four) and can be
told to answer invalidly: once (the retry must show the error and succeed) or always (the day fails and
is left out). Chunking, caching, resume after a torn write, and the hierarchy invariants."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from egohorizon.cli import main
from egohorizon.data.hierarchy import check_hierarchy
from egohorizon.prompts.abstract import ReplyError, parse_groups
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
                if "broken" in prompt:
                    answer = "Here are the groups: breakfast, then work."
                elif "flaky" in prompt and len(messages) == 1:
                    answer = "0-0: start\n2-3: skip one"
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
    assert code == 0
    assert (report["days"], report["days_ok"], report["days_failed"]) == (3, 2, 1)
    failure = report["failures"][0]
    assert failure["day"] == "p2/2025-03-03" and failure["kind"] == "output" and "FIRST-LAST" in failure["reason"]
    assert report["hierarchy_ok"], report["hierarchy_problems"]
    events = load_jsonl(out / "events.jsonl", Event)
    assert {e.participant for e in events} == {"p1"}  # the failed day is left out, not patched
    assert check_hierarchy(events).ok and {e.level for e in events} == {1, 2, 3, 4, 5}
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
                      "--max-events", 12, "--overlap", 3)
    assert code == 0 and len(server.requests) == calls and again["days_done_now"] == 0
    assert (out / "events.jsonl").read_bytes() == before

    # --retry-failed asks again, from the cache: still no request, still failed
    code, again = run(capsys, events_file, "--out", out, "--model", "rule", "--base-url", server.url,
                      "--max-events", 12, "--overlap", 3, "--retry-failed")
    assert code == 0 and again["days_done_now"] == 1 and again["cache_misses"] == 0 and len(server.requests) == calls


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
    args = [events_file, "--out", out, "--levels", 3, "--model", "rule", "--base-url", server.url]
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
    assert "abstracted by" in capsys.readouterr().err


def test_bad_input_lines_are_counted(tmp_path, server, capsys):
    path = tmp_path / "l1.jsonl"
    write_jsonl(path, day_events("p1", "2025-03-03", 8, 1740990000, sessions=1))
    with open(path, "a") as handle:
        handle.write('{"id": "x", "participant": "p1"}\nnot json\n')
    code, report = run(capsys, path, "--out", tmp_path / "h", "--levels", 2, "--model", "rule",
                       "--base-url", server.url)
    assert code == 0 and report["input"]["bad_lines"] == 2 and "l1.jsonl:9" in report["input"]["defects"][0]
