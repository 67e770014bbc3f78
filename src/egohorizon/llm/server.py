"""A loopback OpenAI-compatible chat server in front of a local backend (``egohorizon serve``).

``POST /v1/chat/completions`` (or ``/chat/completions``) takes the OpenAI shape: ``messages`` (role
``system`` / ``user`` / ``assistant``; content a string or parts of type ``text`` and ``image_url``
with a ``data:image/...;base64,`` URL), ``max_tokens`` (or ``max_completion_tokens``), ``temperature``
(0: greedy), ``seed`` and ``n``; every field is handed to the backend's ``generate`` unchanged, so a
client (``egohorizon.llm.openai_http``, ``--base-url``) gets the replies the same backend gives in
process. ``GET /v1/models`` names the served model. A request the server cannot take gets HTTP 400 (404
for an unknown route, 413 for a body over 64 MiB) with ``{"error": {"message": ...}}`` naming the field;
a failure while generating gets 500 with the error's one-line message, never a traceback. The
``model`` field of a request is not checked: whatever name the client uses, the loaded model answers
(and the reply's ``model`` says which).

It binds 127.0.0.1 only and generates one request at a time (a local model is not thread-safe); requests
that arrive meanwhile wait, and one whose client has hung up by its turn (a client timeout: its retry is
already queued) is dropped, not generated. A client sending many requests at once to a slow model should
allow for the queue: ``llm.options.timeout`` / ``--timeout`` above the queue's total time, or concurrency 1.
Standard library only, besides the backend.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import logging
import math
import select
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from egohorizon.errors import EgohorizonError
from egohorizon.llm.base import LLMBackend

log = logging.getLogger(__name__)

HOST = "127.0.0.1"
MAX_BODY_BYTES = 64 << 20
MAX_N = 16
ROLES = ("system", "user", "assistant")
ROUTES = ("/v1/chat/completions", "/chat/completions")


class BadRequest(ValueError):
    """A request the server refuses; its message goes back to the client with HTTP ``status``."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def _number(body: dict[str, Any], key: str, default: Any, kind: type, low: float, high: float | None = None):
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadRequest(f"{key}: expected {'an integer' if kind is int else 'a number'}, got {value!r:.60}")
    if not math.isfinite(value):  # json reads NaN and Infinity, and NaN passes every comparison (issue 36)
        raise BadRequest(f"{key}: expected a finite number, got {value}")
    if kind is int and value != int(value):
        raise BadRequest(f"{key}: expected an integer, got {value!r:.60}")
    if value < low or (high is not None and value > high):
        raise BadRequest(f"{key}: expected {low} <= {key} <= {high if high is not None else 'any'}, got {value}")
    return kind(value)


def check_image_url(part: dict[str, Any], where: str) -> None:
    """An ``image_url`` part must hold a data URL of an image that PIL can open (no fetching: loopback)."""
    holder = part.get("image_url")
    url = holder.get("url") if isinstance(holder, dict) else holder
    if not isinstance(url, str):
        raise BadRequest(f"{where}.image_url.url: expected a data:image/...;base64,... string")
    if not url.startswith("data:image/") or ";base64," not in url[:64]:
        raise BadRequest(f"{where}.image_url.url: this server reads images from data:image/...;base64, URLs "
                         f"only, got {url[:40]!r}")
    try:
        data = base64.b64decode(url.split(",", 1)[1], validate=True)
        from PIL import Image

        Image.open(io.BytesIO(data)).verify()
    except (binascii.Error, ValueError) as error:
        raise BadRequest(f"{where}.image_url.url: not valid base64 ({error})") from None
    except Exception as error:  # noqa: BLE001 (PIL raises many kinds for a damaged image)
        raise BadRequest(f"{where}.image_url.url: not a readable image ({type(error).__name__}: {error})") from None


def check_messages(messages: Any) -> int:
    """The number of images in ``messages``; BadRequest naming the first malformed field."""
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages: expected a non-empty list of {'role': ..., 'content': ...}")
    images = 0
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise BadRequest(f"{where}: expected an object, got {type(message).__name__}")
        if message.get("role") not in ROLES:
            raise BadRequest(f"{where}.role: expected one of {', '.join(ROLES)}, got {message.get('role')!r:.40}")
        content = message.get("content")
        if isinstance(content, str):
            continue
        if not isinstance(content, list):
            raise BadRequest(f"{where}.content: expected a string or a list of parts, got {type(content).__name__}")
        for j, part in enumerate(content):
            at = f"{where}.content[{j}]"
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                if not isinstance(part.get("text"), str):
                    raise BadRequest(f"{at}.text: expected a string")
            elif kind == "image_url":
                check_image_url(part, at)
                images += 1
            else:
                raise BadRequest(f"{at}.type: expected 'text' or 'image_url', got {kind!r:.40}")
    return images


def parse_request(body: Any) -> dict[str, Any]:
    """The backend's ``generate`` arguments from a chat-completions request body."""
    if not isinstance(body, dict):
        raise BadRequest(f"the request body: expected a JSON object, got {type(body).__name__}")
    check_messages(body.get("messages"))
    if body.get("stream"):
        raise BadRequest("stream: this server does not stream; send stream: false")
    tokens = body.get("max_completion_tokens", body.get("max_tokens"))
    return {
        "prompt": body["messages"],
        "max_new_tokens": _number({"max_tokens": tokens}, "max_tokens", 256, int, 1, 32768),
        "temperature": _number(body, "temperature", 0.0, float, 0.0, 10.0),
        "seed": _number(body, "seed", 0, int, 0, 2**63 - 1),
        "n": _number(body, "n", 1, int, 1, MAX_N),
    }


class ClientGone(Exception):
    """The client closed its connection before its request's turn came."""


def hung_up(connection: socket.socket) -> bool:
    """True when the peer has closed ``connection`` (readable with nothing to read). A client sends one
    request per connection and then only waits, so readable means closed."""
    try:
        readable, _, _ = select.select([connection], [], [], 0)
        return bool(readable) and connection.recv(1, socket.MSG_PEEK) == b""
    except OSError:
        return True


class ChatServer:
    """``backend`` behind ``http://127.0.0.1:<port>/v1`` (``port`` 0: a free one). ``start()`` serves in
    a thread; ``close()`` stops. ``requests``/``failures``/``abandoned`` count what it answered, refused
    and dropped because the client had gone."""

    def __init__(self, backend: LLMBackend, port: int = 0):
        self.backend = backend
        self.lock = threading.Lock()  # one generation at a time
        self.requests = self.failures = self.abandoned = 0
        self.httpd = ThreadingHTTPServer((HOST, port), _handler(self))
        self.httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def start(self) -> ChatServer:
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def complete(self, body: Any, connection: socket.socket | None = None) -> dict[str, Any]:
        """The reply to one chat-completions body (BadRequest for a bad one; ClientGone when
        ``connection`` was closed by the time the model was free)."""
        params = parse_request(body)
        with self.lock:
            if connection is not None and hung_up(connection):
                self.abandoned += 1
                raise ClientGone
            texts = self.backend.generate(params.pop("prompt"), **params)
            self.requests += 1
        return {"id": f"chatcmpl-{self.requests}", "object": "chat.completion", "created": int(time.time()),
                "model": self.backend.model_id,
                "choices": [{"index": i, "finish_reason": "stop", "message": {"role": "assistant", "content": t}}
                            for i, t in enumerate(texts)]}


def _handler(server: ChatServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):  # quiet: a line per request would drown the caller's output
            pass

        def reply(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def fail(self, status: int, message: str) -> None:
            server.failures += 1
            self.reply(status, {"error": {"message": message, "type": "invalid_request_error"
                                          if status < 500 else "server_error", "code": status}})

        def do_GET(self):
            if self.path.rstrip("/") in ("/v1/models", "/models"):
                return self.reply(200, {"object": "list", "data": [
                    {"id": server.backend.model_id, "object": "model", "owned_by": "egohorizon"}]})
            self.fail(404, f"no route GET {self.path}; try GET /v1/models or POST /v1/chat/completions")

        def do_POST(self):
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                return self.fail(400, f"Content-Length: expected an integer, got {self.headers['Content-Length']!r}")
            if length > MAX_BODY_BYTES:
                self.close_connection = True  # the body is not read
                return self.fail(413, f"request body of {length} bytes; at most {MAX_BODY_BYTES}")
            raw = self.rfile.read(length)
            if self.path.rstrip("/") not in ROUTES:
                return self.fail(404, f"no route POST {self.path}; this server answers POST /v1/chat/completions")
            try:
                body = json.loads(raw or b"null")
            except (json.JSONDecodeError, UnicodeDecodeError) as error:
                return self.fail(400, f"the request body is not JSON: {error}")
            try:
                answer = server.complete(body, self.connection)
            except ClientGone:
                self.close_connection = True  # nobody to answer
                return None
            except BadRequest as error:
                return self.fail(error.status, str(error))
            except EgohorizonError as error:  # the backend refuses the prompt (images for a text-only model)
                return self.fail(400, str(error))
            except Exception as error:  # the client gets one line; the log keeps the rest
                log.exception("generation failed")
                return self.fail(500, f"generation failed: {type(error).__name__}: {error}")
            self.reply(200, answer)  # outside the try: a client gone by now is handle()'s one log line
            return None

        def handle(self):
            # A client that hangs up mid-request (while its reply is generated or sent) made the socket
            # server print a traceback for the failed write; it is one line of the log (issue 36, item 12).
            try:
                super().handle()
            except ConnectionError as error:  # BrokenPipeError, ConnectionResetError, ConnectionAbortedError
                server.abandoned += 1
                log.warning("client %s:%s hung up before its reply was sent (%s); reply dropped",
                            *self.client_address[:2], type(error).__name__)

    return Handler
