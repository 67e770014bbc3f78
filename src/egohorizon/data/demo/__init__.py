"""The demo world: simulated people over weeks, the embedded default data set.

    from egohorizon.data.demo import DEFAULT_DEMO_DIR, ensure_demo_world, generate_demo_world, load_demo_world
    path = ensure_demo_world(path=None, seed=0)   # generate if missing (or other version/arguments)
    world = load_demo_world(path)                 # -> DemoWorld
    world.events, world.recordings, world.transcript, world.meta
    image, gaze, confidence = world.render_frame(session_id, t, size=224)

How it is made: ``personas`` plan each calendar day as level-5 episodes; ``simulate`` expands them
through the act grammar (``grammar`` + the ``vocab/`` modules) into a timed tree; ``recording``
picks the recorded sessions; ``build`` turns them into events, recordings and transcript;
``render`` draws frames on demand. See docs/demo-world.md.

Only the standard library is imported here; PIL is imported when a frame is drawn.
"""

from egohorizon.data.demo.world import DemoWorld, read_demo_world
from egohorizon.data.demo.writer import (
                                         default_demo_dir,
                                         ensure_demo_world,
                                         ensure_recorded_demo_world,
                                         generate_demo_world,
                                         load_demo_world,
)

# The default folder as resolved at import; ensure_demo_world(None) re-reads $EGOHORIZON_DEMO_DIR.
DEFAULT_DEMO_DIR = default_demo_dir()

__all__ = ["DEFAULT_DEMO_DIR", "DemoWorld", "default_demo_dir", "ensure_demo_world", "ensure_recorded_demo_world",
           "generate_demo_world",
           "load_demo_world", "read_demo_world"]
