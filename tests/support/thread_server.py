"""An ASGI app served by uvicorn on a loopback port, on a daemon thread: the fake model and the recording proxy."""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Literal

import uvicorn


class ThreadServer:
    """One uvicorn server on its own thread; `start` returns once it accepts connections."""

    def __init__(self, app: Any, *, name: str, lifespan: Literal["on", "off"] = "off", http: Any = "auto") -> None:
        """`name` says which server failed to start, in the error; `http` is uvicorn's protocol (class or name)."""
        self.app, self.name, self.lifespan, self.http = app, name, lifespan, http
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def start(self, host: str, port: int = 0) -> int:
        """Bind `host:port` (0: a free port) and serve; returns the bound port."""
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        config = uvicorn.Config(
            self.app,
            interface="asgi3",
            log_level="warning",
            lifespan=self.lifespan,
            ws="none",
            access_log=False,
            timeout_graceful_shutdown=1,
            http=self.http,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [sock]}, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError(f"{self.name} did not start")
            time.sleep(0.01)
        bound: int = sock.getsockname()[1]
        return bound

    def wait_until_idle(self, within_s: float = 5.0) -> None:
        """Return once no request is being handled (or `within_s` has passed): a request whose client gave up on
        it (its timeout) is still handled, and recorded, after the client has moved on.

        Best effort: a request whose head the server has not parsed yet is not counted. A test that knows how
        many requests it sent waits for them (`FakeLLMServer.wait_for_calls`).
        """
        deadline = time.monotonic() + within_s
        while self._server is not None and self._server.server_state.tasks and time.monotonic() < deadline:
            time.sleep(0.01)

    def stop(self) -> None:
        """Stop serving and wait for the thread (in-flight requests are cut short after a second)."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = self._thread = None
