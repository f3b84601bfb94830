"""An httpx transport that sends every request to a different service instance than the one before.

It is the opposite of session affinity, to prove the service needs none: step N of a session goes
to instance k, step N+1 to instance k+1, and so on. A session is named by the `X-Session-Id`
request header (the reference orchestrator sends one); requests without it rotate globally. An
instance that refuses the connection (it was killed) is dropped and the same request goes to the
next one, which is safe because a step is a pure function of its request.
"""

from __future__ import annotations

import httpx


class RotatingTransport(httpx.AsyncBaseTransport):
    """Round-robin over base URLs, failing over on connection errors."""

    def __init__(self, base_urls: list[str]) -> None:
        if not base_urls:
            raise ValueError("need at least one instance")
        self._targets = [httpx.URL(u) for u in base_urls]
        self._alive = list(range(len(self._targets)))
        self._next = 0
        self._last_of_session: dict[str, int] = {}
        self._inner = httpx.AsyncHTTPTransport()
        self.sent_to: list[tuple[str, int]] = []
        """(session, index of the instance that answered) for each request, in order (for assertions)."""
        self.failovers = 0

    @property
    def alive(self) -> list[int]:
        """Indexes of the instances still considered up."""
        return list(self._alive)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send to the next live instance; on a refused connection drop it and try the next."""
        session = request.headers.get("x-session-id", "")
        while self._alive:
            if session in self._last_of_session:
                later = [i for i in self._alive if i > self._last_of_session[session]]
                target_index = later[0] if later else self._alive[0]
            else:
                target_index = self._alive[self._next % len(self._alive)]
                self._next += 1
            target = self._targets[target_index]
            request.url = request.url.copy_with(scheme=target.scheme, host=target.host, port=target.port)
            request.headers["host"] = f"{target.host}:{target.port}"
            try:
                response = await self._inner.handle_async_request(request)
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ReadError):
                if target_index in self._alive:  # concurrent requests may all see the same instance die
                    self._alive.remove(target_index)
                self.failovers += 1
                continue
            if session:
                self._last_of_session[session] = target_index
            self.sent_to.append((session, target_index))
            return response
        raise httpx.ConnectError("every instance is down", request=request)

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._inner.aclose()
