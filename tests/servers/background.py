"""A ThreadingHTTPServer on 127.0.0.1 (a free port) served from a daemon thread: the wire-format test
servers' shared start/stop."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class BackgroundHTTPServer:
    """Serves ``handler`` on a free local port; use as a context manager or ``start()`` / ``stop()``."""

    thread_name = "test-http-server"

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    def start(self) -> Self:
        serve = self._httpd.serve_forever
        self._thread = threading.Thread(target=serve, args=(0.02,), name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
