"""HEAD answered as the GET of the same path, without its body (RFC 9110 §9.3.2).

Every general-purpose server must answer HEAD wherever it answers GET, and monitors and load balancers
probe with it; Litestar routes a HEAD only to handlers declared for it, so `HEAD /health` was a 405. This
middleware, outside routing, hands the app a GET and passes on its status and headers (`Content-Length`
included, as the GET's) with an empty body. The access line still says HEAD (the request context reads the
caller's scope), and a 405 names HEAD beside GET in its `Allow` header.
"""

from __future__ import annotations

from typing import cast

from litestar.types import ASGIApp, HTTPScope, Message, Receive, Scope, Send

_METHOD_NOT_ALLOWED = 405


def _allow_with_head(headers: list[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """`Allow` lists HEAD wherever it lists GET, as this middleware answers it there."""
    out = []
    for name, value in headers:
        if name.lower() == b"allow":
            methods = [m.strip() for m in value.split(b",") if m.strip()]
            if b"GET" in methods and b"HEAD" not in methods:
                value = b", ".join(sorted([*methods, b"HEAD"]))
        out.append((name, value))
    return out


def answer_head_as_get(app: ASGIApp) -> ASGIApp:
    """Wrap `app` so that HEAD is served by its GET handlers and 405s list HEAD where they list GET."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # type: ignore[comparison-overlap]  # lifespan scopes pass too
            await app(scope, receive, send)
            return
        head = cast(HTTPScope, scope)["method"] == "HEAD"

        async def send_head(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == _METHOD_NOT_ALLOWED:
                message["headers"] = _allow_with_head(list(message.get("headers", [])))
            elif head and message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # a streamed body's chunks are dropped; its last message ends the response
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        # A copy: the server keeps its own scope saying HEAD (uvicorn then writes no body either).
        await app(cast(HTTPScope, {**scope, "method": "GET"}) if head else scope, receive, send_head)

    return wrapped
