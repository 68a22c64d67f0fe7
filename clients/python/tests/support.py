"""What the tests share: the package on the path, the live API's address from the environment,
and a local stub HTTP server for what the live API cannot be made to do (a 503, a dropped stream)."""

import http.server
import json
import os
import sys
import threading
import time
import unittest
import uuid
from typing import Callable, List, NamedTuple, Optional, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
for path in (os.path.join(ROOT, "src"), os.path.join(ROOT, "examples")):
    if path not in sys.path:
        sys.path.insert(0, path)

from compactor_client import Client  # noqa: E402

#: The live API (test/client/python-client.test.ts at the repository root sets these).
API_URL = os.environ.get("COMPACTOR_URL")
API_KEY = os.environ.get("COMPACTOR_KEY")
OTHER_TENANT_KEY = os.environ.get("COMPACTOR_OTHER_KEY")
#: The LLM stub the API's workers summarise with (an OpenAI-compatible endpoint).
LLM_URL = os.environ.get("COMPACTOR_LLM_URL")

live = unittest.skipUnless(API_URL and API_KEY, "COMPACTOR_URL and COMPACTOR_KEY name no live API")

#: Ids unique to this run, so the tests can run again against the same API.
RUN = uuid.uuid4().hex[:8]


def unique(name: str) -> str:
    return "py-{}-{}".format(RUN, name)


def client(**options) -> Client:  # type: ignore[no-untyped-def]
    """A client of the live API (tenant A unless ``api_key`` says otherwise)."""
    options.setdefault("api_key", API_KEY)
    options.setdefault("timeout", 10.0)
    return Client(API_URL or "", **options)


class Seen(NamedTuple):
    """One request the stub server received."""

    method: str
    path: str
    headers: dict
    body: bytes
    at: float


class Answer(NamedTuple):
    status: int
    body: bytes = b""
    headers: Tuple[Tuple[str, str], ...] = ()
    #: Sent by a stream handler instead of a plain answer (see StubServer).
    chunks: Optional[List[bytes]] = None


#: Decides the answer to the n-th request (0-based).
Script = Callable[[int, Seen], Answer]


class StubServer:
    """An HTTP server on a free local port answering by a script; records every request."""

    def __init__(self, script: Script) -> None:
        self.seen: List[Seen] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def handle_any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                seen = Seen(
                    self.command, self.path, dict(self.headers), self.rfile.read(length), time.monotonic()
                )
                outer.seen.append(seen)
                answer = script(len(outer.seen) - 1, seen)
                self.send_response(answer.status)
                for name, value in answer.headers:
                    self.send_header(name, value)
                if answer.chunks is not None:
                    # A stream: written piece by piece, then the connection closes (a dropped stream).
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for chunk in answer.chunks:
                        self.wfile.write(chunk)
                        self.wfile.flush()
                    self.close_connection = True
                    return
                self.send_header("Content-Length", str(len(answer.body)))
                self.end_headers()
                self.wfile.write(answer.body)

            do_GET = do_POST = do_PATCH = do_DELETE = handle_any

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request: object, client_address: object) -> None:
                pass  # A client that hung up mid-answer (the tests close streams on purpose).

        self.server = Server(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:{}".format(self.server.server_address[1])
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> "StubServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


#: The headers of a JSON answer.
JSON_HEADERS = (("Content-Type", "application/json"),)


def error_body(code: str, message: str = "refused") -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()
