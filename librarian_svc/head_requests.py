"""HEAD answered as the GET of the same path, without its body (RFC 9110 §9.3.2).

Every general-purpose server must answer HEAD wherever it answers GET, and monitors and load balancers
probe with it; Litestar routes a HEAD only to handlers declared for it, so `HEAD /health` was a 405. This
middleware, outside routing, hands the app a GET and passes on its status and headers (`Content-Length`
included, as the GET's) with an empty body. The access line still says HEAD (the request context reads the
caller's scope). A 405's `Allow` names HEAD beside GET (`allow_with_head`, applied where 405s are answered,
`librarian_svc.errors`), and so does an OPTIONS answer (here); other requests pass through untouched.
"""

from __future__ import annotations

from typing import cast

from litestar.types import ASGIApp, HTTPScope, Message, Receive, Scope, Send


def allow_with_head(allow: str) -> str:
    """An `Allow` header's methods with HEAD added wherever GET is listed (this middleware answers it there)."""
    methods = [m.strip() for m in allow.split(",") if m.strip()]
    if "GET" in methods and "HEAD" not in methods:
        return ", ".join(sorted([*methods, "HEAD"]))
    return allow


def _with_head(allow: bytes) -> bytes:
    return allow_with_head(allow.decode("latin-1")).encode("latin-1")


def _listing_head(send: Send) -> Send:
    """`send` with HEAD added beside GET in an answer's `Allow` (Litestar's own OPTIONS answers list GET only)."""

    async def send_allow(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [
                (name, _with_head(value) if name.lower() == b"allow" else value)
                for name, value in message.get("headers", [])
            ]
        await send(message)

    return send_allow


def answer_head_as_get(app: ASGIApp) -> ASGIApp:
    """Wrap `app` so that HEAD is served by its GET handlers, without the body, and OPTIONS lists HEAD."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        method = cast(HTTPScope, scope)["method"] if scope["type"] == "http" else ""  # type: ignore[comparison-overlap]
        if method == "OPTIONS":
            await app(scope, receive, _listing_head(send))
            return
        if method != "HEAD":
            await app(scope, receive, send)
            return

        async def send_head(message: Message) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return  # a streamed body's chunks are dropped; its last message ends the response
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        # A copy: the server keeps its own scope saying HEAD (uvicorn then writes no body either).
        await app(cast(HTTPScope, {**scope, "method": "GET"}), receive, send_head)

    return wrapped
