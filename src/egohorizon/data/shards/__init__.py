"""WebDataset shards of 30-second window samples: writer, index, streaming pipeline, verification.

- ``sources``: recordings (ingested Aria/MP4, or the demo world) as lazily loaded frames + words + events
- ``writer``:  sources -> shards grouped by participant and day, resumable, de-identified
- ``index``:   index.json (sample counts, days, sizes, schema version, de-id counts)
- ``encode``:  the tar layout of one sample, written and read back
- ``stages`` / ``stream``: the streaming pipeline of named stages with skip counters
- ``verify``:  read every sample of every shard and report what is wrong
"""
