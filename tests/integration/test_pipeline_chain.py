"""egohorizon pipeline on two days of the demo world, with a loopback OpenAI-compatible server started
here that captions windows (requests with images: timed actions that depend on the frames' count and
the window) and abstracts runs of events (text requests: the rule of tests/integration/test_abstract_job.py).
A finished chain reruns as a no-op; a chain killed during the abstraction resumes without asking for
any caption again and ends with the same outputs as an uninterrupted run."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from test_abstract_job import rule_reply

from egohorizon.cli import main
from egohorizon.data.events.hierarchy import check_hierarchy
from egohorizon.schema import Event, load_jsonl

ACTIONS = ["open the laptop", "type an email", "drink some coffee", "read the screen", "open a drawer"]


def caption_reply(text: str, images: int) -> str:
    match = re.search(r"(\d+(?:\.\d+)?)-second window", text)
    window = float(match.group(1)) if match else 30.0
    speech = len(text) % len(ACTIONS)  # varies with the window's transcript, so events differ
    half = round(window / 2, 1)
    return "\n".join(json.dumps(line) for line in (
        {"start": 0, "end": half, "action": ACTIONS[speech]},
        {"start": half, "end": window, "action": ACTIONS[(speech + images) % len(ACTIONS)]}))


class ChainServer:
    def __init__(self, abstract_delay: float = 0.0):
        self.counts = {"caption": 0, "abstract": 0}
        self.abstract_delay = abstract_delay
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                content = body["messages"][0]["content"]
                if isinstance(content, list):
                    text = "".join(p.get("text", "") for p in content if p.get("type") == "text")
                    images = sum(p.get("type") == "image_url" for p in content)
                    kind, answer = "caption", caption_reply(text, images)
                else:
                    time.sleep(server.abstract_delay)
                    kind, answer = "abstract", rule_reply(content)
                with server.lock:
                    server.counts[kind] += 1
                data = json.dumps({"choices": [{"index": 0, "message": {"role": "assistant", "content": answer}}]})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data.encode())

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def server():
    s = ChainServer()
    yield s
    s.httpd.shutdown()


def chain_args(out: Path, url: str) -> list[str]:
    """Two demo days (three participant-days: one is a day off), every 180th 10 s window, tiny frames; too
    few days for a val day, which --allow-empty-splits accepts (the report says so)."""
    return ["pipeline", "--demo", "--demo-days", "2", "--out", str(out), "--window", "10", "--stride", "180",
            "--long-side", "64",
            "--crop-size", "32", "--captioner", "loop-vlm", "--captioner-base-url", url, "--abstractor", "loop-llm",
            "--abstractor-base-url", url, "--max-events", "12", "--overlap", "3", "--context", "5",
            "--val-frac", "0.3", "--test-frac", "0.3", "--abstract-concurrency", "1", "--allow-empty-splits"]


def outputs(run: Path) -> dict[str, bytes]:
    names = ["captions/events.jsonl", "hierarchy/events.jsonl", "points/splits.json",
             *(f"points/points_{s}.jsonl" for s in ("train", "val", "test"))]
    return {name: (run / name).read_bytes() for name in names}


def printed(capsys) -> dict:
    out = capsys.readouterr().out
    return json.loads(out[out.index("{\n"):])


@pytest.fixture(scope="module")
def reference(server, tmp_path_factory) -> tuple[Path, dict, dict]:
    """One uninterrupted chain: its folder, report and the server's request counts."""
    run = tmp_path_factory.mktemp("chain") / "run"
    assert main(chain_args(run, server.url)) == 0
    return run, json.loads((run / "report.json").read_text()), dict(server.counts)


@pytest.mark.slow
def test_the_demo_chain_runs_reports_and_reruns_as_a_no_op(reference, server, capsys):
    run, report, _ = reference
    stages = report["stages"]
    assert [stages[s]["status"] for s in stages] == ["ran"] * 5
    assert stages["caption"]["counts"]["ok"] == stages["caption"]["windows"] > 0
    abstract = stages["abstract"]
    assert abstract["days_ok"] == abstract["days"] > 0 and abstract["hierarchy_ok"]
    assert set(abstract["compression"]) == {"L1/L2", "L2/L3", "L3/L4", "L4/L5"}
    events = load_jsonl(run / "hierarchy" / "events.jsonl", Event)
    assert check_hierarchy(events).ok and {e.level for e in events} == {1, 2, 3, 4, 5}
    assert any(p["n"] for p in stages["points"]["points"])
    assert stages["points"]["participant_days"]["val"] == 0
    assert "no val points" in stages["points"]["warnings"][0]  # item 7: said, not silent
    before, counts = outputs(run), dict(server.counts)
    capsys.readouterr()
    assert main(chain_args(run, server.url)) == 0
    again = printed(capsys)
    assert [again["stages"][s]["status"] for s in again["stages"]] == ["skipped"] * 5
    assert server.counts == counts and outputs(run) == before


@pytest.mark.slow
def test_a_chain_killed_while_abstracting_resumes_with_identical_outputs(reference, server, tmp_path):
    reference_run, reference_report, _ = reference
    n_days = reference_report["stages"]["abstract"]["days"]
    run, command = tmp_path / "run", [sys.executable, "-m", "egohorizon.cli", *chain_args(tmp_path / "run", server.url)]
    server.abstract_delay = 0.05  # so that the kill lands between two days
    try:
        before = dict(server.counts)
        job = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        days = run / "hierarchy" / "days.jsonl"
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not (days.is_file() and days.read_text().count("\n") >= 1):
            time.sleep(0.02)
        os.kill(job.pid, signal.SIGKILL)
        job.wait(timeout=10)
        finished = days.read_text().count("\n")
        assert (run / "stages" / "caption.json").is_file() and not (run / "stages" / "abstract.json").exists()
        assert 1 <= finished < n_days, "the chain was not stopped in the middle of the abstraction"
        captions_asked = server.counts["caption"]
        result = subprocess.run(command, check=True, timeout=300, capture_output=True, text=True)
    finally:
        server.abstract_delay = 0.0
    report = json.loads(result.stdout[result.stdout.index("{\n"):])
    assert [report["stages"][s]["status"] for s in ("ingest", "shards", "caption")] == ["skipped"] * 3
    assert report["stages"]["abstract"]["status"] == report["stages"]["points"]["status"] == "ran"
    windows = reference_report["stages"]["caption"]["windows"]
    assert server.counts["caption"] - before["caption"] == captions_asked - before["caption"] == windows
    records = [json.loads(line) for line in days.read_text().splitlines()]
    assert len({r["day"] for r in records}) == len(records) == n_days  # each day abstracted once
    assert outputs(run) == outputs(reference_run)


def test_recordings_come_from_a_folder_or_a_manifest_with_clear_errors(tmp_path):
    from egohorizon.errors import ConfigError
    from egohorizon.pipelines.chain.settings import ChainSettings
    from egohorizon.pipelines.chain.stages import recording_entries

    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "recording.vrs").write_bytes(b"")
    (tmp_path / "a" / "clip.mp4").write_bytes(b"")
    entries = recording_entries(ChainSettings(recordings=str(tmp_path / "a"), participant="me"))
    assert [Path(e["path"]).name for e in entries] == ["recording.vrs", "clip.mp4"]  # sorted by path
    assert {e["participant"] for e in entries} == {"me"}
    manifest = tmp_path / "m.jsonl"
    manifest.write_text('{"path": "a/clip.mp4", "participant": "p2", "start_time": 5}\n\n{"file": "x"}\n')
    with pytest.raises(ConfigError, match=r"m\.jsonl:3: field 'path'"):
        recording_entries(ChainSettings(recordings=str(manifest)))
    manifest.write_text('{"path": "a/clip.mp4", "participant": "p2", "start_time": 5}\n')
    [entry] = recording_entries(ChainSettings(recordings=str(manifest)))
    assert entry == {"path": str(tmp_path / "a" / "clip.mp4"), "participant": "p2", "start_time": 5}
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="no .vrs or video files"):
        recording_entries(ChainSettings(recordings=str(tmp_path / "empty")))
    with pytest.raises(ConfigError, match="no such folder or manifest"):
        recording_entries(ChainSettings(recordings=str(tmp_path / "missing")))


def test_the_command_wants_recordings_or_demo(capsys):
    args = ["pipeline", "--out", "/tmp/unused", "--captioner", "c", "--abstractor", "a"]
    assert main(args) == 2
    assert "either RECORDINGS or --demo" in capsys.readouterr().err


def test_chosen_demo_days_only(tmp_path, server, capsys):
    """--demo-day keeps exactly the participant-days named (days the trained models held out); a day
    without a recording is a clear error."""
    def without_demo_days(out: Path) -> list[str]:
        args = chain_args(out, server.url)
        at = args.index("--demo-days")
        return args[:at] + args[at + 2:]

    args = without_demo_days(tmp_path / "bad")
    assert main([*args, "--demo-day", "p01/1999-01-01", "--until", "shards"]) == 2
    assert "--demo-day p01/1999-01-01: no demo recording" in capsys.readouterr().err
    args = without_demo_days(tmp_path / "one")
    assert main([*args, "--demo-day", "p02/2025-03-06", "--until", "caption"]) == 0
    events = load_jsonl(tmp_path / "one" / "captions" / "events.jsonl", Event)
    assert events and {(e.participant, e.day) for e in events} == {("p02", "2025-03-06")}


def test_the_points_stage_refuses_empty_held_out_splits(tmp_path):
    """Issue 22 item 7: two days (one history day, one test day) leave val without points; the stage
    refuses with the counts
    (no marker written, so a rerun with --allow-empty-splits runs it) and with the flag reports it."""
    from event_days import many_days

    from egohorizon.errors import DataError
    from egohorizon.pipelines.chain.runner import run_chain
    from egohorizon.pipelines.chain.settings import ChainSettings
    from egohorizon.pipelines.chain.stages import default_stages
    from egohorizon.schema import write_jsonl

    write_jsonl(tmp_path / "hierarchy" / "events.jsonl", many_days(n_days=2))
    points_stage = [s for s in default_stages() if s.name == "points"]
    settings = ChainSettings(points={"levels": [1], "ks": [1], "n_context": 5})
    with pytest.raises(DataError, match=r"no val points \(train 1 day\(s\) / \d+ point\(s\), val 0 day\(s\) "
                                        r"/ 0 point\(s\), test 1 day\(s\) .* needs at least 3 recorded days"):
        run_chain(tmp_path, settings, stages=points_stage)
    assert not (tmp_path / "stages" / "points.json").exists()
    settings.allow_empty_splits = True
    report = run_chain(tmp_path, settings, stages=points_stage)
    assert report["stages"]["points"]["participant_days"] == {"train": 1, "val": 0, "test": 1}
    assert "no val points" in report["stages"]["points"]["warnings"][0]


@pytest.mark.slow
def test_each_commands_output_is_the_next_commands_input(reference, server, tmp_path, capsys):
    """Issue 22 item 19: the caption job's output is scored by `score captions` as it is (its folder or its
    captions.jsonl, gold from the shard folder it captioned), and caption -> abstract -> points runs
    through the CLI on each command's own output."""
    run, report, _ = reference
    windows = report["stages"]["caption"]["windows"]
    for pred in (run / "captions", run / "captions" / "captions.jsonl"):
        assert main(["score", "captions", "--gold", str(run / "shards"), "--pred", str(pred), "--embedder", "exact",
                     "--out", str(tmp_path / "captions.json")]) == 0
        inputs = json.loads((tmp_path / "captions.json").read_text())["inputs"]
        assert inputs["n_pred"] == windows and inputs["missing"] == 0 and inputs["n_gold"] > 0
        assert inputs["unknown"] == windows - inputs["n_gold"]  # windows without gold actions are not scored
    # One day's captions against the whole shard folder: --only-predicted, and the baseline from the other days.
    results = [json.loads(line) for line in (run / "captions" / "captions.jsonl").read_text().splitlines()]
    day = (results[0]["participant"], results[0]["day"])
    one_day = tmp_path / "one_day.jsonl"
    one_day.write_text("".join(json.dumps(r) + "\n" for r in results if (r["participant"], r["day"]) == day))
    capsys.readouterr()
    args = ["score", "captions", "--gold", str(run / "shards"), "--pred", str(one_day), "--embedder", "exact",
            "--out", str(tmp_path / "day.json")]
    assert main(args) == 0
    assert "have no prediction" in capsys.readouterr().err  # the other days' windows, counted
    assert main([*args, "--train-gold", str(run / "shards")]) == 2  # all days scored: none left to train on
    assert "every day of these shards is scored here" in capsys.readouterr().err
    assert main([*args, "--train-gold", str(run / "shards"), "--only-predicted"]) == 0
    scored = json.loads((tmp_path / "day.json").read_text())
    assert scored["inputs"]["missing"] == 0 and scored["inputs"]["left_out_unpredicted"] > 0
    assert scored["inputs"]["train_gold_days"] == 2  # the reference run's other two participant-days
    assert scored["baselines"]["most_frequent"]["overall"]["n"] > 0
    # caption -> abstract -> points, each on the previous command's output.
    assert main(["abstract", str(run / "captions" / "events.jsonl"), "--out", str(tmp_path / "hierarchy"),
                 "--model", "loop-llm", "--base-url", server.url, "--max-events", "12", "--overlap", "3",
                 "--concurrency", "1"]) == 0
    assert main(["points", "--events", str(tmp_path / "hierarchy" / "events.jsonl"), "--out",
                 str(tmp_path / "points"), "--context", "5", "--min-history-days", "1", "--val-frac", "0.3",
                 "--test-frac", "0.3", "--allow-empty-splits"]) == 0
    assert (tmp_path / "points" / "points_test.jsonl").read_text()
