"""`shards build` interrupted (Ctrl-C) and rerun equals a fresh build, and the build path never
imports torch (issue 22 items 12 and 17)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from test_shards_rebuild import assert_equals_fresh_build, build, ingest

from egohorizon.data.shards import writer


def interrupt_after(monkeypatch, calls: int) -> None:
    """Ctrl-C while the ``calls``-th window is being written (the signal raises KeyboardInterrupt there)."""
    real, count = writer.encode_window, {"n": 0}

    def encode(*args, **kwargs):
        count["n"] += 1
        if count["n"] == calls:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(writer, "encode_window", encode)


def test_an_interrupted_rebuild_leaves_no_index_and_the_rerun_equals_a_fresh_build(tmp_path, monkeypatch, capsys):
    ingested, out = tmp_path / "ingested", tmp_path / "shards"
    ingest(ingested, "s1")
    ingest(ingested, "s3")
    assert build(ingested, out) == 0
    ingest(ingested, "s2")  # between s1 and s3: every shard after s1's first changes
    with monkeypatch.context() as patch:
        interrupt_after(patch, 2)  # inside the 1st rewritten shard
        assert build(ingested, out) == 130
    assert "interrupted; rerun the same command to resume" in capsys.readouterr().err
    # No index describing the half-updated folder, no half shard, no temp file.
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert "index.json" not in files and not [f for f in files if ".tmp-" in f]
    # A writer killed outright (no Ctrl-C handling) leaves its temp file; the rerun removes it.
    dead = out / "p1" / "2023-11-14" / f".p1_2023-11-14_00001.tar.tmp-{_dead_pid()}"
    dead.write_bytes(b"half a shard")
    assert build(ingested, out) == 0
    assert not dead.exists()
    assert_equals_fresh_build(ingested, out, tmp_path)


def _dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_sigint_mid_build_then_rerun_in_a_process_without_torch(tmp_path):
    """A real SIGINT in the middle of the 2nd shard: exit 130, the message, no traceback; the rerun in
    the same process completes the build, and neither imported torch (or webdataset, which imports
    it): torch's OpenMP made tesseract's OCR use every core (sys time 40-50 s of a 107 s demo build)."""
    ingested, out = tmp_path / "ingested", tmp_path / "shards"
    ingest(ingested, "s1")
    ingest(ingested, "s2")
    args = ["shards", "build", "--ingested", str(ingested), "--out", str(out), "--samples-per-shard", "2",
            "--long-side", "32", "--crop-size", "16", "--deid", "off"]
    script = textwrap.dedent(f"""
        import json, os, signal, sys
        from egohorizon import cli
        from egohorizon.data.shards import writer

        real, count = writer.encode_window, [0]

        def encode(*args, **kwargs):
            count[0] += 1
            if count[0] == 4:
                os.kill(os.getpid(), signal.SIGINT)
            return real(*args, **kwargs)

        writer.encode_window = encode
        first = cli.main({args!r})
        writer.encode_window = real
        second = cli.main({args!r})
        print(json.dumps({{"rc": [first, second],
                          "heavy": sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "webdataset"))}}))
    """)
    result = subprocess.run([sys.executable, "-c", script], check=False, capture_output=True, text=True, timeout=300,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"}, cwd=tmp_path)
    assert "Traceback" not in result.stderr, result.stderr
    assert "interrupted; rerun the same command to resume" in result.stderr
    assert "OpenMP was loaded before tesseract" not in result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report == {"rc": [130, 0], "heavy": []}
    assert_equals_fresh_build(ingested, out, tmp_path)


@pytest.mark.parametrize("samples", [{"__key__": "p1_d_s1_w00000", "json": b"{}", "f000.jpg": b"\xff\xd8jpeg",
                                      "c000.jpg": b"crop", "txt": "text"}])
def test_tar_sink_writes_what_webdataset_writes(tmp_path, samples):
    """Shards built before the writer stopped using webdataset stay byte-identical (and are reused)."""
    import webdataset as wds

    with writer.TarSink(tmp_path / "ours.tar") as sink:
        sink.write(samples)
    reference = {k: v.encode() if isinstance(v, str) and k != "__key__" else v for k, v in samples.items()}
    with wds.TarWriter(str(tmp_path / "theirs.tar"), encoder=False, mtime=0) as sink:
        sink.write(reference)
    assert (tmp_path / "ours.tar").read_bytes() == (tmp_path / "theirs.tar").read_bytes()
