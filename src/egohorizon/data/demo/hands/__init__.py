"""Demo-world hand clips (issue 14): ``clips`` (scripts, hand motion, gold boxes and segments),
``render`` (a frame of a clip, drawn on demand)."""
