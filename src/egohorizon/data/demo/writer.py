"""Write a demo world to a folder, and make sure the default one exists (generated on first use).

Each file is written atomically (``schema.write_jsonl``: temp file + rename) and ``world.json``
last, so a folder with a ``world.json`` is a complete world. A file lock makes concurrent callers
(several test workers, a training run and a shell) generate it once and wait for each other.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path

from egohorizon.atomic_files import write_json_atomic
from egohorizon.data.demo.world import FILES, DemoWorld, read_demo_world
from egohorizon.schema import write_jsonl

log = logging.getLogger(__name__)

ENV_DIR = "EGOHORIZON_DEMO_DIR"
DEFAULT_PARTICIPANTS = 2
DEFAULT_WEEKS = 6


def default_demo_dir() -> Path:
    """``$EGOHORIZON_DEMO_DIR``, else ``<repo>/data/demo`` in a checkout, else ``~/.cache/egohorizon/demo``."""
    if os.environ.get(ENV_DIR):
        return Path(os.environ[ENV_DIR])
    repo = Path(__file__).resolve().parents[4]  # src/egohorizon/data/demo/writer.py -> repo
    if (repo / "pyproject.toml").is_file() and (repo / "src" / "egohorizon").is_dir():
        return repo / "data" / "demo"
    return Path.home() / ".cache" / "egohorizon" / "demo"


def generate_demo_world(out: str | Path | None = None, seed: int = 0, participants: int = DEFAULT_PARTICIPANTS,
                        weeks: int = DEFAULT_WEEKS, cue_switches: bool = False) -> Path:
    """Simulates the world and writes events.jsonl, recordings.jsonl, transcript.jsonl and
    world.json into ``out`` (created if needed; other files there are left alone). Returns ``out``.
    ``cue_switches`` also writes ``cues.jsonl`` (``egohorizon.data.demo.cues.switches``); the other files are
    the same either way."""
    return build_demo_world(out, seed=seed, participants=participants, weeks=weeks, cue_switches=cue_switches).path


def build_demo_world(out: str | Path | None = None, seed: int = 0, participants: int = DEFAULT_PARTICIPANTS,
                     weeks: int = DEFAULT_WEEKS, cue_switches: bool = False) -> DemoWorld:
    """Like ``generate_demo_world``, and returns the world as written, without reading it back."""
    from egohorizon.data.demo.generate import simulate_world

    out = Path(out) if out is not None else default_demo_dir()
    began = time.perf_counter()
    records, meta = simulate_world(seed=seed, participants=participants, weeks=weeks)
    out.mkdir(parents=True, exist_ok=True)
    (out / "world.json").unlink(missing_ok=True)  # the folder is incomplete until world.json is back
    write_jsonl(out / "events.jsonl", records.events)
    write_jsonl(out / "recordings.jsonl", records.recordings)
    write_jsonl(out / "transcript.jsonl", records.transcript)
    meta["counts"] = {"events": len(records.events), "recordings": len(records.recordings),
                      "utterances": len(records.transcript)}
    cues = None
    if cue_switches:  # only then: the default world.json stays byte for byte what it was
        from egohorizon.data.demo.cues import switches

        cues = switches.make_cues(records.events, seed)
        switches.write_cues(out, cues)
        meta["cue_switches"] = {**switches.settings(), "cues": len(cues)}
    meta["generation_s"] = round(time.perf_counter() - began, 2)
    write_json_atomic(out / "world.json", meta, indent=2)
    log.info("demo world written to %s in %.1f s (%d events, %d sessions)", out, meta["generation_s"],
             len(records.events), len(records.recordings))
    return DemoWorld(out, records.events, records.recordings, records.transcript, meta, cues=cues)


def _cue_settings_match(meta: dict, cue_switches: bool) -> bool:
    if not cue_switches:
        return "cue_switches" not in meta
    from egohorizon.data.demo.cues import switches

    recorded = dict(meta.get("cue_switches") or {})
    recorded.pop("cues", None)
    return recorded == switches.settings()


def is_current(path: Path, seed: int, participants: int, weeks: int, cue_switches: bool = False) -> bool:
    """Whether ``path`` holds a complete world made by this generator (version and code) with these
    arguments."""
    from egohorizon.data.demo.generate import GENERATOR_VERSION, code_digest

    try:
        meta = json.loads((path / "world.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (meta.get("version") == GENERATOR_VERSION and meta.get("code") == code_digest()
            and meta.get("seed") == seed and meta.get("weeks") == weeks
            and len(meta.get("participants", [])) == participants and all((path / f).is_file() for f in FILES)
            and _cue_settings_match(meta, cue_switches))


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    lock_path = path.parent / f".{path.name}.lock"
    with open(lock_path, "w") as handle:
        try:
            import fcntl
        except ImportError:  # not POSIX: no cross-process lock, generation is still atomic per file
            yield
            return
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def ensure_demo_world(path: str | Path | None = None, seed: int = 0, participants: int = DEFAULT_PARTICIPANTS,
                      weeks: int = DEFAULT_WEEKS, cue_switches: bool = False) -> Path:
    """Returns the world's folder, generating it first if it is missing, incomplete, or was made by
    another generator version or with other arguments (``cue_switches`` included)."""
    path = Path(path) if path is not None else default_demo_dir()
    if is_current(path, seed, participants, weeks, cue_switches):
        return path
    with _locked(path):
        if not is_current(path, seed, participants, weeks, cue_switches):  # another process may have just made it
            log.info("generating the demo world in %s (seed %d, %d participants, %d weeks%s)", path, seed,
                     participants, weeks, ", cue switches" if cue_switches else "")
            generate_demo_world(path, seed=seed, participants=participants, weeks=weeks, cue_switches=cue_switches)
    return path


def load_demo_world(path: str | Path | None = None) -> DemoWorld:
    """Loads a generated world; with no ``path``, the default one (generated first if needed). Here, not in
    ``world``, because the default one may need writing first (``world`` stays below ``writer``)."""
    return read_demo_world(ensure_demo_world() if path is None else path)


def ensure_recorded_demo_world(path: str | Path | None = None) -> Path:
    """Like ``ensure_demo_world`` for a folder given by the user (``--demo-dir``): a world already there
    is kept with the arguments its world.json records (one made by ``egohorizon demo --weeks 2`` stays
    2 weeks and is only regenerated as such, by a newer generator), where the defaults would overwrite
    it with a 6-week world under the events and points already built from it."""
    path = Path(path) if path is not None else default_demo_dir()
    try:
        meta = json.loads((path / "world.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ensure_demo_world(path)
    seed, weeks, people = meta.get("seed"), meta.get("weeks"), meta.get("participants")
    if not (isinstance(seed, int) and isinstance(weeks, int) and weeks >= 1 and isinstance(people, list) and people):
        return ensure_demo_world(path)
    return ensure_demo_world(path, seed=seed, participants=len(people), weeks=weeks,
                             cue_switches="cue_switches" in meta)
