"""``egohorizon serve --model smollm2_135m``: a loopback OpenAI-compatible chat server in front of any local
model (a backbone config name, an HF folder, a hub id in the local cache, or a trained adapter), for text
and image requests, so every ``--base-url`` / ``llm.base_url`` path runs against a real model on this
machine (egohorizon.llm.server)."""

from __future__ import annotations

import argparse

from egohorizon.commands._args import DTYPE_HELP, port, positive_float


def register(subparsers: argparse._SubParsersAction) -> None:
    serve = subparsers.add_parser(
        "serve", help="a loopback OpenAI-compatible chat server in front of a local model (text and images)",
        description="Loads --model (what llm.model / qa answer --model accept locally: a backbone config "
                    "name such as smollm2_135m, an HF folder, a hub id in the local cache, or a trained "
                    "*.adapter / run folder), binds 127.0.0.1 (a free port unless --port), prints 'PORT <n>' "
                    "and answers POST /v1/chat/completions (text and data: URL image parts, n, seed, "
                    "temperature 0 = greedy) one request at a time, with the replies the same model gives "
                    "in process. Bad requests get HTTP 400 naming the field. Stops after --lifetime seconds "
                    "or Ctrl-C.")
    add_serve_options(serve)
    serve.add_argument("--adapter", help="a trained *.adapter folder (or .ckpt / run folder) put on --model "
                                         "(default: none; an adapter given as --model brings its own base)")
    serve.add_argument("--device", help="torch device (default: cuda when available, else cpu)")
    serve.add_argument("--dtype", help=DTYPE_HELP)
    serve.set_defaults(handler=run_serve)


def add_serve_options(parser: argparse.ArgumentParser) -> None:
    """--model, --port and --lifetime (shared with ``qa serve``)."""
    parser.add_argument("--model", required=True,
                        help="backbone config name (smollm2_135m), local model folder, cached hub id or adapter")
    parser.add_argument("--port", type=port, default=0, help="TCP port on 127.0.0.1 (default 0: a free one)")
    parser.add_argument("--lifetime", type=positive_float, default=3600.0,
                        help="seconds the server runs before it stops (default 3600)")


def run_serve(args: argparse.Namespace) -> int:
    import sys
    import time

    from egohorizon.errors import ConfigError
    from egohorizon.llm.local_model import local_backend
    from egohorizon.llm.server import ChatServer

    options = {k: v for k, v in {"device": getattr(args, "device", None),
                                 "dtype": getattr(args, "dtype", None)}.items() if v}
    backend = local_backend(args.model, adapter=getattr(args, "adapter", None), **options)
    started = time.monotonic()
    backend.generate("Hello", max_new_tokens=1)  # load now: a bad model fails here, before PORT is printed
    try:
        server = ChatServer(backend, args.port).start()
    except OSError as error:  # the port is taken, or not ours to bind
        raise ConfigError(f"--port {args.port}: cannot listen on 127.0.0.1:{args.port} ({error.strerror or error})") from None
    print(f"PORT {server.port}", flush=True)
    print(f"serving {backend.model_id} at {server.url} (loaded in {time.monotonic() - started:.1f} s)",
          file=sys.stderr, flush=True)
    try:
        time.sleep(args.lifetime)
    finally:
        server.close()
    return 0
