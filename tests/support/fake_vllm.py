"""A stand-in for the `vllm` executable in tests of slurm/caption_vllm.sbatch (vLLM is not installable here).

    fake_vllm.py serve MODEL --host H --port P [vllm serve options]

Answers like `vllm serve` does: ``GET /health`` (200 once up), ``GET /v1/models`` (the served name, or the
model path, and each ``--lora-modules NAME=PATH``), ``POST /v1/chat/completions``, enforcing the rules of
vLLM's OpenAI chat API that the caption client must follow: ``model`` a listed name (else 404 "The model
... does not exist"), content parts ``text`` or ``image_url`` whose URL is a base64 image data URL (each
a whole JPEG), at most ``--limit-mm-per-prompt``'s images (else 400), ``max_tokens`` below
``--max-model-len``. It waits ``FAKE_VLLM_DELAY`` seconds (default 1) before listening, as a server
loading weights does. Into ``FAKE_VLLM_DIR`` it writes ``started.json`` (its arguments, host, port, pid),
one ``requests.jsonl`` line per request and ``stopped.json`` when SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from loopback_vlm_server import canned_caption, check_request


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("model")
    parser.add_argument("--host", default="0.0.0.0")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--served-model-name", nargs="+")
    parser.add_argument("--lora-modules", nargs="+", default=[])
    parser.add_argument("--enable-lora", action="store_true")
    parser.add_argument("--limit-mm-per-prompt", type=json.loads, default={"image": 1})
    parser.add_argument("--max-model-len", type=int, required=True)
    parser.add_argument("--max-num-seqs", type=int, default=256)
    args, _ = parser.parse_known_args(argv)  # the rest (--dtype, --chat-template, ...) are recorded only
    if args.lora_modules and not args.enable_lora:
        parser.error("--lora-modules needs --enable-lora")
    return args


def main() -> None:
    args = parse(sys.argv[1:])
    folder = Path(os.environ["FAKE_VLLM_DIR"])
    folder.mkdir(parents=True, exist_ok=True)
    names = list(args.served_model_name or [args.model]) + [m.split("=", 1)[0] for m in args.lora_modules]
    lock = threading.Lock()

    def stop(*_):
        (folder / "stopped.json").write_text(json.dumps({"pid": os.getpid(), "signal": "TERM"}))
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    time.sleep(float(os.environ.get("FAKE_VLLM_DELAY", "1")))

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_):
            pass

        def reply(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def error(self, status: int, message: str) -> None:
            self.reply(status, {"error": {"message": message, "type": "BadRequestError", "code": status}})

        def do_GET(self):
            if self.path == "/health":
                self.reply(200, {})
            elif self.path == "/v1/models":
                self.reply(200, {"object": "list", "data": [{"id": n, "object": "model"} for n in names]})
            else:
                self.error(404, f"no route {self.path}")

        def do_POST(self):
            if self.path != "/v1/chat/completions":
                return self.error(404, f"no route {self.path}")
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            problem, images, text = None, 0, ""
            try:
                text, images = check_request(body)
            except (ValueError, KeyError, TypeError) as error:
                problem = str(error)
            limit = int(args.limit_mm_per_prompt.get("image", 1))
            if body.get("model") not in names:
                status, problem = 404, f"The model `{body.get('model')}` does not exist."
            elif problem is None and images > limit:
                status, problem = 400, f"At most {limit} image(s) may be provided in one prompt."
            elif problem is None and not 0 < int(body.get("max_tokens", 16)) < args.max_model_len:
                status, problem = 400, f"max_tokens {body.get('max_tokens')} exceeds max_model_len {args.max_model_len}"
            else:
                status = 400
            with lock, (folder / "requests.jsonl").open("a") as log:
                log.write(json.dumps({"model": body.get("model"), "images": images, "problem": problem,
                                      "max_tokens": body.get("max_tokens"), "text": text[:2000]}) + "\n")
            if problem is not None:
                return self.error(status, problem)
            self.reply(200, {"object": "chat.completion", "model": body["model"], "choices": [
                {"index": 0, "finish_reason": "stop",
                 "message": {"role": "assistant", "content": canned_caption(text, images)}}]})

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    (folder / "started.json").write_text(json.dumps({"argv": sys.argv[1:], "host": args.host, "port": args.port,
                                                     "pid": os.getpid(), "names": names}))
    server.serve_forever()


if __name__ == "__main__":
    main()
