"""Zero-shot runs on imported benchmark items (issue 25, item 2: `egohorizon bench run`).

EgoMonth's sampling rule and prompt hand-checked against its Qwen3-VL-8B script; EgoMonth-format items
(`data convert egomonth`) over real first-person MP4 clips (H.264 and VP9, made here with PyAV from the
Aria frames in ../shared/data) answered end to end by the tiny VLM; a rerun and a resumed torn run give
the same bytes; a stand-in server with fixed replies checks the frames it is sent, both extraction
modes and the summary per task, level and difficulty by hand; a corrupt and a missing video; a blind run
of a toy text-only model through the project's loopback server (egohorizon.llm.server, in process)."""

from __future__ import annotations

import json
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from egohorizon import cli
from egohorizon.bench.prompts import egohorizon_prompt, paper_prompt
from egohorizon.bench.sampling import (
    VideoSpan,
    frame_plan,
    paper_frame_counts,
    paper_indices,
    uniform_indices,
)
from egohorizon.llm.images import IMAGE_MARK

# ------------------------------------------------------------------------------------- the sampling rule


def _spans(*seconds, fps=30.0):
    return [VideoSpan(frames=round(s * fps), fps=fps) for s in seconds]


@pytest.mark.parametrize("seconds, max_frames, counts", [
    ((1000,), 256, [256]),  # one long video: the budget
    ((900, 100), 256, [230, 24]),  # budgets int(0.9 * 256) = 230, int(0.1 * 256) = 25, rounded down to even
    ((60, 40), 256, [60, 40]),  # short videos: 1 fps, under their budgets (153, 102)
    ((2, 998), 256, [4, 254]),  # the floor of 4 (budget 0), more than 1 fps; 258 in all, as the script gives
    ((7,), 256, [6]),  # 7 s at 1 fps, rounded down to an even count (qwen_vl_utils' FRAME_FACTOR)
    ((500, 500, 1), 8, [4, 4, 4]),  # --max-frames 8: budgets 4, 4 and the floor 4
    ((500, 500), 2, [2, 2]),  # --max-frames 2: the floor becomes 2
    ((500,), 1, [1]),  # --max-frames 1: one frame, never zero
])
def test_paper_rule_frame_counts(seconds, max_frames, counts):
    assert paper_frame_counts(_spans(*seconds), max_frames) == counts


def test_paper_rule_at_least_four_per_video_at_most_its_frames():
    assert paper_frame_counts([VideoSpan(frames=3, fps=1.0), VideoSpan(frames=600, fps=1.0)]) == [2, 254]
    rng = np.random.default_rng(0)
    for _ in range(200):
        spans = _spans(*rng.uniform(5, 4000, size=rng.integers(1, 6)))
        counts = paper_frame_counts(spans)
        assert all(c >= 4 for c in counts) and sum(counts) <= 256 + 4 * len(counts)
        assert all(c % 2 == 0 and c <= max(4, s.duration + 1) for c, s in zip(counts, spans))


def test_paper_indices_are_qwen_vl_utils_linspace_rounded():
    import torch

    assert paper_indices(VideoSpan(frames=10, fps=1.0), 4) == [0, 3, 6, 9]
    assert paper_indices(VideoSpan(frames=8, fps=1.0), 3) == [0, 4, 7]  # 3.5 rounds to even, as torch does
    for frames, n in ((32, 8), (300, 256), (1001, 37), (12, 4), (40850, 256), (42874, 254)):  # the last two: float32
        expected = torch.linspace(0, frames - 1, n).round().long().tolist()
        assert paper_indices(VideoSpan(frames=frames, fps=4.0), n) == expected
    span = VideoSpan.of(300, 30.0, start=2.0, end=4.0)  # frames 60..120
    assert (span.first, span.frames) == (60, 61) and paper_indices(span, 3) == [60, 90, 120]


def test_uniform_rule_spreads_frames_over_the_videos_end_to_end():
    spans = [VideoSpan(frames=6, fps=1.0), VideoSpan(frames=2, fps=1.0)]
    assert uniform_indices(spans, 4) == [[1, 3, 5], [1]]  # middles of 4 parts of 8 s: 1, 3, 5 | 7 - 6 = 1
    assert [len(v) for v in uniform_indices(spans, 100)] == [6, 2]  # at most 1 fps
    assert frame_plan(spans, "uniform", 1) == [[4], []]


# ------------------------------------------------------------------------------------------- the prompts

QA_OPTIONS = ["A. In the car", "B. In the kitchen", "C. At the office", "D. In the garden"]


def test_paper_prompt_is_the_scripts_text():
    import re

    question = " <video>Where was I when I first opened the fridge? "
    options = [o[3:] for o in QA_OPTIONS]  # what `data convert egomonth` keeps
    # The script: clean_q + "\nOptions:\n" + "\n".join(item['options']) + "\nAnswer with ... only."
    clean_q = re.sub(r"<.*?>", "", question.strip()).strip()
    script = f"{clean_q}\nOptions:\n" + "\n".join(QA_OPTIONS) + "\nAnswer with the option letter (A, B, C, or D) only."
    assert paper_prompt(question, options) == script == (
        "Where was I when I first opened the fridge?\nOptions:\nA. In the car\nB. In the kitchen\n"
        "C. At the office\nD. In the garden\nAnswer with the option letter (A, B, C, or D) only.")
    assert paper_prompt(question, options, n_frames=2) == IMAGE_MARK * 2 + script  # the videos come first
    five = paper_prompt("What did c do?", ["a", "b", "c", "d", "e"])
    assert five.endswith("E. e\nAnswer with the option letter (A, B, C, D, or E) only.")


def test_egohorizon_prompt_is_the_projects_qa_prompt_with_video_times():
    from egohorizon.prompts.qa import render_qa_prompt

    options = [o[3:] for o in QA_OPTIONS]
    text = egohorizon_prompt("Where was I?", options, ["day01_a 0:00:05"])
    assert text.startswith("You see 1 first-person frames")
    assert f"[day01_a 0:00:05] {IMAGE_MARK}\n" in text and "asked on an unknown date" in text
    assert egohorizon_prompt("Where was I?", options) == render_qa_prompt("Where was I?", options, None, image_mark="")


# ---------------------------------------------------------------------------------------- data on disk

ARIA = "projectaria-tools-testdata/derived_frames"
ENCODERS = {"libx264": {"preset": "ultrafast"}, "libvpx-vp9": {"deadline": "realtime", "cpu-used": "8"}}


def _clip(path: Path, frames: list[Path], encoder: str, size=(96, 96), per_frame=4, fps=4, gop=None):
    """Each real frame shown for ``per_frame`` frames at ``fps``: a clip of len(frames) * per_frame / fps s."""
    import av
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as container:
        stream = container.add_stream(encoder, rate=fps)
        stream.width, stream.height, stream.pix_fmt = *size, "yuv420p"
        stream.options = ENCODERS[encoder]
        if gop:
            stream.codec_context.gop_size = gop
        for frame in frames:
            image = np.asarray(Image.open(frame).convert("RGB").resize(size))
            for _ in range(per_frame):
                container.mux(stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")))
        container.mux(stream.encode())


def _item(question, task, answer, videos, difficulty):
    return {"video_path": videos, "question": question, "options": QA_OPTIONS, "correct_options": answer,
            "task_type": task, "difficulty": difficulty, "video_id": videos[0].split("/")[-1]}


# (question, task, answer, videos, difficulty) and the stand-in server's fixed reply to it
ITEMS = [
    (("<video>Where was I when I first opened the fridge?", "Self-localization", "B", ["021/day01_a.mp4"], "easy"),
     "B"),
    (("Which object was next to the cup I held?", "Spatial Relation", "A", ["021/day01_a.mp4", "021/day01_b"],
      "hard"), "I think A or B"),
    (("On which weekday do I usually cook?", "Habit Inference", "C", ["021/day01_b.mp4", "021/day09.mp4"], "easy"),
     "c"),
    (("How many different objects did I see?", "Object Counting", "D", ["021/day09.mp4"], "hard"),
     "The answer is D."),
    (("Where did I go after cooking?", "Self-localization", "B", ["021/day01_a.mp4", "021/day09.mp4"], "medium"),
     "Based on the video, a person is cooking, so B"),
    (("When did I last water the plants?", "Event Time", "A", ["021/broken.mp4"], "easy"), "A"),
]


@pytest.fixture(scope="module")
def bench_data(tmp_path_factory, shared_data):
    """Real first-person clips (H.264 8 s, VP9 3 s, VP9 3 s from Aria gen2, one cut off) and the items'
    `data convert egomonth` folder; the same items without the broken one in a second folder."""
    tmp = tmp_path_factory.mktemp("bench")
    frames = shared_data / ARIA
    videos = tmp / "videos"
    _clip(videos / "021/day01_a.mp4", sorted(frames.glob("aea_camera-rgb_*.jpg")), "libx264")
    _clip(videos / "021/day01_b.mp4", sorted(frames.glob("adt_camera-rgb_*.jpg")), "libvpx-vp9", size=(128, 96))
    _clip(videos / "021/day09.mp4", sorted(frames.glob("gen2_camera-rgb_*.jpg")), "libvpx-vp9", size=(96, 72))
    whole = (videos / "021/day01_a.mp4").read_bytes()
    (videos / "021/broken.mp4").write_bytes(whole[: len(whole) // 2])  # its index (moov) was at the end
    folders = {}
    for name, items in (("all", ITEMS), ("good", ITEMS[:5])):
        qa = tmp / name / "021" / "QA.json"
        qa.parent.mkdir(parents=True)
        qa.write_text(json.dumps([_item(*spec) for spec, _ in items]), encoding="utf-8")
        assert cli.main(["data", "convert", "egomonth", str(qa), "--videos", str(videos),
                         "--out", str(tmp / f"{name}_dir")]) == 0
        folders[name] = tmp / f"{name}_dir"
    return tmp, videos, folders


@pytest.mark.parametrize("encoder", sorted(ENCODERS))
def test_frames_by_index_equal_a_full_decode_also_after_seeking(shared_data, tmp_path, encoder):
    import av

    from egohorizon.bench.video import probe, read_frames

    path = tmp_path / "clip.mp4"  # 18 s at 4 fps, a keyframe every 2 s: frames 3 s apart are reached by seeking
    _clip(path, sorted((shared_data / ARIA).glob("*camera-rgb_*.jpg"))[:9], encoder, per_frame=8, gop=8)
    info = probe(path)
    with av.open(str(path)) as container:
        every = [frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)]
    assert (info.frames, info.fps) == (len(every), 4.0) == (72, 4.0)
    for indices in ([0, 71], [5, 30, 31, 70], [13, 13, 14], list(range(0, 72, 7))):
        got = read_frames(path, indices, info)
        assert all(np.array_equal(frame, every[i]) for frame, i in zip(got, indices, strict=True)), indices
    assert read_frames(path, [40], info, long_side=48)[0].shape == (48, 48, 3)


def _bench(*argv) -> int:
    return cli.main(["bench", "run", *map(str, argv)])


def _rows(out: Path) -> list[dict]:
    return [json.loads(line) for line in (out / "items.jsonl").read_text(encoding="utf-8").splitlines()]


# -------------------------------------------------------------- end to end with the tiny VLM, resumable


@pytest.fixture(scope="module")
def tiny_vlm(tmp_path_factory):
    from egohorizon.backbones import TinyBackbone

    backbone = TinyBackbone(cache_dir=str(tmp_path_factory.mktemp("tiny")), hidden_size=32, intermediate_size=64,
                            num_layers=1, num_heads=2, num_kv_heads=1, vocab_size=320, vision_depth=1,
                            vision_hidden_size=16)
    backbone.prepare(corpus=lambda: [spec[0] + " " + " ".join(QA_OPTIONS) for spec, _ in ITEMS] + ["A", "B", "C"])
    return backbone.base_path


def test_tiny_vlm_end_to_end_rerun_and_resume_give_the_same_bytes(bench_data, tiny_vlm, tmp_path, capsys, caplog,
                                                                 monkeypatch):
    from egohorizon.llm.images import message_sample
    from egohorizon.llm.transformers_local import TransformersBackend

    seen = []  # what the model was given: the images of each prompt, decoded from their data URLs
    original = TransformersBackend._inputs

    def inputs(self, messages):
        seen.append([image.size for image in message_sample(messages)[1]])
        return original(self, messages)

    monkeypatch.setattr(TransformersBackend, "_inputs", inputs)
    caplog.set_level("INFO", logger="egohorizon.bench")
    _, _, folders = bench_data
    args = [folders["good"], "--model", tiny_vlm, "--max-frames", "4", "--long-side", "64", "--max-new-tokens", "6"]
    first = tmp_path / "first"
    assert _bench(*args, "--out", first) == 0
    printed = capsys.readouterr()
    rows = _rows(first)
    assert [r["id"] for r in rows] == [f"021/{k}" for k in range(5)]
    # --max-frames 4: one video 4 frames; two videos 4 each (the floor); frames from both codecs
    assert [r["n_frames"] for r in rows] == [4, 8, 8, 4, 8]
    # The model loaded first ("Hello", no images), then the frames reached it, 64 px on the long side.
    assert [len(sizes) for sizes in seen] == [0, 4, 8, 8, 4, 8]
    assert seen[2] == [(64, 64)] * 4 + [(64, 48)] * 4 and seen[4] == [(64, 48)] * 4
    assert rows[1]["frames"] == [{"video": "021/day01_a.mp4", "indices": [0, 10, 21, 31], "t": [0.0, 2.5, 5.25, 7.75]},
                                 {"video": "021/day01_b.mp4", "indices": [0, 4, 7, 11], "t": [0.0, 1.0, 1.75, 2.75]}]
    from egohorizon.metrics.extraction import extract

    for row, (spec, _) in zip(rows, ITEMS):
        assert (row["task"], row["gold"], row["difficulty"], row["blind"]) == (spec[1], spec[2], spec[4], False)
        assert row["status"] == "ok" and row["extraction"] == "egomonth-cs" and isinstance(row["text"], str)
        assert row["prediction"] == extract(row["text"], QA_OPTIONS, "egomonth-cs")
        assert row["strict"] == extract(row["text"], QA_OPTIONS, "strict")
        assert row["correct"] == (row["prediction"] == row["gold"])
    summary = json.loads((first / "summary.json").read_text())
    assert summary["items"] == 5 and summary["answered"] == 5 and summary["unfinished"] == []
    assert summary["scores"]["egomonth-cs"]["n"] == summary["scores"]["strict"]["n"] == 5
    assert set(summary["per_difficulty"]) == {"easy", "hard", "medium"}
    assert "frames: paper rule, max 4" in printed.out and "Avg" in printed.out and "items/s" in printed.err

    before = {name: (first / name).read_bytes() for name in ("items.jsonl", "summary.json")}
    assert _bench(*args, "--out", first) == 0  # nothing left to do
    assert {name: (first / name).read_bytes() for name in before} == before
    capsys.readouterr()

    # A run killed while writing its third line: two whole lines and half of the third.
    resumed = tmp_path / "resumed"
    resumed.mkdir()
    lines = before["items.jsonl"].splitlines(keepends=True)
    (resumed / "items.jsonl").write_bytes(b"".join(lines[:2]) + lines[2][: len(lines[2]) // 2])
    assert _bench(*args, "--out", resumed) == 0
    assert "cut off a partial last line" in caplog.text and "3 to go" in caplog.text
    assert {name: (resumed / name).read_bytes() for name in before} == before

    # A wrong model name ends before OUT is touched; another setting into the same folder is refused.
    assert _bench(*[tmp_path / "no-such-model" if a == tiny_vlm else a for a in args], "--out", tmp_path / "bad") == 2
    assert "no-such-model: no such folder" in capsys.readouterr().err and not (tmp_path / "bad").exists()
    assert _bench(*args[:-2], "--max-new-tokens", "5", "--out", first) == 2
    assert "max_new_tokens: 6 there, 5 now" in capsys.readouterr().err


# ----------------------------------------------- a stand-in server: frames sent, extraction, hand-checked


class FixedReplies:
    """An OpenAI-compatible endpoint whose reply is fixed per question; it keeps every request."""

    def __init__(self, replies: dict[str, str]):
        self.replies, self.requests = replies, []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(body)
                content = body["messages"][0]["content"]
                text = content if isinstance(content, str) else content[-1]["text"]
                reply = next(r for q, r in owner.replies.items() if q in text)
                data = json.dumps({"choices": [{"message": {"role": "assistant", "content": reply}}]}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def fixed_server():
    server = FixedReplies({spec[0].replace("<video>", ""): reply for spec, reply in ITEMS})
    yield server
    server.close()


def test_server_run_frames_extraction_and_summary_by_hand(bench_data, fixed_server, tmp_path, capsys):
    _, _, folders = bench_data
    out = tmp_path / "out"
    args = [folders["all"], "--model", "stand-in", "--base-url", fixed_server.url, "--long-side", "64",
            "--concurrency", "3", "--out", out]
    assert _bench(*args, "--max-failures", "0.2") == 0
    printed = capsys.readouterr().out
    rows = _rows(out)
    # 1 fps under the budget: day01_a 8 s -> 8 frames, day01_b and day09 3 s -> the floor 4
    assert [r["n_frames"] for r in rows] == [8, 12, 8, 4, 12, 0]
    sent = {r["messages"][0]["content"][-1]["text"].split("\n")[0]: r["messages"][0]["content"][:-1]
            for r in fixed_server.requests}
    assert len(fixed_server.requests) == 5  # the broken video's item is never sent
    for row, (spec, _) in zip(rows[:5], ITEMS):
        images = sent[spec[0].replace("<video>", "")]
        assert len(images) == row["n_frames"]
        assert all(p["type"] == "image_url" and p["image_url"]["url"].startswith("data:image/jpeg;base64,")
                   for p in images)
    first = next(r for r in fixed_server.requests if "fridge" in r["messages"][0]["content"][-1]["text"])
    assert first["messages"][0]["content"][-1]["text"] == paper_prompt(ITEMS[0][0][0], [o[3:] for o in QA_OPTIONS])
    assert first["max_tokens"] == 32 and first["temperature"] == 0.0

    assert [(r["prediction"], r["strict"]) for r in rows] == [("B", "B"), ("A", None), (None, "C"), ("D", "D"),
                                                              ("B", None), (None, None)]
    broken = rows[5]
    assert broken["status"] == "failed" and broken["failure"]["field"] == "evidence[0].video"
    assert broken["failure"]["file"].endswith("021/broken.mp4") and "cannot open video" in broken["failure"]["reason"]

    summary = json.loads((out / "summary.json").read_text())
    cs, strict = summary["scores"]["egomonth-cs"], summary["scores"]["strict"]
    # egomonth-cs: right on items 0, 1, 3, 4; tasks Self-localization 2/2, Spatial 1/1, Habit 0/1, Counting 1/1,
    # Event Time 0/1. strict: right on 0, 2, 3; Self-localization 1/2, Spatial 0, Habit 1, Counting 1, Event Time 0.
    assert (cs["Acc"], cs["Avg"], cs["invalid"]) == (pytest.approx(4 / 6), pytest.approx(3 / 5), 2)
    assert (strict["Acc"], strict["Avg"], strict["invalid"]) == (pytest.approx(3 / 6), pytest.approx(2.5 / 5), 3)
    assert cs["per_level"]["2"]["avg"] == pytest.approx(2 / 3) and cs["per_level"]["2"]["acc"] == pytest.approx(3 / 4)
    assert cs["per_level"]["1"]["acc"] == 0.0 and strict["per_level"]["1"]["acc"] == 1.0
    by = summary["per_difficulty"]
    assert by["easy"]["egomonth-cs"]["Acc"] == pytest.approx(1 / 3) and by["easy"]["strict"]["Acc"] == pytest.approx(2 / 3)
    assert by["hard"]["egomonth-cs"]["Acc"] == 1.0 and by["hard"]["strict"]["Avg"] == 0.5
    assert by["medium"]["egomonth-cs"]["Acc"] == 1.0 and by["medium"]["strict"]["Acc"] == 0.0
    assert summary["read_differently"] == 3 and summary["input_failures"][0]["id"] == "021/5"
    assert "egomonth-cs: Avg 0.6000 Acc 0.6667 invalid 2" in printed and "strict: Avg 0.5000 Acc 0.5000" in printed
    assert "input failures (scored invalid): 1" in printed
    # The lines are score qa predictions: the same figures from `score qa --extraction egomonth-cs`.
    assert cli.main(["score", "qa", "--gold", str(folders["all"] / "qa.jsonl"), "--pred", str(out / "items.jsonl"),
                     "--extraction", "egomonth-cs", "--out", str(tmp_path / "report.json")]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert (report["Acc"], report["Avg"], report["invalid"]) == (cs["Acc"], cs["Avg"], cs["invalid"])
    capsys.readouterr()

    # The default --max-failures (5%): the broken video fails the run, by file, after the summary is written.
    assert _bench(*args) == 2
    err = capsys.readouterr().err
    assert "1 of 6 items failed" in err and "broken.mp4" in err and "evidence[0].video" in err


def test_missing_video_is_refused_before_any_work(bench_data, fixed_server, tmp_path, capsys):
    _, videos, folders = bench_data
    partial = tmp_path / "videos"
    shutil.copytree(videos, partial)
    (partial / "021/day09.mp4").unlink()
    out = tmp_path / "out"
    assert _bench(folders["good"], "--model", "m", "--base-url", fixed_server.url, "--videos", partial,
                  "--out", out) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "3 missing video(s)" in err and "item '021/2': field 'evidence[1].video': '021/day09.mp4' not found" in err
    assert fixed_server.requests == [] and not (out / "items.jsonl").exists()


def test_egoschema_items_take_videos_five_letters_and_their_extraction(tmp_path, bench_data, capsys):
    _, videos, _ = bench_data
    questions = [{"q_uid": uid, "question": f"What did c do {k}?", **{f"option {i}": f"c does {i}" for i in range(5)}}
                 for k, uid in enumerate(("q1", "q2"))]
    (tmp_path / "q.json").write_text(json.dumps(questions))
    (tmp_path / "a.json").write_text(json.dumps({"q1": 2, "q2": 4}))
    assert cli.main(["data", "convert", "egoschema", "--questions", str(tmp_path / "q.json"), "--answers",
                     str(tmp_path / "a.json"), "--out", str(tmp_path / "es")]) == 0
    clips = tmp_path / "clips"
    clips.mkdir()
    for uid in ("q1", "q2"):
        shutil.copy(videos / "021/day09.mp4", clips / f"{uid}.mp4")
    server = FixedReplies({"do 0?": "C) c does 2", "do 1?": "C stops"})
    try:
        assert _bench(tmp_path / "es", "--model", "m", "--base-url", server.url, "--out", tmp_path / "out") == 2
        assert "field 'meta.videos_root': missing" in capsys.readouterr().err  # EgoSchema items carry no folder
        assert _bench(tmp_path / "es", "--model", "m", "--base-url", server.url, "--videos", clips,
                      "--out", tmp_path / "out") == 0
    finally:
        server.close()
    text = server.requests[0]["messages"][0]["content"][-1]["text"]
    assert text.endswith("E. c does 4\nAnswer with the option letter (A, B, C, D, or E) only.")
    rows = _rows(tmp_path / "out")
    assert [(r["extraction"], r["prediction"], r["correct"]) for r in rows] == [("egoschema", "C", True),
                                                                               ("egoschema", None, False)]


# ------------------------------------------------------------------- blind: a text-only model, no frames

CORPUS = ["Where was I when I first opened the fridge ? Options A B C D In the car kitchen office garden",
          "Answer with the option letter only . user assistant"] * 3


@pytest.fixture(scope="module")
def text_model(tmp_path_factory):
    """A toy text-only Llama (word-level tokenizer with a chat template), as tests/integration/test_llm_local.py makes."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("text_lm")
    raw = Tokenizer(models.WordLevel(unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.train_from_iterator(CORPUS, trainers.WordLevelTrainer(special_tokens=["<unk>", "<pad>", "<eos>"]))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=raw, unk_token="<unk>", pad_token="<pad>", eos_token="<eos>")
    tokenizer.chat_template = ("{% for m in messages %}{{ m['role'] }} {{ m['content'] }} {% endfor %}"
                               "{% if add_generation_prompt %}assistant {% endif %}")
    tokenizer.save_pretrained(folder)
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=512,
                         pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=tokenizer.eos_token_id)
    LlamaForCausalLM(config).save_pretrained(folder)
    return str(folder)


def test_blind_text_model_through_the_loopback_server_and_locally(bench_data, text_model, tmp_path, capsys):
    from egohorizon.llm import make_backend
    from egohorizon.llm.server import ChatServer

    _, _, folders = bench_data
    server = ChatServer(make_backend(text_model)).start()
    try:
        served = tmp_path / "served"
        assert _bench(folders["all"], "--model", "toy-text", "--base-url", server.url, "--blind",
                      "--max-new-tokens", "4", "--out", served) == 0  # blind: the broken video is never opened
    finally:
        server.close()
    assert server.requests == 6
    printed = capsys.readouterr().out
    assert "BLIND: no frames (text only)" in printed
    rows = _rows(served)
    assert all(r["blind"] and r["n_frames"] == 0 and r["frames"] == [] and r["status"] == "ok" for r in rows)
    summary = json.loads((served / "summary.json").read_text())
    assert summary["blind"] is True and summary["sampling"]["rule"] is None and summary["backend"] == "http"

    # In process, a text-only model is blind without being told; its replies equal the served ones.
    local = tmp_path / "local"
    assert _bench(folders["all"], "--model", text_model, "--max-new-tokens", "4", "--out", local) == 0
    assert "BLIND" in capsys.readouterr().out
    assert [(r["text"], r["blind"]) for r in _rows(local)] == [(r["text"], True) for r in rows]
