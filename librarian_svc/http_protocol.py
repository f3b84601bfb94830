"""uvicorn's httptools protocol plus a read timeout: a request must arrive whole within `REQUEST_READ_TIMEOUT_S`.

uvicorn times only the idle gap after a response (`timeout_keep_alive`). A connection that never
sends a byte, or sends half a request line, a few header bytes at a time, or a body that stalls,
stays open for ever (a "slowloris"): 20,000 such sockets exhausted the descriptor limit. Go's
`http.Server.ReadTimeout` is the model here: a window that opens when the connection is accepted
(for its first request) or when the next request's first byte arrives after a response (the idle
gap in between stays `KEEPALIVE_TIMEOUT_S`), and closes once the whole request, body included,
has been read. When it runs out the connection is closed: with a 408 if the request's head never
arrived, silently if the body stalled (the step, waiting for its body, sees the client disconnect).
"""

from __future__ import annotations

import asyncio
from typing import Any

import structlog
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

log = structlog.get_logger(__name__)

_settings = {"read_timeout_s": 30.0}

TIMEOUT_408 = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 33\r\nconnection: close\r\n\r\nrequest not received in good time"
)


def configure(read_timeout_s: float) -> None:
    """Set the read timeout for connections accepted from now on (each worker, from its settings)."""
    _settings["read_timeout_s"] = read_timeout_s


class ReadTimeoutProtocol(HttpToolsProtocol):
    """`HttpToolsProtocol` whose requests must be read within the read timeout (see the module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._read_timeout_s = _settings["read_timeout_s"]
        self._read_timer: asyncio.TimerHandle | None = None
        self._bytes_in_window = 0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Accepted: the first request must arrive in time too, not only the ones after a response."""
        super().connection_made(transport)
        self._open_window()

    def data_received(self, data: bytes) -> None:
        """A request's first byte opens its window; the last byte of its body closes it."""
        if self._read_timer is None and self._between_requests():
            self._open_window()
        self._bytes_in_window += len(data)
        super().data_received(data)
        if self._read_timer is not None and self._request_read():
            self._close_window()

    def connection_lost(self, exc: Exception | None) -> None:
        """Gone: no timer may outlive the connection."""
        self._close_window()
        super().connection_lost(exc)

    def _between_requests(self) -> bool:
        return self.cycle is None or self.cycle.response_complete

    def _request_read(self) -> bool:
        """The current request's head and whole body are in (its response may still be under way)."""
        cycle = self.cycle
        return cycle is not None and not cycle.response_complete and not cycle.more_body

    def _open_window(self) -> None:
        self._close_window()
        self._bytes_in_window = 0
        self._read_timer = self.loop.call_later(self._read_timeout_s, self._read_timed_out)

    def _close_window(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_timed_out(self) -> None:
        self._read_timer = None
        if self.transport.is_closing():
            return
        head_missing = self._between_requests()
        log.info(
            "closed a connection: request not read in time",
            phase="head" if head_missing else "body",
            bytes_received=self._bytes_in_window,
            read_timeout_s=self._read_timeout_s,
            client=f"{self.client[0]}:{self.client[1]}" if self.client else None,
        )
        if head_missing and self._bytes_in_window:
            self.transport.write(TIMEOUT_408)
        self.transport.close()
