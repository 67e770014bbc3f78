"""Recordings into the ingested form the shard writer reads (``ingested``: one folder per recording with
recording.json, frames.jsonl, frames/ and transcript.jsonl): ``aria/`` (Project Aria VRS + MPS gaze, hands,
pose, speech; ``aria/vrs_index``: the VRS file's own index, to tell a cut copy), ``video`` (MP4 and other
containers)."""
