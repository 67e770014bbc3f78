"""30-second windows, the unit a captioner sees and a shard stores: ``sample`` (frames, gaze, crops,
words and events of one window), ``text`` (the on-screen text read from a few of its frames)."""
