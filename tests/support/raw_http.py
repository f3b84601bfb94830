"""HTTP/1.1 over a bare socket, for tests that must control every byte a connection sends (or does not)."""

from __future__ import annotations

import select
import socket

from tests.support.live_service import LiveService

HEALTH = b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n"


def connect(service: LiveService) -> socket.socket:
    """A raw connection to the live service, with a 10 s timeout so a hang fails the test instead of CI."""
    sock = socket.create_connection(("127.0.0.1", service.port), timeout=10.0)
    sock.settimeout(10.0)
    return sock


def read_response(sock: socket.socket) -> bytes:
    """One whole response (head and a Content-Length body), however the bytes arrive."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"closed before a response: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "closed mid-body"
        body += chunk
    return head + b"\r\n\r\n" + body


def send_slowly(sock: socket.socket, data: bytes, piece: int, every_s: float) -> bytes:
    """Send `data` `piece` bytes at a time, one piece each `every_s`, until it is sent or the server answers or
    closes; then the answer (b"" when the connection closed without one)."""
    for start in range(0, len(data), piece):
        if select.select([sock], [], [], every_s)[0]:
            break
        try:
            sock.sendall(data[start : start + piece])
        except OSError:  # the server closed the connection under us
            break
    try:
        return read_response(sock)
    except (AssertionError, OSError):
        return b""
