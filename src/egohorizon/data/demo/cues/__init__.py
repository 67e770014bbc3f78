"""Cue-driven switches of a demo world (issue 15): ``switches`` (the cues, announced in the frames a few
seconds ahead), ``matching`` (uncued training points matched to cued ones)."""
