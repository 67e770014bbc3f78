"""Hand boxes on real frames: MediaPipe's detector (``detector``), Aria's own hand tracking (``aria``),
folders of images and shard frames (``frames``), pseudo-labelled clips for training (``pseudo``) and a
trained hand VLM as a box finder (``vlm``)."""
