"""`egohorizon caption` (issue 11, item 4) on shards built from the real Aria sample recordings: a loopback
OpenAI-compatible server (scripts/loopback_vlm_server.py, checking it receives JPEG data URLs) and a tiny
adapter trained here; valid L1 events with provenance, reruns as no-ops, failures counted and listed,
a killed run resumed without losing or duplicating a window, a sliced (Slurm array) run merged."""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from aria_sample_shards import build, ingested, shards  # noqa: F401 - fixtures
from toy_captioner import train_toy_captioner

from egohorizon.cli import main
from egohorizon.prompts import load_prompt
from egohorizon.schema import Event, read_jsonl

pytest.importorskip("projectaria_tools")

REPO = Path(__file__).resolve().parents[2]
SERVER = REPO / "scripts" / "loopback_vlm_server.py"


# ------------------------------------------------------------------------------------------------
# The loopback server (the shards of the real Aria sample recordings: tests/support/aria_sample_shards.py)
# ------------------------------------------------------------------------------------------------


@contextmanager
def loopback_server(*args: str, lifetime: float = 120):
    """scripts/loopback_vlm_server.py on 127.0.0.1 (a free port), stopped on exit; yields its base URL."""
    process = subprocess.Popen([sys.executable, str(SERVER), "--lifetime", str(lifetime), *args],
                               stdout=subprocess.PIPE, text=True)
    try:
        line = process.stdout.readline()
        assert line.startswith("PORT "), line
        yield f"http://127.0.0.1:{line.split()[1]}/v1"
    finally:
        process.terminate()
        process.wait(timeout=10)


def server_stats(url: str) -> dict:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/stats", timeout=10) as reply:
        return json.loads(reply.read())


def caption(shards: Path, out: Path, *args: str) -> int:  # noqa: F811
    return main(["caption", str(shards), "--out", str(out), "--no-progress", *args])


def printed_report(capsys) -> dict:
    """The run report the command printed (after whatever libraries print on import)."""
    out = capsys.readouterr().out
    return json.loads(out[out.index("{\n"):])


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def check_events(out: Path, provenance: dict) -> list[Event]:
    result = read_jsonl(out / "events.jsonl", Event)
    assert not result.defects, result.defects[:3]
    assert result.records
    for event in result.records:
        assert event.level == 1 and event.source == "caption"
        assert {k: event.meta[k] for k in provenance} == provenance
        assert event.id.startswith(event.meta["window"] + "_a")
    order = [(e.participant, e.start, e.end, e.id) for e in result.records]
    assert order == sorted(order)
    return result.records


# ------------------------------------------------------------------------------------------------
# Small pieces
# ------------------------------------------------------------------------------------------------


def test_images_become_jpeg_data_urls_where_the_prompt_marks_them(shared_data):
    from PIL import Image

    from egohorizon.backbones.collate import IMAGE_PLACEHOLDER
    from egohorizon.llm.images import IMAGE_MARK, message_sample, sample_messages
    from egohorizon.prompts.caption import IMAGE_MARK as PROMPT_MARK

    assert IMAGE_MARK == IMAGE_PLACEHOLDER == PROMPT_MARK
    frame = np.asarray(Image.open(next((shared_data / "projectaria-tools-testdata/derived_frames").glob("*.jpg")))
                       .convert("RGB").resize((160, 120)))
    crop = np.ascontiguousarray(frame[:32, :32])
    [message] = sample_messages(f"t=0s {IMAGE_MARK}\nclose-up: {IMAGE_MARK}\nwhat do I do?", [frame, crop])
    kinds = [part["type"] for part in message["content"]]
    assert kinds == ["text", "image_url", "text", "image_url", "text"]
    url = message["content"][1]["image_url"]["url"]
    assert url.startswith("data:image/jpeg;base64,")
    decoded = np.asarray(Image.open(__import__("io").BytesIO(base64.b64decode(url.split(",")[1]))))
    assert decoded.shape == frame.shape and np.abs(decoded.astype(int) - frame).mean() < 4
    text, images = message_sample([message])  # and back, for a local model
    assert text == f"t=0s {IMAGE_MARK}\nclose-up: {IMAGE_MARK}\nwhat do I do?" and len(images) == 2
    with pytest.raises(ValueError, match="marks 2 images but the sample has 1"):
        sample_messages(f"{IMAGE_MARK}{IMAGE_MARK}", [frame])


def test_results_log_cuts_a_torn_last_line_and_the_latest_line_of_a_window_counts(tmp_path, caplog):
    from egohorizon.pipelines.caption.results import ResultsLog, is_done

    path = tmp_path / "captions.jsonl"
    first = {"window": "w1", "status": "failed", "failure": {"kind": "model", "reason": "HTTP 503"}}
    path.write_text(json.dumps(first) + "\n" + json.dumps({"window": "w2", "status": "ok"}) + "\n"
                    + json.dumps({"window": "w1", "status": "ok"}) + "\n" + '{"window": "w3", "sta')
    with ResultsLog(path) as log:
        records = log.open()
        assert sorted(records) == ["w1", "w2"] and records["w1"]["status"] == "ok"
        assert path.read_text().endswith('"status": "ok"}\n')  # the torn line is gone, the rest kept
        log.append({"window": "w3", "status": "ok"})
        with pytest.raises(Exception, match="another running job"):  # one writer per file
            ResultsLog(path).open()
    assert "partial last line" in caplog.text
    assert [r["window"] for r in lines(path)] == ["w1", "w2", "w1", "w3"]
    assert not is_done(first) and is_done(first | {"failure": {"kind": "output", "reason": "prose"}})
    assert not is_done(first | {"failure": {"kind": "output", "reason": "prose"}}, retry_failed=True)


def test_shard_slices_cover_every_shard_once():
    from egohorizon.errors import ConfigError
    from egohorizon.pipelines.caption.job import parse_slice, slice_entries

    entries = [{"path": f"p/{i:02d}.tar"} for i in (5, 3, 0, 1, 4, 2, 6)]
    parts = [slice_entries(entries, parse_slice(f"{i}/3")) for i in range(3)]
    assert [[e["path"] for e in p] for p in parts] == [["p/00.tar", "p/01.tar"], ["p/02.tar", "p/03.tar"],
                                                       ["p/04.tar", "p/05.tar", "p/06.tar"]]
    for bad in ("3/3", "x", "1/0"):
        with pytest.raises(ConfigError, match="shard-slice"):
            parse_slice(bad)


def test_caption_subcommands_parse_with_and_without_run():
    from egohorizon.cli import build_parser

    parser = build_parser()
    job = parser.parse_args(["caption", "data/shards", "--out", "o", "--model", "m", "--shard-slice", "1/4"])
    assert job.handler.__name__ == "run_caption" and job.shards == "data/shards" and job.shard_slice == "1/4"
    assert parser.parse_args(["caption", "run", "s", "--out", "o", "--model", "m"]).shards == "s"
    assert parser.parse_args(["caption", "merge", "o"]).handler.__name__ == "run_merge"
    audit = parser.parse_args(["caption", "audit", "e.jsonl", "--shards", "s", "--out", "a.html", "--n", "5"])
    assert audit.handler.__name__ == "run_audit" and audit.n == 5


# ------------------------------------------------------------------------------------------------
# The job against a loopback OpenAI-compatible server
# ------------------------------------------------------------------------------------------------

# the bundled caption prompt's own version (3 since the on-screen text line)
BUNDLED_PROMPT = {"name": "caption", "version": load_prompt("caption").version}
HTTP_PROVENANCE = {"model": "loopback-vlm", "adapter": None, "prompt": BUNDLED_PROMPT, "seed": 0}


def test_http_job_writes_valid_events_and_reruns_as_a_no_op(shards, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "out"
    with loopback_server("--latency", "0.05") as url:
        assert caption(shards, out, "--model", "loopback-vlm", "--base-url", url, "--frames-per-window", "4") == 0
        stats = server_stats(url)
        results = {r["window"]: r for r in lines(out / "captions.jsonl")}
        assert len(results) == len(lines(out / "captions.jsonl")) == 6
        done = {w: r for w, r in results.items() if r["status"] == "ok"}
        assert sorted(r["participant"] for r in done.values()) == ["adt", "aea1", "g2"]
        skipped = [r for r in results.values() if r["status"] == "skipped"]
        assert len(skipped) == 3 and all("no frames" in r["failure"]["reason"] for r in skipped)
        # The server got every window's frames (at most 4) and its close-up (where there is gaze: not in the
        # Gen2 sample) as JPEG data URLs.
        assert stats["requests"] == stats["ok"] == 3 and stats["bad_requests"] == 0
        assert [r["crop"] for r in sorted(done.values(), key=lambda r: r["participant"])] == [True, True, False]
        assert stats["images"] == sum(len(r["frames"]) + r["crop"] for r in done.values())
        assert all(len(r["frames"]) <= 4 for r in done.values())
        events = check_events(out, HTTP_PROVENANCE)
        assert len(events) == 6  # two canned actions per window, at absolute times
        for event in events:
            window = results[event.meta["window"]]
            assert window["start"] <= event.start < event.end <= window["end"] + 1e-6
        scenes = lines(out / "scenes.jsonl")
        assert len(scenes) == 3 and all(s["meta"]["prompt"] == BUNDLED_PROMPT for s in scenes)
        report = printed_report(capsys)
        assert report["counts"] == {"ok": 3, "skipped": 3} and report["failed_windows"] == []

        before = {name: (out / name).read_bytes() for name in ("captions.jsonl", "events.jsonl", "scenes.jsonl")}
        assert caption(shards, out, "--model", "loopback-vlm", "--base-url", url, "--frames-per-window", "4") == 0
        assert server_stats(url)["requests"] == 3  # nothing asked again
        assert {name: (out / name).read_bytes() for name in before} == before
        assert printed_report(capsys)["already_done"] == 6

        # Another model into the same folder would mix captioners: refused, with what to do (since issue 36 by
        # the folder's marker, before the model is asked anything).
        assert caption(shards, out, "--model", "another-vlm", "--base-url", url) == 2
        err = capsys.readouterr().err
        assert "model: 'loopback-vlm' there, 'another-vlm' now" in err and "give --out another folder" in err

    # The audit page (issue 11, item 6) reads these events and shards.
    assert main(["caption", "audit", str(out / "events.jsonl"), "--shards", str(shards), "--n", "2",
                 "--out", str(tmp_path / "audit.html"), "--wrong", "1"]) == 0
    assert (tmp_path / "audit.html").stat().st_size > 0


def corrupt_one_frame(shards: Path, out: Path) -> str:  # noqa: F811
    """A copy of the shard folder where one window's first frame is not a JPEG any more."""
    import shutil
    import tarfile

    shutil.copytree(shards, out)
    tar_path = next(p for p in sorted(out.rglob("*.tar")) if "adt" in p.name)
    members = []
    with tarfile.open(tar_path) as tar:
        for member in tar:
            members.append((member, tar.extractfile(member).read()))
    with tarfile.open(tar_path, "w") as tar:
        for member, data in members:
            if member.name.endswith(".f000.jpg"):
                data = data[:100] + bytes(len(data) - 100)
            tar.addfile(member, __import__("io").BytesIO(data))
    return next(m.name for m, _ in members if m.name.endswith(".f000.jpg")).split(".")[0]


def test_failures_are_counted_listed_and_retried_only_when_worth_it(shards, tmp_path, capsys):  # noqa: F811
    bad = tmp_path / "shards"
    corrupt = corrupt_one_frame(shards, bad)
    out = tmp_path / "out"
    # aea1's window has 8 frames, g2's and adt's 3: aea1's request fails (HTTP 400), g2's answer is prose.
    with loopback_server("--latency", "0.02", "--fail-pattern", "These are 8 ",
                         "--garbage-pattern", "These are 3 ") as url:
        args = ["--model", "loopback-vlm", "--base-url", url, "--retries", "0"]
        # 3 of 3 tried windows fail: above the default 5 %, the job stops with a message, not a traceback.
        assert caption(bad, out, *args) == 2
        err = capsys.readouterr().err
        assert "3 of 3 windows failed" in err and "--max-failures" in err and "Traceback" not in err
        assert corrupt in err and "corrupt_image" in err
        kinds = {r["window"]: r["failure"]["kind"] for r in lines(out / "captions.jsonl") if r["status"] == "failed"}
        assert sorted(kinds.values()) == ["input", "model", "output"] and kinds[corrupt] == "input"
        garbage = next(r for r in lines(out / "captions.jsonl") if r["failure"]["kind"] == "output")
        assert garbage["raw"] == "Sorry, I cannot describe these pictures."  # the answer is kept
        assert not (out / "events.jsonl").exists()

        # A rerun retries only the model failure; with a threshold above it, the job finishes and lists it.
        assert caption(bad, out, *args, "--max-failures", "1") == 0
        report = printed_report(capsys)
        assert report["attempted"] == 1 and len(report["failed_windows"]) == 1
        assert "aea1" in report["failed_windows"][0] and "HTTP 400" in report["failed_windows"][0]
        assert server_stats(url)["requests"] == 2 + 1  # the corrupt window never reached the server
        assert (out / "events.jsonl").read_text() == ""  # no window captioned: no events, but the file
        run = json.loads((out / "caption_run.json").read_text())
        assert run["failures"][0]["kind"] == "model" and run["settings"]["frames_per_window"] == 8
        # --retry-failed also asks again for the prose answer (and still skips nothing it need not).
        assert caption(bad, out, *args, "--max-failures", "1", "--retry-failed") == 0
        assert printed_report(capsys)["attempted"] == 3


@pytest.mark.slow
def test_a_request_timeout_fails_its_window_with_the_reason(shards, tmp_path, capsys):  # noqa: F811
    with loopback_server("--latency", "3") as url:
        assert caption(shards, tmp_path / "out", "--model", "m", "--base-url", url, "--timeout", "0.5",
                       "--retries", "0", "--max-failures", "1") == 0
    report = printed_report(capsys)
    assert len(report["failed_windows"]) == 3 and all("timed out" in f for f in report["failed_windows"])


# ------------------------------------------------------------------------------------------------
# Killed midway, resumed; sliced like a Slurm array and merged
# ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def short_window_shards(ingested, tmp_path_factory) -> Path:  # noqa: F811
    """0.1 s windows: the recordings' 14 frames make 7 windows, enough to stop a run in the middle."""
    return build(ingested, tmp_path_factory.mktemp("short") / "shards", "--window", "0.1")


def _job_command(shards: Path, out: Path, url: str) -> list[str]:  # noqa: F811
    return [sys.executable, "-m", "egohorizon.cli", "caption", str(shards), "--out", str(out), "--model",
            "loopback-vlm", "--base-url", url, "--concurrency", "2", "--no-progress"]


@pytest.mark.slow
def test_killed_midway_and_restarted_loses_and_duplicates_nothing(short_window_shards, tmp_path):
    out = tmp_path / "out"
    with loopback_server("--latency", "0.6", "--concurrency", "2") as url:
        job = subprocess.Popen(_job_command(short_window_shards, out, url), stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        results = out / "captions.jsonl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not results.exists() or results.read_text().count("\n") < 3):
            time.sleep(0.05)
        os.kill(job.pid, signal.SIGKILL)  # no chance to clean up: requests in flight are lost
        job.wait(timeout=10)
        finished = lines(results)
        assert 3 <= len(finished) < 7, "the job was not stopped in the middle"
        assert not (out / "events.jsonl").exists()
        subprocess.run(_job_command(short_window_shards, out, url), check=True, timeout=120,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stats = server_stats(url)
    records = lines(results)
    windows = [r["window"] for r in records]
    assert len(windows) == len(set(windows)) == 7  # each window exactly once
    assert records[:len(finished)] == finished  # the first run's lines are kept as they were
    assert all(r["status"] == "ok" for r in records)
    assert 7 <= stats["requests"] <= 7 + 2  # at most the requests in flight at the kill were sent twice
    events = check_events(out, HTTP_PROVENANCE)
    assert {e.meta["window"] for e in events} == set(windows)


@pytest.mark.slow
def test_slurm_array_slices_and_merge_equal_one_run(short_window_shards, tmp_path):
    whole, sliced = tmp_path / "whole", tmp_path / "sliced"
    with loopback_server("--latency", "0.02") as url:
        assert caption(short_window_shards, whole, "--model", "loopback-vlm", "--base-url", url) == 0
        env = {**os.environ, "EGOHORIZON_PYTHON": sys.executable, "SLURM_ARRAY_TASK_MAX": "1"}
        for task in ("0", "1", "1"):  # task 1 twice: a requeued task redoes nothing
            subprocess.run(["bash", str(REPO / "slurm" / "caption.sbatch"), str(short_window_shards), str(sliced),
                            "--model", "loopback-vlm", "--base-url", url], env={**env, "SLURM_ARRAY_TASK_ID": task},
                           check=True, cwd=REPO, timeout=120, stdout=subprocess.DEVNULL)
        assert server_stats(url)["requests"] == 7 + 7
    parts = sorted(p.name for p in sliced.glob("captions.part-*.jsonl"))
    assert parts == ["captions.part-0000-of-0002.jsonl", "captions.part-0001-of-0002.jsonl"]
    assert sum(len(lines(sliced / p)) for p in parts) == 7
    subprocess.run(["bash", str(REPO / "slurm" / "caption.sbatch"), "--merge", str(sliced)], check=True, cwd=REPO,
                   env={**os.environ, "EGOHORIZON_PYTHON": sys.executable}, timeout=60, stdout=subprocess.DEVNULL)
    for name in ("events.jsonl", "scenes.jsonl"):
        assert (sliced / name).read_bytes() == (whole / name).read_bytes()


# ------------------------------------------------------------------------------------------------
# A trained adapter (local transformers)
# ------------------------------------------------------------------------------------------------

ACTION = "I look around the room"
TARGET = json.dumps({"start": 0, "end": 30, "action": ACTION})


def train_tiny_adapter(shards: Path, folder: Path) -> Path:  # noqa: F811
    """The tiny Qwen2.5-VL captioner with LoRA on language and vision, trained for seconds on the Aria
    windows (their prompts, rendered by caption_sample, -> one timed action) and saved as train.py does."""
    from webdataset.tariterators import group_by_keys, tar_file_expander, url_opener

    from egohorizon.data.shards.encode import decode_window
    from egohorizon.data.shards.index import ShardIndex
    from egohorizon.prompts.caption import caption_sample

    samples = []
    for url in ShardIndex.load(shards).urls():
        for raw in group_by_keys(tar_file_expander(url_opener([{"url": url}]))):
            window = decode_window(raw)
            if window.frames:
                samples.append({**caption_sample(window.meta, window.frames, window.crops, 2), "target": TARGET})
    module, _ = train_toy_captioner(samples, folder, [TARGET] * 5, steps=60, generation={"max_new_tokens": 40},
                                    adapter_metadata={"data": {"frames_per_window": 2}})
    return module.save_adapter(folder / "caption.adapter")


@pytest.mark.slow
def test_trained_adapter_captions_the_aria_windows(shards, tmp_path, capsys):  # noqa: F811
    adapter = train_tiny_adapter(shards, tmp_path)
    meta = json.loads((adapter / "egohorizon_adapter.json").read_text())
    out = tmp_path / "out"
    assert caption(shards, out, "--model", str(adapter), "--batch-size", "2") == 0
    report = printed_report(capsys)
    assert report["counts"] == {"ok": 3, "skipped": 3} and report["generation_s"] > 0
    provenance = {"model": meta["model_id"], "adapter": str(adapter.resolve()),
                  "prompt": {"name": "caption", "version": meta["prompt"]["version"]}, "seed": 0}
    events = check_events(out, provenance)
    assert [e.text for e in events] == [ACTION] * 3  # the trained caption, one per window with frames
    results = [r for r in lines(out / "captions.jsonl") if r["status"] == "ok"]
    assert all(len(r["frames"]) == 2 for r in results)  # the adapter's own frame count
    before = (out / "events.jsonl").read_bytes()
    assert caption(shards, out, "--model", str(adapter)) == 0
    assert printed_report(capsys)["attempted"] == 0
    assert (out / "events.jsonl").read_bytes() == before


# ---------------------------------------------------------------------------------------------
# Another task's adapter (issue 22, item 14)
# ---------------------------------------------------------------------------------------------


def fake_adapter(folder: Path, prompt: str, task: str | None = None) -> Path:
    """The files choose_model reads (no weights: the refusal comes before any model loads)."""
    folder.mkdir(parents=True)
    (folder / "adapter_config.json").write_text("{}")
    meta = {"model_id": "tiny", "prompt": {"name": prompt, "version": "3"}, "data": {}}
    (folder / "egohorizon_adapter.json").write_text(json.dumps(meta | ({"task": task} if task else {})))
    (folder / f"{prompt}.txt").write_text("# version: 3\nForecast {level_name}\n")
    return folder


def test_caption_and_abstract_refuse_a_forecast_adapter_before_loading_it(tmp_path, capsys):
    run = tmp_path / "forecast_run"  # a run folder: its last adapter; an old one, known by its prompt's name
    adapter = fake_adapter(run / "checkpoints" / "last.adapter", "forecast")
    code = main(["caption", "run", str(tmp_path / "shards"), "--out", str(tmp_path / "c"), "--model", str(run)])
    err = capsys.readouterr().err
    assert code == 2
    assert (f"the adapter in {run} ({adapter.resolve()}) was trained for the forecast task; caption needs a "
            "caption adapter (train.py experiment=caption_...)") in err
    visual = fake_adapter(tmp_path / "v.adapter", "my_prompt", task="forecast")  # the task it records wins
    code = main(["abstract", str(tmp_path / "l1.jsonl"), "--out", str(tmp_path / "h"), "--model", str(visual)])
    err = capsys.readouterr().err
    assert code == 2 and (f"the adapter {visual} was trained for the forecast task; abstract needs an abstract "
                          "adapter (train.py task=abstract experiment=abstract_...)") in err
