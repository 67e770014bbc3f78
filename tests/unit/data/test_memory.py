"""The leakage-safe memory (issue 13): the frame catalog reads the right frames, search equals a brute
force over the past, and nothing at or after the query time is ever returned or sampled (property)."""

from __future__ import annotations

import tarfile

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from egohorizon.data.demo import ensure_demo_world, load_demo_world
from egohorizon.data.shards.encode import decode_jpeg
from egohorizon.memory import FrameCatalog, MemoryIndex, WordEmbedder, retrieved, uniform


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return load_demo_world(ensure_demo_world(tmp_path_factory.mktemp("world"), seed=0, participants=1, weeks=1))


@pytest.fixture(scope="module")
def shards(world, tmp_path_factory):
    from egohorizon.data.shards.sources import demo_sources
    from egohorizon.data.shards.writer import build_shards
    from egohorizon.data.windows.sample import WindowConfig

    recordings = sorted(world.recordings, key=lambda r: r.start)[:3]
    out = tmp_path_factory.mktemp("shards")
    build_shards(demo_sources(world, frame_size=32, recordings=recordings), out,
                 config=WindowConfig(long_side=32, crop_size=8, stride=25), deid="off")
    return out


@pytest.fixture(scope="module")
def catalog(shards):
    return FrameCatalog.build(shards)


@pytest.fixture(scope="module")
def memory(world, catalog):
    last = max(w.end for w in catalog.windows_before("p01", float("inf")))
    events = [e for e in world.events if e.start < last + 3600]
    return MemoryIndex.from_sources(events, catalog, embed=WordEmbedder(),
                                    frame_embedder=lambda ims: np.stack([im.mean((0, 1)) for im in ims]))


def test_catalog_reads_the_frames_the_tar_holds(shards, catalog):
    path = next(shards.rglob("*.tar"))
    with tarfile.open(path) as tar:
        member = next(m for m in tar if m.name.endswith(".f003.jpg"))
        expected = decode_jpeg(tar.extractfile(member).read())
        key = member.name.split(".")[0]
    window = catalog.window(key)
    got = catalog.read("p01", np.array([window.first_frame + 3]))[0]
    assert np.array_equal(got, expected)
    assert catalog.nbytes() == 28 * sum(w.n_frames for w in catalog.windows_before("p01", float("inf")))


def test_search_equals_brute_force(memory):
    entries = memory.before("p01", float("inf"))
    t = entries[len(entries) // 2].end
    query = "make a coffee"
    hits = memory.search("p01", t, query, k=5)
    embed = WordEmbedder()
    q = embed([query])[0]
    past = [e for e in entries if e.end < t]
    scores = embed([e.text for e in past]) @ q
    best = sorted(scores, reverse=True)[:5]
    assert [round(h.score, 5) for h in hits] == [round(float(s), 5) for s in best]


def _span(catalog):
    windows = catalog.windows_before("p01", float("inf"))
    return windows[0].start - 60, windows[-1].end + 60


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(frac=st.floats(min_value=0, max_value=1), budget=st.integers(min_value=0, max_value=40),
       query=st.sampled_from(["coffee", "laptop e-mail", "walk to the tram", "read a paper", ""]),
       k=st.integers(min_value=1, max_value=30))
def test_nothing_at_or_after_the_query_time_is_returned(catalog, memory, frac, budget, query, k):
    lo, hi = _span(catalog)
    t = lo + frac * (hi - lo)
    for hit in memory.search("p01", t, query or None, k=k):
        assert hit.entry.end < t
    assert all(e.end < t for e in memory.before("p01", t))
    for selection in (uniform(catalog, "p01", t, budget),
                      retrieved(catalog, memory, "p01", t, query, budget, notes=k)):
        assert len(selection.rows) <= budget
        assert np.all(selection.times < t)
        assert np.all(catalog.frame_times("p01", selection.rows) < t)
        assert all(n.end < t for n in selection.notes)


def test_query_time_on_an_entry_end_excludes_it(memory):
    entry = memory.before("p01", float("inf"))[10]
    hits = memory.search("p01", entry.end, entry.text, k=1000)
    assert entry not in [h.entry for h in hits]
    assert entry in [h.entry for h in memory.search("p01", entry.end + 1e-3, entry.text, k=1000)]


def test_uniform_spreads_over_the_whole_past(catalog):
    _, hi = _span(catalog)
    n = catalog.n_frames_before("p01", hi)
    selection = uniform(catalog, "p01", hi, 10)
    assert len(selection.rows) == 10 and selection.rows[0] < n / 10 and selection.rows[-1] >= n * 0.9
    assert list(selection.times) == sorted(selection.times)


def test_image_vectors_steer_window_search(catalog, memory):
    window = catalog.windows_before("p01", float("inf"))[1]
    image = np.stack([im.mean((0, 1)) for im in catalog.read("p01", np.array([window.first_frame]))]).mean(0)
    hits = memory.search("p01", float("inf"), None, k=1, kinds=["window"], query_image=image)
    assert hits and hits[0].entry.kind == "window"
