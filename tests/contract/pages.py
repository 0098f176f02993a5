"""A tiny local web server for link-preview tests (threads; stopped by the fixture)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PAGE = (
    b"<html><head><title>Plain title</title>"
    b'<meta property="og:title" content="OG &amp; title">'
    b'<meta name="description" content="  A   description ">'
    b'<meta property="og:image" content="/img.png"></head><body>x</body></html>'
)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path == "/slow":
            time.sleep(5)
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", self.path.split("to=", 1)[1])
            self.end_headers()
            return
        body = PAGE + (b" " * 2_000_000 if self.path == "/huge" else b"")
        kind = "image/png" if self.path == "/image" else "text/html; charset=utf-8"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@contextmanager
def serve() -> Iterator[int]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
