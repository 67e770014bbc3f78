"""De-identification, the stage every real frame and transcript passes before a shard stores it: faces
blurred (``faces``), sensitive on-screen text masked (``screen_text``) and spoken (``speech``), by one
classifier of sensitive text (``sensitive``); ``deid`` puts them together. Here, under ``data/``, because
the shard writer and the window texts call it (``pipelines/`` sits above ``data/``). ``text_frames``
makes frames with known sensitive text, to measure the masking (scripts/bench_screen_text.py, tests)."""
